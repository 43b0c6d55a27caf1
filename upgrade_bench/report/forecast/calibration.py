"""How a forecast is corrected and ranged from published pairs of other sources, and how often
such ranges held.

The model (model.py) is physics: ratios of what bounds each part of a step. What it
cannot see (the maturity of a new architecture's software, the configuration a publisher
changes with the GPU) shows as a systematic miss on published pairs. So a forecast is set
beside the published pairs of its group, a group being the kind of move (a new architecture,
or a part of the baseline's own die family: another board power or platform) and the kind of
workload (attention-bound where quadratic attention is half the step's FLOPs or more, else
dense-bound):

- its middle moves by the median miss of the group's pairs (each pair's own median first, so a
  six-length sweep weighs as one pair);
- its range runs from the group's RANGE_QUANTILES low to high miss around that, so a range
  holds about 90% of the pairs it was fitted on (the target on pairs never seen: 80%); never
  narrower than the rounding the published figures carry (MIN_HALF_WIDTH);
- a pair across software releases (its two runs in different containers) is scored but
  calibrates nothing: its miss is the software's as much as the GPU's (the guide: the stack
  alone moves results by double-digit percent).

In the backtest the pairs of the source predicted are left out (leave one source out): no
source's range or correction uses its own figures, and each group's coverage there is what a
forecast states. A group with fewer than MIN_PAIRS pairs is not corrected: its range is the
RANGE_QUANTILES high absolute miss of every pair of the other sources, either way, and it says so.
"""
import math
import statistics
from dataclasses import dataclass

from ..read.series import normalise_dtype

ATTENTION_BOUND_SHARE = 0.5   # more of the step's FLOPs in quadratic attention than in the rest
MIN_PAIRS = 3                 # pairs of a group (outside the source predicted) that calibrate it
RANGE_QUANTILES = (0.05, 0.95)  # the pairs' misses a range spans: about 90% of them
MIN_HALF_WIDTH = 0.01         # published figures are whole TFLOPS: no range is narrower than 1%


def precision_of(config: dict) -> str:
    """A run's training precision: its `PRECISION` setting normalised (bf16, fp8, fp4), bf16 without one."""
    value = (config or {}).get("PRECISION")
    return normalise_dtype(value) if value else "bf16"


def workload_kind(attn_flop_share: float | None, precision: str) -> str:
    """'attention-bound, bf16' or 'dense-bound, fp8': the kind of work a forecast is of."""
    bound = "attention-bound" if (attn_flop_share or 0.0) >= ATTENTION_BOUND_SHARE else "dense-bound"
    return f"{bound}, {precision}"


def group_of(move: str, kind: str) -> str:
    """'new architecture, dense-bound': the pairs a forecast is calibrated on."""
    return f"{move}, {kind.split(',')[0]}"


def _quantile(values: list, q: float) -> float:
    """Linear-interpolated quantile of a non-empty list."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Calibration:
    """A group's correction and range, in log(published / model forecast): `shift` the median
    pair's, (`low`, `high`) the RANGE_QUANTILES of the pairs' misses; `pairs` pairs of
    `sources` fitted it (too_few: fewer than MIN_PAIRS of the group, so every pair of those
    sources did); `inside` of `figures` published figures of this group fell inside their
    leave-one-source-out range in the backtest."""
    group: str
    shift: float
    low: float
    high: float
    pairs: int
    too_few: bool
    sources: tuple = ()
    inside: int = 0
    figures: int = 0
    kind: str = ""   # the forecast's kind of workload, for the page's words
    error: float | None = None       # the group's median absolute error in the backtest
    peak_error: float | None = None  # the naive peak ratio's there

    def apply(self, tflops: float) -> tuple:
        """(mid, low, high) TFLOPS of a model forecast `tflops`."""
        return (tflops * math.exp(self.shift), tflops * math.exp(self.shift + self.low),
                tflops * math.exp(self.shift + self.high))

    def step_ms(self, step_ms: float) -> tuple:
        """(mid, fast, slow) step time of a model forecast `step_ms` (the inverse of apply)."""
        return (step_ms * math.exp(-self.shift), step_ms * math.exp(-self.shift - self.high),
                step_ms * math.exp(-self.shift - self.low))

    def half_width(self) -> float:
        """The range's half width over its middle."""
        return (math.exp(self.high) - math.exp(self.low)) / 2

    def words(self) -> str:
        """How sure, in words: the group's backtest coverage, its correction and range."""
        held = (f"the published figure fell inside its range for {self.inside} of {self.figures} published "
                f"figures of its group ({self.group}) in the leave-one-source-out backtest" if self.figures
                else f"no published figure of its group ({self.group}) to check it on")
        fitted = (f"too few published pairs of this group ({self.pairs}, fewer than {MIN_PAIRS}): not corrected, "
                  f"ranged on every pair" if self.too_few else f"corrected and ranged on its {self.pairs} pairs")
        naive = ""
        if self.error is not None and self.peak_error is not None and self.error >= self.peak_error:
            naive = (f"; in that backtest the naive peak ratio did as well or better for this group "
                     f"({self.peak_error:.1%} median error against the forecast's {self.error:.1%})")
        return (f"{held}; {fitted} of {', '.join(self.sources) or 'no source'} "
                f"(x{math.exp(self.shift):.2f}, range {math.exp(self.low):.2f}x to {math.exp(self.high):.2f}x "
                f"of that){naive}")


def pair_misses(rows: list, group: str | None = None, leave_out_source: str | None = None) -> dict:
    """{pair: its median log(published / model forecast)} over backtest rows (of `group`,
    without `leave_out_source`'s)."""
    found = {}
    for r in rows:
        if (not r.get("published") or not r.get("model_forecast") or r.get("source_key") == leave_out_source
                or r.get("software_differs")):
            continue
        if group is not None and r["group"] != group:
            continue
        found.setdefault(r["pair"], []).append(math.log(r["published"] / r["model_forecast"]))
    return {pair: statistics.median(v) for pair, v in found.items()}


def fit(rows: list, group: str, leave_out_source: str | None = None, kind: str = "") -> Calibration:
    """A group's Calibration from backtest rows, without `leave_out_source`'s pairs; too few of
    the group: every pair of the other sources."""
    own = pair_misses(rows, group, leave_out_source)
    too_few = len(own) < MIN_PAIRS
    misses = pair_misses(rows, None, leave_out_source) if too_few else own
    sources = tuple(sorted({r["source_key"] for r in rows if r["pair"] in misses}))
    if not misses:
        return Calibration(group, 0.0, -math.log(2), math.log(2), 0, True, (), kind=kind)
    if too_few:  # no correction from other kinds of pairs: the model's middle, ranged by their misses either way
        shift, width = 0.0, _quantile([abs(m) for m in misses.values()], RANGE_QUANTILES[1])
        low, high = -max(width, MIN_HALF_WIDTH), max(width, MIN_HALF_WIDTH)
    else:
        shift = statistics.median(misses.values())
        resid = [m - shift for m in misses.values()]
        low = min(_quantile(resid, RANGE_QUANTILES[0]), -MIN_HALF_WIDTH)
        high = max(_quantile(resid, RANGE_QUANTILES[1]), MIN_HALF_WIDTH)
    return Calibration(group, shift, low, high, len(own), too_few, sources, kind=kind)


def calibration(rows: list) -> dict:
    """{group: Calibration} for forecasts on the page, from every backtest row (none of them is
    the workload forecast), each with its leave-one-source-out coverage in the backtest."""
    out = {}
    for group in sorted({r["group"] for r in rows}):
        cal = fit(rows, group)
        mine = [r for r in rows if r["group"] == group and r.get("published")]
        inside = sum(1 for r in mine if r["forecast_low"] <= r["published"] <= r["forecast_high"])
        errors = [abs(r["error"]) for r in mine if r.get("error") is not None]
        peak = [abs(r["naive_peak"] / r["published"] - 1) for r in mine if r.get("naive_peak")]
        out[group] = Calibration(**{**cal.__dict__, "inside": inside, "figures": len(mine),
                                    "error": statistics.median(errors) if errors else None,
                                    "peak_error": statistics.median(peak) if peak else None})
    return out


def for_group(calibrations: dict, move: str, kind: str) -> Calibration:
    """The Calibration of a forecast's move and kind; a group no published pair has: the widest
    of the others, said as too few pairs."""
    group = group_of(move, kind)
    if group in calibrations:
        return Calibration(**{**calibrations[group].__dict__, "kind": kind})
    if not calibrations:
        return Calibration(group, 0.0, -math.log(2), math.log(2), 0, True, (), kind=kind)
    widest = max(calibrations.values(), key=lambda c: c.high - c.low)
    return Calibration(group, 0.0, widest.low, widest.high, 0, True, widest.sources, kind=kind)
