"""Numbers in the text tables the scripts print: significant figures, not fixed decimals.

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
