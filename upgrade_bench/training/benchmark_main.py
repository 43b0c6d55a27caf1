"""benchmark.py: one point (or several) of the guide's sequence-length sweep.

The training step (fwd + bwd + optimizer step) of a causal LM on random tokens, on DeepSpeed
(ENGINE=deepspeed, the guide's) or torch's FSDP2 (ENGINE=fsdp2, under torchrun), timed per step; writes JSON lines (stdout holds nothing else): a `header`, a `step` per
step, a `summary` per sequence length (with GPU telemetry over the timed steps: SM clock,
power, temperature, throttle reasons, energy per token), and an `error` (oom -> exit 3,
anything else -> exit 1) if a point fails. Defaults are the guide's long-context config:
Llama-3.1-8B, ZeRO-3, activation checkpointing, CPU AdamW offload, Liger.

    deepspeed --num_gpus=8 benchmark.py                 # the guide's config at 8K
    SEQ_LEN="8192 32768" deepspeed --num_gpus=8 benchmark.py
    MODEL=tiny ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 python benchmark.py   # CPU, seconds
    ENGINE=fsdp2 OFFLOAD_OPTIMIZER=0 torchrun --nproc-per-node=8 benchmark.py   # FSDP2
"""

from . import decompose_step, engine, memory, variables
from ..models import flops
from ..hardware import telemetry
from ..numfmt import sig
from ..kernels.timing import summarize
from ..log.checks import tokens_per_s

SCRIPT = "benchmark.py"
VARS = variables.TRAINING_VARS


def step_line(seq_len: int, step: int, total: int, warmup: bool, step_ms: float, tflops: float,
              peaks: dict) -> str:
    """A step on the terminal (stderr), as torchtitan prints one: a long-context point runs
    for minutes, and the records go to stdout."""
    gib = peaks.get("peak_mem_gib")
    memory_text = f", {sig(gib)} GiB peak" if gib is not None else ""
    return (f"seq_len {seq_len} step {step + 1}/{total}{' (warm-up)' if warmup else ''}: "
            f"{sig(step_ms)} ms, {sig(tflops)} TFLOPS/GPU{memory_text}")


def run_point(eng, rc, writer, seq_len: int, earlier_points: int, debug) -> None:
    s = rc.resolved.train
    batches, step_flops = engine.prepare_point(rc, seq_len)
    tokens = s.BATCH_SIZE * seq_len
    times_ms, losses = [], []
    sampler = telemetry.Sampler(rc.device.index or 0)  # NVML over the timed steps only
    total = s.WARMUP_STEPS + s.STEPS
    for step in range(total):
        warmup = step < s.WARMUP_STEPS
        if step == s.WARMUP_STEPS:
            sampler.start()
        mark = debug.for_step(step, s.WARMUP_STEPS) if debug else None
        step_ms, loss_value = engine.timed_step(eng, batches.step(step), rc.device, mark)
        peaks = memory.point_peaks(rc.device)
        step_tflops = flops.tflops(step_flops.model, step_ms)
        writer.write("step", seq_len=seq_len, step=step, warmup=warmup, step_ms=step_ms,
                     tokens=tokens, tflops_per_gpu=step_tflops,
                     mfu=flops.peak_share(step_tflops, rc.resolved.peak_tflops), loss=loss_value, **peaks)
        engine.say_rank0(rc, step_line(seq_len, step, total, warmup, step_ms, step_tflops, peaks))
        if not warmup:
            times_ms.append(step_ms)
            losses.append(loss_value)
    samples = sampler.stop()
    stats = summarize(times_ms)
    gpu_telemetry = telemetry.aggregate(samples, tokens * stats["n"], sampler.energy_mj)
    gpu_telemetry = telemetry.combine_ranks(engine.gather_objects(gpu_telemetry))
    median_ms = stats["median"]
    tflops_per_gpu = flops.tflops(step_flops.model, median_ms)
    hfu_tflops = flops.tflops(step_flops.hardware, median_ms)
    writer.write("summary", seq_len=seq_len, batch_size=s.BATCH_SIZE,
                 packed_doc_len=s.PACKED_DOC_LEN, steps=stats["n"],
                 step_ms=median_ms, step_ms_min=stats["min"], step_ms_max=stats["max"],
                 step_ms_spread=stats["spread"], tflops_per_gpu=tflops_per_gpu,
                 mfu=flops.peak_share(tflops_per_gpu, rc.resolved.peak_tflops),
                 hfu=flops.peak_share(hfu_tflops, rc.resolved.peak_tflops),
                 tokens_per_s_per_gpu=tokens_per_s(seq_len, s.BATCH_SIZE, median_ms),
                 attn_flop_share=step_flops.attn_share, model_tflop_per_step=step_flops.model / 1e12,
                 gemm_tflop_per_step=step_flops.gemm_hardware / 1e12,
                 # the last step's, like the loss: STEPS >= 1, so it was a timed one
                 **peaks, loss=loss_value, loss_mean=sum(losses) / len(losses),
                 **engine.precision_fields(rc, step_flops.model, tokens),
                 attn_backend=rc.resolved.backend, world_size=rc.resolved.world_size,
                 earlier_points_in_process=earlier_points, **gpu_telemetry)
    if s.DECOMPOSE:  # the same process, model and batch: the split of the step just timed
        decompose_step.write_decomposition(eng, rc, writer, batches.step(0), step_flops, seq_len, stats,
                                           s.DECOMPOSE, earlier_points, peaks)


def main() -> int:
    return engine.run_script(SCRIPT, VARS, __doc__, run_point)

