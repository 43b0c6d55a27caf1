"""What the engine buys on one GPU: each measured series beside the series of the same GPU,
attention backend and configuration that ran on another engine (the engine's settings the only
difference: ENGINE, COMPILE, SINGLE_DEVICE, and USE_LIGER as the run resolved it, since USE_LIGER=auto is off
under ENGINE=fsdp2 COMPILE=1), per length: each side's TFLOPS/GPU, step time and peak memory,
and the speedup of the step.

The baseline of a group is DeepSpeed's series (the guide's engine) where there is one; each
other series of the group is set beside it. Every number on a side is that series' own summary
(read/series.py's median point); the speedup is the only number of both, two step times. A
point that failed (diverged, out of memory) is a row that says who failed and gives no speedup;
the side that ran keeps its numbers.

A verdict between GPUs never pairs two engines (ENGINE is a setting of the run's identity) unless
--ignore-config ENGINE asks: this is the other question, what the engine does for this workload
on a GPU one has. The rows here, their table page/engines.py's.
"""
import json
from dataclasses import dataclass

from ...log import runs
from ..read.series import Series

ENGINE_KEYS = ("ENGINE", "COMPILE", "SINGLE_DEVICE", "USE_LIGER")


def _rank(s: Series) -> tuple:
    """DeepSpeed first (the guide's engine), then uncompiled, then sharded, then with Liger (the
    suite's default where Liger patches the model): the first of a group is its baseline."""
    engine, compiled, single, liger = (json.dumps(s.settings(k), default=str) for k in ENGINE_KEYS)
    return (engine != json.dumps([runs.IDENTITY_DEFAULTS["ENGINE"]]), compiled != json.dumps([False]),
            single != json.dumps([False]), liger != json.dumps([True]),
            engine, compiled, single, liger)


def engine_pairs(series: list) -> list:
    """[(baseline series, other series)] of measured sweeps on one GPU whose configurations
    differ in the engine's settings alone, the baseline DeepSpeed's where the group has it."""
    groups = {}
    for s in series:
        if s.is_sweep and not s.reference:
            groups.setdefault(s.alike_but(ENGINE_KEYS), []).append(s)
    found = []
    for members in groups.values():
        base, *others = sorted(members, key=_rank)
        found += [(base, other) for other in others]
    return found


def failed_at(s: Series) -> dict:
    """{seq_len: error name} of the lengths the series has no point at, only an error."""
    return {n: str(e.get("error")) for n, e in s.errors.items() if n not in s.points}


@dataclass(frozen=True)
class EngineRow:
    """One series beside its baseline engine's at one length (base: the baseline's, other: the
    other engine's numbers, each from its own summary)."""
    base: Series
    other: Series
    seq_len: int
    failed: tuple = ()                   # (series, error name) of each side that failed here
    base_tflops: float | None = None     # TFLOPS per GPU
    other_tflops: float | None = None
    base_step_ms: float | None = None
    other_step_ms: float | None = None
    base_peak_gib: float | None = None
    other_peak_gib: float | None = None
    speedup: float | None = None         # the baseline's step time over the other engine's


def engine_row(base: Series, other: Series, n: int) -> EngineRow:
    failed = tuple((s, failed_at(s)[n]) for s in (base, other) if n in failed_at(s))
    b, o = base.points.get(n, {}), other.points.get(n, {})
    speedup = b["step_ms"] / o["step_ms"] if not failed and b.get("step_ms") and o.get("step_ms") else None
    return EngineRow(base, other, n, failed, b.get("tflops_per_gpu"), o.get("tflops_per_gpu"), b.get("step_ms"),
                     o.get("step_ms"), b.get("peak_mem_gib"), o.get("peak_mem_gib"), speedup)


def engine_rows(series: list) -> list:
    """An EngineRow per pair and length both sides ran or failed at."""
    rows = []
    for base, other in engine_pairs(series):
        lens = (set(base.points) | set(failed_at(base))) & (set(other.points) | set(failed_at(other)))
        rows += [engine_row(base, other, n) for n in sorted(lens)]
    return rows
