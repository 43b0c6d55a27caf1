"""How the report writes a number and a table: one home for every markdown writer."""
import math

from ...log.field_types import MAX_NUMBER
from .escape import md_cell


def fmt(value, kind: str = "num") -> str:
    """A number as the report shows it; missing and non-finite values as '-'."""
    if value is None or value == [] or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, float) and abs(value) > MAX_NUMBER:  # a broken log's ratio: not its 300 digits
        scaled = value * 100 if kind == "pct" else value
        return {"pct": f"{scaled:.3g}%", "x": f"{scaled:.3g}x", "usd": f"${scaled:.3g}"}.get(kind, f"{scaled:.3g}")
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "usd":  # three decimals, or two significant digits where that would print $0.000
        digits = 3 if value <= 0 else max(3, 1 - math.floor(math.log10(value)))
        return f"${value:.{digits}f}" if value < 10 else f"${value:,.2f}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def md_table(headers: list, rows: list) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
