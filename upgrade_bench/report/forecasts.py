"""Forecasts on the page and their backtest: forecast.py's model applied to measured series.

A forecast is its own record and its own table, labelled "forecast from <series>, not
measured" wherever it is shown, and never merged with a measured number. The backtest
forecasts the candidate of each published pair from its baseline side alone and sets the
forecast against the published candidate figures, next to the three naive forecasts people
quote (the peak, MAMF and HBM-bandwidth ratios).
"""
import statistics
from dataclasses import dataclass, field

from . import forecast_attention, forecast_model
from ..hardware import gpus
from . import published
from .series import Series, seq_label
from .tables import fmt, md_table
from .verdict import call, ratio, tokens_per_s_per_gpu, usd_per_mtok

FORECAST = "forecast"
COST_WORDS = {"below": "cheaper", "above": "dearer", "within": "cannot tell (the range spans even)"}


def _tflop(summary: dict) -> tuple[float, float] | None:
    """(attention TFLOP, dense TFLOP) of one step: the FLOP count as the summary recorded it."""
    total, share = summary.get("model_tflop_per_step"), summary.get("attn_flop_share")
    if not total or share is None:
        return None
    return total * share, total * (1 - share)


def series_parts(s: Series) -> dict:
    """{seq_len: ({bound: ms} summing to the measured step, how it was split)}."""
    tflop = {n: _tflop(p) for n, p in s.points.items()}
    decs = {n: forecast_model.decomposition_parts(d) for n, d in s.decompositions.items()}
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
              base_backend: str | None, attention: tuple = ({}, ""), comm=None) -> dict:
    """{bound: Ratio} for one length of a baseline's step split into `parts` ({bound: ms}):
    the GPU table's ratios, the dense part's by its own GEMM share (`dense_tflop`, the
    checkpoint recompute where `checkpointed`), attention from `attention` ({seq_len: Ratio},
    source) where measured on both GPUs, else the guide's published kernel figures where
    the baseline trains with `base_backend` as the guide's did; the interconnect's `comm` where
    measured on both GPUs (forecast_comm), else the datasheets'."""
    base_spec = gpus.lookup(base)
    hw = forecast_model.hardware_ratios(base_spec, gpus.lookup(cand), comm)
    share = forecast_model.gemm_share(dense_tflop, parts.get("dense"), base_spec.mamf_bf16, checkpointed)
    table, source = attention if attention[0] else forecast_attention.published_attention(base, cand, base_backend)
    return {**hw, "dense": forecast_model.dense_ratio(hw, share),
            "attention": forecast_model.attention_ratio(hw, table, seq_len, source)}


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
    measured_tflops: float | None = None  # the candidate measured in the same configuration


@dataclass
class SeriesForecast:
    base: Series
    candidate: str               # the GPU table's name
    rows: list = field(default_factory=list)
    widen: float = 0.0           # the backtest's median error the ranges were widened by
    ratio_sources: dict = field(default_factory=dict)  # {bound: {source: {note: None}}}, in order met
    beyond: list = field(default_factory=list)  # [(seq_len, estimated GiB)] the baseline ran out of memory at

    @property
    def label(self) -> str:
        return f"forecast from {self.base.label}, not measured"


def tflops_range(work_tflop: float, f: forecast_model.Forecast) -> tuple:
    """(mid, low, high) TFLOPS of a step of `work_tflop` at the forecast's step times."""
    return (work_tflop / f.step_ms * 1e3, work_tflop / f.step_ms_slow * 1e3, work_tflop / f.step_ms_fast * 1e3)


def forecast_series(s: Series, cand: str, prices: dict, widen: float, measured=None,
                    attention: tuple = ({}, ""), comm=None) -> SeriesForecast:
    """The candidate's forecast at every length of a measured baseline series; `measured`:
    the candidate's own points of the same configuration, `attention`:
    forecast_attention.measured_attention's, `comm`: forecast_comm.measured_comm's."""
    spec = gpus.lookup(cand)
    out = SeriesForecast(s, spec.name, widen=widen)
    cand_price = _price(prices, spec.name)
    base_price = _price(prices, s.gpu)
    for n, (parts, how) in sorted(series_parts(s).items()):
        point = s.points[n]
        r = ratios_at(s.gpu, spec.name, n, parts, _tflop(point)[1], bool(s.config.get("GRAD_CHECKPOINT")),
                      s.backend, attention, comm)
        for b in parts:
            out.ratio_sources.setdefault(b, {}).setdefault(r[b].source, {})[r[b].note] = None
        how += "; ratios " + ", ".join(f"{b} {r[b].mid:.2f}x" for b in parts)
        f = forecast_model.scale(parts, r, widen, how)
        work = point["model_tflop_per_step"]
        tflops = tflops_range(work, f)
        speedup = (point["step_ms"] / f.step_ms, point["step_ms"] / f.step_ms_slow, point["step_ms"] / f.step_ms_fast)
        tok_s = tokens_per_s_per_gpu(point)
        usd = base_usd = cost = None
        if cand_price and base_price and tok_s:
            usd = tuple(usd_per_mtok(cand_price, tok_s * x) for x in speedup)
            base_usd = usd_per_mtok(base_price, tok_s)
            cost = call(ratio(usd[0], base_usd), (usd[2] / base_usd, usd[1] / base_usd))
        mem = point.get("peak_mem_gib")
        other = (measured or {}).get(n)
        out.rows.append(Row(n, point["step_ms"], f, tflops, speedup, usd, base_usd, cost, mem,
                            None if mem is None else mem <= spec.hbm_gib,
                            other.get("tflops_per_gpu") if other else None))
    out.beyond = beyond_memory(s, spec.hbm_gib)
    return out


def _price(prices: dict, gpu: str) -> float | None:
    """The --price of `gpu` (a GPU table name), given as 'B200', 'NVIDIA B200' or its table name."""
    return next((usd for name, usd in prices.items() if name == gpu or gpus.table_name(name) == gpu), None)


def beyond_memory(s: Series, hbm_gib: float) -> list:
    """[(seq_len, GiB)] where the baseline ran out of memory and the candidate's HBM would
    hold the memory the baseline's two longest points extrapolate to (linear in tokens, as
    activations are)."""
    fits = sorted((n, p["peak_mem_gib"]) for n, p in s.points.items() if p.get("peak_mem_gib"))
    if len(fits) < 2:
        return []
    (n1, m1), (n2, m2) = fits[-2:]
    out = []
    for n, err in sorted(s.errors.items()):
        if err.get("error") == "oom" and n > n2:
            gib = m2 + (m2 - m1) / (n2 - n1) * (n - n2)
            if gib <= hbm_gib:
                out.append((n, gib))
    return out


# ---------------------------------------------------------------- the backtest

# The published pairs: (baseline run, candidate run) of results/reference/ (the guide's).
PAIRS = (("guide-h200-sweep", "guide-b200-sweep"), ("guide-h200-decompose", "guide-b200-decompose"))
BACKTEST_COLUMNS = ("pair", "metric", "seq_len", "forecast", "forecast_low", "forecast_high", "published",
                    "error", "widened_by", "naive_peak", "naive_mamf", "naive_bandwidth")
# The same-generation refresh the guide discusses: a backtest row needs a published workload
# figure of both GPUs, and the guide publishes only their MAMF (gpus.py) for this pair.
REFRESH = ("B200 SXM", "B300 SXM")


def _runs(records: list) -> dict:
    """{run_id: {"header": ..., "summary": {n: r}, "decomposition": {n: r}}}."""
    runs = {}
    for r in records:
        run = runs.setdefault(r.get("run_id"), {"header": None, "summary": {}, "decomposition": {}})
        if r.get("kind") == "header":
            run["header"] = r
        elif r.get("kind") in ("summary", "decomposition"):
            run[r["kind"]][r["seq_len"]] = r
    return runs


def _gpu(run: dict) -> str:
    return gpus.lookup(run["header"]["hardware"]["gpu_name"]).name


def forecast_run(run: dict, cand: str) -> dict:
    """{(metric, seq_len): (forecast, low, high, baseline value)} of one baseline run alone."""
    base = _gpu(run)
    checkpointed = bool((run["header"].get("config") or {}).get("GRAD_CHECKPOINT"))
    backend = run["header"].get("attn_backend")
    out = {}
    if run["summary"]:
        s = Series(base, None, "", run["header"].get("config") or {}, "", "guide", None, None,
                   points=run["summary"])
        for n, (parts, how) in series_parts(s).items():
            point = run["summary"][n]
            f = forecast_model.scale(parts, ratios_at(base, cand, n, parts, _tflop(point)[1], checkpointed, backend))
            out["tflops_per_gpu", n] = (*tflops_range(point["model_tflop_per_step"], f), point["tflops_per_gpu"])
    for n, dec in run["decomposition"].items():
        parts = forecast_model.decomposition_parts(dec)
        r = ratios_at(base, cand, n, parts, (dec.get("everything_else") or {}).get("tflop") or 0.0, checkpointed,
                      backend)
        for bucket, bound in (("attention", "attention"), ("everything_else", "dense")):
            b = dec["buckets"][bucket] if bucket == "attention" else dec[bucket]
            out[f"{bucket}_tflops", n] = (b["tflops"] * r[bound].mid, b["tflops"] * r[bound].low,
                                          b["tflops"] * r[bound].high, b["tflops"])
        f = forecast_model.scale(parts, r)
        out["total_tflops", n] = (*tflops_range(dec["total"]["tflop"], f), dec["total"]["tflops"])
    return out


def _published(run: dict, metric: str, n: int) -> float | None:
    if metric == "tflops_per_gpu":
        return (run["summary"].get(n) or {}).get("tflops_per_gpu")
    dec = run["decomposition"].get(n)
    if not dec:
        return None
    name = metric.removesuffix("_tflops")
    part = dec["buckets"].get(name) if name == "attention" else dec.get(name)
    return (part or {}).get("tflops")


def backtest(records: list) -> list:
    """One row per pair, metric and length: the forecast from the baseline run alone, its
    range, the published candidate figure, the error, and the naive forecasts."""
    runs = _runs(records)
    rows = []
    for base_id, cand_id in PAIRS:
        if base_id not in runs or cand_id not in runs:
            continue
        base, cand = runs[base_id], runs[cand_id]
        hw = forecast_model.hardware_ratios(gpus.lookup(_gpu(base)), gpus.lookup(_gpu(cand)))
        naive = {"naive_peak": hw["peak"].mid, "naive_mamf": hw["gemm"].mid, "naive_bandwidth": hw["hbm"].mid}
        for (metric, n), (mid, low, high, base_value) in sorted(forecast_run(base, _gpu(cand)).items(),
                                                                key=lambda kv: (kv[0][0], kv[0][1])):
            pub = _published(cand, metric, n)
            rows.append({"pair": f"{base_id} -> {cand_id}", "metric": metric, "seq_len": n, "forecast": mid,
                         "forecast_low": low, "forecast_high": high, "published": pub,
                         "error": ratio(mid, pub) - 1 if pub else None,
                         **{k: base_value * v for k, v in naive.items()}})
    return widen_leave_one_out(rows)


def widened(low_tflops: float, high_tflops: float, widen: float) -> tuple:
    """A TFLOPS range whose step times widen by `widen` either way (forecast_model.scale's
    rule: the slow step time times 1 + widen, the fast one times 1 - widen)."""
    return low_tflops / (1 + widen), high_tflops / (1 - widen)


def widen_leave_one_out(rows: list) -> list:
    """Each row's range widened by the median absolute error of the other rows: the
    backtest's own error, and no row's range uses its own."""
    errors = [None if r["error"] is None else abs(r["error"]) for r in rows]
    for i, r in enumerate(rows):
        others = [e for j, e in enumerate(errors) if j != i and e is not None]
        r["widened_by"] = statistics.median(others) if others else 0.0
        r["forecast_low"], r["forecast_high"] = widened(r["forecast_low"], r["forecast_high"], r["widened_by"])
    return rows


def unbacktested(records: list) -> list:
    """A line for each pair the backtest would hold where published figures existed (REFRESH):
    no row is made up where the candidate has no published workload figure."""
    worked = {_gpu(run) for run in _runs(records).values()
              if run["header"] and gpus.lookup(run["header"]["hardware"]["gpu_name"])
              and (run["summary"] or run["decomposition"])}
    base, cand = (gpus.lookup(g) for g in REFRESH)
    if cand.name in worked:
        return []
    return [f"{base.name} -> {cand.name} (the same-generation refresh): not backtested. The guide publishes "
            f"their MAMF ({base.mamf_bf16:g} vs {cand.mamf_bf16:g} TFLOPS bf16) but no training figures on a "
            f"{cand.name}, and a row needs one to set the forecast against."]


def median_abs_error(rows: list, key: str = "error") -> float | None:
    errors = [abs(r[key]) for r in rows if r.get(key) is not None]
    return statistics.median(errors) if errors else None


def naive_error(row: dict, key: str) -> float | None:
    return ratio(row[key], row["published"]) - 1 if row.get("published") else None


def shipped_backtest() -> list:
    """The backtest of the published pairs this suite ships (report/published.py)."""
    return backtest(published.guide_reference_records())


def backtest_markdown(rows: list, notes: list = ()) -> str:
    """The backtest's table, its medians and how many published figures its ranges hold,
    then `notes` (unbacktested's lines)."""
    if not rows:
        return "\n\n".join(notes)
    table = [[r["pair"], r["metric"], seq_label(r["seq_len"]), fmt(r["published"]),
              f"{fmt(r['forecast'])} ({fmt(r['forecast_low'])}-{fmt(r['forecast_high'])})",
              fmt(r["error"], "pct"), fmt(naive_error(r, "naive_peak"), "pct"),
              fmt(naive_error(r, "naive_mamf"), "pct"), fmt(naive_error(r, "naive_bandwidth"), "pct")]
             for r in rows]
    inside = sum(1 for r in rows if r["published"] and r["forecast_low"] <= r["published"] <= r["forecast_high"])
    medians = [median_abs_error(rows)] + [median_abs_error([{"e": naive_error(r, k)} for r in rows], "e")
                                          for k in ("naive_peak", "naive_mamf", "naive_bandwidth")]
    return (md_table(["pair", "metric", "seq_len", "published", "forecast (range)", "error", "peak-ratio error",
                      "MAMF-ratio error", "bandwidth-ratio error"], table)
            + f"\n\nMedian absolute error: forecast {fmt(medians[0], 'pct')}; naive peak ratio "
              f"{fmt(medians[1], 'pct')}, MAMF ratio {fmt(medians[2], 'pct')}, bandwidth ratio "
              f"{fmt(medians[3], 'pct')}. Published figure inside the forecast range: {inside} of {len(rows)}. "
              f"Ranges: every ratio at its slow and at its fast end, then widened by the median absolute "
              f"error of the other rows (leave-one-out: no row's range uses its own error)."
            + "".join(f"\n\n{n}" for n in notes))


# ---------------------------------------------------------------- the page

def sources_words(sources: dict) -> str:
    """'source (note; note) / source' of one bound's {source: {note: None}}."""
    return " / ".join(src + (f" ({'; '.join(n for n in notes if n)})" if any(notes) else "")
                      for src, notes in sources.items())


def forecast_markdown(fc: SeriesForecast) -> str:
    """One series' forecast block: the table, where each ratio came from, what it cannot see."""
    rows = []
    for r in fc.rows:
        t, sp = r.tflops, r.speedup
        usd = f"{fmt(r.usd_per_mtok[0], 'usd')} ({fmt(r.usd_per_mtok[2], 'usd')}-{fmt(r.usd_per_mtok[1], 'usd')})" \
            if r.usd_per_mtok else "-"
        fits = "-" if r.fits is None else ("fits" if r.fits else f"{fmt(r.peak_mem_gib)} GiB > HBM")
        rows.append([seq_label(r.seq_len), fmt(r.step_ms), f"{fmt(r.forecast.step_ms)} "
                     f"({fmt(r.forecast.step_ms_fast)}-{fmt(r.forecast.step_ms_slow)})",
                     f"{fmt(t[0])} ({fmt(t[1])}-{fmt(t[2])})", f"{fmt(sp[0], 'x')} ({fmt(sp[1], 'x')}-{fmt(sp[2], 'x')})",
                     usd, COST_WORDS.get(r.cost_call.word, r.cost_call.word) if r.cost_call else "-", f"{fmt(sp[0], 'x')} ({fmt(sp[1], 'x')}-{fmt(sp[2], 'x')})", fits,
                     fmt(r.measured_tflops), r.forecast.how])
    lines = [f"**{fc.label}**: {fc.candidate} for this series' own configuration and node. Ranges: "
             f"every ratio at its slow and fast end, widened by the backtest's median error "
             f"({fmt(fc.widen, 'pct')}).", "",
             md_table(["seq_len", f"{fc.base.gpu} step ms (measured)", f"{fc.candidate} step ms (forecast)",
                       "TFLOPS/GPU (forecast)", "speedup (forecast)", f"{fc.candidate} $/1M tokens (forecast)",
                       "$/token call", "break-even price ratio", f"memory on {fc.candidate}",
                       f"{fc.candidate} measured TFLOPS", "split"], rows), "",
             "Ratios: " + "; ".join(f"{b}: {sources_words(srcs)}" for b, srcs in sorted(fc.ratio_sources.items())) + "."]
    for n, gib in fc.beyond:
        lines.append(f"At {seq_label(n)} the baseline ran out of memory; its two longest points extrapolate "
                     f"to {fmt(gib)} GiB, within the {fc.candidate}'s HBM (a memory forecast, no step time).")
    lines.append("Blind spots: kernels that change between GPUs (another attention backend, beta kernels), "
                 "a young cuBLAS, and host CPUs that differ (host time is carried over unchanged).")
    return "\n".join(lines)
