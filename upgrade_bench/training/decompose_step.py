"""The decomposition of a point's training step, as bench_decompose.py and benchmark.py
(DECOMPOSE=N, so a sweep night also yields what the forecast needs) both record it: the
wall step split by each kernel bucket's share of a profiled window (upgrade_bench/training/decompose.py)."""
import sys

from . import decompose, engine
from ..models import flops
from ..kernels import timing


def profiled_kernel_us(eng, batch, device, steps: int) -> dict:
    """{kernel name: total microseconds} over `steps` profiled steps.

    GPU: every device activity (kernels, memcpy, memset) by its duration; user annotations
    (ProfilerStep#, record_function ranges mirrored on the GPU timeline) are spans, not work.
    CPU: no kernels, so every op by its self CPU time (children excluded: no double count).
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    on_gpu = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            engine.train_step(eng, batch)
        timing.sync(device)  # every kernel ends inside the window
    out = {}
    for evt in prof.events():
        on_device = evt.device_type != DeviceType.CPU
        if evt.is_user_annotation or on_device != on_gpu:
            continue
        us = evt.time_range.elapsed_us() if on_gpu else evt.self_cpu_time_total
        out[evt.name] = out.get(evt.name, 0.0) + us
    return out


def write_decomposition(eng, rc, writer, batch, step_flops, seq_len: int, wall_ms: dict,
                        profile_steps: int, earlier_points: int, peaks: dict) -> dict:
    """Profile `profile_steps` steps, split `wall_ms` (timing.summarize of unprofiled steps)
    by kernel bucket, write the `decomposition` record (and its table on rank 0)."""
    s = rc.resolved.train
    kernel_us = profiled_kernel_us(eng, batch, rc.device, profile_steps)
    low = rc.low_precision["converted_params"] if rc.low_precision else 0
    low_tflop = flops.linear_flops(low, s.BATCH_SIZE * seq_len) / 1e12
    fields = decompose.decompose(wall_ms["median"], kernel_us, profile_steps, step_flops, rc.resolved.peak_tflops,
                                 low_tflop=low_tflop)
    record = writer.write("decomposition", seq_len=seq_len, batch_size=s.BATCH_SIZE,
                          packed_doc_len=s.PACKED_DOC_LEN, time_steps=wall_ms["n"],
                          wall_step_ms_min=wall_ms["min"], wall_step_ms_max=wall_ms["max"],
                          profile_steps=profile_steps,
                          source="cuda kernels" if rc.device.type == "cuda" else "cpu ops (self time)",
                          **peaks, earlier_points_in_process=earlier_points,
                          attn_backend=rc.resolved.backend, use_liger=rc.resolved.use_liger,
                          world_size=rc.resolved.world_size, profiled_rank=rc.rank, **fields)
    if rc.rank == 0:
        sys.stderr.write(decompose.table(record) + "\n")
    return record
