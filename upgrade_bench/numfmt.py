"""Numbers in the text tables the scripts print: significant figures, not fixed decimals; the
grid of an op-by-size table and the record of each op it and a headline show.

A GPU's 812.4 TFLOPS and a CPU's 0.0004 TFLOPS both need three figures to be read; a fixed
'.1f' prints the second as 0.0.
"""
import math


def sig(value, digits: int = 3) -> str:
    """`value` to `digits` significant figures, without an exponent: 812, 81.2, 0.000412;
    a larger whole part is kept whole (1453, not 1450); None -> '-'."""
    if value is None:
        return "-"
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    if abs(value) >= 10 ** digits:
        return f"{value:.0f}"
    rounded = float(f"{value:.{digits}g}")  # 9.996 -> 10.0: the decimals follow the rounded value
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:.{decimals}f}"


def pct(share, digits: int = 3) -> str:
    """A share (0.453) as a percentage to `digits` significant figures: '45.3%'; None -> '-'."""
    return "-" if share is None else sig(100 * share, digits) + "%"


def fmt_s(seconds: float | None) -> str:
    """A duration as 4m05s or 1h02m; None (not known yet) -> '?'."""
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def grid(title: str, corner: str, rows: list, cols: list, cell, row_width: int, col_width: int) -> str:
    """`title`, a header line of `cols` under `corner`, then a line per row, cell(row, col)
    right-aligned; a column `col_width` wide, or wider where its label needs it."""
    width = {c: max(col_width, len(str(c)) + 2) for c in cols}
    lines = [title, f"{corner:<{row_width}}" + "".join(f"{c:>{width[c]}}" for c in cols)]
    lines += [f"{r:<{row_width}}" + "".join(f"{cell(r, c):>{width[c]}}" for c in cols) for r in rows]
    return "\n".join(lines)


def best_by(records: list, value: str, order) -> dict:
    """{op: its `ok` record of highest `value`}, ops in `order`: a run's headline, and the
    report's row of a GPU (bench_hbm's GB/s, bench_comm's busbw)."""
    best = {}
    for r in records:
        if r.get("status", "ok") == "ok" and r.get(value) is not None and (
                r["op"] not in best or r[value] > best[r["op"]][value]):
            best[r["op"]] = r
    return {op: best[op] for op in order if op in best}
