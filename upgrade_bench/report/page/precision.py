"""What a number format buys, as report.md's table: each low-precision series beside its bf16
series per length (compare/precision.py's rows), and what its loss column may be read as."""
from ..compare.precision import FormatRow, format_name, format_rows, low_precision_pairs, trained_on_data
from ..read.series import seq_label
from ..text.tables import fmt, md_table


def _cells(r: FormatRow) -> list:
    name = format_name(r.low)
    if r.diverged:
        said = f"{' and '.join(r.diverged)} diverged"
        return [r.low.gpu, name, seq_label(r.seq_len), f"- ({said})", "-", "-", "-", said]
    return [r.low.gpu, name, seq_label(r.seq_len), fmt(r.speedup, "x") if r.speedup is not None else "-",
            fmt(r.low_precision_flop_share, "pct"), f"{fmt(r.base_peak_gib)} / {fmt(r.low_peak_gib)}",
            fmt(r.spread) if r.spread is not None else "one seed",
            (fmt(r.loss_delta) if r.loss_delta is not None else "-") + (" (departs)" if r.departs else "")]


def format_markdown(series: list) -> str:
    """The table, one row per pair and length both ran; '' without a pair."""
    rows = format_rows(series)
    if not rows:
        return ""
    tested = [trained_on_data(base) and trained_on_data(low) for base, low in low_precision_pairs(series)]
    fresh, stale = any(tested), not all(tested)
    notes = ["Each low-precision series beside the bf16 series of the same GPU and configuration; speedup is "
             "bf16's step time over the format's. A run whose loss is not finite diverged: no speedup is read "
             "from it."]
    if stale:
        notes.append("**The loss is not a convergence test here**: runs without DATA= train every step on one "
                     "batch of random tokens, which a model memorises at any precision; no departure is marked. "
                     "Set DATA= (a file of token ids) for bf16 and the format, and run bf16 with two SEEDs or more.")
    if fresh:
        notes.append("Where both trained on the same tokens (DATA=, fresh each step), a loss further from bf16's "
                     "than bf16's own spread between seeds at that length is marked (departs): not a plain win.")
    return ("\n\n".join(notes) + "\n\n"
            + md_table(["GPU", "precision", "seq_len", "speedup over bf16", "FLOPs in the format",
                        "peak GiB bf16 / format", "bf16 loss spread over seeds", "loss minus bf16's"],
                       [_cells(r) for r in rows]))
