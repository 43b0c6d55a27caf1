"""The answer a buyer reads first: per baseline series, one sentence per candidate and regime.

Before any table, in the terminal and at the top of report.md: for each baseline series, each
candidate (measured, published, or forecast, said which), and each run of lengths where the
call does not change (for a forecast also where the kind of workload changes): how much
faster (the range), cheaper / the same / dearer per token at the given prices with the margin
and both sides' $/1M tokens, the break-even price ratio against the price ratio, whether the
workload fits the candidate's memory, and how sure (a measured range's source, or the
backtest's coverage for that kind of workload). Every number is the verdict block's or the
forecast block's; this module only words them.
"""
from .comparisons import HEALTH, Comparison
from .forecast.page import SeriesForecast
from .series import seq_label
from .tables import fmt
from .verdict import ABOVE, BELOW, UNDECIDED, WITHIN
from .verdict_blocks import one_sided
from .words import ignored_words, unlike_words

CALL_WORDS = {BELOW: "cheaper per token", ABOVE: "dearer per token", WITHIN: "the same per token within the range",
              UNDECIDED: "cannot decide per token"}


def _lengths(rows: list) -> str:
    names = [seq_label(r.seq_len) for r in rows]
    return names[0] if len(names) == 1 else f"{names[0]} to {names[-1]}"


def _spread(lows: list, highs: list, kind: str = "x", mids: list = ()) -> str:
    """'1.54x to 1.98x' over a run of lengths; one length's value first where `mids` has one."""
    low, high = min(lows), max(highs)
    span = fmt(low, kind) if fmt(low, kind) == fmt(high, kind) else f"{fmt(low, kind)} to {fmt(high, kind)}"
    if len(mids) > 1:
        return f"{span} (point estimates {', '.join(fmt(m, kind) for m in mids)})"
    return f"{fmt(mids[0], kind)} ({span})" if len(mids) == 1 and span != fmt(mids[0], kind) else span


def _segments(rows: list, key) -> list:
    """Runs of consecutive rows with the same key: [[row, ...], ...]."""
    out = []
    for r in rows:
        if out and key(out[-1][-1]) == key(r):
            out[-1].append(r)
        else:
            out.append([r])
    return out


def _margin(call) -> tuple:
    """(low, high) of how much cheaper (below) or dearer (above) a $/token ratio's range says."""
    if call.low is None:
        return (abs(call.value - 1),) * 2
    return (1 - call.high, 1 - call.low) if call.word == BELOW else (call.low - 1, call.high - 1)


def _cost(calls: list, base_usd: list, cand_usd: list, names: tuple, prices: tuple, forecast: bool = False) -> str:
    """'dearer per token by 0.5% to 68.9% at $3.50 vs $7.00 per GPU-hour ($0.355 vs $0.599 per 1M tokens ...)';
    a forecast whose range spans even cannot tell, and says where its point estimate lies."""
    word = calls[0].word
    ends = sorted({0, len(calls) - 1})
    usd = ", ".join(f"{fmt(base_usd[i], 'usd')} vs {fmt(cand_usd[i], 'usd')}" for i in ends)
    text = CALL_WORDS[word]
    if forecast and word == WITHIN:
        text = "cannot tell per token (the range spans even; point estimates " + ", ".join(
            f"{abs(c.value - 1):.0%} {'cheaper' if c.value < 1 else 'dearer'}" for c in calls) + ")"
    if word in (BELOW, ABOVE):
        margins = [_margin(c) for c in calls]
        text += f" by {_spread([m[0] for m in margins], [m[1] for m in margins], 'pct')}"
    return (f"{text} at ${prices[0]:.2f} vs ${prices[1]:.2f} per GPU-hour ({usd} per 1M tokens, "
            f"{names[0]} vs {names[1]})")


def comparison_sentences(c: Comparison) -> list:
    """A measured or published candidate's sentences, one per run of lengths with one call."""
    who = f"{c.other.gpu} ({c.other.provenance})"
    if c.unlike:
        return [f"{who}: no verdict, not like for like ({unlike_words(c)}: the two series do different "
                "work per GPU)."]
    if c.ignored:  # paired as asked, across settings that differ: the sentence says which
        who += f", paired across {ignored_words(c.ignored)} (--ignore-config)"
    rows = [r for r in c.rows if r.speedup is not None]
    if not rows:
        return [f"{who}: no length measured on both sides."]
    out = []
    for seg in _segments(rows, lambda r: r.cost.word if r.cost else None):
        ranges = [r.speedup_range or (r.speedup, r.speedup) for r in seg]
        text = (f"{who} at {_lengths(seg)}: {_spread([x[0] for x in ranges], [x[1] for x in ranges], 'x', [r.speedup for r in seg])}"
                " as fast")
        if seg[0].cost:
            text += "; " + _cost([r.cost for r in seg], [r.base_usd_per_mtok for r in seg],
                                 [r.other_usd_per_mtok for r in seg], (c.base.gpu, c.other.gpu), c.prices)
            ends = [r.break_even_range or (r.break_even, r.break_even) for r in seg]
            text += (f"; break-even price ratio {_spread([x[0] for x in ends], [x[1] for x in ends], 'x', [r.break_even for r in seg])} "
                     f"(the price ratio is {fmt(c.price_ratio, 'x')})")
        else:
            text += ("; no $/token call: " + (f"no price for {' and '.join(c.unpriced)}" if c.unpriced else
                                              "no throughput recorded"))
        out.append(text + f"; {memory_words(c, seg)}; how sure: {sure_words(c)}.")
    lonely = one_sided(c).strip()
    return out + ([f"{who}: {lonely}"] if lonely else [])


def memory_words(c: Comparison, seg: list) -> str:
    peaks = [(r.other or {}).get("peak_mem_gib") for r in seg]
    hbm = c.other.hbm_gib
    if not any(peaks) or not hbm:
        return "memory not recorded"
    top = max(p for p in peaks if p)
    return (f"fits, {fmt(top)} GiB at most of its {fmt(hbm)} GiB" if top <= hbm else
            f"does not fit: {fmt(top)} GiB of {fmt(hbm)} GiB")


def sure_words(c: Comparison) -> str:
    sides = {s.provenance for s in (c.base, c.other)}
    if sides == {"measured"}:
        return "measured on both GPUs, the range is the step-time spread of both"
    return ("published figures carry only their rounding" + ("" if "measured" not in sides else
            ", the measured side its step-time spread") + "; a run-to-run spread would be wider")


def forecast_sentences(fc: SeriesForecast) -> list:
    """A forecast candidate's sentences, one per run of lengths with one call and one kind."""
    who = f"{fc.candidate} (forecast, not measured)"
    out = []
    for seg in _segments(fc.rows, lambda r: (r.cost_call.word if r.cost_call else None, r.calibration.kind)):
        speeds = ([r.speedup[1] for r in seg], [r.speedup[2] for r in seg], "x", [r.speedup[0] for r in seg])
        text = f"{who} at {_lengths(seg)}: {_spread(*speeds)} as fast"
        if seg[0].cost_call:
            text += "; " + _cost([r.cost_call for r in seg], [r.base_usd_per_mtok for r in seg],
                                 [r.usd_per_mtok[0] for r in seg], (fc.base.gpu, fc.candidate), fc.prices, True)
            text += (f"; break-even price ratio {_spread(*speeds)} "
                     f"(the price ratio is {fmt(fc.prices[1] / fc.prices[0], 'x')})")
        else:
            text += "; no $/token call: no price for " + " and ".join(
                g for g, usd in zip((fc.base.gpu, fc.candidate), fc.prices) if not usd)
        peaks = [r.peak_mem_gib for r in seg if r.peak_mem_gib]
        text += (f"; {'fits' if max(peaks) <= fc.hbm_gib else 'does not fit'}: the baseline's peak, "
                 f"{fmt(max(peaks))} GiB at most, in its {fmt(fc.hbm_gib)} GiB" if peaks else "; memory not recorded")
        out.append(text + f"; how sure ({seg[0].calibration.kind}): {seg[0].calibration.words()}.")
    return out


def answer_markdown(a) -> str:
    """The first screen: per baseline series, its candidates' sentences; '' where there is none."""
    by_base = {}
    for c in a.comparisons:
        if c.kind != HEALTH:
            by_base.setdefault(c.base.label, []).extend(comparison_sentences(c))
    for fc in a.forecasts:
        by_base.setdefault(fc.base.label, []).extend(forecast_sentences(fc))
    if not by_base:
        return ""
    out = ["## The answer", ""]
    for base, sentences in by_base.items():
        out += [f"**Baseline: {base}**", ""] + [f"- {s}" for s in sentences] + [""]
    return "\n".join(out)
