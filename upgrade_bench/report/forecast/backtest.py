"""The forecast's backtest: each published pair's candidate forecast from its baseline side alone.

Every pair of published_pairs.PAIRS is forecast with forecasts.py's model from the baseline
run's own figures, then set against the candidate's published figures and the three naive
forecasts people quote (the peak, MAMF and HBM-bandwidth ratios of the run's precision). Each
row's range is widened the way a page forecast of its kind would be (calibration.py), from
the other pairs only: the pair predicted never calibrates its own range. Pairs that differ in
more than the GPU (batch, parallelism, precision, container) are kept apart from like-for-like
ones, with what differs named.
"""
import statistics

from . import calibration, model as forecast_model, page as forecasts
from ..published import pairs as published_pairs
from ...hardware import gpus
from ..series import Series, seq_label
from ..tables import fmt, md_table
from ..verdict import ratio

BACKTEST_COLUMNS = ("pair", "gpus", "model", "like_for_like", "differs", "kind", "metric", "seq_len", "split", "forecast",
                    "forecast_low", "forecast_high", "published", "error", "widened_by", "calibrated_on",
                    "naive_peak", "naive_mamf", "naive_bandwidth", "source")
# The same-generation refresh the guide discusses: a backtest row needs a published workload
# figure of both GPUs; without one the backtest says so in a line.
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


def _config(run: dict) -> dict:
    return run["header"].get("config") or {}


def forecast_run(run: dict, cand: str) -> dict:
    """{(metric, seq_len): (forecast, low, high, baseline value, split, attention FLOP share)}
    of one baseline run alone."""
    base = _gpu(run)
    config = _config(run)
    checkpointed, precision = bool(config.get("GRAD_CHECKPOINT")), calibration.precision_of(config)
    backend = run["header"].get("attn_backend")
    out = {}
    if run["summary"]:
        s = Series(base, None, "", config, "", "published", None, None, points=run["summary"])
        for n, (parts, how) in forecasts.series_parts(s).items():
            point = run["summary"][n]
            r = forecasts.ratios_at(base, cand, n, parts, forecasts.tflop_of(point)[1], checkpointed, backend,
                                    precision=precision)
            f = forecast_model.scale(parts, r)
            out["tflops_per_gpu", n] = (*forecasts.tflops_range(point["model_tflop_per_step"], f),
                                        point["tflops_per_gpu"], how, point.get("attn_flop_share"))
    for n, dec in run["decomposition"].items():
        parts = forecast_model.bound_parts(dec)
        r = forecasts.ratios_at(base, cand, n, parts, (dec.get("everything_else") or {}).get("tflop") or 0.0,
                                checkpointed, backend, precision=precision)
        share = ratio(dec["buckets"]["attention"]["tflop"], dec["total"]["tflop"])
        for bucket, bound in (("attention", "attention"), ("everything_else", "dense")):
            b = dec["buckets"][bucket] if bucket == "attention" else dec[bucket]
            out[f"{bucket}_tflops", n] = (b["tflops"] * r[bound].mid, b["tflops"] * r[bound].low,
                                          b["tflops"] * r[bound].high, b["tflops"], "its decomposition", share)
        f = forecast_model.scale(parts, r)
        out["total_tflops", n] = (*forecasts.tflops_range(dec["total"]["tflop"], f), dec["total"]["tflops"],
                                  "its decomposition", share)
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
    range widened leave-one-pair-out for its kind, the published candidate figure, the error,
    and the naive forecasts; like-for-like pairs first."""
    runs = _runs(records)
    rows = []
    for base_id, cand_id in published_pairs.PAIRS:
        if base_id not in runs or cand_id not in runs:
            continue
        base, cand = runs[base_id], runs[cand_id]
        precision = calibration.precision_of(_config(base))
        hw = forecast_model.hardware_ratios(gpus.lookup(_gpu(base)), gpus.lookup(_gpu(cand)), precision)
        naive = {"naive_peak": hw["peak"].mid, "naive_mamf": hw["gemm"].mid, "naive_bandwidth": hw["hbm"].mid}
        differs = published_pairs.differences(_config(base), _config(cand))
        for (metric, n), (mid, low, high, base_value, how, share) in sorted(forecast_run(base, _gpu(cand)).items()):
            pub = _published(cand, metric, n)
            rows.append({"pair": f"{base_id} -> {cand_id}", "gpus": f"{_gpu(base)} -> {_gpu(cand)}",
                         "model": _config(base).get("MODEL"), "like_for_like": not differs,
                         "differs": "; ".join(differs), "kind": calibration.workload_kind(share, precision),
                         "metric": metric, "seq_len": n, "split": how, "forecast": mid, "forecast_low": low,
                         "forecast_high": high, "published": pub, "error": ratio(mid, pub) - 1 if pub else None,
                         **{k: base_value * v for k, v in naive.items()},
                         "source": published_pairs.source_of(cand["header"])})
    rows.sort(key=lambda r: not r["like_for_like"])
    return widen_leave_one_pair_out(rows)


def widened(low_tflops: float, high_tflops: float, widen: float) -> tuple:
    """A TFLOPS range whose step times widen by `widen` either way (forecast_model.scale's
    rule: the slow step time times 1 + widen, the fast one times 1 - widen)."""
    return low_tflops / (1 + widen), high_tflops / max(1 - widen, 1e-9)


def widen_leave_one_pair_out(rows: list) -> list:
    """Each row's range widened as a forecast of its kind is (calibration.widening), from the
    errors of the other pairs: no pair's range uses its own miss."""
    errors = [dict(r) for r in rows]  # the unwidened rows' errors, read while the ranges change
    for r in rows:
        widen, pairs, too_few = calibration.widening(errors, r["kind"], leave_out=r["pair"])
        r["widened_by"] = widen
        r["calibrated_on"] = (f"too few pairs of its kind ({pairs}): the largest miss of any other pair"
                              if too_few else f"the largest miss of the {pairs} other pairs of its kind")
        r["forecast_low"], r["forecast_high"] = widened(r["forecast_low"], r["forecast_high"], widen)
    return rows


def unbacktested(records: list) -> list:
    """A line for the same-generation refresh (REFRESH) where no published training figure of
    its candidate exists: no row is made up."""
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


def inside(row: dict) -> bool:
    return bool(row.get("published")) and row["forecast_low"] <= row["published"] <= row["forecast_high"]


def kind_table(rows: list) -> str:
    """Per kind of workload, like-for-like pairs apart: pairs, figures, the forecast's median
    absolute error beside the naive ratios', and how many figures its ranges held."""
    table = []
    for like in (True, False):
        for kind in sorted({r["kind"] for r in rows}):
            mine = [r for r in rows if r["kind"] == kind and r["like_for_like"] == like]
            if not mine:
                continue
            table.append([kind, "yes" if like else "no", len({r["pair"] for r in mine}), len(mine),
                          fmt(median_abs_error(mine), "pct")]
                         + [fmt(median_abs_error([{"e": naive_error(r, k)} for r in mine], "e"), "pct")
                            for k in ("naive_peak", "naive_mamf", "naive_bandwidth")]
                         + [f"{sum(map(inside, mine))} of {len(mine)}"])
    return md_table(["kind", "like for like", "pairs", "figures", "forecast error", "peak ratio", "MAMF ratio",
                     "HBM ratio", "inside range"], table)


def backtest_markdown(rows: list, notes: list = ()) -> str:
    """The backtest's table (like-for-like pairs first), its medians per kind, then `notes`
    (unbacktested's lines)."""
    if not rows:
        return "\n\n".join(notes)
    table = [[f"{r['gpus']}, {r['model']} ({r['pair']})", "yes" if r["like_for_like"] else f"no: {r['differs']}", r["kind"], r["metric"],
              seq_label(r["seq_len"]), fmt(r["published"]),
              f"{fmt(r['forecast'])} ({fmt(r['forecast_low'])}-{fmt(r['forecast_high'])})",
              fmt(r["error"], "pct"), fmt(naive_error(r, "naive_peak"), "pct"),
              fmt(naive_error(r, "naive_mamf"), "pct"), fmt(naive_error(r, "naive_bandwidth"), "pct"), r["split"]]
             for r in rows]
    return (md_table(["pair", "like for like", "kind", "metric", "seq_len", "published", "forecast (range)", "error",
                      "peak-ratio error", "MAMF-ratio error", "bandwidth-ratio error", "split (fallback)"], table)
            + "\n\n" + kind_table(rows)
            + f"\n\nMedian absolute error of all {len(rows)} figures: forecast {fmt(median_abs_error(rows), 'pct')}. "
              "Ranges: every ratio at its slow and at its fast end, then widened by the largest miss of the other "
              "pairs of the row's kind (leave one pair out: no pair's range uses its own miss), or, with fewer than "
              f"{calibration.MIN_PAIRS} other pairs of its kind, by the largest miss of any other pair. Sources: "
              + "; ".join(sorted({r["source"] for r in rows})) + "."
            + "".join(f"\n\n{n}" for n in notes))
