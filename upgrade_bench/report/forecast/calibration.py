"""How a forecast is ranged (and, rarely, corrected) from published pairs of other sources, and how
often such ranges held.

The model (model.py) is physics: ratios of what bounds each part of a step. What it cannot
see shows as a miss on published pairs, and how far a pair moves decides how large that miss
can be. So a forecast belongs to a **group**: its pair's class and its step's kind.

Classes (`pair_class`): *same die* (one compute die, board power or memory differ: H100/H200,
B200/GB200, B300/GB300, MI300X/MI325X), *same vendor, another die* (a refresh or the next
generation: B200 -> B300, H100 -> B200), *cross-vendor* (another vendor's GPU and software
stack), and *configuration changed* (a published pair whose two runs differ in batch,
parallelism or precision as well: what the candidate allowed, not what the GPU did). Step kinds
(`step_kind`): dense pre-training, MoE pre-training, fine-tuning (SFT, LoRA).

- a range is the group's RANGE_QUANTILE absolute miss (log of published over the model's
  forecast; each pair's own median first, so a six-length sweep weighs as one pair) either way
  around the forecast; never narrower than the rounding published figures carry (MIN_HALF_WIDTH);
  a group with fewer than MIN_PAIRS pairs takes its class's pairs of every step kind, and a class
  with fewer takes every pair, and says so;
- a correction (the median miss) applies only to a pair of the group it was fitted on and only
  where those pairs were of the same two GPUs (either way round: a miss of B -> A counts
  negated for A -> B, so a correction never makes the two directions disagree),
  MIN_CORRECTION_PAIRS of them at least; otherwise the middle is the model's own;
- a pair across software releases (its two runs in different containers) is scored but ranges
  and corrects nothing: its miss is the software's as much as the GPU's.

In the backtest the pairs of the source predicted are left out (leave one source out): no
source's range or correction uses its own figures, and each group's coverage there is what a
forecast states.
"""
import math
import statistics
from dataclasses import dataclass, replace

from ..read.series import normalise_dtype

ATTENTION_BOUND_SHARE = 0.5   # more of the step's FLOPs in quadratic attention than in the rest
MIN_PAIRS = 3                 # pairs (outside the source predicted) that range a group
MIN_CORRECTION_PAIRS = 3      # pairs of the same two GPUs that correct one
RANGE_QUANTILE = 0.9          # the pairs' absolute misses a range spans: about 90% of them
MIN_HALF_WIDTH = 0.01         # published figures are whole TFLOPS: no range is narrower than 1%

SAME_DIE, OTHER_DIE, CROSS_VENDOR, CONFIG_CHANGED = ("same die", "same vendor, another die", "cross-vendor",
                                                     "configuration changed")
DENSE, MOE, FINE_TUNING = "dense", "MoE", "fine-tuning"
MOE_MODELS = ("qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss", "deepseek", "mixtral")  # published models with experts


def precision_of(config: dict) -> str:
    """A run's training precision: its `PRECISION` setting normalised (bf16, fp8, fp4), bf16 without one."""
    value = (config or {}).get("PRECISION")
    return normalise_dtype(value) if value else "bf16"


def workload_kind(attn_flop_share: float | None, precision: str) -> str:
    """'attention-bound, bf16' or 'dense-bound, fp8': the kind of work a forecast is of."""
    bound = "attention-bound" if (attn_flop_share or 0.0) >= ATTENTION_BOUND_SHARE else "dense-bound"
    return f"{bound}, {precision}"


def step_kind(config: dict) -> str:
    """'fine-tuning' (a TASK such as SFT or LoRA), 'MoE' (a model with experts) or 'dense'."""
    config = config or {}
    if config.get("TASK"):
        return FINE_TUNING
    model = str(config.get("MODEL") or "").lower()
    if config.get("NUM_EXPERTS") or any(model.startswith(m) for m in MOE_MODELS):
        return MOE
    return DENSE


def pair_class(base, cand, config_changed: bool = False) -> str:
    """The class of a baseline/candidate pair of GPUSpecs (module docstring)."""
    if config_changed:
        return CONFIG_CHANGED
    if base.vendor and cand.vendor and base.vendor != cand.vendor:
        return CROSS_VENDOR
    return SAME_DIE if base.die and base.die == cand.die else OTHER_DIE


def group_of(klass: str, step: str) -> str:
    """'same die, dense': the pairs a forecast is ranged on."""
    return f"{klass}, {step}"


def _quantile(values: list, q: float) -> float:
    """Linear-interpolated quantile of a non-empty list."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Miss:
    """One published pair's median log(published / model forecast)."""
    pair: str
    source: str
    base: str       # GPU table names
    cand: str
    value: float


@dataclass(frozen=True)
class Calibration:
    """A group's range, in log(published / model forecast): +-`half` around the middle, moved by
    `shift` (the correction of `gpus`' pairs; 0 where none applies). `misses` are the pairs that
    ranged it (`fallback`: '' its own group's, 'class' its class's of every step kind, 'all'
    every pair); `inside` of `figures` published figures of this group fell inside their
    leave-one-source-out range in the backtest; `stack` the stack prior's words where one was
    applied (stacks.py) and `stack_half` the half width it added."""
    group: str
    half: float
    misses: tuple = ()
    fallback: str = ""
    shift: float = 0.0
    gpus: tuple = ()
    inside: int = 0
    figures: int = 0
    kind: str = ""                   # the forecast's kind of workload, for the page's words
    error: float | None = None       # the group's median absolute error in the backtest
    peak_error: float | None = None  # the naive peak ratio's there
    stack: str = ""
    stack_half: float = 0.0

    @property
    def sources(self) -> tuple:
        return tuple(sorted({m.source for m in self.misses}))

    @property
    def width(self) -> float:
        """The range's half width in log: the group's, widened by a stack prior's spread."""
        return self.half + self.stack_half

    def apply(self, tflops: float) -> tuple:
        """(mid, low, high) TFLOPS of a model forecast `tflops`."""
        return (tflops * math.exp(self.shift), tflops * math.exp(self.shift - self.width),
                tflops * math.exp(self.shift + self.width))

    def step_ms(self, step_ms: float) -> tuple:
        """(mid, fast, slow) step time of a model forecast `step_ms` (the inverse of apply)."""
        return (step_ms * math.exp(-self.shift), step_ms * math.exp(-self.shift - self.width),
                step_ms * math.exp(-self.shift + self.width))

    def half_width(self) -> float:
        """The range's half width over its middle."""
        return (math.exp(self.width) - math.exp(-self.width)) / 2

    def for_pair(self, base: str, cand: str) -> "Calibration":
        """This group's Calibration for a forecast of `cand` from `base`: corrected only by pairs of
        these two GPUs (a miss of cand -> base negated), MIN_CORRECTION_PAIRS of them at least."""
        own = [m.value if (m.base, m.cand) == (base, cand) else -m.value for m in self.misses
               if {m.base, m.cand} == {base, cand} and base != cand]
        if self.fallback or len(own) < MIN_CORRECTION_PAIRS:
            return replace(self, shift=0.0, gpus=())
        return replace(self, shift=statistics.median(own), gpus=(base, cand))

    def words(self) -> str:
        """How sure, in words: the group's backtest coverage, what ranged it, any correction."""
        held = (f"the published figure fell inside its range for {self.inside} of {self.figures} published "
                f"figures of its group ({self.group}) in the leave-one-source-out backtest" if self.figures
                else f"no published figure of its group ({self.group}) to check it on")
        whose = {"": f"its {len(self.misses)} pairs", "class": f"too few pairs of its group: the {len(self.misses)} "
                 "of its class, every step kind", "all": f"too few pairs of its class: every pair "
                 f"({len(self.misses)})"}[self.fallback]
        fitted = f"ranged +-{self.half_width():.0%} on {whose} of {', '.join(self.sources) or 'no source'}"
        fitted += (f", corrected x{math.exp(self.shift):.2f} on its pairs of {' and '.join(self.gpus)}" if self.gpus
                   else ", not corrected (no correction was fitted on pairs of these two GPUs)")
        if self.stack:
            fitted += f"; {self.stack}"
        naive = ""
        if self.error is not None and self.peak_error is not None and self.error >= self.peak_error:
            naive = (f"; in that backtest the naive peak ratio did as well or better for this group "
                     f"({self.peak_error:.1%} median error against the forecast's {self.error:.1%})")
        return f"{held}; {fitted}{naive}"


def pair_misses(rows: list, leave_out_source: str | None = None) -> list:
    """[Miss] of every pair of backtest rows (without `leave_out_source`'s, without a pair across
    software releases), each pair's median."""
    found, about = {}, {}
    for r in rows:
        if (not r.get("published") or not r.get("model_forecast") or r.get("source_key") == leave_out_source
                or r.get("software_differs")):
            continue
        found.setdefault(r["pair"], []).append(math.log(r["published"] / r["model_forecast"]))
        about[r["pair"]] = r
    return [Miss(p, about[p]["source_key"], about[p]["base_gpu"], about[p]["cand_gpu"], statistics.median(v))
            for p, v in found.items()]


def fit(rows: list, group: str, leave_out_source: str | None = None, kind: str = "") -> Calibration:
    """A group's Calibration from backtest rows, without `leave_out_source`'s pairs: its own pairs,
    too few: its class's, too few: every pair."""
    misses = pair_misses(rows, leave_out_source)
    where = {r["pair"]: (r["group"], r["pair_class"]) for r in rows}
    klass = group.rsplit(", ", 1)[0]
    for fallback, chosen in (("", [m for m in misses if where[m.pair][0] == group]),
                             ("class", [m for m in misses if where[m.pair][1] == klass]),
                             ("all", misses)):
        if len(chosen) >= MIN_PAIRS or fallback == "all":
            break
    if not chosen:
        return Calibration(group, math.log(2), (), "all", kind=kind)
    half = max(_quantile([abs(m.value) for m in chosen], RANGE_QUANTILE), MIN_HALF_WIDTH)
    return Calibration(group, half, tuple(chosen), fallback, kind=kind)


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
        out[group] = replace(cal, inside=inside, figures=len(mine),
                             error=statistics.median(errors) if errors else None,
                             peak_error=statistics.median(peak) if peak else None)
    return out


def for_group(calibrations: dict, group: str, kind: str, base: str = "", cand: str = "") -> Calibration:
    """The Calibration of a forecast of `cand` from `base` in `group`; a group no published pair
    has: its class's widest, else the widest of all, said as too few pairs."""
    if group in calibrations:
        return replace(calibrations[group], kind=kind).for_pair(base, cand)
    if not calibrations:
        return Calibration(group, math.log(2), (), "all", kind=kind)
    klass = group.rsplit(", ", 1)[0]
    same = [c for g, c in calibrations.items() if g.rsplit(", ", 1)[0] == klass]
    widest = max(same or calibrations.values(), key=lambda c: c.half)
    return Calibration(group, widest.half, widest.misses, "class" if same else "all", kind=kind)
