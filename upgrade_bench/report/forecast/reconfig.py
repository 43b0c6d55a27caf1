"""The reconfigured forecast: what the candidate's memory lets the baseline's workload drop.

A like-for-like forecast keeps the baseline's configuration. A bigger GPU is often bought to
change it: the guide's B200 holds what the H200 needed recomputation and CPU offload for, and
published runs on GPUs with more memory raise the micro-batch. So beside it, for each length,
the configurations planned from the baseline's own (activation checkpointing off, a micro-batch
of 2 or 4) whose memory estimate fits the candidate's HBM, each forecast from the baseline's
own step split, and the configurations the baseline's GPU measured for the same workload
(another ZeRO stage, no offload, ...) whose measured peak fits, each forecast from its own run;
the best one (most tokens a second) is shown, labelled with what it changed and its memory
estimate, and whether the baseline's own HBM holds it too (then it is a configuration change
the baseline could make, not the candidate's gift).

Memory, per rank (the guide: peak memory is a property of the model and its sharding, the same
on both GPUs):
- with checkpointing, the series' own peaks give the activations: their least-squares slope in
  tokens per step (the guide's 12.6 GiB + 0.00043 GiB/token line is this fit of its sweep);
  a micro-batch of k holds k times those activations;
- without checkpointing every layer keeps what its backward reads (`no_checkpoint_gib_per_token`,
  the count of Korthikanti et al., Reducing Activation Recomputation in Large Transformer
  Models, 2022, with FlashAttention and a SwiGLU MLP): those replace the checkpointed ones.
A plan fits where its estimate stays within MEMORY_HEADROOM of the HBM.

Time, on the baseline's parts (series.series_parts) before the ratios scale them: a
micro-batch of k does k times the attention and dense work, the host and fixed parts once a
step (the optimizer, ZeRO's gathers); checkpointing off removes the recomputed forward: the
dense part's 8/6 (forecast_model.CHECKPOINT_DENSE_HARDWARE_PER_MODEL) and attention's 4.5/3.5.
"""
import json
import statistics
from dataclasses import dataclass, replace

from . import calibration, model as forecast_model, series as forecasts
from ...hardware import gpus
from ...models import architecture
from ...paths import REPO
from ..read.series import Series
from ..compare.verdict import tokens_per_s_per_gpu

GIB = 2**30
# The guide's H200 topped out at 124.5 of its 141 GiB (88%): the allocator's cache and
# fragmentation take the rest. A plan must fit in this share of the candidate's HBM.
MEMORY_HEADROOM = 0.9
BATCH_FACTORS = (1, 2, 4)
# fwd+bwd of attention is 3.5 forward units (backward 2.5x forward); recomputation adds one.
ATTENTION_UNITS, ATTENTION_UNITS_RECOMPUTED = 3.5, 4.5
PER_STEP_BOUNDS = ("host", "fixed", "comm")  # parts paid once a step, whatever its tokens
BF16_BYTES = 2


# What a reconfiguration may change, in words for each value; and what it must keep to be the
# same workload (the model, its cut, the GPUs, the precision, the documents).
RECONFIG_WORDS = {"GRAD_CHECKPOINT": lambda v: "ckpt " + ("on" if v else "off"),
                  "OFFLOAD_OPTIMIZER": lambda v: "offload " + ("on" if v else "off"),
                  "ZERO_STAGE": lambda v: f"ZeRO-{v}", "BATCH_SIZE": lambda v: f"batch {v}",
                  "USE_LIGER": lambda v: "Liger " + ("on" if v else "off")}
SAME_WORKLOAD = ("MODEL", "NUM_LAYERS", "NUM_EXPERTS", "world_size", "PRECISION", "PACKED_DOC_LEN", "ATTN_BACKEND")


@dataclass(frozen=True)
class Plan:
    changes: tuple        # ("ckpt off", "batch 2")
    peak_gib: float       # the memory estimate per rank (a measured configuration's: its peak)
    batch_factor: int     # tokens per step over the baseline's
    checkpoint_off: bool
    measured: str = ""    # the baseline's series that ran this configuration, where one did

    @property
    def label(self) -> str:
        return "reconfigured: " + ", ".join(self.changes) + (f" (measured as {self.measured})" if self.measured else "")


@dataclass(frozen=True)
class Reconfigured:
    seq_len: int
    plan: Plan
    fits_baseline: bool   # the baseline's own HBM holds it too
    tflops: tuple         # (mid, low, high) TFLOPS/GPU forecast
    speedup: tuple        # (mid, low, high) tokens a second over the baseline as measured
    memory_how: str


def model_spec(config: dict):
    """The ModelSpec of a series' MODEL where it names a shipped preset (configs/<name>.json), cut
    to its NUM_LAYERS; None otherwise (no activation count without the model's shapes)."""
    presets = {p.stem: p for p in (REPO / "configs").glob("*.json")}
    path = presets.get(str(config.get("MODEL")))  # a name of the folder's, never a path a log spells
    if path is None:
        return None
    spec = architecture.describe(json.loads(path.read_text()))
    layers = config.get("NUM_LAYERS")
    return (replace(spec, layers=spec.layers[:layers]) if isinstance(layers, int) and 0 < layers < len(spec.layers)
            else spec)


def no_checkpoint_gib_per_token(spec) -> float:
    """GiB per token per rank a step without checkpointing keeps for its backward, bf16: per
    layer its two norms' and two projections' inputs (4 hidden), the attention output (1
    hidden), q, k and v, and the MLP's gate, up and their product (3 of its intermediate width,
    from its active weights: 3 * hidden * intermediate)."""
    elements = 0
    for layer in spec.layers:
        qkv = layer.mixer.params / spec.hidden - spec.hidden  # q, k, v widths: the mixer's weights less o_proj
        elements += 5 * spec.hidden + qkv + layer.mlp.active_params / spec.hidden
    return elements * BF16_BYTES / GIB


def activation_slope_gib(points: dict) -> float | None:
    """GiB of peak memory per token of a step, the least-squares slope of a series' peaks over
    its tokens per step (seq_len x batch); None with fewer than 2 lengths."""
    xy = [(n * (p.get("batch_size") or 1), p["peak_mem_gib"]) for n, p in sorted(points.items())
          if p.get("peak_mem_gib")]
    if len(xy) < 2:
        return None
    mx, my = statistics.mean(x for x, _ in xy), statistics.mean(y for _, y in xy)
    sxx = sum((x - mx) ** 2 for x, _ in xy)
    slope = sum((x - mx) * (y - my) for x, y in xy) / sxx if sxx else None
    return slope if slope and slope > 0 else None


def plans(point: dict, config: dict, slope_gib: float, no_ckpt_gib: float | None) -> list:
    """Every plan for one length: micro-batch 1, 2 or 4, with checkpointing as it was and (where
    the run checkpointed and the model's shapes are known) off; the unchanged one left out."""
    tokens = point["seq_len"] * (point.get("batch_size") or 1)
    checkpointed_gib = slope_gib * tokens
    out = []
    for k in BATCH_FACTORS:
        batch = [f"batch {k * (point.get('batch_size') or 1)}"] if k > 1 else []
        if k > 1:
            out.append(Plan(tuple(batch), point["peak_mem_gib"] + (k - 1) * checkpointed_gib, k, False))
        if config.get("GRAD_CHECKPOINT") and no_ckpt_gib:
            out.append(Plan(("ckpt off", *batch), point["peak_mem_gib"] - checkpointed_gib
                            + k * no_ckpt_gib * tokens, k, True))
    return out


def planned_parts(parts: dict, plan: Plan) -> dict:
    """The baseline's {bound: ms} of one step reconfigured by `plan`, on the baseline's GPU."""
    out = {}
    for bound, ms in parts.items():
        if bound in PER_STEP_BOUNDS:
            out[bound] = ms
            continue
        if plan.checkpoint_off:
            ms *= (ATTENTION_UNITS / ATTENTION_UNITS_RECOMPUTED if bound == "attention"
                   else 1 / forecast_model.CHECKPOINT_DENSE_HARDWARE_PER_MODEL)
        out[bound] = ms * plan.batch_factor
    return out


def alternatives_of(s: Series, series: list) -> list:
    """The baseline GPU's other measured series of the same workload (SAME_WORKLOAD) in another
    configuration (RECONFIG_WORDS' keys): [(series, (changes...))]."""
    out = []
    for t in series:
        if t is s or t.reference or t.gpu != s.gpu or any(t.settings(k) != s.settings(k) for k in SAME_WORKLOAD):
            continue
        changes = tuple(words(t.settings(k)[0]) for k, words in RECONFIG_WORDS.items()
                        if t.settings(k) != s.settings(k) and len(t.settings(k)) == 1)
        if changes:
            out.append((t, changes))
    return out


def measured_options(s: Series, fc, calibrations: dict, alternatives: list) -> dict:
    """{seq_len: [(Plan, speedup over the baseline as measured (mid, low, high))]} of the measured
    alternatives whose peak at that length fits the candidate, each forecast like its own series."""
    out = {}
    cand_spec = gpus.lookup(fc.candidate)
    for t, changes in alternatives:
        for row in forecasts.forecast_series(t, fc.candidate, {}, calibrations).rows:
            mine, theirs = s.points.get(row.seq_len), t.points[row.seq_len]
            peak = theirs.get("peak_mem_gib")
            if not mine or not peak or peak > MEMORY_HEADROOM * cand_spec.hbm_gib:
                continue
            if not (tokens_per_s_per_gpu(theirs) and tokens_per_s_per_gpu(mine)):
                continue
            per_token = tokens_per_s_per_gpu(theirs) / tokens_per_s_per_gpu(mine)
            plan = Plan(changes, peak, 1, False, t.label)
            out.setdefault(row.seq_len, []).append((plan, tuple(per_token * x for x in row.speedup)))
    return out


def reconfigure(s: Series, fc: "forecasts.SeriesForecast", calibrations: dict, alternatives: list = ()) -> list:
    """[Reconfigured] of a series' forecast `fc`: per length, among the plans from its own
    configuration and its GPU's measured `alternatives` (alternatives_of) whose memory fits the
    candidate, the one with the most tokens a second, where it beats the like-for-like forecast."""
    slope = activation_slope_gib(s.points)
    spec = model_spec(s.config)
    base_spec, cand_spec = gpus.lookup(s.gpu), gpus.lookup(fc.candidate)
    no_ckpt = no_checkpoint_gib_per_token(spec) if spec else None
    precision = calibration.precision_of(s.config)
    group = calibration.group_of(calibration.CONFIG_CHANGED, calibration.step_kind(s.config))
    parts_at = forecasts.series_parts(s)
    measured = measured_options(s, fc, calibrations, alternatives)
    out = []
    for row in fc.rows:
        point = s.points[row.seq_len]
        best = max(measured.get(row.seq_len, []), key=lambda option: option[1][0], default=None)
        planned = (plans(point, s.config, slope, no_ckpt) if slope and point.get("peak_mem_gib")
                   and row.seq_len in parts_at else [])
        parts = parts_at[row.seq_len][0] if planned else {}
        for plan in planned:
            if plan.peak_gib > MEMORY_HEADROOM * cand_spec.hbm_gib:
                continue
            new = planned_parts(parts, plan)
            gemm, checkpointed = forecasts.gemm_tflop(point, bool(s.config.get("GRAD_CHECKPOINT")))
            r = forecasts.ratios_at(s.gpu, fc.candidate, row.seq_len, new, gemm * plan.batch_factor,
                                    checkpointed and not plan.checkpoint_off, s.backend, precision=precision)
            cal = calibration.for_group(calibrations, group, row.calibration.kind)
            mid, fast, slow = cal.step_ms(forecast_model.scale(new, r).step_ms)
            per_token = tuple(point["step_ms"] * plan.batch_factor / ms for ms in (mid, slow, fast))
            if best is None or per_token[0] > best[1][0]:
                best = (plan, per_token)
        if best and best[1][0] > row.speedup[0]:
            plan, speedup = best
            out.append(Reconfigured(row.seq_len, plan, plan.peak_gib <= MEMORY_HEADROOM * base_spec.hbm_gib,
                                    tuple(point["tflops_per_gpu"] * x for x in speedup), speedup,
                                    memory_words(plan, slope, spec)))
    return out


def forecast_reconfigured(s: Series, cand: str, prices: dict, calibrations: dict, measured: Series | None = None,
                          attention: tuple = ({}, ""), comm=None, node=None,
                          alternatives: list = ()) -> "forecasts.SeriesForecast":
    """series.forecast_series's forecast with its reconfigured forecast (reconfigure) filled in."""
    fc = forecasts.forecast_series(s, cand, prices, calibrations, measured, attention, comm, node)
    fc.reconfigured = reconfigure(s, fc, calibrations, alternatives)
    return fc


def memory_words(plan: Plan, slope_gib: float | None, spec) -> str:
    """How a plan's memory was estimated, in words."""
    if plan.measured:
        return f"measured: the peak of {plan.measured} at this length (memory is the model's and its sharding's)"
    how = f"the series' peak, its activations at {slope_gib:.5f} GiB per token (its own peaks' slope)"
    if plan.checkpoint_off:
        how += (f" replaced by {no_checkpoint_gib_per_token(spec):.5f} GiB per token without checkpointing "
                "(every layer's saved inputs, bf16)")
    return how + (f", times {plan.batch_factor} for the micro-batch" if plan.batch_factor > 1 else "")
