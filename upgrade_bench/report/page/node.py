"""The node check in words: the block that opens the page (before any upgrade verdict: a
decision made on a sick baseline is wrong by its shortfall) and run_node.sh's closing lines."""
from ...hardware import gpus
from ..node import health
from ..node.check import FALLS_SHORT, IMPOSSIBLE, NodeCheck, Row, hbm_share
from ..text.tables import fmt, md_table
from ..text.escape import md_text


def reference_words(row: Row) -> str:
    ref = row.reference
    if ref is None:
        return "none of this GPU kind and configuration: no verdict"
    extra = hbm_share(row) if row.figure.record["kind"] == "hbm" else ""
    return f"{fmt(ref.value)} {row.figure.unit}{extra}"


def source_words(row: Row) -> str:
    ref = row.reference
    if ref is None:
        return "-"
    if ref.stack is None:
        stack = "the source names no stack"
    else:
        stack = ", ".join(f"{k} {v}" for k, v in ref.stack.items() if v and k in ("torch", "cuda", "flash-attn-4", "flash-attn-3"))
    said = f"; this node ran {row.stack_note}" if row.stack_note else ""
    return f"{ref.source} ({stack}{said})"


def cause_words(row: Row, escape=str) -> str:
    """A shortfall's likely causes."""
    if row.verdict not in health.SHORT:
        return "-"
    if row.causes:
        return "; ".join(escape(c) for c in row.causes)
    return "none in what the node recorded"


def shortfall_sentence(row: Row, escape=str) -> str:
    """`escape`: text.md_text on the page (labels and causes hold text from logs)."""
    return (f"{escape(row.figure.label)} {fmt(row.figure.value)} {row.figure.unit}, {fmt(row.share, 'pct')} of "
            f"{fmt(row.reference.value)} ({escape(row.reference.source)}): {row.verdict}; likely cause: "
            f"{cause_words(row, escape)}")


def _name(c: NodeCheck, escape=str) -> str:
    return escape(c.node.name) + (f" ({c.role})" if c.role else "")


def counted(c: NodeCheck) -> str:
    return "{} of {} components had a reference".format(*c.components)


def advice(c: NodeCheck) -> str:
    """What a shortfall allows: the cause first (a board's rated power is not fixable, a lowered
    limit is), then what the node's role makes of it."""
    causes = " ".join(x for r in c.short for x in r.causes) + " " + " ".join(c.faults)
    said = []
    if "the board's rating: power-bound" in causes:
        said.append("Its clock is held by the board's rated power: nothing on this node to fix.")
    if "set below the board's" in causes or "power limit" in " ".join(c.faults):
        said.append("Its power limit is set low: raise it (nvidia-smi -pl) and measure again.")
    if c.faults:
        said.append("What its probes found is for the provider to repair.")
    if c.role == "baseline":
        said.append("The verdicts below compare against this baseline's shortfall: measure the baseline on another "
                    "node of its kind before reading them.")
    elif c.role == "candidate":
        said.append("The figures of this candidate node are this node's, not its GPU kind's: another node of its "
                    "kind may do better.")
    else:
        said.append("An upgrade decided against this node is off by its shortfall.")
    return " ".join(said)


def _steps_range(c: NodeCheck) -> str:
    shares = [r.share for r in c.rows if r.figure.component == "step" and r.verdict != health.NO_VERDICT]
    lo, hi = min(shares), max(shares)
    return f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}-{hi:.0%}"


def headline(c: NodeCheck, escape=md_text) -> str:
    """A short paragraph in proportion: the state, the worst shortfall with its likely cause (the
    rest are the table's), the first fault, the advice its cause and role allow; a kernel figure
    merely below the bar while every training step is healthy is a clause, not a shortfall."""
    name, status = _name(c, escape), c.status
    if status == IMPOSSIBLE:
        shown = [escape(x) for x in c.node.impossible[:2]]
        more = f"; {len(c.node.impossible) - 2} more in report.md" if len(c.node.impossible) > 2 else ""
        return (f"**{name}: {IMPOSSIBLE}**: " + "; ".join(shown) + more + ". Each is above what its GPU can give: "
                "it enters no verdict, reference or forecast, and the logs that hold it are in doubt (rerun their step).")
    if status == FALLS_SHORT:
        short = [r for r in c.short if r not in c.minor]
        parts = [shortfall_sentence(short[0], escape)] if short else []
        if len(short) > 1:
            parts.append(f"{len(short) - 1} more figure(s) short (the table)")
        if c.faults:
            parts.append(escape("found: " + c.faults[0]) + (f" and {len(c.faults) - 1} more" if len(c.faults) > 1 else ""))
        return f"**{name} {FALLS_SHORT}**: " + " — ".join(parts) + f" ({counted(c)}). {advice(c)}"
    if status == health.HEALTHY:
        text = f"**{name} is healthy: {counted(c)}**"
        if c.minor:
            below = ", ".join(f"{escape(r.figure.label)} at {fmt(r.share, 'pct')} of {fmt(r.reference.value)}"
                              for r in c.minor)
            text += (f"; {below}, under the {health.HEALTHY_MIN:.0%} bar, while its training steps run at "
                     f"{_steps_range(c)} of their reference: a note, not a shortfall")
        return text + "."
    return f"**{name}: no verdict**: no figure it measured has a healthy reference of its GPU kind."


def missing_lines(c: NodeCheck) -> list:
    """One line per component measured without a reference, then one per --reference note."""
    return list(c.missing) + list(c.notes)


def table(c: NodeCheck) -> str:
    rows = [[r.figure.label, f"{fmt(r.figure.value)} {r.figure.unit}", reference_words(r), source_words(r),
             fmt(r.share, "pct"), r.verdict, cause_words(r)] for r in c.rows]
    return md_table(["measured", "value", "healthy reference", "source (stack)", "ratio", "verdict",
                     "likely cause"], rows)


def node_markdown(checks: list) -> str:
    """The page's opening section, the worst node first; '' without a measured node."""
    if not checks:
        return ""
    out = [headline(c) for c in checks]
    out.append(f"Thresholds: {health.THRESHOLDS_TEXT}. A node is a folder of logs, a GPU kind and a host; "
               "add your own healthy node's folder as the reference with --reference DIR. Published MAMF: "
               f"{gpus.MAMF_SOURCE}.")
    for c in checks:
        said = [f"- {md_text(line)}" for line in c.node.impossible + missing_lines(c)]
        out.append(f"**{md_text(c.node.name)}**\n\n" + ("\n".join(said) + "\n\n" if said else "") + table(c))
    return "\n\n".join(out)


def terminal_lines(checks: list) -> list:
    """run_node.sh's closing block, the worst node first: a line per node, then each impossible
    figure, shortfall and fault, each healthy figure, and each component without a reference."""
    out = []
    for c in checks:
        out.append(f"node check, {_name(c)}: {c.status}")
        out += [f"  {why}" for why in c.node.impossible]
        out += [f"  {shortfall_sentence(r)}" + (" (a note: its training steps are healthy)" if r in c.minor else "")
                for r in c.short]
        out += [f"  found: {fault}" for fault in c.faults]
        out += [f"  {r.figure.label} {fmt(r.figure.value)} {r.figure.unit}: {fmt(r.share, 'pct')} of "
                f"{fmt(r.reference.value)}, {r.verdict}" for r in c.rows if r.verdict == health.HEALTHY]
        if c.rows:
            out.append(f"  {counted(c)}")
        out += [f"  {line}" for line in missing_lines(c)]
    return out
