"""How far a forecast's range is widened, and how often such a range held, per kind of workload.

A forecast misses by different amounts on different work: on the guide's pair the long-context
(attention-bound) lengths missed by 4% and the right-sized 8K (dense-bound) rows by 14-16%.
One median error for all ranges would make the dense forecasts, where a purchase decision is
usually close, the overconfident ones. So the backtest's rows are sorted into kinds, by the
quadratic attention share of the baseline's FLOPs at that length (attention-bound from
ATTENTION_BOUND_SHARE) and by precision (a run's `PRECISION` setting, bf16 where a log has
none), and each kind's ranges are widened by the largest miss of the published pairs of that
kind: a range that would have held every other pair's figure, had the model's own range not.

Too few pairs of a kind (fewer than MIN_PAIRS) calibrate nothing: such a forecast is widened by
the largest miss of any pair, of any kind, and says it has too few pairs of its kind.
Coverage is counted in the backtest with the same rule, leaving the predicted pair out.
"""
from dataclasses import dataclass

from ..series import normalise_dtype

ATTENTION_BOUND_SHARE = 0.5   # more of the step's FLOPs in quadratic attention than in the rest
MIN_PAIRS = 3                 # pairs of a kind (other than the one predicted) that calibrate it


def precision_of(config: dict) -> str:
    """A run's training precision: its `PRECISION` setting normalised (bf16, fp8, fp4), bf16 without one."""
    value = (config or {}).get("PRECISION")
    return normalise_dtype(value) if value else "bf16"


def workload_kind(attn_flop_share: float | None, precision: str) -> str:
    """'attention-bound, bf16' or 'dense-bound, fp8': what a forecast's range is calibrated on."""
    bound = "attention-bound" if (attn_flop_share or 0.0) >= ATTENTION_BOUND_SHARE else "dense-bound"
    return f"{bound}, {precision}"


@dataclass(frozen=True)
class Calibration:
    """A kind's widening and its record: `pairs` of the kind calibrated it (too_few: fewer
    than MIN_PAIRS, so the largest miss of any pair did); `inside` of `figures` published
    figures of this kind fell inside their leave-one-pair-out range in the backtest."""
    kind: str
    widen: float
    pairs: int
    too_few: bool
    inside: int = 0
    figures: int = 0

    def words(self) -> str:
        """How sure, in words: the coverage of this kind in the backtest and what widened it."""
        held = (f"the published figure fell inside its range for {self.inside} of {self.figures} published "
                f"figures of this kind" if self.figures else "no published figure of this kind to check it on")
        if self.too_few:
            return (f"{held}; too few published pairs of this kind ({self.pairs}, fewer than {MIN_PAIRS}) to "
                    f"narrow the range: widened by the largest miss of any pair ({self.widen:.1%})")
        return f"{held}; widened by the largest miss of its {self.pairs} pairs ({self.widen:.1%})"


def pair_misses(rows: list, kind: str | None = None, leave_out: str | None = None) -> dict:
    """{pair: its largest absolute error} over backtest rows (of `kind`, without `leave_out`)."""
    out = {}
    for r in rows:
        if r.get("error") is None or r["pair"] == leave_out or (kind is not None and r["kind"] != kind):
            continue
        out[r["pair"]] = max(out.get(r["pair"], 0.0), abs(r["error"]))
    return out


def widening(rows: list, kind: str, leave_out: str | None = None) -> tuple[float, int, bool]:
    """(relative widening, pairs of the kind, too few) from the backtest rows, without the pair
    `leave_out` (the one being predicted)."""
    own = pair_misses(rows, kind, leave_out)
    if len(own) >= MIN_PAIRS:
        return max(own.values()), len(own), False
    anyone = pair_misses(rows, None, leave_out)
    return max(anyone.values(), default=0.0), len(own), True


def calibration(rows: list) -> dict:
    """{kind: Calibration} for forecasts on the page, from the backtest's rows (none of which
    is the workload forecast, so every pair counts), with each kind's backtest coverage."""
    out = {}
    for kind in sorted({r["kind"] for r in rows}):
        widen, pairs, too_few = widening(rows, kind)
        mine = [r for r in rows if r["kind"] == kind and r.get("published")]
        inside = sum(1 for r in mine if r["forecast_low"] <= r["published"] <= r["forecast_high"])
        out[kind] = Calibration(kind, widen, pairs, too_few, inside, len(mine))
    return out


def for_kind(calibrations: dict, kind: str) -> Calibration:
    """A kind's Calibration; a kind no published pair has is too few pairs, widened by the
    largest miss of any."""
    if kind in calibrations:
        return calibrations[kind]
    widest = max((c.widen for c in calibrations.values()), default=0.0)
    return Calibration(kind, widest, 0, True)
