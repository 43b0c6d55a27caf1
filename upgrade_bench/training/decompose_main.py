"""bench_decompose.py: one-clock step decomposition, attention vs GEMMs vs the rest.

The guide's deep dive into why the step speeds up less than the hardware: the same DeepSpeed
training step as benchmark.py, (1) timed with the profiler off (median of TIME_STEPS steps,
after WARMUP_STEPS), then (2) profiled for PROFILE_STEPS steps; (3) every device kernel is
classified (attention / gemm / other, NCCL as comm; rules in upgrade_bench/training/decompose.py) and
(4) the measured wall step is split by each bucket's share of compute kernel time, so the
buckets sum to the step by construction; NCCL overlaps the backward and is reported as a
share of kernel time, not added. Attention gets the model's attention FLOPs, gemm the dense
FLOPs, so each gets TFLOPS and MFU. On CPU there are no kernels: aten ops are classified by
name, by self CPU time. Each SEQ_LEN gets its own `decomposition` record (one engine start-up).
Records: `header`, `decomposition` per sequence length, `error` (oom -> exit 3, else exit 1);
rank 0 writes. Defaults are the guide's right-sized 8K: ZeRO-2, no checkpointing, no offload,
no Liger.

    deepspeed --num_gpus=8 bench_decompose.py                 # the guide's decomposition
    USE_LIGER=1 NUM_LAYERS=8 ATTN_BACKEND=fa4 python bench_decompose.py   # one GPU
    MODEL=tiny SEQ_LEN=256 TIME_STEPS=2 PROFILE_STEPS=1 python bench_decompose.py   # CPU
"""
from . import decompose_step, engine, memory, variables
from .. import settings
from ..kernels import timing

SCRIPT = "bench_decompose.py"
# Every training variable but STEPS, which TIME_STEPS replaces here, and DECOMPOSE: it is all this does.
VARS = [v for v in settings.with_defaults(variables.TRAINING_VARS, ZERO_STAGE=2, GRAD_CHECKPOINT=False,
                                          OFFLOAD_OPTIMIZER=False, USE_LIGER="0")
        if v.name not in ("STEPS", "DECOMPOSE")] + [
    settings.Var("TIME_STEPS", "int", 10, "steps timed with the profiler off (median)", min=1, max=10_000),
    settings.Var("PROFILE_STEPS", "int", 3, "steps profiled for the kernel split", min=1, max=100),
]


def run_point(eng, rc, writer, seq_len: int, earlier_points: int, debug) -> None:
    s = rc.resolved.train
    batches, step_flops = engine.prepare_point(rc, seq_len)
    batch = batches.step(0)  # one batch: the split of a step's time, whatever its tokens
    for step in range(s.WARMUP_STEPS):  # FA4 JIT-compiles its kernels on first use
        engine.train_step(eng, batch, debug.for_step(step, s.WARMUP_STEPS) if debug else None).item()
    if debug and not debug.done:  # the timed steps take no mark: snapshot after the warm-up
        debug.snapshot()
    wall_ms = timing.summarize(engine.timed_step(eng, batch, rc.device)[0] for _ in range(s.TIME_STEPS))
    peaks = memory.point_peaks(rc.device)  # a collective: every rank calls it
    decompose_step.write_decomposition(eng, rc, writer, batch, step_flops, seq_len, wall_ms,
                                       s.PROFILE_STEPS, earlier_points, peaks)


def main() -> int:
    return engine.run_script(SCRIPT, VARS, __doc__, run_point)

