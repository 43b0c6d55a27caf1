"""Stack priors: the share of a GPU's dense peak (model FLOPs utilisation, MFU) each vendor's
training stack reaches, per precision and step kind, from the vendors' and projects' own
published training tables and this project's measurements.

The forecast's ratios carry the baseline's software efficiency over to the candidate. That holds
where the buyer's own stack moves with them (one vendor: the same torch, DeepSpeed, NeMo). Across
vendors it does not: the candidate runs another vendor's stack, whose share of its peak is its
own. There the two stacks' priors set the step (`cross_stack`): the candidate's speedup is the
pair's MAMF ratio times the candidate's prior (its vendor's stack) over the baseline's (the stack
it ran: this project's for a page's logs, a published run's source's in the backtest), each as a
share of its own figures' GPUs' MAMF (Prior.mamf_share), not the model's parts, which are the
baseline vendor's kernels; and the range is widened by both priors' spreads. A stack
with no figure of the precision and step kind takes its vendor's stacks' figures of that kind
together, and a fine-tuning step the stack's dense steps' (`prior_for`); a prior of fewer than
MIN_FIGURES figures moves nothing and carries the table's widest spread, not its own (one figure:
none); with no figure at all, no factor and the widest spread, said so.

MLPerf Training results are not here and never fitted: they are the forecast's independent check.

Sources (the figures as published; MFU over the part's dense peak of `hardware/gpus.py`):
- NVIDIA NeMo / Megatron-Bridge: every run of published/runs.py (NVIDIA's Megatron-Bridge and
  NeMo Framework performance summaries, cited there), its model TFLOP/s/GPU over the peak.
- torchtitan: docs/performance.md of github.com/pytorch/torchtitan at eaea6f6 ("1D Llama 3.1 8B
  model training on 8 or 128 H100 GPUs without Float8 achieves 33% to 39% MFU", H100 at its
  500 W power limit; Llama 3 8B on 64 A100, FSDP2: 56.3% and 58.2% MFU).
- this project: results/h100-node-10/node (H100 80GB HBM3, 8K, bf16: 386.6 TFLOPS/GPU) and
  results/h200-precision-7/node (H200, 8K: 424.1; 16K: 504.2; 32K: 546.1), the right-sized
  8-layer Llama-3.1-8B on torch + DeepSpeed, over the 989 TFLOPS bf16 peak.
- AMD ROCm (Primus / Megatron-LM): the MI325X runs of published/runs.py (AMD_PRIMUS: Primus's
  validation table, whose 8-node figures are those of AMD's ROCm Performance Results page), their
  tokens/s/GPU at NVIDIA's FLOP count of the same model over the MI325X's dense peak. A stack with
  no figure of a precision and step kind takes its vendor's stacks' figures of it (prior_for), or
  with none, no factor and the table's widest spread.

The backtest takes each prior without the figures of the source it predicts (leave one source
out): an AMD candidate of AMD's own table is forecast with no ROCm prior at all.
"""
import math
import statistics
from dataclasses import dataclass, replace

from ...hardware import gpus
from ..published import measured, pairs as published_pairs, runs as published_runs
from . import calibration, model as forecast_model

NEMO, TORCHTITAN, PROJECT, ROCM = ("NVIDIA NeMo / Megatron-Bridge", "torchtitan", "this project (torch + DeepSpeed)",
                                   "AMD ROCm (Primus / Megatron-LM)")
VENDOR_STACK = {"nvidia": NEMO, "amd": ROCM}  # the stack a candidate of a vendor is assumed to train with
STACK_VENDOR = {NEMO: "nvidia", TORCHTITAN: "nvidia", PROJECT: "nvidia", ROCM: "amd"}
VENDOR_NAME = {"nvidia": "NVIDIA", "amd": "AMD"}
# the stack each published source's runs trained with; the guide's scripts are this project's stack
# (transformers and DeepSpeed), as is every log of this suite (a page's baseline)
SOURCE_STACK = {published_runs.MEGATRON_BRIDGE: NEMO, published_runs.NEMO_FRAMEWORK: NEMO,
                published_runs.AMD_PRIMUS: ROCM, published_pairs.GUIDE: PROJECT, measured.PROJECT: PROJECT}
# A prior of fewer figures has no spread to speak of (one figure: none at all): it takes the widest
# spread of the priors that have this many, rather than claim it is exact.
MIN_FIGURES = 3

TORCHTITAN_SOURCE = ("torchtitan docs/performance.md, https://github.com/pytorch/torchtitan/blob/"
                     "eaea6f6a2fa940f03a10906be1df3489cf30af85/docs/performance.md")
PROJECT_SOURCE = "results/h100-node-10/node and results/h200-precision-7/node (measured by this project)"
# (stack, GPU, precision, step kind, MFU, source, backtest source key) published outside the
# performance summaries
OTHER_FIGURES = (
    (TORCHTITAN, "H100 SXM", "bf16", calibration.DENSE, 0.33, TORCHTITAN_SOURCE, "torchtitan"),
    (TORCHTITAN, "H100 SXM", "bf16", calibration.DENSE, 0.39, TORCHTITAN_SOURCE, "torchtitan"),
    (TORCHTITAN, "A100 SXM", "bf16", calibration.DENSE, 0.563, TORCHTITAN_SOURCE, "torchtitan"),
    (TORCHTITAN, "A100 SXM", "bf16", calibration.DENSE, 0.582, TORCHTITAN_SOURCE, "torchtitan"),
    (PROJECT, "H100 SXM", "bf16", calibration.DENSE, 386.6 / 989, PROJECT_SOURCE, "project"),
    (PROJECT, "H200 SXM", "bf16", calibration.DENSE, 424.1 / 989, PROJECT_SOURCE, "project"),
    (PROJECT, "H200 SXM", "bf16", calibration.DENSE, 504.2 / 989, PROJECT_SOURCE, "project"),
    (PROJECT, "H200 SXM", "bf16", calibration.DENSE, 546.1 / 989, PROJECT_SOURCE, "project"),
)


@dataclass(frozen=True)
class Prior:
    """A stack's MFU at a precision and step kind: the median of its figures, their range."""
    stack: str
    precision: str
    step: str
    mid: float
    low: float
    high: float
    figures: int
    mamf_share: float | None = None  # the median of its figures over their GPUs' sustained matmul rate (MAMF)
    stand_in: str = ""               # what it borrowed: another stack's figures, another step kind's

    @property
    def spread(self) -> float:
        """Half the log range of its figures: how far one of them may sit from another."""
        return math.log(self.high / self.low) / 2

    def words(self) -> str:
        spread = f"{self.low:.0%}-{self.high:.0%}, " if self.figures > 1 else ""
        return (f"{self.stack} {self.precision} {self.step}: MFU {self.mid:.0%} ({spread}{self.figures} "
                f"figure{'s' if self.figures != 1 else ''})")


def figures() -> list:
    """[(stack, GPU, precision, step kind, MFU, source, source key)]: the published runs' (each
    source's stack, SOURCE_STACK) and OTHER_FIGURES."""
    out = []
    for source, runs in published_runs.RUNS.items():
        for run in runs:
            run_id, system, model, precision = run[0], run[2], run[3], run[5]
            spec = gpus.lookup(published_runs.DEVICE[source].format(system))
            peak = spec.peak_tflops(calibration.precision_of({"PRECISION": precision}))
            config = {"MODEL": model, "TASK": published_runs.FINE_TUNING.get(run_id)}
            if peak:
                out.append((SOURCE_STACK[source], spec.name, calibration.precision_of({"PRECISION": precision}),
                            calibration.step_kind(config), published_runs.tflops_of(run)[0] / peak,
                            published_runs.SOURCES[source], source))
    return out + list(OTHER_FIGURES)


def prior_of(stack: str, precision: str, step: str, found: list) -> Prior:
    """The Prior of `found` [(MFU, GPU table name)]: their median MFU, its range, and the median of
    each over its GPU's MAMF-to-peak ratio where every GPU has a sustained MAMF of the precision."""
    mfus = [mfu for mfu, _gpu in found]
    shares = []
    for mfu, gpu in found:
        spec = gpus.lookup(gpu)
        mamf = forecast_model.sustained_mamf(spec, precision)[0]
        shares.append(mfu * spec.peak_tflops(precision) / mamf if mamf and spec.peak_tflops(precision) else None)
    return Prior(stack, precision, step, statistics.median(mfus), min(mfus), max(mfus), len(mfus),
                 statistics.median(shares) if all(shares) else None)


def priors(leave_out_source: str | None = None) -> dict:
    """{(stack, precision, step kind): Prior} over figures(), without `leave_out_source`'s."""
    found = {}
    for stack, gpu, precision, step, mfu, _source, key in figures():
        if key != leave_out_source:
            found.setdefault((stack, precision, step), []).append((mfu, gpu))
    return {key: prior_of(*key, v) for key, v in found.items()}


def widest_spread(leave_out_source: str | None = None) -> float:
    """The widest spread of the priors of MIN_FIGURES figures or more (without `leave_out_source`'s
    figures); the whole table's where none has that many."""
    thick = [p.spread for p in priors(leave_out_source).values() if p.figures >= MIN_FIGURES]
    return max(thick) if thick else max((p.spread for p in priors().values()), default=0.0)


def spread_of(p: Prior, step: str, leave_out_source: str | None = None) -> float:
    """A prior's half log range as one of `step`'s; the table's widest where it has too few figures
    to show one, or was measured on another step kind (its spread is of those steps)."""
    if p.figures >= MIN_FIGURES and p.step == step:
        return p.spread
    return max(p.spread, widest_spread(leave_out_source))


def prior_for(stack: str, precision: str, step: str, leave_out_source: str | None = None) -> Prior | None:
    """The Prior a side training with `stack` is given, its `stand_in` saying what it borrowed: the
    stack's own prior of the precision and step kind; else its vendor's stacks' figures of that
    kind together; for a fine-tuning step without either, the same of the dense pre-training step
    (NVIDIA's published SFT and LoRA steps sit at their dense steps' MFU: 36.5% against 37.1% at
    fp8); None where none is published."""
    table = priors(leave_out_source)
    vendor = STACK_VENDOR[stack]
    for kind in ((step, calibration.DENSE) if step == calibration.FINE_TUNING else (step,)):
        other_kind = "" if kind == step else f"its {kind} steps' for a {step} step"
        if (stack, precision, kind) in table:
            return replace(table[(stack, precision, kind)], stand_in=f"{stack}: {other_kind}" if other_kind else "")
        pooled = [(mfu, gpu) for s, gpu, prec, k, mfu, _src, key in figures()
                  if STACK_VENDOR[s] == vendor and prec == precision and k == kind and key != leave_out_source]
        if pooled:
            name = f"{VENDOR_NAME[vendor]}'s published stacks"
            words = "; ".join(w for w in (f"none of {stack} ({precision}, {kind}): {name} together", other_kind) if w)
            return replace(prior_of(name, precision, kind, pooled), stand_in=words)
    return None


def own_stack(spec) -> str:
    """The stack a page's baseline (this suite's logs) ran on `spec`: this project's, whose figures are
    of NVIDIA parts; on another vendor's part its vendor's stack stands for it."""
    return PROJECT if spec.vendor == STACK_VENDOR[PROJECT] else VENDOR_STACK[spec.vendor]


@dataclass(frozen=True)
class Crossing:
    """What the two stacks' priors do to a forecast across vendors (cross_stack)."""
    factor: float               # on the model's forecast TFLOPS
    log_half_width: float       # what the priors' spreads add to its range, in log
    words: str
    share_ratio: float = 1.0    # the candidate stack's share of its rate over the baseline stack's

    @property
    def allowance(self) -> float:
        """The most the stacks add to the hardware's ceiling: their spreads and, where the
        candidate's stack is the better, their shares' ratio (the MAMF ratio in `factor` is
        hardware, bounded by the ceiling already)."""
        return math.exp(self.log_half_width) * max(self.share_ratio, 1.0)


SAME_STACK = Crossing(1.0, 0.0, "")


def cross_stack(base, cand, precision: str, step: str, leave_out_source: str | None = None,
                base_stack: str | None = None, *, model_speedup: float) -> Crossing:
    """The Crossing where the baseline and candidate GPUs (GPUSpecs) are of different vendors;
    SAME_STACK otherwise.
    The candidate's stack is its vendor's (VENDOR_STACK), the baseline's `base_stack` (the stack it
    ran: own_stack for a page's logs, a published run's source's; its vendor's where not said),
    each prior found by prior_for without `leave_out_source`'s figures (the backtest's source
    predicted) and adding its spread (spread_of). Where both priors have MIN_FIGURES figures they set
    the whole step (stack_rates): the candidate's speedup is the pair's MAMF ratio times the candidate
    stack's share of its GPUs' MAMF over the baseline stack's (where a GPU or prior has no MAMF: the
    peak ratio times their MFUs' ratio), and the factor is that over `model_speedup`, the model's
    speedup of this step: every kernel of the candidate's step is the other vendor's, so the
    baseline's split into parts (the rest of its dense time at the HBM ratio) does not carry, while
    the priors, whole steps of each stack, do. With fewer, none (the middle unmoved)."""
    if not (base.vendor and cand.vendor) or base.vendor == cand.vendor:
        return SAME_STACK
    stacks = (base_stack or VENDOR_STACK[base.vendor], VENDOR_STACK[cand.vendor])
    mine = [prior_for(stack, precision, step, leave_out_source) for stack in stacks]
    if not all(mine):
        missing = " and ".join(stack for stack, p in zip(stacks, mine) if not p)
        half = (widest_spread(leave_out_source) * sum(1 for p in mine if not p)
                + sum(spread_of(p, step, leave_out_source) for p in mine if p))
        return Crossing(1.0, half, f"stack prior: none published here for {missing} ({precision}, {step}); the model's "
                           f"middle, ranged wider by the widest prior spread of the table")
    pb, pc = mine
    half = spread_of(pb, step, leave_out_source) + spread_of(pc, step, leave_out_source)
    borrowed = "; ".join(dict.fromkeys(p.stand_in for p in (pb, pc) if p.stand_in))
    said = f"{pc.words()} over {pb.words()}" + (f" ({borrowed})" if borrowed else "")
    few = [p for p in (pb, pc) if p.figures < MIN_FIGURES]
    if few:  # a figure or two of another workload: not enough to move the middle, only to widen the range
        return Crossing(1.0, half, f"stack prior not applied: {said}; {' and '.join(p.stack for p in few)}: "
                        f"under {MIN_FIGURES} figures, the model's middle, ranged wider by the table's widest spread")
    rate, shares, on = stack_rates(base, cand, precision, pb, pc)
    factor = rate * shares / model_speedup
    how = (f"; the step at the {on} ratio {rate:.2f} times the stacks' shares of it, x{shares:.2f}, "
           f"not the model's parts ({model_speedup:.2f}x): every kernel is the other vendor's")
    return Crossing(factor, half, f"stack prior applied, x{factor:.2f} on the model: {said}{how}", shares)


def stack_rates(base, cand, precision: str, pb: Prior, pc: Prior) -> tuple:
    """(the pair's reference-rate ratio, the candidate stack's share of its rate over the baseline
    stack's, 'MAMF' or '<precision> peak'): each stack's share of its own GPUs' sustained matmul
    rate (MAMF, Prior.mamf_share) where both GPUs and both priors have one, else its MFU, on the
    peak ratio."""
    sustained = [forecast_model.sustained_mamf(spec, precision)[0] for spec in (base, cand)]
    if all(sustained) and pb.mamf_share and pc.mamf_share:
        return sustained[1] / sustained[0], pc.mamf_share / pb.mamf_share, "MAMF"
    what = forecast_model.peak_precision(base, cand, precision)
    return cand.peak_tflops(what) / base.peak_tflops(what), pc.mid / pb.mid, f"{what} peak"
