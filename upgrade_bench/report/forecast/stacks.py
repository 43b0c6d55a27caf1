"""Stack priors: the share of a GPU's dense peak (model FLOPs utilisation, MFU) each vendor's
training stack reaches, per precision and step kind, from the vendors' and projects' own
published training tables and this project's measurements.

The forecast's ratios carry the baseline's software efficiency over to the candidate. That holds
where the buyer's own stack moves with them (one vendor: the same torch, DeepSpeed, NeMo). Across
vendors it does not: the candidate runs another vendor's stack, whose share of its peak is its
own. There the forecast applies the two stacks' priors (`cross_stack`): the candidate's MFU
prior over the baseline's, over what the MAMF ratio the model used already says of the two
parts' matmul efficiency; and widens the range by both priors' spreads. A stack with no published
figure of a kind gets no factor and the table's widest spread, said so.

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
  no figure of a precision and step kind is ranged by the table's widest spread instead.

The backtest takes each prior without the figures of the source it predicts (leave one source
out): an AMD candidate of AMD's own table is forecast with no ROCm prior at all.
"""
import math
import statistics
from dataclasses import dataclass

from ...hardware import gpus
from ..published import runs as published_runs
from . import calibration, model as forecast_model

NEMO, TORCHTITAN, PROJECT, ROCM = ("NVIDIA NeMo / Megatron-Bridge", "torchtitan", "this project (torch + DeepSpeed)",
                                   "AMD ROCm (Primus / Megatron-LM)")
VENDOR_STACK = {"nvidia": NEMO, "amd": ROCM}  # the stack a candidate of a vendor is assumed to train with
SOURCE_STACK = {published_runs.MEGATRON_BRIDGE: NEMO, published_runs.NEMO_FRAMEWORK: NEMO,
                published_runs.AMD_PRIMUS: ROCM}  # the stack each published source's runs trained with

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

    @property
    def spread(self) -> float:
        """Half the log range of its figures: how far one of them may sit from another."""
        return math.log(self.high / self.low) / 2

    def words(self) -> str:
        return (f"{self.stack} {self.precision} {self.step}: MFU {self.mid:.0%} ({self.low:.0%}-{self.high:.0%}, "
                f"{self.figures} published figures)")


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


def priors(leave_out_source: str | None = None) -> dict:
    """{(stack, precision, step kind): Prior} over figures(), without `leave_out_source`'s."""
    found = {}
    for stack, _gpu, precision, step, mfu, _source, key in figures():
        if key != leave_out_source:
            found.setdefault((stack, precision, step), []).append(mfu)
    return {key: Prior(*key, statistics.median(v), min(v), max(v), len(v)) for key, v in found.items()}


def widest_spread() -> float:
    return max(p.spread for p in priors().values())


def cross_stack(base, cand, precision: str, step: str, leave_out_source: str | None = None) -> tuple:
    """(factor on the candidate's forecast TFLOPS, log half width it adds, words) where the
    baseline and candidate GPUs (GPUSpecs) are of different vendors; (1.0, 0.0, '') otherwise.
    The factor: the candidate stack's MFU prior over the baseline's, over what the model's MAMF
    ratio already carries (the candidate's MAMF/peak over the baseline's, where both have one); priors without
    `leave_out_source`'s figures (the backtest's source predicted)."""
    if not (base.vendor and cand.vendor) or base.vendor == cand.vendor:
        return 1.0, 0.0, ""
    table = priors(leave_out_source)
    mine = [table.get((VENDOR_STACK[spec.vendor], precision, step)) for spec in (base, cand)]
    if not all(mine):
        missing = " and ".join(VENDOR_STACK[spec.vendor] for spec, p in zip((base, cand), mine) if not p)
        half = widest_spread() * sum(1 for p in mine if not p) + sum(p.spread for p in mine if p)
        return 1.0, half, (f"stack prior: none published here for {missing} ({precision}, {step}); the model's "
                           f"middle, ranged wider by the widest prior spread of the table")
    pb, pc = mine
    # the model's matmul ratio is the sustained (MAMF) ratio only where both parts have one; else the
    # peak and bandwidth ratios, which carry no efficiency of either part
    sustained = [forecast_model.sustained_mamf(spec, precision)[0] for spec in (base, cand)]
    efficiency = ([m / spec.peak_tflops(precision) for m, spec in zip(sustained, (base, cand))]
                  if all(sustained) else [1.0, 1.0])
    factor = (pc.mid / pb.mid) / (efficiency[1] / efficiency[0])
    return factor, pb.spread + pc.spread, (f"stack prior applied, x{factor:.2f}: {pc.words()} over {pb.words()}, "
                                           "over the MAMF-to-peak ratio the model already used")
