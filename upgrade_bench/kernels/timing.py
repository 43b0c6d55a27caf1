"""Timers, summary statistics and the settings of a sustained window (window_vars).

Device work is asynchronous: a kernel is timed with a CUDA event pair around each call and
no host sync inside the loop. Calls run back to back, as training runs its kernels: an idle
gap between timed calls (a sleep kernel, a host sync) lets the power budget refill and the
clock rise, which flatters the kernel. Before every call a 256 MiB buffer is zeroed (outside
the event pair) so no call reads its inputs from a warm cache. Results are medians with
min/max. On CPU the same API falls back to perf_counter.
"""
import math
import statistics
import time

from .. import settings

# Zeroed before every timed call: more than any current GPU's last-level cache (H100 50 MB,
# B200 126 MB, MI300X 256 MB Infinity Cache), and exactly what the published mamf-finder
# (ml-engineering, compute/accelerator/benchmarks) and triton.testing.do_bench zero, so
# numbers set next to theirs were measured the same way.
FLUSH_BYTES = 256 * 2**20
# torch.cuda._sleep counts SM cycles: a millisecond at the ~2 GHz top boost clock of current
# parts; at a lower clock the spin only lasts longer, which is harmless.
SPIN_CYCLES_PER_MS = 2_000_000
SPIN_MAX_MS = 1000.0
MAX_CALLS = 20_000


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


class CacheFlusher:
    """Zeroes FLUSH_BYTES of device memory (an int32 buffer, as the published tools do)."""

    def __init__(self, device):
        import torch

        self.buf = None
        if getattr(device, "type", device) == "cuda":
            self.buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        if self.buf is not None:
            self.buf.zero_()


def spin_ms_needed(host_ms: float, gpu_ms: float, calls: int) -> float:
    """How long the GPU must be held so the host can queue `calls` calls ahead of it.

    When the host enqueues a call faster than the GPU runs it (host_ms < gpu_ms), the queue
    only grows: no spin. Otherwise the GPU would wait for the host before each call and the
    events would time the host's launch cost; a spin of the difference, summed over the
    calls, plus a margin, lets the whole queue form first.
    """
    if host_ms < gpu_ms:
        return 0.0
    return min(SPIN_MAX_MS, (host_ms - gpu_ms) * calls * 1.25 + 1.0)


def _host_and_gpu_ms(fn, before, device, calls: int) -> tuple[float, float]:
    """(host enqueue ms, device ms) per call over `calls` back-to-back calls."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    sync(device)
    t0 = time.perf_counter()
    start.record()
    for _ in range(calls):
        if before:
            before()
        fn()
    end.record()
    host_ms = (time.perf_counter() - t0) * 1e3 / calls
    sync(device)
    return host_ms, start.elapsed_time(end) / calls


def time_iterations(fn, device, iters: int, warmup: int, before=None, host_ahead: bool = True,
                    warmup_ms: float = 0.0, time_ms: float = 0.0, agree=None) -> tuple[list[float], dict]:
    """(milliseconds of each timed call of fn(), how they were timed).

    At least `warmup` untimed calls, then at least `iters` timed ones, all queued back to
    back with no sync in between; `before` (the cache flush, re-randomising an output, a
    backward's forward) runs before every call, outside its event pair; without one nothing
    runs between the calls (flush_mib 0: bench_hbm's buffers dwarf the cache themselves).
    With host_ahead, a few calls first measure the host's enqueue time and the GPU's time per
    call; they set how many calls fill `warmup_ms` and `time_ms` (a sustained number needs a
    window long enough for the power cap to take hold: tens of 1 ms calls are a burst). Where the host
    cannot enqueue as fast as the GPU runs (short kernels behind a Python front end), the
    counts stay as given and one spin before the queue holds the GPU until every call is
    queued, so the events time GPU work, never a GPU waiting for the host; the warm-up
    calls after it bring the clock back to its sustained level. host_ahead=False is the published mamf-finder's loop exactly.
    `agree` ([host_ms, gpu_ms] -> the same on every rank) is for a collective: every rank must
    run the same calls, so the figures that set the counts and the spin are agreed first.
    """
    import torch

    on_gpu = getattr(device, "type", device) == "cuda"
    if not on_gpu:
        for _ in range(warmup):
            if before:
                before()
            fn()
        times = []
        for _ in range(iters):
            if before:
                before()
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        return times, {"timing": "host clock (no GPU)", "warmup_iters": warmup}
    # Every caller's `before` zeroes the cache (CacheFlusher); with none, nothing was zeroed.
    info = {"timing": "back-to-back", "flush_mib": FLUSH_BYTES // 2**20 if before else 0, "spin_ms": 0.0}
    if host_ahead:
        host_ms, gpu_ms = _host_and_gpu_ms(fn, before, device, max(1, min(3, warmup)))
        if agree:
            host_ms, gpu_ms = agree([host_ms, gpu_ms])
        if host_ms < gpu_ms:  # a host-bound kernel cannot keep the GPU loaded: counts as given
            warmup, iters = calls_for(warmup, warmup_ms, gpu_ms), calls_for(iters, time_ms, gpu_ms)
        info.update(host_ms_per_call=host_ms, gpu_ms_per_call=gpu_ms,
                    spin_ms=spin_ms_needed(host_ms, gpu_ms, warmup + iters))
    info["warmup_iters"] = warmup
    calls = warmup + iters
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    if info["spin_ms"]:
        torch.cuda._sleep(int(info["spin_ms"] * SPIN_CYCLES_PER_MS))
    for start, end in zip(starts, ends):
        if before:
            before()
        start.record()
        fn()
        end.record()
    sync(device)
    return [s.elapsed_time(e) for s, e in zip(starts[warmup:], ends[warmup:])], info


def calls_for(at_least: int, window_ms: float, ms_per_call: float) -> int:
    """Calls that fill `window_ms` at `ms_per_call`, never fewer than `at_least`, at most
    MAX_CALLS (a microsecond kernel would otherwise need millions)."""
    if window_ms <= 0 or ms_per_call <= 0:
        return at_least
    return max(at_least, min(MAX_CALLS, math.ceil(window_ms / ms_per_call)))


def window_vars(defaults: dict, first_call: str) -> list:
    """The settings of a sustained window, as time_iterations takes them (ITERS, WARMUP,
    WARMUP_MS, TIME_MS), for every kernel benchmark script with `defaults` of its own;
    `first_call` names the untimed call before the warm-up ("the first (JIT) call")."""
    return [
        settings.Var("ITERS", "int", defaults["ITERS"], "timed calls per point at least (median, min, max)",
                     min=1, max=100_000),
        settings.Var("WARMUP", "int", defaults["WARMUP"], f"untimed calls after {first_call}, at least",
                     min=1, max=100_000),
        settings.Var("WARMUP_MS", "float", defaults["WARMUP_MS"], "untimed back-to-back calls fill at "
                     "least this many ms, so timing starts at the clock the power cap holds", min=0),
        settings.Var("TIME_MS", "float", defaults["TIME_MS"], "timed calls fill at least this many ms: a "
                     "sustained window, not a burst", min=0),
    ]
