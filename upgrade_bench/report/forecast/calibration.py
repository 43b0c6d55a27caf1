"""How a forecast is ranged from published pairs of other sources, and how often such ranges held.

The model (model.py) is physics: ratios of what bounds each part of a step. What it cannot
see shows as a miss on published pairs, and how far a pair moves decides how large that miss
can be. So a forecast belongs to a **group**: its pair's class and its step's kind.

Classes (`pair_class`): *same die* (one compute die, board power or memory differ: H100/H200,
B200/GB200, B300/GB300, MI300X/MI325X), *same-generation refresh* (another die
of one die family: B200 -> B300, GB200 -> GB300), *next generation* (the same vendor's next die family:
H100 -> B200), *cross-vendor* (another vendor's GPU and software stack), and *configuration
changed* (a published pair whose two runs differ in batch, parallelism or precision as well: what
the candidate allowed, not what the GPU did). Step kinds (`step_kind`): dense pre-training, MoE
pre-training, fine-tuning (SFT, LoRA).

A range is a split-conformal interval (Vovk et al., *Algorithmic Learning in a Random World*,
2005; Lei et al., *Distribution-Free Predictive Inference for Regression*, JASA 2018): from the
n pairs of the group (each pair's signed miss, log of published over the model's forecast, its
own median first, so a six-length sweep weighs as one pair), the lower and upper ends are the
misses of rank ceil((n + 1) * TAIL) from either end (the TAIL quantile of each side at level
ceil((n + 1) * TAIL) / n; all of them where n is below 1 / (1 - TAIL) - 1). Each side holds its
published figure with probability TAIL or more where pairs are exchangeable, so the range holds
2 * TAIL - 1 of them or more, and it is asymmetric: a forecast biased low on a class belongs in
its range, not in a correction of its middle (none is made). No end is nearer the middle than
the rounding published figures carry (MIN_HALF_WIDTH).

- a group with fewer than MIN_PAIRS pairs takes its class's pairs of every step kind, and a
  class with fewer takes every pair, and says so; except *same die*: one die moves least, every
  other class's misses are of larger moves, so it is ranged by the same-die pairs that exist,
  however few (said with their n);
- a pair across software releases (its two runs in different containers) ranges too: a buyer's
  new GPU comes with its own release as often as not, and a range must hold that as well; but not
  a same-die range, which is of one stack on both sides (issue 52: a same-die, same-stack pair).

*Same die* is ranged symmetrically (`symmetric_half_width`): a pair of one die is read either way
(A -> B and B -> A forecast each other's inverse, a tested property of the model), so its misses
are exchangeable with their negatives, and the range is the middle plus or minus the miss of rank
ceil((n + 1) * COVERAGE) among the n pairs' absolute misses (split-conformal on |miss|, COVERAGE =
2 * TAIL - 1, the two-sided share the asymmetric rule holds too). Where n is too small for that
rank (n < 4), no distribution-free range exists, and the Student-t prediction interval of a
normal miss of mean zero is used instead: t(n, TAIL) times the misses' root mean square, wider the
fewer the pairs (Student, Biometrika 1908; Geisser, Predictive Inference, 1993, ch. 2). A pair
across releases of one vendor's stack (of any class but cross-vendor) is widened by how far a
release moves one GPU's figure of one configuration (`backtest.release_half`, from the other
sources' tables), not ranged as if one stack.

*Next generation* is ranged by the next-generation pairs of other sources, their configuration
changed or not, but for an MoE step's change: a new architecture moves a stack's kernels (young
libraries, other kernel choices) by more than a refresh does, and the publishers change their
recipe with the generation; a dense step's change is modelled where it can be (the pipeline
bubble), so such a pair's miss is the move's and what is left of the recipe's, at least as wide as
the move alone needs (issue 52, sixth pass; a refresh's pairs, forecast low, ranged the guide's
H200 -> B200 before, and held 7 of its 9 figures).

*Configuration changed* is ranged by its own pairs where there are enough; where too few, by the
range of every pair (most of them like for like), and an MoE step's is widened either way by
RECONFIG_ALLOWANCE: its expert layout (EP, the fabric its all-to-all crosses) and micro-batch
move its throughput by more than the model can see. A dense step's change of pipeline layout is
modelled (knobs.py: the pipeline bubble each side pays) and its change of TP, CP or FSDP stays
within one NVLink domain's traffic; its range is every pair's, not widened (issue 52, fifth pass:
the allowance's own evidence, the guide's change of ZeRO-3, CPU offload and checkpointing, is a
change of memory regime no published pair of a dense step makes).

In the backtest the pairs of the source predicted are left out (leave one source out): no
source's range uses its own figures, and each group's coverage there is what a forecast states.
"""
import math
import statistics
from dataclasses import dataclass, replace

from . import model as forecast_model
from ..read.series import normalise_dtype

ATTENTION_BOUND_SHARE = 0.5   # more of the step's FLOPs in quadratic attention than in the rest
TAIL = 0.9                    # each end holds 90% of figures on its side: the range 80% (issue 52's target)
# A conformal end at TAIL needs rank ceil((n + 1) * TAIL) <= n: 9 pairs at least; fewer give only
# their extremes, which hold a new pair (n - 1) / (n + 1) of the time (3 pairs: half), so a group
# with fewer is ranged by its class's, then every pair's.
MIN_PAIRS = 9
MIN_HALF_WIDTH = 0.01         # published figures are whole TFLOPS: no range is narrower than 1%
COVERAGE = 2 * TAIL - 1       # the two-sided share a range holds: 80%
# Student's t distribution, its TAIL (0.90) quantile by degrees of freedom (NIST/SEMATECH e-Handbook
# of Statistical Methods, 1.3.6.7.2, "Critical values of the Student's t distribution"): the
# two-sided 80% prediction interval of symmetric_half_width where too few pairs give no conformal rank.
T_TAIL = {1: 3.078, 2: 1.886, 3: 1.638, 4: 1.533, 5: 1.476, 6: 1.440, 7: 1.415, 8: 1.397}
# How far a configuration change alone moves one GPU pair's speedup: the guide's H200 -> B200 at
# 8K gained 1.19x in its long-context configuration (ZeRO-3, checkpointing, CPU offload) and 1.69x
# right-sized (ZeRO-2, neither) on the same GPUs and model (Machine Learning Engineering Open Book,
# insights/when-to-upgrade-gpus): 1.69 / 1.19 = 1.42x. A published pair whose configuration changed
# with the GPU may carry that much beyond what the GPUs do, either way (read from the other side,
# the same change loses it), so its class's range is widened by it on both ends.
RECONFIG_ALLOWANCE = math.log(1.69 / 1.19)

SAME_DIE, REFRESH, NEXT_GENERATION, CROSS_VENDOR, CONFIG_CHANGED = (
    "same die", "same-generation refresh", "next generation", "cross-vendor", "configuration changed")
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
    if base.die and base.die == cand.die:
        return SAME_DIE
    return REFRESH if forecast_model.move_of(base, cand) == forecast_model.SAME_FAMILY else NEXT_GENERATION


def group_of(klass: str, step: str) -> str:
    """'same die, dense': the pairs a forecast is ranged on."""
    return f"{klass}, {step}"


def symmetric_half_width(values: list) -> tuple:
    """(half width in log, how) of a range symmetric about the middle from `values` (signed
    misses, non-empty): the absolute miss of rank ceil((n + 1) * COVERAGE) where n allows it
    (split-conformal on |miss|), else the Student-t prediction bound t(n, TAIL) x RMS of a mean-zero
    normal miss (n degrees of freedom: the mean is zero by symmetry, not estimated)."""
    n = len(values)
    rank = math.ceil((n + 1) * COVERAGE)
    if rank <= n:
        return sorted(abs(v) for v in values)[rank - 1], f"the absolute miss of rank {rank} of {n}"
    rms = math.sqrt(sum(v * v for v in values) / n)
    t = T_TAIL.get(n, T_TAIL[max(T_TAIL)])
    return t * rms, f"Student-t: {t:g} x their RMS miss {rms:.1%} (too few for a conformal rank)"


def conformal_ends(values: list) -> tuple:
    """(low, high): the misses of rank ceil((n + 1) * TAIL) from the bottom and from the top of
    `values` (n of them, non-empty); the extremes where that rank passes n."""
    xs = sorted(values)
    rank = min(math.ceil((len(xs) + 1) * TAIL), len(xs))
    return xs[len(xs) - rank], xs[rank - 1]


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
    """A group's range, in log(published / model forecast): from `low` (<= 0) to `high` (>= 0)
    around the model's middle. `misses` are the pairs that ranged it (`fallback`: '' its own
    group's, 'class' its class's of every step kind, 'all' every pair); `inside` of `figures`
    published figures of this group fell inside their leave-one-source-out range in the backtest;
    `stack` the stack prior's words where one was applied (stacks.py) and `stack_half` the log
    width it adds on either side."""
    group: str
    low: float
    high: float
    misses: tuple = ()
    fallback: str = ""
    inside: int = 0
    figures: int = 0
    kind: str = ""                   # the forecast's kind of workload, for the page's words
    error: float | None = None       # the group's median absolute error in the backtest
    peak_error: float | None = None  # the naive peak ratio's there
    stack: str = ""
    stack_half: float = 0.0
    extra: str = ""                  # a further widening's words (a release change, a configuration change)
    extra_half: float = 0.0          # its log width on either side
    how: str = ""                    # how the ends were set (symmetric_half_width's words), where not asymmetric

    @property
    def widen(self) -> float:
        """The log width added on either side of the fitted ends: stack prior and any allowance."""
        return self.stack_half + self.extra_half

    @property
    def sources(self) -> tuple:
        return tuple(sorted({m.source for m in self.misses}))

    def apply(self, tflops: float) -> tuple:
        """(mid, low, high) TFLOPS of a model forecast `tflops`."""
        return (tflops, tflops * math.exp(self.low - self.widen), tflops * math.exp(self.high + self.widen))

    def step_ms(self, step_ms: float) -> tuple:
        """(mid, fast, slow) step time of a model forecast `step_ms` (the inverse of apply)."""
        return (step_ms, step_ms * math.exp(-self.high - self.widen),
                step_ms * math.exp(-self.low + self.widen))

    def half_width(self) -> float:
        """Half the range's width over its middle."""
        return (math.exp(self.high + self.widen) - math.exp(self.low - self.widen)) / 2

    def ends_words(self) -> str:
        """'-6% to +12%': the range's ends around the middle."""
        return f"{math.exp(self.low - self.widen) - 1:+.0%} to {math.exp(self.high + self.widen) - 1:+.0%}"

    def words(self) -> str:
        """How sure, in words: the group's backtest coverage and what ranged it."""
        held = (f"the published figure fell inside its range for {self.inside} of {self.figures} published "
                f"figures of its group ({self.group}) in the leave-one-source-out backtest" if self.figures
                else f"no published figure of its group ({self.group}) to check it on")
        whose = {"": f"its {len(self.misses)} pairs", "class": f"too few pairs of its group: the {len(self.misses)} "
                 "of its class, every step kind", "all": f"too few pairs of its class: every pair "
                 f"({len(self.misses)})"}[self.fallback]
        if self.how:
            whose += f", symmetric: {self.how}"
        elif len(self.misses) < MIN_PAIRS:
            whose += (f" (only {len(self.misses)}: their extremes, which hold a new pair about "
                      f"{(len(self.misses) - 1) / (len(self.misses) + 1):.0%} of the time)")
        fitted = f"ranged {self.ends_words()} on {whose} of {', '.join(self.sources) or 'no source'}"
        for widening in (self.extra, self.stack):
            if widening:
                fitted += f"; {widening}"
        naive = ""
        if self.error is not None and self.peak_error is not None and self.error >= self.peak_error:
            naive = (f"; in that backtest the naive peak ratio did as well or better for this group "
                     f"({self.peak_error:.1%} median error against the forecast's {self.error:.1%})")
        return f"{held}; {fitted}{naive}"


def pair_misses(rows: list, leave_out_source: str | None = None, same_stack: bool = False) -> list:
    """[Miss] of every pair of backtest rows (without a pair with `leave_out_source` on either side:
    a pair of two sources holds both; with `same_stack`, without a pair across software releases),
    each pair's median."""
    found, about = {}, {}
    for r in rows:
        if (not r.get("published") or not r.get("model_forecast")
                or leave_out_source in (r.get("source_key"), r.get("base_source_key", r.get("source_key")))
                or (same_stack and r.get("software_differs"))):
            continue
        found.setdefault(r["pair"], []).append(math.log(r["published"] / r["model_forecast"]))
        about[r["pair"]] = r
    return [Miss(p, about[p]["source_key"], about[p]["base_gpu"], about[p]["cand_gpu"], statistics.median(v))
            for p, v in found.items()]


WIDE = math.log(2)  # no pair at all: a factor of 2 either way, said as such


def fit(rows: list, group: str, leave_out_source: str | None = None, kind: str = "") -> Calibration:
    """A group's Calibration from backtest rows, without `leave_out_source`'s pairs: its own pairs,
    too few: its class's, too few: every pair."""
    klass, step = group.rsplit(", ", 1)
    misses = pair_misses(rows, leave_out_source, same_stack=klass == SAME_DIE)
    if klass == SAME_DIE:
        misses = one_per_mirror(misses)
    by_pair = {r["pair"]: r for r in rows}

    def ranged_as(r) -> tuple:
        """(group, class) a pair ranges: its own; for a next-generation forecast, a next-generation
        move's whose recipe changed with it too, but for an MoE step's: the publishers change their
        recipe with the generation, and a dense step's change is modelled where it can be (the
        pipeline bubble, knobs.py), so its miss is the move's plus what is left of the recipe's"""
        if klass == NEXT_GENERATION and r.get("move") == NEXT_GENERATION and (
                r["pair_class"] == NEXT_GENERATION or r["step"] != MOE):
            return group_of(NEXT_GENERATION, r["step"]), NEXT_GENERATION
        return r["group"], r["pair_class"]
    where = {p: ranged_as(r) for p, r in by_pair.items()}
    for fallback, chosen in (("", [m for m in misses if where[m.pair][0] == group]),
                             ("class", [m for m in misses if where[m.pair][1] == klass]),
                             ("all", misses)):
        if len(chosen) >= MIN_PAIRS or fallback == "all" or (fallback == "class" and klass == SAME_DIE and chosen):
            break
    if not chosen:
        return Calibration(group, -WIDE, WIDE, (), "all", kind=kind)
    how = ""
    if klass == SAME_DIE and fallback != "all":
        half, how = symmetric_half_width([m.value for m in chosen])
        low, high = -half, half
    else:
        low, high = conformal_ends([m.value for m in chosen])
    extra, extra_half = "", 0.0
    changed = (sum(1 for m in chosen if by_pair[m.pair]["pair_class"] == CONFIG_CHANGED)
               if klass == NEXT_GENERATION else 0)
    if changed:
        extra = (f"{changed} of those pairs with the publisher's recipe changed with the GPU (of the changes only a "
                 "pipeline bubble is modelled)")
    if klass == CONFIG_CHANGED and fallback == "all" and step == MOE:
        # ranged by pairs whose configuration did not change, for a change the model does not see
        extra, extra_half = (f"widened x{math.exp(RECONFIG_ALLOWANCE):.2f} either way for an MoE step's configuration "
                             "change (the guide's H200 -> B200: 1.19x long-context, 1.69x right-sized)"), RECONFIG_ALLOWANCE
    return Calibration(group, min(low, -MIN_HALF_WIDTH), max(high, MIN_HALF_WIDTH), tuple(chosen), fallback,
                       kind=kind, extra=extra, extra_half=extra_half, how=how)


def one_per_mirror(misses: list) -> list:
    """[Miss] with a pair and its mirror (the same two runs, each forecast from the other) as one:
    their mean, the mirror's miss negated. A same-die pair is read either way (reciprocity), so its
    two readings are one observation of the pair, not two."""
    out, at = [], {}
    for m in misses:
        base, _, cand = m.pair.partition(" -> ")  # "base run -> candidate run"
        if cand and (cand, base) in at:
            i = at[(cand, base)]
            out[i] = replace(out[i], value=(out[i].value - m.value) / 2)
        else:
            at[(base, cand)] = len(out)
            out.append(m)
    return out


CLASSES = (SAME_DIE, REFRESH, NEXT_GENERATION, CROSS_VENDOR, CONFIG_CHANGED)
STEPS = (DENSE, MOE, FINE_TUNING)


def calibration(rows: list) -> dict:
    """{group: Calibration} for forecasts on the page, from every backtest row (none of them is
    the workload forecast), each with its leave-one-source-out coverage in the backtest; every
    class and step kind's group, with no published figure of its own where none has one (its
    class's pairs range it, said so)."""
    out = {}
    groups = {r["group"] for r in rows} | ({group_of(k, s) for k in CLASSES for s in STEPS} if rows else set())
    for group in sorted(groups):
        cal = fit(rows, group)
        mine = [r for r in rows if r["group"] == group and r.get("published")]
        inside = sum(1 for r in mine if r["forecast_low"] <= r["published"] <= r["forecast_high"])
        errors = [abs(r["error"]) for r in mine if r.get("error") is not None]
        peak = [abs(r["naive_peak"] / r["published"] - 1) for r in mine if r.get("naive_peak")]
        out[group] = replace(cal, inside=inside, figures=len(mine),
                             error=statistics.median(errors) if errors else None,
                             peak_error=statistics.median(peak) if peak else None)
    return out


def for_group(calibrations: dict, group: str, kind: str) -> Calibration:
    """The Calibration of a forecast in `group`; a group no published pair has: its class's
    widest, else the widest of all, said as too few pairs."""
    if group in calibrations:
        return replace(calibrations[group], kind=kind)
    if not calibrations:
        return Calibration(group, -WIDE, WIDE, (), "all", kind=kind)
    klass = group.rsplit(", ", 1)[0]
    same = [c for g, c in calibrations.items() if g.rsplit(", ", 1)[0] == klass]
    widest = max(same or calibrations.values(), key=lambda c: c.high - c.low)
    return replace(widest, group=group, fallback="class" if same else "all", kind=kind, inside=0, figures=0,
                   error=None, peak_error=None)
