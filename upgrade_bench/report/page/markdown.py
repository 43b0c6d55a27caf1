"""report.md: the page in order, from the answer (answer.py), the verdict blocks
(verdict_blocks.py) and the tables after them (detail_tables.py); the terminal's text is
terminal.py's.

The page opens with the prices and the answer (answer.py: a sentence per workload, candidate
and regime), the cost to train and the owner's cost (dollars.py), then the forecasts, one
verdict block per comparison, the series that pair with nothing and why, then the figures and
the detailed tables.
"""
from . import details as detail_tables
from .engines import engines_markdown
from . import precision as formats
from .answer import answer_markdown
from ..compare.comparisons import Analysis
from .forecast import forecast_markdown
from .node import node_markdown
from ..read.series import GUIDE_LABEL
from ..text.escape import html_safe, md_cell, md_text
from .verdicts import verdict_block
from .words import stack_words, title
from .bound import workload_markdown


def unpaired_markdown(a: Analysis) -> str:
    if not a.unpaired:
        return ""
    return "\n".join(f"- {s.label}: {why}" for s, why in a.unpaired)


def no_comparison_words(a: Analysis) -> str:
    if not a.data.series:
        return "the input holds no training summaries (`summary` records) to compare"
    return "no two series of the same configuration (the series and why are listed below)"


def prices_line(a: Analysis) -> str:
    """Every price the page uses, a forecast's too."""
    prices = [f"{g} ${usd:.2f}" for g, usd in a.prices.items()]
    prices += [f"{g} ${usd:.2f} (prices its forecast only: no log of it)" for g, usd in a.forecast_prices.items()]
    return (f"Prices per GPU-hour: {', '.join(prices)}." if prices else
            "No prices given (--price GPU=USD_PER_GPU_HOUR): speed only, no $/token verdicts.")


def opening(a: Analysis, dollars: str = "") -> list:
    """What the page opens with: the prices, why a --forecast shows nothing, the answer per
    workload, and `dollars` (the cost to train and the owner's cost)."""
    out = [prices_line(a), ""] + [f"**{note}**\n" for note in a.forecast_notes]
    answer = answer_markdown(a)
    return out + ([answer] if answer else []) + ([dollars] if dollars else [])


def node_section(a: Analysis) -> list:
    """The node check, before any upgrade verdict: a sick baseline skews every one of them."""
    text = node_markdown(a.node_checks)
    return ["## Is this node healthy?", "", text, ""] if text else []


def inputs_markdown(a: Analysis, inputs, tally) -> str:
    lines = [f"Read {len(inputs)} log file(s); baseline GPU: **{a.baseline}**."]
    if tally is not None:
        if tally.duplicates:
            lines.append(f"{sum(tally.duplicates.values())} record(s) found again in another log "
                         "(the same run_id, kind and content) were counted once: "
                         + ", ".join(f"{md_text(src)}: {n}" for src, n in tally.duplicates.items()) + ".")
        if tally.skipped_total():
            lines.append(f"Skipped {tally.skipped_total()} malformed line(s) or record(s):")
            lines += [f"- {line}" for line in tally.skipped_lines(name=md_text)]
    if a.data.orphans:
        lines.append(f"{a.data.orphans} record(s) had no header (GPU unknown).")
    for run_id, names in a.data.conflicts.items():
        lines.append(f"Run id {md_cell(run_id)} has headers of different GPUs ({md_cell(', '.join(names))}): "
                     f"each record was joined to the header of its own file, none to a guess.")
    if any(s.reference for s in a.data.series):
        lines.append(f"Series marked *({GUIDE_LABEL})* are the guide's published figures fed through "
                     "this pipeline (Machine Learning Engineering Open Book, insights/when-to-upgrade-gpus), "
                     "not measurements of this suite.")
    return "\n\n".join(lines)


def render(a: Analysis, figures=(), inputs=(), tally=None, dollars: str = "") -> str:
    """report.md: the verdict blocks first, then the unpaired series, figures and tables; no HTML
    and no link on it but its own figures (text.html_safe: a tag or a link from a log shows as
    typed)."""
    out = ["# GPU upgrade report", ""]
    if tally is not None and tally.skipped_total():
        out += [f"**Skipped {tally.skipped_total()} malformed line(s) or record(s)** while reading (see Inputs): "
                "what they held is missing from the verdicts below.", ""]
    out += node_section(a) + opening(a, dollars)  # the node's own check before any upgrade verdict
    if a.forecasts:
        out += ["## Forecasts (not measured)", ""] + [forecast_markdown(fc) + "\n" for fc in a.forecasts]
    if not a.comparisons:
        out += [f"**No comparison**: {no_comparison_words(a)}.", ""]
    out += [verdict_block(c, a.data.also_in) for c in a.comparisons]
    lonely = unpaired_markdown(a)
    if lonely:
        out += ["## Series not compared", "", lonely, ""]
    if a.mixed_stacks:
        out += ["## Series that mix software stacks", ""] + [
            f"- {s.label}: {stack_words(d)}" for s, d in a.mixed_stacks] + [""]
    images = []  # the page's own images: after html_safe, which leaves no image of a log's live
    if figures:
        out += ["## Figures", ""]
        images = [f"![{path}]({path})\n" for path in figures]
    out, out_before = [], out
    for c in a.comparisons:
        out += [f"## Details of {title(c)}", "",
                "The identity column checks the guide's `speedup ~= peak ratio x MFU ratio`.", "",
                detail_tables.details_markdown(c), ""]
    sections = [("Series", detail_tables.series_markdown(a) if a.data.series else ""),
                ("Attention share per workload", workload_markdown(a.data.series)),
                ("Capabilities", detail_tables.capability_markdown(a)),
                ("What the number format buys", formats.format_markdown(a.data.series)),
                ("What the engine buys (same GPU)", engines_markdown(a.engines)),
                ("Peak memory vs sequence length", detail_tables.memory_markdown(a)),
                ("Step decomposition", detail_tables.decomposition_markdown(a)),
                ("Isolated attention kernels", detail_tables.attention_markdown(a)),
                ("MAMF (maximum achievable matmul FLOPS)", detail_tables.mamf_markdown(a)),
                ("Memory bandwidth (HBM)", detail_tables.bandwidth_markdown(a)),
                ("Interconnect", detail_tables.interconnect_markdown(a)),
                ("Telemetry", detail_tables.telemetry_markdown(a))]
    for heading, text in sections:
        if text:
            out += [f"## {heading}", "", text, ""]
    if a.data.failures:
        out += ["## Failures without a sequence length", ""]
        out += [f"- {s.label}: {r.get('error')}: {r.get('message')}" for s, r in a.data.failures] + [""]
    out += ["## Inputs", "", inputs_markdown(a, inputs, tally), ""]
    return "\n".join([html_safe("\n".join(out_before))] + images + [html_safe("\n".join(out))])
