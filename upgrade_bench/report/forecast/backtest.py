"""The forecast's backtest: each published pair's candidate forecast from its baseline side alone.

Every pair of published/pairs.PAIRS is forecast with page.py's model from the baseline
run's own figures, then set against the candidate's published figures and the three naive
forecasts people quote (the peak, MAMF and HBM-bandwidth ratios of the run's precision). Each
row is corrected and ranged the way a page forecast of its group is (calibration.py), from the
pairs of the *other* sources only (leave one source out): no source's figures calibrate its
own forecasts. Pairs that differ in more than the GPU (batch, parallelism, precision,
container) are kept apart from like-for-like ones, with what differs named.
"""
import functools
import math
import statistics
from dataclasses import replace

from . import calibration, knobs, model as forecast_model, series as forecasts, stacks
from ..node import check as node_check
from ..published import measured, pairs as published_pairs, runs as published_runs
from ...hardware import gpus
from ..read.series import Series, seq_label
from ..text.tables import fmt, md_table
from ..compare.verdict import ratio

BACKTEST_COLUMNS = ("pair", "source", "release", "gpus", "model", "like_for_like", "differs", "kind", "pair_class", "move",
                    "step", "group", "metric",
                    "seq_len", "split", "layout", "model_forecast", "forecast", "forecast_low", "forecast_high", "half_width",
                    "published", "error", "model_error", "calibrated_on", "naive_peak", "naive_mamf",
                    "naive_bandwidth", "platform")
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


def forecast_run(run: dict, cand: str, leave_out_source: str | None = None,
                 node: forecasts.NodeHealth | None = None) -> dict:
    """{(metric, seq_len): (forecast, low, high, ceiling, (stack prior's log half width, its words),
    baseline value, split, attention FLOP share)} of one baseline run alone; the ceiling: the most
    the candidate's hardware (and a stack prior's allowance) can give that figure (model.ceiling),
    crediting the baseline node's shortfall where its node check measured one (`node`, as the page
    does). A stack prior (stacks.py) is taken without `leave_out_source`'s figures."""
    base = _gpu(run)
    config = _config(run)
    checkpointed, precision = bool(config.get("GRAD_CHECKPOINT")), calibration.precision_of(config)
    backend = run["header"].get("attn_backend")
    base_spec, cand_spec = gpus.lookup(base), gpus.lookup(cand)
    power_bound = node.power_bound if node else None

    def capped(mid, low, high, base_value, r, parts):
        """(mid, low, high) times the stack factor, the ceiling (calibrate_leave_one_source_out caps by
        it), and (the stack priors' log half width, their words)."""
        crossing = stacks.cross_stack(base_spec, cand_spec, precision, calibration.step_kind(config),
                                      leave_out_source, base_stack_of(run["header"]),
                                      model_speedup=mid / base_value if base_value else 1.0)
        f = crossing.factor
        return (mid * f, low * f, high * f,
                base_value * forecast_model.ceiling(r, parts, node.share if node else None) * crossing.allowance,
                (crossing.log_half_width, crossing.words))
    out = {}
    if run["summary"]:
        # its decompositions too, as the page forecasts a folder: a length with one is split by it
        s = Series(base, None, "", config, "", "published", None, None, points=run["summary"],
                   decompositions=run["decomposition"])
        for n, (parts, how) in forecasts.series_parts(s).items():
            point = run["summary"][n]
            r = forecasts.ratios_at(base, cand, n, parts, forecasts.tflop_of(point)[1], checkpointed, backend,
                                    precision=precision, power_bound=power_bound)
            f = forecast_model.scale(parts, r)
            out["tflops_per_gpu", n] = (*capped(*forecasts.tflops_range(point["model_tflop_per_step"], f),
                                                point["tflops_per_gpu"], r, parts),
                                        point["tflops_per_gpu"], how, point.get("attn_flop_share"))
    for n, dec in run["decomposition"].items():
        parts = forecast_model.bound_parts(dec)
        r = forecasts.ratios_at(base, cand, n, parts, (dec.get("everything_else") or {}).get("tflop") or 0.0,
                                checkpointed, backend, precision=precision, power_bound=power_bound)
        share = ratio(dec["buckets"]["attention"]["tflop"], dec["total"]["tflop"])
        rest = {b: ms for b, ms in parts.items() if b not in ("attention", "host")}
        for bucket, bucket_parts in (("attention", {"attention": parts.get("attention", 1.0)}),
                                     ("everything_else", rest)):
            b = dec["buckets"][bucket] if bucket == "attention" else dec[bucket]
            mid, low, high = parts_ratio(bucket_parts, r)
            out[f"{bucket}_tflops", n] = (*capped(b["tflops"] * mid, b["tflops"] * low, b["tflops"] * high,
                                                  b["tflops"], r, bucket_parts),
                                          b["tflops"], "its decomposition", share)
        f = forecast_model.scale(parts, r)
        out["total_tflops", n] = (*capped(*forecasts.tflops_range(dec["total"]["tflop"], f), dec["total"]["tflops"],
                                          r, parts), dec["total"]["tflops"], "its decomposition", share)
    return out


@functools.lru_cache(maxsize=None)  # a node folder's check reads it whole: once per run
def node_health(run_id: str) -> forecasts.NodeHealth | None:
    """The NodeHealth of the node that ran `run_id`, from its committed node folder's check (this
    project's runs, published/measured.py); None for a published run, which has no node check."""
    folder = measured.node_folder(run_id)
    if folder is None:
        return None
    checks = node_check.check_folder(str(folder))
    return forecasts.health_of(checks[0]) if len(checks) == 1 else None


def base_stack_of(run_header: dict) -> str | None:
    """The training stack (stacks.py) a published baseline run trained with: its source's."""
    return stacks.SOURCE_STACK.get(backtest_source(run_header))


def parts_ratio(parts: dict, r: dict) -> tuple:
    """(mid, low, high) speedup of the kernel parts `parts` ({bound: ms}) together, each at its own
    ratio: a bucket that holds several (a decomposition's "everything else": its GEMMs and other
    kernels) moves as the model moves them in the step, not by one ratio for all."""
    total = sum(parts.values())
    f = forecast_model.scale(parts, r)
    return total / f.step_ms, total / f.step_ms_slow, total / f.step_ms_fast


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
    """One row per pair, metric and length: the model's forecast from the baseline run alone,
    corrected and ranged from the other sources' pairs of its group, the published candidate
    figure, the error, and the naive forecasts; like-for-like pairs first."""
    runs = _runs(records)
    rows = []
    for base_id, cand_id in published_pairs.PAIRS:
        if base_id not in runs or cand_id not in runs:
            continue
        base, cand = runs[base_id], runs[cand_id]
        precision = calibration.precision_of(_config(base))
        base_spec, cand_spec = gpus.lookup(_gpu(base)), gpus.lookup(_gpu(cand))
        naive = naive_ratios(base_spec, cand_spec, precision)
        differs = published_pairs.differences(_config(base), _config(cand)) + fabric_change(
            _config(base), base_spec, cand_spec)
        changed = any(not d.startswith("CONTAINER") for d in differs)
        klass, step = calibration.pair_class(base_spec, cand_spec, changed), calibration.step_kind(_config(base))
        source_key = backtest_source(cand["header"])
        layout = knobs.config_factor(_config(base), _config(cand))  # the pipeline bubble each side pays
        for (metric, n), (mid, _low, _high, top, (stack_half, stack_words), base_value, how, share) in sorted(
                forecast_run(base, _gpu(cand), source_key, node_health(base_id)).items()):
            pub = _published(cand, metric, n)
            if not pub:  # a length the candidate did not run: nothing to score
                continue
            kind = calibration.workload_kind(share, precision)
            rows.append({"pair": f"{base_id} -> {cand_id}", "gpus": f"{_gpu(base)} -> {_gpu(cand)}",
                         "model": _config(base).get("MODEL"), "like_for_like": not differs,
                         "differs": "; ".join(differs),
                         "software_differs": any(d.startswith("CONTAINER") for d in differs),
                         "kind": kind, "pair_class": klass, "step": step, "group": calibration.group_of(klass, step),
                         "move": calibration.pair_class(base_spec, cand_spec),
                         "base_gpu": base_spec.name, "cand_gpu": cand_spec.name,
                         "metric": metric, "seq_len": n, "split": how, "model_forecast": mid * layout,
                         "published": pub, "ceiling": top * layout,
                         "datasheet_peak": cand_spec.peak_tflops(precision) or cand_spec.bf16,
                         "layout": knobs.factor_words(_config(base), _config(cand)),
                         "model_error": ratio(mid * layout, pub) - 1 if pub else None,
                         **{k: base_value * v if v else None for k, v in naive.items()},
                         "source": published_pairs.source_of(cand["header"]),
                         "source_key": source_key, "base_source_key": backtest_source(base["header"]),
                         "stack_half": stack_half, "stack_words": stack_words,
                         "release": release_of(cand["header"]),
                         "platform": f"{forecast_model.platform_words(base_spec)} -> "
                                     f"{forecast_model.platform_words(cand_spec)}"})
    rows.sort(key=lambda r: not r["like_for_like"])
    return calibrate_leave_one_source_out(rows, runs)


def fabric_change(config: dict, base, cand) -> list:
    """['EP 64 over NVLink domain 8 vs 72'] where the run's expert-parallel group spans more GPUs
    than the baseline's NVLink domain and no more than the candidate's: the same settings, but its
    all-to-all leaves the network for NVLink, a change of the step the GPU ratios do not model
    (the NVLink domain is the platform's, gpus.py); else []."""
    ep = config.get("EP") or 1
    if base.nvlink_domain and cand.nvlink_domain and base.nvlink_domain < ep <= cand.nvlink_domain:
        return [f"EP {ep} over NVLink domain {base.nvlink_domain} vs {cand.nvlink_domain}"]
    return []


def backtest_source(run_header: dict) -> str:
    """The source a pair is left out with: its publisher or framework (the guide, NVIDIA's
    Megatron-Bridge summary, NVIDIA's NeMo Framework summary, this project). A framework's releases
    share its recipes, kernels and biases: leaving one release out while its siblings stay in
    would not leave the source out."""
    return published_pairs.source_key(run_header)


def release_of(run_header: dict) -> str:
    """'megatron-bridge 26.02': the source and the release (container) of its table, a diagnostic."""
    key = published_pairs.source_key(run_header)
    container = (run_header.get("config") or {}).get("CONTAINER")
    return f"{key} {container.removeprefix('NeMo ')}" if key == published_runs.MEGATRON_BRIDGE and container else key


def naive_ratios(base, cand, precision: str) -> dict:
    """The three ratios people quote, from the GPU table: peak, MAMF (None where either lacks
    one) and HBM bandwidth of the run's precision."""
    hw = forecast_model.hardware_ratios(base, cand, precision)
    base_mamf, cand_mamf = base.mamf_tflops(precision), cand.mamf_tflops(precision)
    return {"naive_peak": hw["peak"].mid, "naive_mamf": cand_mamf / base_mamf if base_mamf and cand_mamf else None,
            "naive_bandwidth": hw["hbm"].mid}


def release_pairs(runs: dict) -> list:
    """[(source, log of the newer release's model TFLOP/s over the older's)] of every two published
    runs of one source, GPU, model and configuration in different releases (containers): how far
    a release alone moves one GPU's figure."""
    by_identity = {}
    for run in runs.values():
        config = dict(_config(run))
        container = config.pop("CONTAINER", None)
        point = next(iter(run["summary"].values()), None)
        if not (run["header"] and container and point and point.get("tflops_per_gpu")):
            continue
        key = (published_pairs.source_key(run["header"]), _gpu(run), repr(sorted(config.items())))
        by_identity.setdefault(key, []).append(point["tflops_per_gpu"])
    return [(key[0], math.log(b / a)) for key, values in by_identity.items()
            for i, a in enumerate(values) for b in values[i + 1:]]


def release_half(runs: dict, leave_out_source: str | None) -> tuple:
    """(log half width, words) a pair across releases of one stack is widened by: the symmetric range
    (calibration.symmetric_half_width) of release_pairs' moves of the other sources; (0, '') where
    none is published."""
    moves = [m for source, m in release_pairs(runs) if source != leave_out_source]
    if not moves:
        return 0.0, ""
    half, _how = calibration.symmetric_half_width(moves)
    return half, (f"widened x{math.exp(half):.2f} either way for the release change (one GPU and configuration "
                  f"across releases moved up to that in {len(moves)} published pairs of the other sources)")


def calibrate_leave_one_source_out(rows: list, runs: dict | None = None) -> list:
    """Each row ranged as a forecast of its group is (calibration.fit), from the pairs of the other
    sources: no source calibrates its own forecasts. The hardware ceiling bounds the same step on
    the candidate: a like-for-like row's ends stay below it; a row whose configuration changed
    with the GPU is not that step, and its class's own misses range it (reconfig.py plans such
    changes on the page). A cross-vendor row is widened by its stack priors' spreads (stacks.py),
    a row across releases of one vendor's stack by release_half of `runs` (backtest's): its pairs
    compare two releases as well as two GPUs, and no other source's pair of its class does."""
    fitted = [dict(r) for r in rows]  # the model's forecasts, read while the rows change
    for r in rows:
        cal = calibration.fit(fitted, r["group"], leave_out_source=r["source_key"])
        cal = replace(cal, stack=r.get("stack_words", ""), stack_half=r.get("stack_half", 0.0))
        if r.get("software_differs") and r["move"] != calibration.CROSS_VENDOR and runs:
            half, words = release_half(runs, r["source_key"])
            cal = replace(cal, extra=words, extra_half=half)
            r["ceiling"] *= math.exp(half)  # another release is not the same step's software: its reach too
        # another configuration is not the baseline's step, but no step outruns the candidate's datasheet peak
        top = r["datasheet_peak"] if r["pair_class"] == calibration.CONFIG_CHANGED else r["ceiling"]
        r["forecast"], r["forecast_low"], r["forecast_high"] = (min(x, top) for x in cal.apply(r["model_forecast"]))
        r["half_width"] = cal.half_width()
        r["error"] = ratio(r["forecast"], r["published"]) - 1 if r["published"] else None
        whose = {"": "of its group", "class": "of its class (too few of its group)",
                 "all": "of every class (too few of its class)"}[cal.fallback]
        r["calibrated_on"] = "; ".join(w for w in (
            f"{len(cal.misses)} pairs {whose} from {', '.join(cal.sources) or 'no source'}: {cal.ends_words()}",
            cal.extra, cal.stack) if w)
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
    return ratio(row[key], row["published"]) - 1 if row.get("published") and row.get(key) else None


def inside(row: dict) -> bool:
    return bool(row.get("published")) and row["forecast_low"] <= row["published"] <= row["forecast_high"]


def _median_naive(rows: list, key: str) -> float | None:
    return median_abs_error([{"e": naive_error(r, key)} for r in rows], "e")


def _summary_row(mine: list) -> list:
    """pairs, figures, median error, coverage, median half-width, the naive ratios' errors, beats."""
    err, peak = median_abs_error(mine), _median_naive(mine, "naive_peak")
    beats = "-" if err is None or peak is None else ("yes" if err < peak else "no: the peak ratio does better")
    return [len({r["pair"] for r in mine}), len(mine), fmt(err, "pct"), f"{sum(map(inside, mine))} of {len(mine)}",
            fmt(statistics.median(r["half_width"] for r in mine), "pct"), fmt(peak, "pct"),
            fmt(_median_naive(mine, "naive_mamf"), "pct"), fmt(_median_naive(mine, "naive_bandwidth"), "pct"), beats]


SUMMARY_COLUMNS = ["pairs", "figures", "forecast error", "inside range", "range half-width", "peak ratio", "MAMF ratio",
                   "HBM ratio", "beats the peak ratio"]


def _table_by(rows: list, key: str, label: str) -> str:
    """Per `key` (source or release, each left out as its source is) and pair class: the summary row."""
    keys = sorted({(r[key], r["pair_class"]) for r in rows})
    table = [[k, klass, *_summary_row([r for r in rows if (r[key], r["pair_class"]) == (k, klass)])]
             for k, klass in keys] + [["all", "all", *_summary_row(rows)]]
    return md_table([label, "class", *SUMMARY_COLUMNS], table)


def source_table(rows: list) -> str:
    """Per source (left out in turn) and pair class: pairs, figures, the forecast's median absolute
    error, its coverage and median range half-width, beside the naive ratios' errors."""
    return _table_by(rows, "source_key", "source")


def release_table(rows: list) -> str:
    """The same per release of a source (a diagnostic: each release is still ranged with its
    whole source left out)."""
    return _table_by(rows, "release", "release")


def class_table(rows: list) -> str:
    """Per pair class and per group (class and step kind): the same, every source left out in turn."""
    table = []
    for klass in sorted({r["pair_class"] for r in rows}):
        table.append([klass, *_summary_row([r for r in rows if r["pair_class"] == klass])])
        for group in sorted({r["group"] for r in rows if r["pair_class"] == klass}):
            table.append([f"- {group}", *_summary_row([r for r in rows if r["group"] == group])])
    return md_table(["class", *SUMMARY_COLUMNS], table)


def method_words(rows: list) -> str:
    """How the backtest ranged its rows, and its sources, in sentences."""
    return (f"Leave one source out (a source: one publisher or framework, all its releases together): "
            f"each source's forecasts are ranged by a split-conformal interval of the other sources' pairs of "
            f"their group (pair class and step kind): the signed misses of rank ceil((n+1) x {calibration.TAIL:g}) "
            f"from either end, so each end holds {calibration.TAIL:.0%} on its side; with fewer than "
            f"{calibration.MIN_PAIRS} such pairs by their class's, then every pair's; no correction. Same die: "
            f"symmetric, the absolute miss of rank ceil((n+1) x {calibration.COVERAGE:g}), Student-t under 4 pairs. "
            "A pair across releases of one vendor's stack: widened by what a release moves. Configuration changed: a dense step's forecast "
            "times the ratio of the pipeline bubbles the two sides pay (Narayanan et al. 2021); ranged by other "
            f"classes' pairs, an MoE step's widened x{math.exp(calibration.RECONFIG_ALLOWANCE):.2f} either way. "
            "Cross-vendor: widened by "
            "the stack priors' spreads. A like-for-like row's ends no higher than the candidate's hardware "
            "ceiling, a reconfigured one's no higher than the candidate's datasheet peak. "
            "Sources: " + "; ".join(sorted({published_pairs.SOURCE_NAMES.get(r["source_key"], r["source_key"])
                                             for r in rows})) + ".")


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def backtest_summary(rows: list, notes: list = ()) -> str:
    """The terminal's backtest (within 100 columns): per class and per source, n pairs and
    figures, median error, inside/n, median half-width; the method and sources in full, wrapped."""
    import textwrap
    if not rows:
        return "\n".join(notes) + "\n"
    head = f"{'':34} {'pairs':>5} {'figs':>4} {'error':>6} {'inside':>9} {'half-width':>10}"

    def line(label: str, mine: list) -> str:
        hits = sum(map(inside, mine))
        return (f"{_short(label, 34):34} {len({r['pair'] for r in mine}):>5} {len(mine):>4} "
                f"{fmt(median_abs_error(mine), 'pct'):>6} {f'{hits}/{len(mine)} {hits / len(mine):.0%}':>9} "
                f"{fmt(statistics.median(r['half_width'] for r in mine), 'pct'):>10}")
    out = ["By pair class (each source left out in turn), and its step kinds where it has several:", head]
    for k in sorted({r["pair_class"] for r in rows}):
        mine = [r for r in rows if r["pair_class"] == k]
        out.append(line(k, mine))
        steps = sorted({r["step"] for r in mine})
        out += [line(f"- {step}", [r for r in mine if r["step"] == step]) for step in steps if len(steps) > 1]
    out += [line("all", rows), "By source:", head]
    out += [line(k, [r for r in rows if r["source_key"] == k]) for k in sorted({r["source_key"] for r in rows})]
    out += textwrap.wrap(method_words(rows), 100, break_on_hyphens=False)
    out += [w for n in notes for w in textwrap.wrap(n, 100, break_on_hyphens=False)]
    return "\n".join(out) + "\n"


def backtest_markdown(rows: list, notes: list = ()) -> str:
    """The backtest's table (like-for-like pairs first), its medians per class, source and release,
    then `notes` (unbacktested's lines)."""
    if not rows:
        return "\n\n".join(notes)
    table = [[f"{r['gpus']}, {r['model']} ({r['pair']})", r["release"],
              "yes" if r["like_for_like"] else f"no: {r['differs']}", r["kind"], r["metric"],
              seq_label(r["seq_len"]), fmt(r["published"]),
              f"{fmt(r['forecast'])} ({fmt(r['forecast_low'])}-{fmt(r['forecast_high'])})",
              fmt(r["error"], "pct"), fmt(naive_error(r, "naive_peak"), "pct"),
              fmt(naive_error(r, "naive_mamf"), "pct"), fmt(naive_error(r, "naive_bandwidth"), "pct"), r["split"]]
             for r in rows]
    return (md_table(["pair", "source", "like for like", "kind", "metric", "seq_len", "published", "forecast (range)",
                      "error", "peak-ratio error", "MAMF-ratio error", "bandwidth-ratio error", "split (fallback)"],
                     table)
            + "\n\n" + class_table(rows) + "\n\n" + source_table(rows)
            + "\n\nPer release (a diagnostic; each release ranged with its whole source left out):\n\n"
            + release_table(rows)
            + f"\n\nMedian absolute error of all {len(rows)} figures of {len({r['pair'] for r in rows})} pairs: "
              f"{fmt(median_abs_error(rows), 'pct')}. " + method_words(rows)
            + "".join(f"\n\n{n}" for n in notes))
