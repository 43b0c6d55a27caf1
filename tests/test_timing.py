"""timing.py: how many calls fill a sustained window, when the host needs a head start."""
from upgrade_bench.kernels import timing


def test_a_host_faster_than_the_gpu_needs_no_spin():
    assert timing.spin_ms_needed(host_ms=0.3, gpu_ms=0.9, calls=700) == 0.0


def test_a_host_bound_kernel_gets_a_spin_covering_every_call_queued():
    # 0.25 ms to enqueue, 0.05 ms to run: 0.2 ms short per call, 40 calls, 25% margin, +1 ms.
    assert timing.spin_ms_needed(host_ms=0.25, gpu_ms=0.05, calls=40) == 0.2 * 40 * 1.25 + 1.0
    assert timing.spin_ms_needed(host_ms=1.0, gpu_ms=0.0, calls=10**6) == timing.SPIN_MAX_MS


def test_calls_fill_the_window_but_never_fall_below_the_count_asked():
    assert timing.calls_for(3, window_ms=200.0, ms_per_call=0.9) == 223   # ceil(222.2)
    assert timing.calls_for(20, window_ms=500.0, ms_per_call=50.0) == 20  # 10 would fill it
    assert timing.calls_for(5, window_ms=0.0, ms_per_call=1.0) == 5       # no window asked
    assert timing.calls_for(1, window_ms=500.0, ms_per_call=1e-6) == timing.MAX_CALLS


def test_cpu_timing_runs_before_every_call_and_counts_as_asked():
    calls = []
    times, info = timing.time_iterations(lambda: calls.append("fn"), "cpu", iters=3, warmup=2,
                                         before=lambda: calls.append("before"), time_ms=10_000)
    assert calls == ["before", "fn"] * 5
    assert len(times) == 3 and info["warmup_iters"] == 2 and "no GPU" in info["timing"]


class FakeEvent:
    """torch.cuda.Event without a GPU: each record() a millisecond later."""
    clock = 0.0

    def __init__(self, enable_timing=True):
        self.at = None

    def record(self):
        FakeEvent.clock += 1.0
        self.at = FakeEvent.clock

    def elapsed_time(self, end):
        return end.at - self.at


def test_a_collectives_counts_come_from_the_probe_every_rank_agreed_on(monkeypatch):
    # This rank's probe says 1 ms a call; another rank's said 10 ms: with `agree` (the ranks'
    # max), every rank fills the 100 ms windows with 10 calls each, not its own 100.
    import torch
    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(timing, "sync", lambda device: None)
    monkeypatch.setattr(timing, "_host_and_gpu_ms", lambda fn, before, device, calls: (0.01, 1.0))
    calls = []
    own = timing.time_iterations(lambda: calls.append(1), "cuda", iters=3, warmup=1, warmup_ms=100, time_ms=100)
    assert (len(own[0]), own[1]["warmup_iters"]) == (100, 100)
    agreed = timing.time_iterations(lambda: calls.append(1), "cuda", iters=3, warmup=1, warmup_ms=100,
                                    time_ms=100, agree=lambda values: [max(v, w) for v, w in zip(values, [0.02, 10.0])])
    assert (len(agreed[0]), agreed[1]["warmup_iters"], agreed[1]["gpu_ms_per_call"]) == (10, 10, 10.0)
    assert len(calls) == 200 + 20
