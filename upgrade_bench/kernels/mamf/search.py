"""The matmul ceiling (MAMF): shapes, statistics and the search that finds it in a minute.

Pure functions: the search takes `measure(shape) -> mean TFLOPS` (and a cheaper `screen`)
and a clock, so tests run it on synthetic landscapes and mamf-finder.py on the GPU.

Why the search works. A GEMM's throughput is set by how its output tiles fill the SMs (wave
quantization: 128 tiles on 132 SMs keep 97% busy, 133 tiles need a second, nearly empty
wave) and by how long each tile's reduction runs (a long K amortises the prologue and
epilogue, until the longer kernel heats the chip). So:
1. coarse: a grid of large aligned shapes, plus, where the SM count is known, (m, n) pairs
   whose tiles fill one or two whole waves, at a few K;
2. refine: from the best few distinct (m, n) seeds, a pattern search: measure the +-step
   neighbours in m, n and k, move to the best while it beats the current by `threshold`,
   then halve the step (1024 -> 512 -> 256: multiples of every tile that divides 256);
3. final: the best `finalists` shapes measured again with the full iteration counts; the
   headline MAMF is the best full mean, as published tables use.
Every phase stops when the time budget runs out; the finals always measure one shape.
"""
import math
import time
from dataclasses import dataclass, field
from typing import NamedTuple

from ...hardware import gpus
from ...models.flops import tflops
from ..timing import summarize

# --dtype choices -> the key of the GPU table's peak for that dtype. The table lists tensor-core
# peaks; a float32 matmul runs on TF32 tensor cores or on CUDA cores as torch's precision
# setting chooses, so it has no peak there and its efficiency is null.
PEAK_KEY = {"bfloat16": "bf16", "float16": "fp16", "float32": None,
            "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8"}
DTYPES = tuple(PEAK_KEY)
SCALINGS = ("tensorwise", "rowwise")  # of a float8 matmul's scales (hardware/precisions.py's fp8 recipes)


class GemmShape(NamedTuple):
    m: int  # rows of A and C
    n: int  # columns of B and C
    k: int  # the reduction dimension

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


def expand_range(start: int, stop: int, step: int) -> list[int]:
    """The classic --X_range START STOP STEP; a zero start begins at `step` (no 0 dimension)."""
    return list(range(start or step, stop, step))


def tflops_stats(times_ms, flops: float) -> dict:
    """The classic figures: TFLOPS at the mean, median and fastest iteration time."""
    s = summarize(times_ms)
    return {"tflops_mean": tflops(flops, s["mean"]), "tflops_median": tflops(flops, s["median"]),
            "tflops_max": tflops(flops, s["min"]), "ms_mean": s["mean"], "ms_median": s["median"],
            "ms_min": s["min"], "ms_max": s["max"]}


def published_mamf(device_name: str | None, dtype: str) -> float | None:
    """The guide's measured MAMF for this GPU and dtype, for comparison (bf16 and fp8 only)."""
    spec = gpus.lookup(device_name)
    return None if spec is None else spec.mamf_tflops(PEAK_KEY[dtype])


def warmup_seconds(requested: float, budget_s: float | None, on_gpu: bool) -> float:
    """Accelerator warm-up: none on a CPU; at most half the budget, so a short run stays short."""
    if not on_gpu:
        return 0.0
    return requested if budget_s is None else min(requested, budget_s / 2)


def wave_fill(m: int, n: int, sm_count: int, tile=(128, 256)) -> float:
    """Share of SM slots that hold an output tile, over all the waves the tiles need."""
    tiles = math.ceil(m / tile[0]) * math.ceil(n / tile[1])
    return tiles / (math.ceil(tiles / sm_count) * sm_count)


def full_wave_pairs(sm_count: int, lo: int, hi: int, align: int = 256, max_waves: int = 2,
                    min_fill: float = 0.95, tile=(128, 256)) -> list[tuple[int, int]]:
    """(m, n), multiples of `align` in [lo, hi], whose tiles fill up to `max_waves` waves.

    The tile is a hint (cuBLAS's common 128x256 on Hopper): with m and n multiples of 256 a
    256x128 tile gives the same count, and the search measures, so a wrong hint only
    changes which shapes are tried first.
    """
    sizes = range(lo, hi + 1, align)
    return [(m, n) for m in sizes for n in sizes
            if math.ceil(m / tile[0]) * math.ceil(n / tile[1]) <= max_waves * sm_count
            and wave_fill(m, n, sm_count, tile) >= min_fill]


@dataclass(frozen=True)
class SearchSpace:
    grid_m: tuple
    grid_n: tuple
    grid_k: tuple
    extra: tuple = ()                # further coarse shapes (the full-wave ones)
    steps: tuple = (1024, 512, 256)  # refinement steps, coarse to fine
    lo: int = 256                    # bounds of every dimension
    hi: int = 20480

    def coarse(self) -> list[GemmShape]:
        grid = [GemmShape(m, n, k) for m in self.grid_m for n in self.grid_n for k in self.grid_k]
        return list(dict.fromkeys(grid + list(self.extra)))

    def neighbours(self, shape: GemmShape, step: int) -> list[GemmShape]:
        out = []
        for axis in range(3):
            for sign in (1, -1):
                dims = list(shape)
                dims[axis] += sign * step
                if self.lo <= dims[axis] <= self.hi:
                    out.append(GemmShape(*dims))
        return out


def default_space(sm_count: int | None = None, unit: int = 256) -> SearchSpace:
    """The search space in multiples of `unit`: 256 on a GPU (m 1024-8192, n 2048-16384,
    k 4096-16384, steps 1024/512/256), a few on a CPU where only tiny shapes are quick.

    The full-wave shapes (1-2 waves, >= 95% of the SMs busy; m, n >= 4 units) come at the
    larger K of the grid: short reductions never reach the ceiling.
    """
    grid_k = tuple(unit * x for x in (16, 32, 48, 64))
    extra = ()
    if sm_count:
        pairs = full_wave_pairs(sm_count, lo=4 * unit, hi=64 * unit, align=unit)
        extra = tuple(GemmShape(m, n, k) for m, n in pairs for k in grid_k[1:])
    return SearchSpace(grid_m=tuple(unit * x for x in (4, 8, 16, 32)),
                       grid_n=tuple(unit * x for x in (8, 16, 32, 64)), grid_k=grid_k,
                       extra=extra, steps=(4 * unit, 2 * unit, unit), lo=unit, hi=80 * unit)


@dataclass
class SearchResult:
    best: GemmShape | None      # the best shape by full-measurement mean (None: all failed)
    tflops: float | None
    screened: dict = field(default_factory=dict)  # GemmShape -> screen TFLOPS (None = failed)
    finals: dict = field(default_factory=dict)    # GemmShape -> full TFLOPS (None = failed)


def _ranked(values: dict) -> list:
    return sorted((s for s, v in values.items() if v is not None), key=values.get, reverse=True)


def _pattern_search(seed: GemmShape, value, space: SearchSpace, threshold: float, has_time) -> None:
    best, best_v = seed, value(seed)
    for step in space.steps:
        while has_time():
            trials = []
            for shape in space.neighbours(best, step):
                if not has_time():
                    break
                v = value(shape)
                if v is not None:
                    trials.append((v, shape))
            if not trials or max(trials)[0] <= best_v * (1 + threshold):
                break
            best_v, best = max(trials)


def search(measure, space: SearchSpace, budget_s: float, clock=time.monotonic, screen=None,
           threshold: float = 0.002, seeds: int = 8, seed_gap: float = 0.03,
           finalists: int = 16, final_share: float = 0.25, progress=None) -> SearchResult:
    """Find the shape with the highest mean TFLOPS (see the module docstring).

    measure(shape) / screen(shape) -> mean TFLOPS or None (failed); screen (default:
    measure) is the cheap one used to rank shapes. Seeds are refined best first, one per
    distinct (m, n), while they are within `seed_gap` of the best so far; the finals get
    `final_share` of the budget. progress(phase) is called as each phase starts.
    """
    screen = screen or measure
    start = clock()
    refine_end = start + budget_s * (1 - final_share)
    screened = {}

    def value(shape):
        if shape not in screened:
            screened[shape] = screen(shape)
        return screened[shape]

    def refine_time():
        return clock() < refine_end

    if progress:
        progress("coarse")
    for shape in space.coarse():
        if not refine_time():
            break
        value(shape)
    if progress:
        progress("refine")
    refined = set()
    while len(refined) < seeds and refine_time():
        ranked = _ranked(screened)
        seed = next((s for s in ranked if (s.m, s.n) not in refined), None)
        if seed is None or screened[seed] < screened[ranked[0]] * (1 - seed_gap):
            break
        refined.add((seed.m, seed.n))
        _pattern_search(seed, value, space, threshold, refine_time)
    if progress:
        progress("final")
    finals = {}
    for shape in _ranked(screened)[:finalists]:
        if finals and clock() >= start + budget_s:
            break
        finals[shape] = measure(shape)
    ok = _ranked(finals)
    return SearchResult(ok[0] if ok else None, finals[ok[0]] if ok else None, screened, finals)


class Measured:
    """The measurements so far: distinct shapes, and the best by mean, full iterations first."""

    def __init__(self):
        self.shapes = set()
        self.measurements = 0
        self.full = []          # matmul records measured with the full iteration counts
        self.best_screen = None

    def add(self, record: dict, full: bool) -> None:
        self.shapes.add((record["m"], record["n"], record["k"]))
        self.measurements += 1
        if full:
            self.full.append(record)
        elif self.best_screen is None or record["tflops_mean"] > self.best_screen["tflops_mean"]:
            self.best_screen = record

    def top(self, count: int) -> list[dict]:
        return sorted(self.full, key=lambda r: r["tflops_mean"], reverse=True)[:count]

    def best(self) -> dict | None:
        """The best full measurement; a screen only when none ran (an early interrupt)."""
        top = self.top(1)
        return top[0] if top else self.best_screen


def mamf_fields(best: dict | None, dtype: str, peak_tflops: float | None) -> dict:
    """The figures of the `mamf` record: the best shape's, and its share of the spec peak."""
    keys = ("m", "n", "k", "tflops_mean", "tflops_median", "tflops_max", "iters",
            "sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean", "throttle")
    fields = {"dtype": dtype, **{key: (best or {}).get(key) for key in keys},
              "peak_tflops": peak_tflops, "efficiency": None}
    if best and peak_tflops:
        fields["efficiency"] = best["tflops_mean"] / peak_tflops
    return fields
