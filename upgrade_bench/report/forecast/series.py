"""A forecast series: model.py's model applied to a measured series (the page's block is
page/forecast.py's, the reconfigured forecast reconfig.py's, made from this one by the caller).

A forecast is its own record and its own table, labelled "forecast from <series>, not
measured" wherever it is shown, and never merged with a measured number. The model's middle is
ranged for the group each length is in (calibration.py: the pair's class and the step's kind) by
the backtest's misses on published pairs of that group (backtest.py), widened by the stack
priors where the candidate runs another vendor's stack (stacks.py), and bounded by what the
candidate's hardware can give the step (model.ceiling); each row says how often such ranges held.

The candidate is assumed at the same share of its reference (MAMF) as the baseline node reached:
the ratios are the reference figures' and the baseline's step carries its node's shortfall.
Where the node check measured that share below 100%, each row also gives a healthy candidate's
TFLOPS (at its full reference), the clock-bound parts (attention, GEMMs) sped up by the shortfall.
"""
import math
from dataclasses import dataclass, field, replace

from . import calibration, attention as forecast_attention, model as forecast_model, stacks
from ...hardware import gpus
from ...models import peak_memory
from ..read.series import Series
from ..compare.verdict import break_even_usd_per_gpu_hour, call, ratio, tokens_per_s_per_gpu, usd_per_mtok

FORECAST = "forecast"


@dataclass(frozen=True)
class NodeHealth:
    """What the node check measured of the baseline's node: its MAMF over the reference's
    (`share`), and its SM clock under load over its maximum where the power cap held it
    (`power_bound`, else None)."""
    share: float | None
    power_bound: float | None = None


def node_of(checks: list, s: Series) -> NodeHealth | None:
    """The NodeHealth of the node (report/node/check.py's NodeCheck) that ran `s`: one with a run
    of the series, else the only one of its GPU; None where none."""
    runs = {run_id for _source, run_id in s.runs}
    mine = [c for c in checks if c.node.run_ids & runs] or [c for c in checks if c.node.gpu == s.gpu]
    return health_of(mine[0]) if len(mine) == 1 else None


def health_of(check) -> NodeHealth | None:
    """The NodeHealth a node check (report/node/check.py's NodeCheck) measured: its bf16 MAMF row's
    share of the reference, and the power-bound clock where the cap held it; None without one."""
    rows = [r for r in check.rows if r.figure.record.get("kind") == "mamf" and r.share]
    rows = [r for r in rows if r.figure.label.startswith("MAMF bf16")] or rows
    if not rows:
        return None
    row = rows[0]
    record, header = row.figure.record, row.figure.header or {}
    clock, top = record.get("sm_clock_mhz_median"), ((header.get("hardware") or {}).get("max_sm_clock_mhz"))
    bound = clock / top if clock and top and "sw_power_cap" in (record.get("throttle") or []) else None
    return NodeHealth(row.share, bound)


def tflop_of(summary: dict) -> tuple[float, float] | None:
    """(attention TFLOP, dense TFLOP) of one step: the FLOP count as the summary recorded it."""
    total, share = summary.get("model_tflop_per_step"), summary.get("attn_flop_share")
    if not total or share is None:
        return None
    return total * share, total * (1 - share)


def gemm_tflop(summary: dict, checkpointed: bool) -> tuple[float, bool]:
    """(the weight matmuls' TFLOP of one step, whether the recompute is still to be added): the
    summary's exact `gemm_tflop_per_step` where it has one, else its dense model TFLOP, to which
    forecast_model.gemm_share adds an estimate of the recompute where the run checkpointed."""
    exact = summary.get("gemm_tflop_per_step")
    return (exact, False) if exact else (tflop_of(summary)[1], checkpointed)


def series_parts(s: Series) -> dict:
    """{seq_len: ({bound: ms} summing to the measured step, how it was split)}."""
    tflop = {n: tflop_of(p) for n, p in s.points.items()}
    decs = {n: forecast_model.bound_parts(d) for n, d in s.decompositions.items()}
    decs = {n: p for n, p in decs.items() if p and n in tflop and tflop[n]}
    usable = [(n, tflop[n], p["step_ms"]) for n, p in sorted(s.points.items()) if tflop[n] and p.get("step_ms")]
    split = forecast_model.fit_split([(a, d, t) for _, (a, d), t in usable])
    out = {}
    for n, (a, d), step_ms in usable:
        if n in decs or (decs and not split):
            out[n] = forecast_model.nearest_parts(decs, {m: tflop[m] for m in decs}, n, step_ms, a, d)
        elif split:
            parts = forecast_model.sweep_parts(split, a, d, s.config.get("world_size", 1) > 1)
            total = sum(parts.values())
            out[n] = ({b: ms * step_ms / total for b, ms in parts.items()},
                      f"attention / dense / host split fitted to its own sweep ({len(usable)} lengths)")
        else:  # attention and the rest taken to run at one rate: the FLOP count's shares
            out[n] = ({"attention": step_ms * a / (a + d), "dense": step_ms * d / (a + d)},
                      "no decomposition and fewer than 3 lengths: split by the FLOP count's attention share")
    return out


def ratios_at(base: str, cand: str, seq_len: int, parts: dict, dense_tflop: float, checkpointed: bool,
              base_backend: str | None, attention: tuple = ({}, ""), precision: str = "bf16",
              comm=None, power_bound: float | None = None) -> dict:
    """{bound: Ratio} for one length of a baseline's step split into `parts` ({bound: ms}):
    the GPU table's ratios, the dense part's by its own GEMM share (`dense_tflop`, the
    checkpoint recompute where `checkpointed`), attention from `attention` ({seq_len: Ratio},
    source) where measured on both GPUs, else the guide's published kernel figures where
    the baseline trains with `base_backend` as the guide's did; peaks and MAMF of `precision`;
    the interconnect's `comm` where measured on both GPUs (forecast_comm), else the datasheets';
    `power_bound`: NodeHealth's, for the clock the candidate's extra watts buy."""
    base_spec = gpus.lookup(base)
    hw = forecast_model.hardware_ratios(base_spec, gpus.lookup(cand), precision, comm, power_bound)
    base_mamf = forecast_model.sustained_mamf(base_spec, precision)[0]  # a part without a published one: estimated
    share = forecast_model.gemm_share(dense_tflop, parts.get("dense"), base_mamf,
                                      checkpointed)
    table, source = attention if attention[0] else forecast_attention.published_attention(base, cand, base_backend)
    exp = forecast_model.exponent_ratio(base_spec, gpus.lookup(cand))
    if parts.get("gemm"):  # a decomposition's GEMM kernels below MAMF: the same roofline share as a dense part
        hw = {**hw, "gemm": forecast_model.gemm_kernels_ratio(
            hw, forecast_model.gemm_share(dense_tflop, parts["gemm"], base_mamf, checkpointed))}
    return {**hw, "dense": forecast_model.dense_ratio(hw, share),
            "attention": forecast_model.with_exponent(forecast_model.attention_ratio(hw, table, seq_len, source), exp)}


@dataclass
class Row:
    seq_len: int
    step_ms: float               # the baseline's, measured
    forecast: forecast_model.Forecast
    tflops: tuple                # (mid, low, high) TFLOPS/GPU forecast
    speedup: tuple               # (mid, low, high)
    usd_per_mtok: tuple | None   # (mid, low, high) of the candidate at its price
    base_usd_per_mtok: float | None
    cost_call: object            # verdict.Call of candidate $/token over the baseline's
    peak_mem_gib: float | None
    fits: bool | None            # the baseline's peak memory within the candidate's HBM
    calibration: calibration.Calibration  # the group this length is in, its range
    measured_tflops: float | None = None  # the candidate measured in the same configuration (or an ignored one)
    break_even_usd: tuple | None = None   # (mid, low, high) candidate price per GPU-hour at which $/token is even
    ceiling: float | None = None          # the most the candidate's hardware can speed this step (model.ceiling)
    healthy_tflops: float | None = None   # a healthy candidate's (at its full reference), where the node fell short


@dataclass
class SeriesForecast:
    base: Series
    candidate: str               # the GPU table's name
    rows: list = field(default_factory=list)
    prices: tuple = (None, None)  # (baseline, candidate) USD per GPU-hour used, None where not given
    measured_differs: str = ""    # --ignore-config keys the candidate's measured series differs in
    hbm_gib: float = 0.0          # the candidate's
    ratio_sources: dict = field(default_factory=dict)  # {bound: {source: {note: None}}}, in order met
    beyond: list = field(default_factory=list)  # beyond_memory's Beyond: lengths the baseline ran out of memory at
    reconfigured: list = field(default_factory=list)  # forecast_reconfig.Reconfigured, per length where one beats it
    node: NodeHealth | None = None  # the baseline node's health, where the node check measured it

    @property
    def label(self) -> str:
        return f"forecast from {self.base.label}, not measured"


def tflops_range(work_tflop: float, f: forecast_model.Forecast) -> tuple:
    """(mid, low, high) TFLOPS of a step of `work_tflop` at the forecast's step times."""
    return (work_tflop / f.step_ms * 1e3, work_tflop / f.step_ms_slow * 1e3, work_tflop / f.step_ms_fast * 1e3)


def bounded(model: forecast_model.Forecast, cal: calibration.Calibration, base_step_ms: float, top: float,
            how: str) -> forecast_model.Forecast:
    """The model's step ranged by `cal`, no end faster than `top` times the baseline's step."""
    mid, fast, slow = cal.step_ms(model.step_ms)
    floor_ms = base_step_ms / top
    return forecast_model.Forecast(max(mid, floor_ms), max(fast, floor_ms), max(slow, floor_ms), model.parts_ms, how)


def group_and_stack(base: str, cand: str, config: dict, calibrations: dict, kind: str,
                    model_speedup: float) -> tuple:
    """(Calibration with any stack prior's widening, stack factor on the model's forecast, allowance
    on the ceiling) of a forecast of `cand` from a `base` series of `config` whose model speedup is
    `model_speedup`."""
    base_spec, cand_spec = gpus.lookup(base), gpus.lookup(cand)
    step = calibration.step_kind(config)
    group = calibration.group_of(calibration.pair_class(base_spec, cand_spec), step)
    cal = calibration.for_group(calibrations, group, kind)
    # the baseline is this suite's logs (or the guide's published series, its scripts the same stack)
    crossing = stacks.cross_stack(base_spec, cand_spec, calibration.precision_of(config), step,
                                  base_stack=stacks.own_stack(base_spec), model_speedup=model_speedup)
    cal = replace(cal, stack=crossing.words, stack_half=crossing.log_half_width)
    return cal, crossing.factor, crossing.allowance


def forecast_series(s: Series, cand: str, prices: dict, calibrations: dict, measured: Series | None = None,
                    attention: tuple = ({}, ""), comm=None, node: NodeHealth | None = None) -> SeriesForecast:
    """The candidate's forecast at every length of a measured baseline series; `calibrations`:
    calibration.calibration's {group: Calibration}; `measured`: the candidate's own series of
    this configuration (up to --ignore-config keys, named), `attention`:
    forecast_attention.measured_attention's, `comm`: forecast_comm.measured_comm's, `node`: the
    baseline node's health (node_of)."""
    spec = gpus.lookup(cand)
    precision = calibration.precision_of(s.config)
    out = SeriesForecast(s, spec.name, prices=(_price(prices, s.gpu), _price(prices, spec.name)), hbm_gib=spec.hbm_gib,
                         node=node)
    if measured is not None:
        out.measured_differs = "; ".join(f"{k} {', '.join(map(str, b))} here vs {', '.join(map(str, o))} there"
                                         for k in sorted(set(s.ignored) | set(measured.ignored))
                                         for b, o in [(s.settings(k), measured.settings(k))] if b != o)
    base_price, cand_price = out.prices
    power_bound = node.power_bound if node else None
    for n, (parts, how) in sorted(series_parts(s).items()):
        point = s.points[n]
        gemm, checkpointed = gemm_tflop(point, bool(s.config.get("GRAD_CHECKPOINT")))
        r = ratios_at(s.gpu, spec.name, n, parts, gemm, checkpointed, s.backend, attention, precision, comm,
                      power_bound)
        for b in parts:
            out.ratio_sources.setdefault(b, {}).setdefault(r[b].source, {})[r[b].note] = None
        how += "; ratios " + ", ".join(f"{b} {r[b].mid:.2f}x" for b in parts)
        model = forecast_model.scale(parts, r, how)
        cal, factor, allowance = group_and_stack(s.gpu, spec.name, s.config, calibrations,
                                                 calibration.workload_kind(point.get("attn_flop_share"), precision),
                                                 point["step_ms"] / model.step_ms)
        top = forecast_model.ceiling(r, parts, node.share if node else None) * allowance
        model = forecast_model.Forecast(model.step_ms / factor, model.step_ms_fast / factor,
                                        model.step_ms_slow / factor, model.parts_ms, how)
        f = bounded(model, cal, point["step_ms"], top, how)
        tflops = tflops_range(point["model_tflop_per_step"], f)
        speedup = (point["step_ms"] / f.step_ms, point["step_ms"] / f.step_ms_slow, point["step_ms"] / f.step_ms_fast)
        tok_s = tokens_per_s_per_gpu(point)
        usd = base_usd = cost = even = None
        mem = point.get("peak_mem_gib")
        fits = None if mem is None else mem <= spec.hbm_gib
        if base_price and tok_s:
            base_usd = usd_per_mtok(base_price, tok_s)
        if cand_price and base_usd and fits is not False:  # what does not fit is not priced
            usd = tuple(usd_per_mtok(cand_price, tok_s * x) for x in speedup)
            cost = call(ratio(usd[0], base_usd), (usd[2] / base_usd, usd[1] / base_usd))
        if base_price:
            even = tuple(break_even_usd_per_gpu_hour(base_price, x) for x in speedup)
        other = measured.points.get(n) if measured is not None else None
        out.rows.append(Row(n, point["step_ms"], f, tflops, speedup, usd, base_usd, cost, mem, fits, cal,
                            other.get("tflops_per_gpu") if other else None, even, top,
                            healthy_tflops(parts, r, factor, cal, node, point)))
    out.beyond = beyond_memory(s, spec.hbm_gib)
    return out


def healthy_tflops(parts: dict, r: dict, factor: float, cal: calibration.Calibration, node: NodeHealth | None,
                   point: dict) -> float | None:
    """The middle TFLOPS of a healthy candidate (at its full reference) where the baseline node's
    MAMF fell short of its reference: the clock-bound parts (model.CLOCK_BOUND) sped up by the
    shortfall; else None."""
    if not node or not node.share or node.share >= 1.0 or not any(b in parts for b in forecast_model.CLOCK_BOUND):
        return None
    healthy = {b: (replace(x, mid=x.mid / node.share) if b in forecast_model.CLOCK_BOUND else x) for b, x in r.items()}
    step_ms = cal.step_ms(forecast_model.scale(parts, healthy).step_ms / factor)[0]
    return point["model_tflop_per_step"] / step_ms * 1e3


def _price(prices: dict, gpu: str) -> float | None:
    """The --price of `gpu` (a GPU table name), given as 'B200', 'NVIDIA B200' or its table name."""
    return next((usd for name, usd in prices.items() if name == gpu or gpus.table_name(name) == gpu), None)


@dataclass(frozen=True)
class Beyond:
    """A length the baseline ran out of memory at: what a GPU needs there, estimated (`how`; a
    `floor` is a lower bound only), and whether the candidate's HBM holds it (None: a floor within it)."""
    seq_len: int
    gib: float
    how: str
    floor: bool
    fits: bool | None


def beyond_memory(s: Series, hbm_gib: float) -> list:
    """[Beyond] of each length past the baseline's longest point where it ran out of memory: the
    memory its two longest points extrapolate to (linear in tokens, as activations are), never
    less than the most any point measured (a peak that fell with length says nothing of a slope:
    then a floor); with fewer than two points, the peak-memory model's estimate of its
    configuration there (models/peak_memory.py); none where neither is at hand. Never less than
    the baseline's HBM, which that length outgrew (then a floor)."""
    fits = sorted((n, p["peak_mem_gib"]) for n, p in s.points.items() if p.get("peak_mem_gib"))
    out = []
    for n, err in sorted(s.errors.items()):
        if err.get("error") != "oom" or (fits and n <= fits[-1][0]):
            continue
        found = extrapolated(fits, n) if len(fits) >= 2 else estimated(s, n)
        if found:
            gib, how, floor = found
            if s.hbm_gib and gib <= s.hbm_gib:  # yet it ran out of memory there: it needs more than it had
                gib, how, floor = s.hbm_gib, (f"the baseline ran out of memory with {s.hbm_gib:g} GiB, more than "
                                              f"that; {how} gives less ({gib:.1f} GiB)"), True
            out.append(Beyond(n, gib, how, floor, False if gib > hbm_gib else None if floor else True))
    return out


def extrapolated(fits: list, n: int) -> tuple:
    """(GiB, how, floor) at length `n` from the measured [(seq_len, peak GiB)], two or more."""
    (n1, m1), (n2, m2) = fits[-2:]
    floor_gib = max(m for _, m in fits)
    slope_gib = m2 + (m2 - m1) / (n2 - n1) * (n - n2)
    if slope_gib >= floor_gib:
        return slope_gib, "its two longest points, extrapolated", False
    return floor_gib, ("the most its points measured; its peak did not grow with length, so no slope is "
                       "extrapolated"), True


def estimated(s: Series, n: int) -> tuple | None:
    """(GiB, how, floor) at length `n` by the peak-memory model for the series' configuration;
    None where a setting it needs has several values or its model is not at hand."""
    config = {k: v[0] for k in ("MODEL", "NUM_LAYERS", "NUM_EXPERTS", "BATCH_SIZE", "ZERO_STAGE", "world_size",
                                "OFFLOAD_OPTIMIZER", "GRAD_CHECKPOINT", "ENGINE") for v in [s.settings(k)] if len(v) == 1}
    est = peak_memory.of_run(config, n)
    if est is None:
        return None
    if est.floor:
        return est.peak_gib, ("the peak-memory model's optimizer step alone: it does not count this model's or "
                              "engine's activations"), True
    return est.peak_gib, (f"the peak-memory model's estimate of this configuration, within "
                          f"{peak_memory.ESTIMATE_ERROR:.0%} of every peak it was calibrated on"), False
