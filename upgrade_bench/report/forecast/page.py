"""Forecasts on the page: model.py's model applied to measured series.

A forecast is its own record and its own table, labelled "forecast from <series>, not
measured" wherever it is shown, and never merged with a measured number. The model's middle is
corrected and ranged for the group each length is in (calibration.py: a new architecture or
the baseline's own die family; attention- or dense-bound) by the backtest's misses on
published pairs of that group (backtest.py), and each row says how often such ranges held.
"""
from dataclasses import dataclass, field

from . import calibration, attention as forecast_attention, model as forecast_model, reconfig as forecast_reconfig
from ...hardware import gpus
from ..read.series import Series, seq_label
from ..text.tables import fmt, md_table
from ..compare.verdict import call, ratio, tokens_per_s_per_gpu, usd_per_mtok

FORECAST = "forecast"
COST_WORDS = {"below": "cheaper", "above": "dearer", "within": "cannot tell (the range spans even)"}


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
              comm=None) -> dict:
    """{bound: Ratio} for one length of a baseline's step split into `parts` ({bound: ms}):
    the GPU table's ratios, the dense part's by its own GEMM share (`dense_tflop`, the
    checkpoint recompute where `checkpointed`), attention from `attention` ({seq_len: Ratio},
    source) where measured on both GPUs, else the guide's published kernel figures where
    the baseline trains with `base_backend` as the guide's did; peaks and MAMF of `precision`;
    the interconnect's `comm` where measured on both GPUs (forecast_comm), else the datasheets'."""
    base_spec = gpus.lookup(base)
    hw = forecast_model.hardware_ratios(base_spec, gpus.lookup(cand), precision, comm)
    share = forecast_model.gemm_share(dense_tflop, parts.get("dense"), base_spec.mamf_tflops(precision),
                                      checkpointed)
    table, source = attention if attention[0] else forecast_attention.published_attention(base, cand, base_backend)
    exp = forecast_model.exponent_ratio(base_spec, gpus.lookup(cand))
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
    calibration: calibration.Calibration  # the group this length is in, its correction and range
    measured_tflops: float | None = None  # the candidate measured in the same configuration (or an ignored one)


@dataclass
class SeriesForecast:
    base: Series
    candidate: str               # the GPU table's name
    rows: list = field(default_factory=list)
    prices: tuple = (None, None)  # (baseline, candidate) USD per GPU-hour used, None where not given
    measured_differs: str = ""    # --ignore-config keys the candidate's measured series differs in
    hbm_gib: float = 0.0          # the candidate's
    ratio_sources: dict = field(default_factory=dict)  # {bound: {source: {note: None}}}, in order met
    beyond: list = field(default_factory=list)  # beyond_memory's (seq_len, GiB, how) the baseline ran out of memory at
    reconfigured: list = field(default_factory=list)  # forecast_reconfig.Reconfigured, per length where one beats it

    @property
    def label(self) -> str:
        return f"forecast from {self.base.label}, not measured"


def tflops_range(work_tflop: float, f: forecast_model.Forecast) -> tuple:
    """(mid, low, high) TFLOPS of a step of `work_tflop` at the forecast's step times."""
    return (work_tflop / f.step_ms * 1e3, work_tflop / f.step_ms_slow * 1e3, work_tflop / f.step_ms_fast * 1e3)


def forecast_series(s: Series, cand: str, prices: dict, calibrations: dict, measured: Series | None = None,
                    attention: tuple = ({}, ""), comm=None, alternatives: list = ()) -> SeriesForecast:
    """The candidate's forecast at every length of a measured baseline series; `calibrations`:
    calibration.calibration's {group: Calibration}; `measured`: the candidate's own series of
    this configuration (up to --ignore-config keys, named), `attention`:
    forecast_attention.measured_attention's, `comm`: forecast_comm.measured_comm's,
    `alternatives`: forecast_reconfig.alternatives_of's, for the reconfigured forecast."""
    spec = gpus.lookup(cand)
    precision = calibration.precision_of(s.config)
    move = forecast_model.move_of(gpus.lookup(s.gpu), spec)
    out = SeriesForecast(s, spec.name, prices=(_price(prices, s.gpu), _price(prices, spec.name)), hbm_gib=spec.hbm_gib)
    if measured is not None:
        out.measured_differs = "; ".join(f"{k} {', '.join(map(str, b))} here vs {', '.join(map(str, o))} there"
                                         for k in sorted(set(s.ignored) | set(measured.ignored))
                                         for b, o in [(s.settings(k), measured.settings(k))] if b != o)
    base_price, cand_price = out.prices
    for n, (parts, how) in sorted(series_parts(s).items()):
        point = s.points[n]
        gemm, checkpointed = gemm_tflop(point, bool(s.config.get("GRAD_CHECKPOINT")))
        r = ratios_at(s.gpu, spec.name, n, parts, gemm, checkpointed, s.backend, attention, precision, comm)
        for b in parts:
            out.ratio_sources.setdefault(b, {}).setdefault(r[b].source, {})[r[b].note] = None
        how += "; ratios " + ", ".join(f"{b} {r[b].mid:.2f}x" for b in parts)
        cal = calibration.for_group(calibrations, move, calibration.workload_kind(point.get("attn_flop_share"),
                                                                                 precision))
        model = forecast_model.scale(parts, r, how)
        f = forecast_model.Forecast(*cal.step_ms(model.step_ms), model.parts_ms, how)
        tflops = tflops_range(point["model_tflop_per_step"], f)
        speedup = (point["step_ms"] / f.step_ms, point["step_ms"] / f.step_ms_slow, point["step_ms"] / f.step_ms_fast)
        tok_s = tokens_per_s_per_gpu(point)
        usd = base_usd = cost = None
        mem = point.get("peak_mem_gib")
        fits = None if mem is None else mem <= spec.hbm_gib
        if base_price and tok_s:
            base_usd = usd_per_mtok(base_price, tok_s)
        if cand_price and base_usd and fits is not False:  # what does not fit is not priced
            usd = tuple(usd_per_mtok(cand_price, tok_s * x) for x in speedup)
            cost = call(ratio(usd[0], base_usd), (usd[2] / base_usd, usd[1] / base_usd))
        other = measured.points.get(n) if measured is not None else None
        out.rows.append(Row(n, point["step_ms"], f, tflops, speedup, usd, base_usd, cost, mem, fits, cal,
                            other.get("tflops_per_gpu") if other else None))
    out.beyond = beyond_memory(s, spec.hbm_gib)
    out.reconfigured = forecast_reconfig.reconfigure(s, out, calibrations, alternatives)
    return out


def _price(prices: dict, gpu: str) -> float | None:
    """The --price of `gpu` (a GPU table name), given as 'B200', 'NVIDIA B200' or its table name."""
    return next((usd for name, usd in prices.items() if name == gpu or gpus.table_name(name) == gpu), None)


def beyond_memory(s: Series, hbm_gib: float) -> list:
    """[(seq_len, GiB, how)] where the baseline ran out of memory and the candidate's HBM would
    hold the memory the baseline's two longest points extrapolate to (linear in tokens, as
    activations are), never less than the most any point measured: a length that ran out of
    memory needs at least that, and a peak that fell with length says nothing of a slope."""
    fits = sorted((n, p["peak_mem_gib"]) for n, p in s.points.items() if p.get("peak_mem_gib"))
    if len(fits) < 2:
        return []
    (n1, m1), (n2, m2) = fits[-2:]
    floor_gib = max(m for _, m in fits)
    out = []
    for n, err in sorted(s.errors.items()):
        if err.get("error") == "oom" and n > n2:
            slope_gib = m2 + (m2 - m1) / (n2 - n1) * (n - n2)
            gib = max(floor_gib, slope_gib)
            if gib <= hbm_gib:
                out.append((n, gib, "its two longest points, extrapolated" if slope_gib >= floor_gib else
                            "the most its points measured; its peak did not grow with length, so no slope "
                            "is extrapolated"))
    return out


# ---------------------------------------------------------------- the page

def sources_words(sources: dict) -> str:
    """'source (note; note) / source' of one bound's {source: {note: None}}."""
    return " / ".join(src + (f" ({'; '.join(n for n in notes if n)})" if any(notes) else "")
                      for src, notes in sources.items())


def _span(values: tuple, kind: str) -> str:
    """'1.87x (1.54x-1.98x)' of a (mid, low, high)."""
    return f"{fmt(values[0], kind)} ({fmt(values[1], kind)}-{fmt(values[2], kind)})"


def price_words(fc: SeriesForecast) -> str:
    """The prices a forecast's $/token used, or which are missing."""
    (base, cand), gpus_ = fc.prices, (fc.base.gpu, fc.candidate)
    given = [f"{g} ${usd:.2f}" for g, usd in zip(gpus_, (base, cand)) if usd]
    missing = [g for g, usd in zip(gpus_, (base, cand)) if not usd]
    return ("at " + " and ".join(given) + " per GPU-hour" if given else "") + \
        (f"{'; ' if given else ''}no price for {' and '.join(missing)}: no $/token call" if missing else "")


def forecast_markdown(fc: SeriesForecast) -> str:
    """One series' forecast block: the table, the kinds it was calibrated on and how often such
    ranges held, where each ratio came from, what it cannot see."""
    rows = []
    for r in fc.rows:
        usd = (f"{fmt(r.usd_per_mtok[0], 'usd')} ({fmt(r.usd_per_mtok[2], 'usd')}-{fmt(r.usd_per_mtok[1], 'usd')})"
               if r.usd_per_mtok else "-")
        fits = "-" if r.fits is None else ("fits" if r.fits else f"{fmt(r.peak_mem_gib)} GiB > HBM")
        rows.append([seq_label(r.seq_len), r.calibration.kind, fmt(r.step_ms),
                     f"{fmt(r.forecast.step_ms)} ({fmt(r.forecast.step_ms_fast)}-{fmt(r.forecast.step_ms_slow)})",
                     _span(r.tflops, "num"), _span(r.speedup, "x"), fmt(r.base_usd_per_mtok, "usd"), usd,
                     COST_WORDS.get(r.cost_call.word, r.cost_call.word) if r.cost_call else
                     "no call: does not fit" if r.fits is False else "-",
                     _span(r.speedup, "x"), fits, fmt(r.measured_tflops), r.forecast.how])
    measured = f"{fc.candidate} measured TFLOPS" + (" (another configuration)" if fc.measured_differs else "")
    lines = [f"**{fc.label}**: {fc.candidate} for this series' own configuration and node, {price_words(fc)}. "
             "Each row: the model's forecast corrected by the median miss of published pairs of its group, "
             "ranged over 90% of their misses (calibration on published pairs, leave one source out in the "
             "backtest).", "",
             md_table(["seq_len", "kind", f"{fc.base.gpu} step ms (measured)", f"{fc.candidate} step ms (forecast)",
                       "TFLOPS/GPU (forecast)", "speedup (forecast)", f"{fc.base.gpu} $/1M tokens (measured)",
                       f"{fc.candidate} $/1M tokens (forecast)", "$/token call", "break-even price ratio",
                       f"memory on {fc.candidate}", measured, "split"], rows), ""]
    if fc.reconfigured:
        lines += ["", reconfigured_markdown(fc), ""]
    lines += [f"How sure, {kind}: {cal.words()}." for kind, cal in
              {r.calibration.kind: r.calibration for r in fc.rows}.items()]
    if fc.measured_differs:
        lines.append(f"The {measured} column is another configuration, paired by --ignore-config "
                     f"({fc.measured_differs}): not the workload this forecast is for.")
    lines.append(f"Platform: {forecast_model.platform_words(gpus.lookup(fc.base.gpu))} -> "
                 f"{forecast_model.platform_words(gpus.lookup(fc.candidate))} (hardware/gpus.py, each figure cited).")
    lines.append("Ratios: " + "; ".join(f"{b}: {sources_words(srcs)}" for b, srcs in sorted(fc.ratio_sources.items()))
                 + ".")
    for n, gib, how in fc.beyond:
        lines.append(f"At {seq_label(n)} the baseline ran out of memory; it needs at least {fmt(gib)} GiB ({how}), "
                     f"within the {fc.candidate}'s HBM (a memory forecast, no step time).")
    lines.append("Blind spots: kernels that change between GPUs (another attention backend, beta kernels), "
                 "a young cuBLAS, and host CPUs that differ (host time is carried over unchanged).")
    return "\n".join(lines)


def reconfigured_markdown(fc: SeriesForecast) -> str:
    """The reconfigured forecast's table: per length, what the candidate's memory lets the
    workload change, its memory estimate, and the forecast of that configuration."""
    base, cand = gpus.lookup(fc.base.gpu), gpus.lookup(fc.candidate)
    rows = [[seq_label(r.seq_len), r.plan.label, fmt(r.plan.peak_gib),
             "yes: a change the baseline could make too" if r.fits_baseline else "no",
             _span(r.tflops, "num"), _span(r.speedup, "x"), r.memory_how] for r in fc.reconfigured]
    return (f"**Reconfigured {fc.label}**: configurations planned from this series' own, or measured on the "
            f"{base.name} for the same workload, whose memory fits within "
            f"{forecast_reconfig.MEMORY_HEADROOM:.0%} of the {cand.name}'s {cand.hbm_gib:g} GiB, "
            "the one with the most tokens a second at each length where it beats the like-for-like forecast.\n\n"
            + md_table(["seq_len", "what it changed", "memory estimate per GPU (GiB)",
                        f"fits the {base.name}'s {base.hbm_gib:g} GiB too", "TFLOPS/GPU (forecast)",
                        f"tokens/s over the {base.name} as measured (forecast)", "memory estimate from"], rows))
