"""The peak GPU memory (max reserved, worst rank) a training point will reach, estimated before it
runs: what the plans mark each point by against the GPU's memory (sweep/fit.py), and what a
forecast says a length its baseline ran out of memory at needs (report/forecast/series.py).
Pure arithmetic on a model's description, below both.

Two moments of a step can peak, and the higher one is the point's peak:

- the optimizer step: the training state (state_bytes: weights, gradients, Adam's state
  on the GPU) and, with the optimizer on the GPU, STEP_BYTES_PER_PARAM more of its partition
  (DeepSpeed's fp32 gradient copy and flat buffers). No activation is alive then, so it does not
  grow with the sequence;
- the backward pass: the state, DeepSpeed's buffers (BUFFER_GIB, by ZeRO stage) and the saved
  activations, linear in tokens (FlashAttention-class kernels keep no s^2 scores): without
  checkpointing every layer's, ACT_BYTES_PER_WIDTH per token for each unit of width (hidden size
  plus the MLP's active intermediate size); with it, CKPT_BYTES_PER_HIDDEN per hidden unit of
  each layer's input and one layer recomputed in full.

Calibrated on the project's own measured peaks (tests/test_peak_memory.py walks every committed
summary record it covers and holds each within ESTIMATE_ERROR): 8-layer, 2-layer and 1-layer
cuts of Llama-3.1-8B on one H200 (ZeRO-2, no offload, no checkpointing, Liger, 1K-32K, bf16 and
fp8) and the whole 8B on two H200s (ZeRO-3, CPU AdamW offload, checkpointing, Liger, 8K-128K).
It covers dense attention models (`covers`): an MoE's routing and a linear mixer's chunked
state add activations it does not count (Qwen3-30B-A3B's 4-layer cut reached 138 GiB at 32K
where this would say 70), so for those it gives the optimizer step's figure as a floor. Every
calibration run trained on DeepSpeed: under FSDP2 (its gathered bf16 weights, its own buffers,
or on one GPU none of them) the backward is not calibrated and the estimate is FSDP2's optimizer
step, a floor: FSDP2_STATE_BYTES_PER_PARAM, sharded (one H100 at 8K: DeepSpeed 62.5 GiB, FSDP2
sharded 66.0 eager and 62.4 compiled, results/h100-stacks-11; on one GPU's single-device path 49.8
compiled, 44.7 in float8, results/h100-stacks-12; the floor says 41.7).
"""
from dataclasses import dataclass

from ..faults import BadInput
from . import cuts, layers, model

GIB = 2**30
# Mixed-precision AdamW keeps 16 bytes per parameter (ZeRO, Rajbhandari et al. 2020): bf16
# weights (2) and gradients (2), fp32 master weights (4) and the two Adam moments (8).
STATE_BYTES_PER_PARAM = 16
OPTIMIZER_BYTES_PER_PARAM = 12  # master weights and moments: what OFFLOAD_OPTIMIZER moves to the host
# FSDP2 at its optimizer step: fp32 weights (the master copy), fp32 gradients and the two moments,
# all sharded; its bf16 weights are gathered per block and freed after the backward.
FSDP2_STATE_BYTES_PER_PARAM = 16
# Within this share of every committed peak it covers (the test's bound): a plan's margin.
ESTIMATE_ERROR = 0.05
# The optimizer step on the GPU: 24 bytes a parameter in all on one H200 (8, 2 and 1 layers of the
# 8B: 62.54, 33.26, 28.38 GiB for 2.80B, 1.49B, 1.27B parameters, the same 24.0 to 0.1%), 16 of
# them the state: 8 more of the optimizer's partition.
STEP_BYTES_PER_PARAM = 8
# The backward pass's activations without checkpointing, per token and unit of width (h + i):
# the 8-layer cut (h 4096, i 14336) grew 18.56 GiB from 16K to 32K (65.81 -> 84.37 GiB).
ACT_BYTES_PER_WIDTH = 18.56 * GIB / 16384 / 8 / (4096 + 14336)
# DeepSpeed's buffers beside the state in the backward pass (its gradient buckets): ZeRO-2 on
# one GPU, 65.81 GiB at 16K less 16 bytes a parameter and the activations above; ZeRO-3 with
# the optimizer offloaded, two GPUs, from the same line as CKPT_BYTES_PER_HIDDEN.
BUFFER_GIB = {2: 65.81 - 16 * 2.7955 * 1e9 / GIB - 16384 * 8 * ACT_BYTES_PER_WIDTH * (4096 + 14336) / GIB,
              3: 0.64}
# With checkpointing, per token and hidden unit of each layer (its saved input, bf16, and what
# DeepSpeed keeps beside it): the whole 8B on two H200s grew 4.65e-4 GiB a token (19.7 GiB at 8K,
# 30.6 at 32K, 76.6 at 128K), less one layer recomputed in full.
CKPT_BYTES_PER_HIDDEN = (4.65e-4 * GIB - ACT_BYTES_PER_WIDTH * (4096 + 14336)) / (32 * 4096)


def state_bytes(params: int, zero_stage: int, world: int, offload: bool) -> tuple[float, float]:
    """(bytes per GPU, bytes on the host) the weights, gradients and optimizer state need
    before any activation: ZeRO-1 shards the optimizer, ZeRO-2 the gradients too, ZeRO-3
    the weights too; an offloaded optimizer lives on the host (all ranks of a node share it).
    DeepSpeed's words (ENGINE=fsdp2's state: FSDP2_STATE_BYTES_PER_PARAM)."""
    p, w = float(params), max(1, world)
    optimizer = 0.0 if offload else OPTIMIZER_BYTES_PER_PARAM * p
    if zero_stage >= 1:
        optimizer /= w
    grads = 2 * p / w if zero_stage >= 2 else 2 * p
    weights = 2 * p / w if zero_stage >= 3 else 2 * p
    host = OPTIMIZER_BYTES_PER_PARAM * p if offload else 0.0
    return weights + grads + optimizer, host


@dataclass(frozen=True)
class Estimate:
    peak_gib: float
    floor: bool        # only the optimizer step's figure: the model does not cover the activations
    phase: str         # "optimizer step" or "backward": which moment peaks


def covers(spec) -> bool:
    """Whether the activations of a model are what the calibration measured: dense attention."""
    return not spec.moe and all(kind in layers.QUADRATIC for kind in spec.mix())


def width(layer, hidden: int) -> float:
    """A layer's width for its activations: the hidden size and its MLP's active intermediate size."""
    return hidden + layer.mlp.active_params / (3 * hidden)


def estimate(built, counted, seq_len: int, batch: int, zero_stage: int, world: int, offload: bool,
             checkpointing: bool, engine: str = "deepspeed") -> Estimate:
    """The peak of one training point: `built` the model as built (its parameters), `counted`
    its layers (their activations), trained by `engine` (its ENGINE)."""
    params, w = built.total_params, max(1, world)
    if engine == "fsdp2":  # engines.refusal: no offload; not calibrated beyond its optimizer step
        return Estimate(FSDP2_STATE_BYTES_PER_PARAM * params / w / GIB, True, "optimizer step")
    state = state_bytes(params, zero_stage, w, offload)[0]
    step = state + (0.0 if offload else STEP_BYTES_PER_PARAM * params / (w if zero_stage >= 1 else 1))
    if not covers(counted):
        return Estimate(step / GIB, True, "optimizer step")
    tokens = seq_len * batch
    widths = [width(ly, counted.hidden) for ly in counted.layers]
    if checkpointing:
        per_token = CKPT_BYTES_PER_HIDDEN * counted.hidden * len(widths) + ACT_BYTES_PER_WIDTH * max(widths)
    else:
        per_token = ACT_BYTES_PER_WIDTH * sum(widths)
    backward = state + BUFFER_GIB[3 if zero_stage >= 3 else 2] * GIB + per_token * tokens
    return Estimate(max(step, backward) / GIB, False, "optimizer step" if step >= backward else "backward")


def of_run(config: dict, seq_len: int) -> Estimate | None:
    """The estimate at `seq_len` for a run's `config` as its header records it (MODEL, NUM_LAYERS,
    NUM_EXPERTS, BATCH_SIZE, ZERO_STAGE, world_size, OFFLOAD_OPTIMIZER, GRAD_CHECKPOINT, ENGINE);
    None where its model's config is not at hand, cannot be read or cut so, or a setting is missing."""
    if not isinstance(config.get("MODEL"), str):
        return None
    try:
        found = model.cheap_config(config["MODEL"])
        if found is None:
            return None
        cut = cuts.cut(found, config.get("NUM_LAYERS") or 0, config.get("NUM_EXPERTS") or 0, config["MODEL"])
        return estimate(cut.built, cut.counted, seq_len, config.get("BATCH_SIZE") or 1, config["ZERO_STAGE"],
                        config["world_size"], bool(config["OFFLOAD_OPTIMIZER"]), bool(config["GRAD_CHECKPOINT"]),
                        config.get("ENGINE") or "deepspeed")
    except (BadInput, KeyError, TypeError):
        return None
