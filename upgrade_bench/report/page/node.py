"""The node check in words: the block that opens the page (before any upgrade verdict: a
decision made on a sick baseline is wrong by its shortfall) and run_node.sh's closing lines."""
from ...hardware import gpus
from ..node import health
from ..node.check import NodeCheck, Row, hbm_share
from ..text.tables import fmt, md_table
from ..text.escape import md_text

SICK_BASELINE = ("An upgrade decided against this node is off by its shortfall: fix it, or measure "
                 "the baseline on a healthy node, before reading the verdicts below.")


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


def headline(c: NodeCheck) -> str:
    """One paragraph: the node's state, each shortfall with its likely cause, each fault."""
    name = md_text(c.node.name)
    if c.status != "falls short":
        judged = [r for r in c.rows if r.verdict != health.NO_VERDICT]
        if not judged:
            return f"**{name}: no verdict**: no figure it measured has a healthy reference of its GPU kind."
        return (f"**{name} is healthy**: {len(judged)} figure(s) at {health.HEALTHY_MIN:.0%} of their reference "
                f"or above.")
    parts = [shortfall_sentence(r, md_text) for r in c.short]
    parts += [md_text("found: " + fault) for fault in c.faults]
    return f"**{name} falls short**: " + " — ".join(parts) + f". {SICK_BASELINE}"


def table(c: NodeCheck) -> str:
    rows = [[r.figure.label, f"{fmt(r.figure.value)} {r.figure.unit}", reference_words(r), source_words(r),
             fmt(r.share, "pct"), r.verdict, cause_words(r)] for r in c.rows]
    return md_table(["measured", "value", "healthy reference", "source (stack)", "ratio", "verdict",
                     "likely cause"], rows)


def node_markdown(checks: list) -> str:
    """The page's opening section; '' without a measured node."""
    if not checks:
        return ""
    sick = [c for c in checks if c.status == "falls short"]
    out = [headline(c) for c in sick + [c for c in checks if c not in sick]]
    out.append(f"Thresholds: {health.THRESHOLDS_TEXT}. A node is a folder of logs and a GPU kind; "
               "add your own healthy node's folder as the reference with --reference DIR. Published MAMF: "
               f"{gpus.MAMF_SOURCE}.")
    for c in checks:
        out.append(f"**{md_text(c.node.name)}**\n\n{table(c)}")
    return "\n\n".join(out)


def terminal_lines(checks: list) -> list:
    """run_node.sh's closing block: a line per node, a line per shortfall and per fault."""
    out = []
    for c in checks:
        out.append(f"node check, {c.node.name}: {c.status}")
        out += [f"  {shortfall_sentence(r)}" for r in c.short]
        out += [f"  found: {fault}" for fault in c.faults]
        out += [f"  {r.figure.label} {fmt(r.figure.value)} {r.figure.unit}: {fmt(r.share, 'pct')} of "
                f"{fmt(r.reference.value)}, {r.verdict}" for r in c.rows if r.verdict == health.HEALTHY]
    return out
