"""Comparisons of GPUs: baseline, pairing, the guide's tables, $/token and verdicts.

The analysis only: pure functions over the series of series.py. markdown.py writes report.md
from what `analyse` computes, figures.py draws it, published.py holds the guide's published
numbers and plot_results.py is the command line. Every other GPU's series is compared with
each baseline-GPU series of the same configuration: the guide's H200 FA3 vs B200 FA4 is one
configuration (ATTN_BACKEND=auto), two backends.
"""
from dataclasses import dataclass

from .. import gpus
from .series import (Dataset, Gpu, Series, median_record, normalise_dtype, provenance,
                     reference_of, seq_label)
from .stacks import mixed_stack_warnings, stack_differences, stack_of

# speedup = (mfu_new * peak_new) / (mfu_old * peak_old) is exact algebra when both MFUs use
# the table peaks; a gap above rounding means a run's MFU used another peak (PEAK_TFLOPS).
IDENTITY_TOLERANCE = 0.01
# Step times of one point spread by a few percent run to run; a smaller $/token difference
# is noise, so it is called "the same" and the tie is broken on wall-clock.
SAME_COST_TOLERANCE = 0.03


def match_gpu(name: str, gpu_map: dict) -> str | None:
    """The dataset GPU a user-given name means: its normalised or raw name (any case), or
    the GPU the table maps the name to ('B200' -> 'B200 SXM')."""
    wanted = name.strip().lower()
    for gpu in gpu_map.values():
        if wanted == gpu.name.lower() or wanted in {r.lower() for r in gpu.raw_names}:
            return gpu.name
    spec = gpus.lookup(name)
    return spec.name if spec and spec.name in gpu_map else None


def choose_baseline(gpu_map: dict, candidates, requested: str | None = None) -> str:
    """The GPU the others are compared with: --baseline, else the lower bf16 peak."""
    if requested:
        found = match_gpu(requested, gpu_map)
        if found is None:
            raise ValueError(f"--baseline {requested!r}: no such GPU in the logs "
                             f"(GPUs: {', '.join(sorted(gpu_map))})")
        return found
    # Unknown peaks sort last; ties (H100 vs H200) go to the smaller memory.
    return min(candidates, key=lambda n: (gpu_map[n].peak_tflops is None,
                                          gpu_map[n].peak_tflops or 0.0,
                                          gpu_map[n].hbm_gib or 0.0, n))


def pairs(series: list, baseline: str) -> list:
    """(baseline series, other series) of the same configuration, other GPUs only."""
    base = [s for s in series if s.gpu == baseline]
    return [(b, o) for o in series if o.gpu != baseline for b in base if b.config_key == o.config_key]


def unpaired_hints(series: list, baseline: str, paired: list) -> list:
    """One line per other-GPU series that has no baseline series of its configuration."""
    done = {id(o) for _, o in paired}
    base = [s for s in series if s.gpu == baseline]
    hints = []
    for o in series:
        if o.gpu == baseline or id(o) in done:
            continue
        if not base:
            hints.append(f"{o.label}: no {baseline} series to compare with")
            continue
        diffs = [(sorted(k for k in set(b.config) | set(o.config)
                         if b.config.get(k) != o.config.get(k)), b) for b in base]
        keys, nearest = min(diffs, key=lambda d: len(d[0]))
        hints.append(f"{o.label}: no {baseline} series of the same configuration; nearest "
                     f"{nearest.label} differs in {', '.join(keys)} "
                     f"(--ignore-config {' --ignore-config '.join(keys)} pairs them)")
    return hints


def ratio(new, old):
    return new / old if new is not None and old not in (None, 0) else None


def mamf_of(gpu: Gpu, dtype: str = "bf16") -> float | None:
    """Best MAMF TFLOPS for a dtype; a measurement beats published figures."""
    values = [(not r.get("reference"), r.get("tflops_mean") or r.get("tflops_median"))
              for r in gpu.mamf if normalise_dtype(r.get("dtype")) == dtype]
    return max((v for v in values if v[1]), default=(None, None))[1]


def cannot_run(s: Series, gpu: Gpu, seq_len: int) -> str | None:
    """Why a series cannot run a point: its OOM there, or its capacity ceiling below it."""
    error = s.errors.get(seq_len)
    if error and error.get("error") == "oom" and seq_len not in s.points:
        return "OOM"
    for key, reference, cap in gpu.capacity:
        fit = cap.get("max_fit_seq_len")
        same_runs = (key is None or key == s.config_key) and reference == s.reference
        if same_runs and fit is not None and fit < seq_len and seq_len not in s.points:
            return f"max fit {seq_label(fit)}"
    return None


def speedup_rows(base: Series, other: Series, gpu_map: dict) -> list:
    """The guide's speedup table with the identity check and capability gaps."""
    peak_ratio = ratio(other.peak_tflops, base.peak_tflops)
    rows = []
    for n in sorted(set(base.points) | set(other.points)):
        b, o = base.points.get(n), other.points.get(n)
        row = {"seq_len": n, "attn_share": (o or b).get("attn_flop_share"),
               "base_tflops": (b or {}).get("tflops_per_gpu"),
               "other_tflops": (o or {}).get("tflops_per_gpu"),
               "base_mfu": (b or {}).get("mfu"), "other_mfu": (o or {}).get("mfu"),
               "peak_ratio": peak_ratio, "speedup": None, "mfu_ratio": None,
               "identity": None, "identity_ok": None, "gap": None}
        if b and o:
            row["speedup"] = ratio(row["other_tflops"], row["base_tflops"])
            row["mfu_ratio"] = ratio(row["other_mfu"], row["base_mfu"])
            if peak_ratio and row["mfu_ratio"] and row["speedup"]:
                row["identity"] = peak_ratio * row["mfu_ratio"]
                row["identity_ok"] = abs(row["identity"] / row["speedup"] - 1) <= IDENTITY_TOLERANCE
        elif o:
            why = cannot_run(base, gpu_map[base.gpu], n)
            row["gap"] = f"{base.gpu} cannot run this ({why})" if why else None
        else:
            why = cannot_run(other, gpu_map[other.gpu], n)
            row["gap"] = f"{other.gpu} cannot run this ({why})" if why else None
        rows.append(row)
    return rows


def tokens_per_s(summary: dict) -> float | None:
    if summary.get("tokens_per_s_per_gpu"):
        return summary["tokens_per_s_per_gpu"]
    if summary.get("step_ms"):
        return (summary.get("batch_size") or 1) * summary["seq_len"] / (summary["step_ms"] * 1e-3)
    return None


def usd_per_mtok(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float) -> float:
    """$ per million tokens for one GPU at a price per GPU-hour."""
    return usd_per_gpu_hour / (tokens_per_s_per_gpu * 3600.0) * 1e6


def verdict(other_gpu: str, cost_ratio: float | None, faster: float | None) -> str:
    """The guide's rule: $/token first, ties broken on wall-clock (memory in the table)."""
    if cost_ratio is None:
        return "no price"
    if abs(cost_ratio - 1) <= SAME_COST_TOLERANCE:
        money = f"{other_gpu}: same $/token (within {SAME_COST_TOLERANCE:.0%})"
    elif cost_ratio < 1:
        money = f"{other_gpu}: {1 - cost_ratio:.1%} cheaper per token"
    else:
        money = f"{other_gpu}: {cost_ratio - 1:.1%} dearer per token"
    if faster is None:
        return money
    pace = f"{faster:.2f}x faster" if faster >= 1 else f"{1 / faster:.2f}x slower"
    return f"{money}, {pace} per step"


def cost_rows(base: Series, other: Series, prices: dict, speedups: list) -> list:
    """$/1M tokens, step time and a verdict per sweep point (both GPUs need a price)."""
    rows = []
    for sp in speedups:
        n = sp["seq_len"]
        b, o = base.points.get(n), other.points.get(n)
        row = {"seq_len": n, "base_step_ms": (b or {}).get("step_ms"),
               "other_step_ms": (o or {}).get("step_ms"), "base_usd_per_mtok": None,
               "other_usd_per_mtok": None, "cost_ratio": None, "verdict": ""}
        for side, rec, gpu in (("base", b, base.gpu), ("other", o, other.gpu)):
            tps = tokens_per_s(rec) if rec else None
            if tps and gpu in prices:
                row[f"{side}_usd_per_mtok"] = usd_per_mtok(prices[gpu], tps)
        row["cost_ratio"] = ratio(row["other_usd_per_mtok"], row["base_usd_per_mtok"])
        if sp["gap"]:
            row["verdict"] = f"capability gap: {sp['gap']}"
        elif b and o:
            row["verdict"] = verdict(other.gpu, row["cost_ratio"],
                                     ratio(row["base_step_ms"], row["other_step_ms"]))
        rows.append(row)
    return rows


def parse_prices(specs, gpu_map: dict) -> dict:
    """--price GPU=USD_PER_GPU_HOUR strings -> {normalised GPU: price}; ValueError names the bad one."""
    prices = {}
    for spec in specs or ():
        name, sep, value = spec.partition("=")
        try:
            usd = float(value)
        except ValueError:
            usd = -1.0
        if not sep or not name.strip() or not usd > 0:
            raise ValueError(f"--price {spec!r}: expected GPU=USD_PER_GPU_HOUR with a positive "
                             f"price, e.g. H200=3.50")
        gpu = match_gpu(name, gpu_map)
        if gpu is None:
            raise ValueError(f"--price {spec!r}: no GPU named {name.strip()!r} in the logs "
                             f"(GPUs: {', '.join(sorted(gpu_map))})")
        prices[gpu] = usd
    return prices


def decomposition_parts(record: dict) -> dict:
    """{part: {tflop, ms, tflops, time_share}}: the buckets, then `everything else` (gemm +
    other, the guide's "rest of the step") and the total, where the record has them."""
    parts = dict(record.get("buckets") or {})
    if record.get("everything_else"):
        parts["everything else"] = record["everything_else"]
    parts["total"] = record.get("total") or {}
    return parts


def decomposition_rows(base: Series, other: Series) -> list:
    """Per shared seq_len and part: TFLOPS, ms and the speed ratio (other over baseline)."""
    rows = []
    for n in sorted(set(base.decompositions) & set(other.decompositions)):
        b = decomposition_parts(base.decompositions[n])
        o = decomposition_parts(other.decompositions[n])
        for name in dict.fromkeys(list(b) + list(o)):
            bb, ob = b.get(name) or {}, o.get(name) or {}
            # Same work on both GPUs: the time ratio is the speedup; TFLOPS when no times.
            speed = ratio(bb.get("ms"), ob.get("ms")) or ratio(ob.get("tflops"), bb.get("tflops"))
            rows.append({"seq_len": n, "bucket": name, "base_tflops": bb.get("tflops"),
                         "other_tflops": ob.get("tflops"), "base_ms": bb.get("ms"),
                         "other_ms": ob.get("ms"), "base_share": bb.get("time_share"),
                         "other_share": ob.get("time_share"), "speedup": speed})
    return rows


def attention_series(gpu_map: dict) -> dict:
    """{(pass, shape): {(gpu, backend, provenance): {seq_len: tflops}}} of ok kernel runs."""
    out = {}
    for gpu in gpu_map.values():
        grouped = {}
        for r, reference in gpu.attention:
            if r.get("status", "ok") != "ok" or r.get("tflops") is None:
                continue
            shape = tuple(r.get(k) for k in ("batch", "heads", "kv_heads", "head_dim", "causal",
                                             "dtype", "packed_doc_len"))
            key = ((r.get("pass"), shape), (gpu.name, r.get("backend"), provenance(reference)))
            grouped.setdefault(key, {}).setdefault(r.get("seq_len"), []).append(r)
        for (group, line), by_len in grouped.items():
            out.setdefault(group, {})[line] = {n: median_record(rs, "tflops")["tflops"]
                                               for n, rs in sorted(by_len.items())}
    return out


def attention_rows(lines: dict, baseline: str) -> list:
    """Per seq_len: each line's TFLOPS and, per other GPU, best backend over baseline's best."""
    rows = []
    for n in sorted({n for pts in lines.values() for n in pts}):
        best = {}
        for (gpu, backend, _tag), pts in lines.items():
            if n in pts and (gpu not in best or pts[n] > best[gpu][0]):
                best[gpu] = (pts[n], backend)
        ratios = {g: (ratio(v[0], best[baseline][0]), v[1], best[baseline][1])
                  for g, v in best.items() if g != baseline and baseline in best}
        rows.append({"seq_len": n, "tflops": {line: pts.get(n) for line, pts in lines.items()},
                     "ratios": ratios})
    return rows


def stack_mismatches(gpu_map: dict, baseline: str) -> list:
    """Lines naming every software difference between the baseline GPU's runs and another
    GPU's runs of the same script (a stack mismatch alone moves results double-digit %)."""
    found = {}  # line -> scripts it was seen in
    base_headers = gpu_map[baseline].headers if baseline in gpu_map else []
    for gpu in gpu_map.values():
        if gpu.name == baseline:
            continue
        for hb in base_headers:
            for ho in gpu.headers:
                if hb.get("script") != ho.get("script") or not hb.get("software") or not ho.get("software"):
                    continue
                tag_b, tag_o = provenance(reference_of(hb, hb)), provenance(reference_of(ho, ho))
                who_b = baseline + (f" ({tag_b})" if tag_b else "")
                who_o = gpu.name + (f" ({tag_o})" if tag_o else "")
                for pkg, vb, vo in stack_differences(stack_of(hb), stack_of(ho)):
                    line = f"{pkg} {vb or 'absent'} on {who_b} vs {vo or 'absent'} on {who_o}"
                    found.setdefault(line, []).append(hb.get("script"))
    return [f"{line} [{', '.join(dict.fromkeys(scripts))}]" for line, scripts in found.items()]


@dataclass
class Analysis:
    data: Dataset
    baseline: str
    comparisons: list      # dicts: base, other, speedup, cost, decomposition
    prices: dict
    stack: list            # stack-mismatch lines
    hints: list            # unpaired series
    mamf: dict             # gpu -> bf16 MAMF TFLOPS or None
    mamf_ratio: dict       # gpu (not the baseline) -> its bf16 MAMF over the baseline's, or None
    attention: dict        # attention_series()
    order: list            # GPUs, baseline first


def analyse(data: Dataset, baseline: str | None = None, price_specs=()) -> Analysis:
    """Everything the report and the figures show; ValueError on a bad --baseline/--price."""
    if not data.gpus:
        raise ValueError("no records in the input")
    with_series = sorted({s.gpu for s in data.series}) or sorted(data.gpus)
    base = choose_baseline(data.gpus, with_series, baseline)
    prices = parse_prices(price_specs, data.gpus)
    paired = pairs(data.series, base)
    comparisons = []
    for b, o in paired:
        speedups = speedup_rows(b, o, data.gpus)
        comparisons.append({"base": b, "other": o, "speedup": speedups,
                            "cost": cost_rows(b, o, prices, speedups),
                            "decomposition": decomposition_rows(b, o)})
    stack = stack_mismatches(data.gpus, base) + mixed_stack_warnings(data.series)
    order = [base] + sorted(g for g in data.gpus if g != base)
    data.series.sort(key=lambda s: (order.index(s.gpu), bool(s.reference), s.backend, s.config_key))
    mamf = {g: mamf_of(data.gpus[g]) for g in data.gpus}
    return Analysis(data, base, comparisons, prices, stack, unpaired_hints(data.series, base, paired),
                    mamf, {g: ratio(mamf[g], mamf[base]) for g in order[1:]},
                    attention_series(data.gpus), order)
