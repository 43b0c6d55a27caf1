"""Timers and summary statistics.

Device work is asynchronous: a kernel is timed with CUDA events around each iteration (no
host sync inside the timed region), the L2 cache is flushed between iterations so a kernel
never reads its inputs from a warm cache, and results are medians with min/max. On CPU the
same API falls back to perf_counter.
"""
import statistics
import time


def summarize(values) -> dict:
    """median/mean/min/max and spread ((max-min)/median) of a non-empty sequence."""
    values = list(values)
    median = statistics.median(values)
    return {"median": median, "mean": statistics.fmean(values), "min": min(values),
            "max": max(values), "spread": (max(values) - min(values)) / median if median else None,
            "n": len(values)}


def sync(device) -> None:
    import torch

    if getattr(device, "type", device) == "cuda":
        torch.cuda.synchronize(device)


class L2Flusher:
    """Writes a buffer larger than the L2 cache (sized from the device, 2x for safety)."""

    def __init__(self, device):
        import torch

        self.buf = None
        if getattr(device, "type", device) == "cuda":
            l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 * 2**20)
            self.buf = torch.empty(max(2 * l2_bytes, 2**20), dtype=torch.uint8, device=device)

    def __call__(self) -> None:
        if self.buf is not None:
            self.buf.zero_()


def time_iterations(fn, device, iters: int, warmup: int, before=None) -> list[float]:
    """Milliseconds of each of `iters` calls of fn(), after `warmup` untimed calls.

    `before` (e.g. an L2 flush or re-randomising an output) runs before every call, outside
    the timed region.
    """
    import torch

    for _ in range(warmup):
        if before:
            before()
        fn()
    sync(device)
    if getattr(device, "type", device) != "cuda":
        times = []
        for _ in range(iters):
            if before:
                before()
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return times
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for start, end in zip(starts, ends):
        if before:
            before()
        start.record()
        fn()
        end.record()
    sync(device)
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]
