"""From JSON-lines records to the decision: grouping, the guide's tables, $/token, verdicts.

Pure functions over records as `records.read_lines` returns them; figures.py draws what
`analyse` computes and plot_results.py is the command line.

Grouping. A record belongs to the run whose `header` has its run_id (the latest such header
before it, so sweeps that share a RUN_ID still resolve). A run's GPU is the header's
`hardware.gpu_name`, normalised through the GPU table ('NVIDIA H200' -> 'H200 SXM'). A
*series* is one GPU + attention backend + configuration (the header config minus the
per-point fields in PER_POINT_FIELDS) + provenance (measured, or published figures fed
through the pipeline: `"reference": "guide"`). Its points are `summary` records by sequence
length. Every other GPU's series is compared with each baseline-GPU series of the same
configuration: the guide's H200 FA3 vs B200 FA4 is one configuration (ATTN_BACKEND=auto),
two backends.
"""
import json
from dataclasses import dataclass, field

from . import flops, gpus, settings

# Config fields that vary per sweep point or do not change the workload: not part of a
# series' identity (STEPS/SEED change precision, PEAK_TFLOPS only the MFU denominator).
# WARMUP_STEPS stays in: run_sweep's capacity probes (one cold step, no warm-up) are no
# steady-state throughput and must not mix with the sweep's points.
PER_POINT_FIELDS = frozenset({"SEQ_LEN", "SEQLENS", "OUTPUT", "NOTES", "SEED", "STEPS",
                              "PEAK_TFLOPS", "RUN_ID"})
# The guide's caveat 2: these move results by double-digit percent, so they must match.
STACK_KEYS = ("python", "torch", "cuda", "transformers", "deepspeed", "liger-kernel")
# The settings that shape the workload most, shown in the report's series table.
SUMMARY_FIELDS = ("MODEL", "NUM_LAYERS", "BATCH_SIZE", "ZERO_STAGE", "OFFLOAD_OPTIMIZER",
                  "GRAD_CHECKPOINT", "USE_LIGER", "ATTN_BACKEND", "PACKED_DOC_LEN", "world_size")
TELEMETRY_FIELDS = ("sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean", "temp_c_max",
                    "throttle", "energy_j_per_token")
# speedup = (mfu_new * peak_new) / (mfu_old * peak_old) is exact algebra when both MFUs use
# the table peaks; a gap above rounding means a run's MFU used another peak (PEAK_TFLOPS).
IDENTITY_TOLERANCE = 0.01
# Step times of one point spread by a few percent run to run; a smaller $/token difference
# is noise, so it is called "the same" and the tie is broken on wall-clock.
SAME_COST_TOLERANCE = 0.03
GUIDE_LABEL = "guide's published"


# ---------------------------------------------------------------- loading and grouping

@dataclass
class Series:
    gpu: str                    # normalised name ('H200 SXM'), or the raw name if unknown
    gpu_raw: str | None
    backend: str
    config: dict                # the configuration that identifies the series
    config_key: str
    reference: str | None       # e.g. "guide": published figures, not a measurement
    peak_tflops: float | None   # table bf16 peak, else the header's
    hbm_gib: float | None
    stacks: list = field(default_factory=list)      # distinct software stacks of its headers
    sources: set = field(default_factory=set)
    repeats: dict = field(default_factory=dict)     # seq_len -> [summary, ...]
    points: dict = field(default_factory=dict)      # seq_len -> the summary used
    errors: dict = field(default_factory=dict)      # seq_len -> error record
    decompositions: dict = field(default_factory=dict)  # seq_len -> decomposition record
    label: str = ""


@dataclass
class Gpu:
    name: str
    raw_names: set
    peak_tflops: float | None
    hbm_gib: float | None
    mamf: list = field(default_factory=list)
    capabilities: dict = field(default_factory=dict)   # item -> capability record
    capacity: list = field(default_factory=list)       # (config_key or None, reference, record)
    attention: list = field(default_factory=list)      # (record, backend label)
    headers: list = field(default_factory=list)


@dataclass
class Dataset:
    series: list
    gpus: dict                  # name -> Gpu
    failures: list              # (series, error record) without a sequence length
    orphans: int                # records whose run has no header


def with_headers(records):
    """[(record, its header or None)] for every non-header record, in input order."""
    first = {}
    for r in records:
        if r.get("kind") == "header":
            first.setdefault(r.get("run_id"), r)
    latest, out = {}, []
    for r in records:
        if r.get("kind") == "header":
            latest[r.get("run_id")] = r
        else:
            run_id = r.get("run_id")
            out.append((r, latest.get(run_id) or first.get(run_id)))
    return out


def gpu_identity(header) -> tuple:
    """(normalised name, raw name) of a run's GPU."""
    raw = ((header or {}).get("hardware") or {}).get("gpu_name")
    spec = gpus.lookup(raw)
    return (spec.name if spec else raw or "no GPU"), raw


def reference_of(record: dict, header) -> str | None:
    """'guide' (or another source) for published figures fed through the pipeline."""
    for r in (record, header or {}):
        if r.get("reference"):
            return str(r["reference"])
    notes = str((header or {}).get("notes") or "").lower()
    return "guide" if "guide's published" in notes else None


def provenance(reference: str | None) -> str:
    if not reference:
        return ""
    return GUIDE_LABEL if reference == "guide" else f"published: {reference}"


def config_key(config, ignore=()) -> tuple:
    """(identifying config, its canonical text) without per-point and ignored fields."""
    kept = {k: v for k, v in sorted((config or {}).items())
            if k not in PER_POINT_FIELDS and k not in ignore}
    return kept, json.dumps(kept, sort_keys=True, default=str)


def stack_of(header) -> dict:
    software = (header or {}).get("software") or {}
    keys = list(STACK_KEYS) + sorted(k for k in software if k.startswith("flash-attn"))
    return {k: software.get(k) for k in keys}


def median_record(records: list, key: str = "tflops_per_gpu") -> dict:
    """Of repeated measurements of one point, the one with the (lower) median `key`."""
    ranked = sorted(records, key=lambda r: r.get(key) or 0.0)
    return ranked[(len(ranked) - 1) // 2]


def _peak_and_hbm(raw_name, header) -> tuple:
    spec = gpus.lookup(raw_name)
    hw = (header or {}).get("hardware") or {}
    peak = spec.bf16 if spec else (header or {}).get("peak_tflops")
    return peak, hw.get("hbm_gib") or (spec.hbm_gib if spec else None)


def load(records, ignore_config=()) -> Dataset:
    """Group records into series (training points) and per-GPU collections (the rest)."""
    series, gpu_map, failures, orphans = {}, {}, [], 0
    for r in records:
        if r.get("kind") == "header":
            gpu = _gpu_entry(gpu_map, r)
            gpu.headers.append(r)
    for record, header in with_headers(records):
        kind = record.get("kind")
        if header is None:  # its run's header is missing: a GPU name on the record will do
            orphans += 1
            header = {"hardware": {"gpu_name": record["gpu_name"]}} if record.get("gpu_name") else None
        gpu = _gpu_entry(gpu_map, header)
        reference = reference_of(record, header)
        if kind in ("summary", "error", "decomposition"):
            s = _series_entry(series, header, record, reference, ignore_config)
            seq_len = record.get("seq_len")
            if kind == "summary" and isinstance(seq_len, int):
                s.repeats.setdefault(seq_len, []).append(record)
            elif kind == "decomposition" and isinstance(seq_len, int):
                s.decompositions[seq_len] = record
            elif kind == "error" and isinstance(seq_len, int):
                s.errors[seq_len] = record
            elif kind == "error":
                failures.append((s, record))
        elif kind == "capacity":
            has_config = isinstance(record.get("config"), dict)
            key = config_key(record["config"], ignore_config)[1] if has_config else None
            gpu.capacity.append((key, reference, record))
        elif kind == "mamf":
            gpu.mamf.append(dict(record, reference=reference))  # provenance from the header too
        elif kind == "capability" and record.get("item"):
            gpu.capabilities[record["item"]] = record
        elif kind == "attention":
            gpu.attention.append((record, reference))
    for s in series.values():
        s.points = {n: median_record(rs) for n, rs in sorted(s.repeats.items())}
    ordered = sorted(series.values(), key=lambda s: (s.gpu, bool(s.reference), s.backend, s.config_key))
    _label(ordered)
    return Dataset(ordered, gpu_map, failures, orphans)


def _gpu_entry(gpu_map: dict, header) -> Gpu:
    name, raw = gpu_identity(header)
    peak, hbm = _peak_and_hbm(raw, header)
    gpu = gpu_map.setdefault(name, Gpu(name, set(), peak, hbm))
    if raw:
        gpu.raw_names.add(raw)
    gpu.peak_tflops = gpu.peak_tflops or peak
    gpu.hbm_gib = gpu.hbm_gib or hbm
    return gpu


def _series_entry(series: dict, header, record, reference, ignore_config) -> Series:
    name, raw = gpu_identity(header)
    h = header or {}
    # run_sweep writes a failed point's error under its own header, with the point's config
    own = record.get("config")
    config, key = config_key(own if isinstance(own, dict) else h.get("config"), ignore_config)
    backend = h.get("attn_backend") or record.get("attn_backend") or "-"
    ident = (name, backend, key, reference)
    if ident not in series:
        peak, hbm = _peak_and_hbm(raw, header)
        series[ident] = Series(name, raw, backend, config, key, reference, peak, hbm)
    s = series[ident]
    stack = stack_of(header)
    if header is not None and stack not in s.stacks:
        s.stacks.append(stack)
    source = record.get("log_file")
    if source:
        s.sources.add(source)
    return s


def _short(value) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


def _label(series: list) -> None:
    """GPU + backend, plus the config fields that differ between series of the same kind
    (sweep points vs decompositions), plus provenance."""
    for group in (True, False):
        members = [s for s in series if bool(s.repeats or s.errors) == group]
        keys = sorted({k for s in members for k in s.config})
        varying = [k for k in keys
                   if len({json.dumps(s.config.get(k), default=str) for s in members}) > 1]
        for s in members:
            parts = [s.gpu, s.backend] + [f"{k}={_short(s.config.get(k))}" for k in varying]
            tag = provenance(s.reference)
            s.label = " ".join(parts) + (f" ({tag})" if tag else "")


# ---------------------------------------------------------------- baseline and pairing

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


# ---------------------------------------------------------------- the guide's tables

def ratio(new, old):
    return new / old if new is not None and old not in (None, 0) else None


def mamf_of(gpu: Gpu, dtype: str = "bf16"):
    """(best MAMF TFLOPS, its record) for a dtype; a measurement beats published figures."""
    found = [r for r in gpu.mamf if normalise_dtype(r.get("dtype")) == dtype
             and (r.get("tflops_mean") or r.get("tflops_median"))]
    if not found:
        return None, None
    best = max(found, key=lambda r: (not r.get("reference"), r.get("tflops_mean") or r.get("tflops_median")))
    return best.get("tflops_mean") or best.get("tflops_median"), best


def normalise_dtype(name) -> str:
    text = str(name or "").lower()
    for short, spellings in (("bf16", ("bf16", "bfloat16")), ("fp8", ("fp8", "float8")),
                             ("fp16", ("fp16", "float16", "half")), ("fp4", ("fp4", "float4"))):
        if any(s in text for s in spellings):
            return short
    return text


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


# ---------------------------------------------------------------- stack parity

def stack_differences(a: dict, b: dict) -> list:
    """[(package, a's version, b's version)] where two stacks differ.

    An attention package installed on one side only is the per-GPU backend choice (FA3 on
    Hopper, FA4 on Blackwell, as the guide ran), shown as the series' backend; two
    different versions of the same package are a mismatch.
    """
    out = []
    for k in dict.fromkeys(list(a) + list(b)):
        va, vb = a.get(k), b.get(k)
        if va != vb and not (k.startswith("flash-attn") and (va is None or vb is None)):
            out.append((k, va, vb))
    return out


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


def mixed_stack_warnings(series: list) -> list:
    return [f"{s.label} mixes software stacks: " + "; ".join(
        f"{k} {a} vs {b}" for k, a, b in stack_differences(s.stacks[0], s.stacks[1]))
        for s in series if len(s.stacks) > 1]


# ---------------------------------------------------------------- the whole analysis

@dataclass
class Analysis:
    data: Dataset
    baseline: str
    comparisons: list      # dicts: base, other, speedup, cost, decomposition
    prices: dict
    stack: list            # stack-mismatch lines
    hints: list            # unpaired series
    mamf: dict             # gpu -> (tflops, record) bf16
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
    return Analysis(data, base, comparisons, prices, stack, unpaired_hints(data.series, base, paired),
                    {g: mamf_of(data.gpus[g]) for g in data.gpus}, attention_series(data.gpus), order)


# ---------------------------------------------------------------- markdown

def seq_label(n) -> str:
    return f"{n // 1024}K" if isinstance(n, int) and n >= 1024 and n % 1024 == 0 else str(n)


def fmt(value, kind: str = "num") -> str:
    if value is None or value == []:
        return "-"
    if kind == "pct":
        return f"{value:.1%}"
    if kind == "x":
        return f"{value:.2f}x"
    if kind == "usd":
        return f"${value:.4g}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 10 else f"{value:.1f}"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def md_table(headers: list, rows: list) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c).replace("|", "/") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def speedup_markdown(c: dict) -> str:
    b, o = c["base"], c["other"]
    rows = []
    for r in c["speedup"]:
        check = "-" if r["identity_ok"] is None else ("ok" if r["identity_ok"] else "**MISMATCH**")
        speed = fmt(r["speedup"], "x") if not r["gap"] else f"**capability gap: {r['gap']}**"
        rows.append([seq_label(r["seq_len"]), fmt(r["attn_share"], "pct"), fmt(r["base_tflops"]),
                     fmt(r["other_tflops"]), fmt(r["base_mfu"], "pct"), fmt(r["other_mfu"], "pct"),
                     speed, fmt(r["peak_ratio"], "x"), fmt(r["mfu_ratio"], "x"),
                     fmt(r["identity"], "x"), check])
    return md_table(["seq_len", "attn FLOP share", f"{b.gpu} TFLOPS", f"{o.gpu} TFLOPS",
                     f"{b.gpu} MFU", f"{o.gpu} MFU", "speedup", "peak ratio", "MFU ratio",
                     "peak ratio x MFU ratio", "identity"], rows)


def cost_markdown(c: dict) -> str:
    b, o = c["base"], c["other"]
    rows = [[seq_label(r["seq_len"]), fmt(r["base_step_ms"]), fmt(r["other_step_ms"]),
             fmt(r["base_usd_per_mtok"], "usd"), fmt(r["other_usd_per_mtok"], "usd"),
             fmt(r["cost_ratio"], "x"), r["verdict"]] for r in c["cost"]]
    return md_table(["seq_len", f"{b.gpu} step ms", f"{o.gpu} step ms", f"{b.gpu} $/1M tokens",
                     f"{o.gpu} $/1M tokens", "cost ratio", "verdict"], rows)


def memory_markdown(a: Analysis) -> str:
    shown = [s for s in a.data.series if s.points or s.errors]
    lens = sorted({n for s in shown for n in list(s.points) + list(s.errors)})
    if not lens:
        return ""

    def cell(s, n):
        if n in s.points:
            return fmt(s.points[n].get("peak_mem_gib"))
        return s.errors[n].get("error", "error") if n in s.errors else ""
    rows = [[seq_label(n)] + [cell(s, n) for s in shown] for n in lens]
    hbm = ["HBM GiB"] + [fmt(s.hbm_gib) for s in shown]
    out = [md_table(["seq_len"] + [f"{s.label} peak GiB" for s in shown], rows + [hbm])]
    caps = [(g, ref, rec) for g in a.order for _, ref, rec in a.data.gpus[g].capacity]
    if caps:
        out.append("Largest sequence length that fits (`capacity` records):\n\n" + md_table(
            ["GPU", "max fit seq_len", "min fail seq_len", "peak GiB at max", "HBM GiB", "search step"],
            [[g + (f" ({provenance(ref)})" if ref else ""),
              seq_label(rec.get("max_fit_seq_len")) if rec.get("max_fit_seq_len") else "-",
              seq_label(rec.get("min_fail_seq_len")) if rec.get("min_fail_seq_len") else "-",
              fmt(rec.get("peak_mem_gib_at_max")), fmt(rec.get("hbm_gib") or a.data.gpus[g].hbm_gib),
              fmt(rec.get("seq_len_step"))] for g, ref, rec in caps]))
    return "\n\n".join(out)


def mamf_markdown(a: Analysis) -> str:
    recs = [(g, r) for g in a.order for r in a.data.gpus[g].mamf]
    if not recs:
        return ""
    rows = []
    for g, r in recs:
        dtype = normalise_dtype(r.get("dtype"))
        spec = gpus.lookup(g)
        peak = r.get("peak_tflops") or (spec.peak_tflops(dtype) if spec else None)
        rows.append([g, dtype, fmt(r.get("tflops_mean")), fmt(r.get("tflops_max")),
                     "x".join(str(r[k]) for k in "mnk") if all(r.get(k) for k in "mnk") else "-",
                     fmt(peak), fmt(r.get("efficiency") or ratio(r.get("tflops_mean"), peak), "pct"),
                     provenance(r.get("reference")) or "measured"])
    out = [md_table(["GPU", "dtype", "MAMF TFLOPS (mean)", "max", "shape m x n x k", "peak",
                     "MAMF / peak", "source"], rows)]
    base_mamf = a.mamf.get(a.baseline, (None, None))[0]
    ratios = [f"{g}: {fmt(ratio(a.mamf[g][0], base_mamf), 'x')} (theoretical peak "
              f"{fmt(ratio(a.data.gpus[g].peak_tflops, a.data.gpus[a.baseline].peak_tflops), 'x')})"
              for g in a.order[1:] if a.mamf.get(g, (None,))[0] and base_mamf]
    if ratios:
        out.append(f"bf16 MAMF ratio over {a.baseline}: " + "; ".join(ratios))
    util = [s for s in a.data.series if s.points and a.mamf.get(s.gpu, (None,))[0]]
    lens = sorted({n for s in util for n in s.points})
    if util:
        out.append("MAMF utilisation (training TFLOPS / bf16 MAMF, the realistic ceiling):\n\n" + md_table(
            ["seq_len"] + [s.label for s in util],
            [[seq_label(n)] + [fmt(ratio(s.points[n].get("tflops_per_gpu"), a.mamf[s.gpu][0]), "pct")
                               if n in s.points else "" for s in util] for n in lens]))
    return "\n\n".join(out)


def decomposition_markdown(c: dict) -> str:
    b, o = c["base"], c["other"]
    return md_table(["seq_len", "bucket", f"{b.gpu} TFLOPS", f"{o.gpu} TFLOPS", f"{b.gpu} ms",
                     f"{o.gpu} ms", f"{b.gpu} time share", f"{o.gpu} time share", "speedup"],
                    [[seq_label(r["seq_len"]), r["bucket"], fmt(r["base_tflops"]), fmt(r["other_tflops"]),
                      fmt(r["base_ms"]), fmt(r["other_ms"]), fmt(r["base_share"], "pct"),
                      fmt(r["other_share"], "pct"), fmt(r["speedup"], "x")] for r in c["decomposition"]])


def attention_markdown(a: Analysis) -> str:
    out = []
    for (pass_, shape), lines in sorted(a.attention.items(), key=lambda kv: str(kv[0])):
        names = list(lines)
        others = [g for g in a.order[1:] if any(line[0] == g for line in names)]
        rows = []
        for r in attention_rows(lines, a.baseline):
            cells = [fmt(r["tflops"][line]) for line in names]
            for g in others:
                got = r["ratios"].get(g)
                cells.append(f"{fmt(got[0], 'x')} ({got[1]} / {got[2]})" if got else "-")
            rows.append([seq_label(r["seq_len"])] + cells)
        heads = [" ".join(p for p in line if p) + " TFLOPS" for line in names]
        shape_text = ", ".join(f"{k} {v}" for k, v in zip(
            ("batch", "heads", "kv_heads", "head_dim", "causal", "dtype", "packed_doc_len"), shape))
        out.append(f"**{pass_}** ({shape_text})\n\n" + md_table(
            ["seq_len"] + heads + [f"{g} best / {a.baseline} best" for g in others], rows))
    return "\n\n".join(out)


def telemetry_markdown(a: Analysis) -> str:
    out = []
    for s in a.data.series:
        rows = [[seq_label(n)] + [fmt(p.get(f)) for f in TELEMETRY_FIELDS]
                for n, p in s.points.items() if any(p.get(f) is not None for f in TELEMETRY_FIELDS)]
        if rows:
            out.append(f"{s.label}\n\n" + md_table(["seq_len"] + list(TELEMETRY_FIELDS), rows))
    return "\n\n".join(out)


def capability_markdown(a: Analysis) -> str:
    """check_capabilities' side-by-side table, one column per GPU that has capability records."""
    from .capabilities import capability_table

    by_gpu = {g: a.data.gpus[g].capabilities for g in a.order if a.data.gpus[g].capabilities}
    return capability_table(by_gpu).strip() if by_gpu else ""


def render(a: Analysis, figures=(), inputs=(), skipped: int = 0) -> str:
    """report.md: stack warnings first, then the guide's tables."""
    d = a.data
    out = ["# GPU upgrade report", ""]
    if a.stack:
        out += ["> **WARNING: software stacks differ between the GPUs compared.** The guide's "
                "caveat 2: the stack alone moves results by double-digit percent, so part of "
                "any difference below may be the stack, not the GPU.", ">"]
        out += [f"> - {line}" for line in a.stack] + [""]
    n_records = sum(len(s.points) for s in d.series)
    out += [f"Generated by plot_results.py from {len(inputs)} log file(s); baseline GPU: "
            f"**{a.baseline}**; {n_records} sweep points in {len(d.series)} series."
            + (f" Skipped {skipped} malformed line(s)." if skipped else "")
            + (f" {d.orphans} record(s) had no header (GPU unknown)." if d.orphans else ""), ""]
    if any(s.reference for s in d.series) or any(r.get("reference") for g in d.gpus.values() for r in g.mamf):
        out += [f"Series marked *({GUIDE_LABEL})* are the guide's published figures fed through "
                "this pipeline, not measurements of this suite.", ""]
    for path in figures:
        out += [f"![{path}]({path})", ""]
    out += ["## Series", "", md_table(
        ["series", "GPU (as reported)", "records", "configuration", "points", "torch / CUDA", "sources"],
        [[s.label, s.gpu_raw or "-", "sweep" if s.repeats or s.errors else "decomposition",
          " ".join(f"{k}={_short(s.config[k])}" for k in SUMMARY_FIELDS if k in s.config) or "-",
          ", ".join(seq_label(n) for n in sorted(set(s.points) | set(s.decompositions))) or "-",
          "; ".join(f"{st.get('torch')} / {st.get('cuda')}" for st in s.stacks) or "-",
          ", ".join(sorted(s.sources))] for s in d.series]), ""]
    if a.hints:
        out += ["Not compared:", ""] + [f"- {h}" for h in a.hints] + [""]
    caps = capability_markdown(a)
    if caps:
        out += ["## Capabilities", "", "Rows in bold: one GPU can and another cannot; no benchmark "
                "is needed to answer those.", "", caps, ""]
    for c in a.comparisons:
        if not (c["base"].points or c["other"].points):
            continue
        out += [f"## Speedup: {c['other'].label} vs {c['base'].label}", "",
                "The identity column checks `speedup ~= peak ratio x MFU ratio`.", "",
                speedup_markdown(c), ""]
        if a.prices:
            out += ["### $/token and wall-clock", "", "Decide on $/token; break ties on wall-clock "
                    "and memory headroom.", "", cost_markdown(c), ""]
    mem = memory_markdown(a)
    if mem:
        out += ["## Peak memory vs sequence length", "", mem, ""]
    for c in a.comparisons:
        if c["decomposition"]:
            out += [f"## Step decomposition: {c['other'].label} vs {c['base'].label}", "",
                    decomposition_markdown(c), ""]
    att = attention_markdown(a)
    if att:
        out += ["## Isolated attention kernels", "", att, ""]
    mamf = mamf_markdown(a)
    if mamf:
        out += ["## MAMF (maximum achievable matmul FLOPS)", "", mamf, ""]
    tel = telemetry_markdown(a)
    if tel:
        out += ["## Telemetry", "", tel, ""]
    if d.failures:
        out += ["## Failures without a sequence length", ""]
        out += [f"- {s.label}: {r.get('error')}: {r.get('message')}" for s, r in d.failures] + [""]
    return "\n".join(out)


# ---------------------------------------------------------------- the guide's published figures

# (seq_len, H200 TFLOPS, B200 TFLOPS, H200 peak GiB): DESIGN.md's reference table, 8x GPU,
# Llama-3.1-8B, ZeRO-3 + checkpointing + CPU AdamW offload + Liger, unpacked, mbs=1.
GUIDE_SWEEP = [(8192, 141, 167, 16.3), (32768, 324, 524, 25.8), (65536, 391, 719, 37.5),
               (131072, 420, 836, 66.5), (196608, 422, 852, 95.7), (262144, 419, 852, 124.5)]
# Right-sized 8K (ZeRO-2, no checkpointing/offload): attention / everything else / total TFLOPS.
GUIDE_DECOMPOSITION = {"H200": (447, 463, 461), "B200": (834, 771, 778)}
GUIDE_MAMF = {"H200": {"bf16": 794.5, "fp8": 1453.4}, "B200": {"bf16": 1745.0, "fp8": 3432.5}}
GUIDE_STACK = {"python": "3.12.12", "torch": "2.13.0+cu130", "cuda": "13.0", "transformers": "5.14.1",
               "deepspeed": "0.19.2", "liger-kernel": "0.8.0"}
GUIDE_ATTENTION_PACKAGE = {"H200": ("fa3", "flash-attn-3", "3.0.0"),
                           "B200": ("fa4", "flash-attn-4", "4.0.0b22")}
LLAMA_8B = flops.ModelDims(hidden=4096, intermediate=14336, layers=32, heads=32, kv_heads=8,
                           head_dim=128, vocab=128256)


def guide_reference_records() -> list:
    """The guide's published H200/B200 numbers as records of this suite's schema.

    Every record says `"reference": "guide"` and every header notes "guide's published
    figures"; fields the guide does not publish but that follow from its numbers with this
    suite's FLOP convention (step_ms, tokens/s, MFU against the table peak, attention share)
    are listed in `derived`. Nothing here is a measurement of this suite.
    """
    from .records import SCHEMA

    sweep_config = settings.parse(settings.TRAINING_VARS, {})
    sweep_config.update(USE_LIGER=True, world_size=8)
    right_sized = dict(sweep_config, ZERO_STAGE=2, OFFLOAD_OPTIMIZER=False, GRAD_CHECKPOINT=False)
    out = []
    for gpu in ("H200", "B200"):
        spec = gpus.lookup(gpu)
        backend, package, version = GUIDE_ATTENTION_PACKAGE[gpu]
        software = dict(GUIDE_STACK, **{"flash-attn-3": None, "flash-attn-4": None, package: version})

        def rec(kind, run, script, **fields):
            out.append({"kind": kind, "schema": SCHEMA, "script": script,
                        "run_id": f"guide-{gpu.lower()}-{run}", "time": None, "reference": "guide",
                        **fields})

        def header(run, script, config):
            rec("header", run, script, software=software,
                hardware={"gpu_name": f"NVIDIA {gpu}", "gpu_count": 8, "hbm_gib": spec.hbm_gib},
                config=config, attn_backend=backend, peak_tflops=spec.bf16,
                peak_source=f"table:{spec.name}", warnings=[],
                notes="guide's published figures (Machine Learning Engineering Open Book, "
                      "when-to-upgrade-gpus), not measured by this suite")

        header("sweep", "benchmark.py", sweep_config)
        for seq_len, h200, b200, h200_gib in GUIDE_SWEEP:
            tflops_per_gpu = h200 if gpu == "H200" else b200
            sf = flops.step_flops(LLAMA_8B, 1, seq_len)
            step_ms = sf.model / (tflops_per_gpu * 1e12) * 1e3
            rec("summary", "sweep", "benchmark.py", seq_len=seq_len, batch_size=1, packed_doc_len=0,
                step_ms=step_ms, tflops_per_gpu=float(tflops_per_gpu),
                mfu=tflops_per_gpu / spec.bf16, tokens_per_s_per_gpu=seq_len / (step_ms * 1e-3),
                attn_flop_share=sf.attn_share, model_tflop_per_step=sf.model / 1e12,
                peak_mem_gib=h200_gib if gpu == "H200" else None, attn_backend=backend,
                world_size=8, derived=["step_ms", "mfu", "tokens_per_s_per_gpu", "attn_flop_share",
                                       "model_tflop_per_step"])
        if gpu == "H200":  # "H200 tops out at 256K tokens (~125 GiB)"
            rec("capacity", "sweep", "run_sweep.sh", max_fit_seq_len=262144, min_fail_seq_len=None,
                peak_mem_gib_at_max=124.5, hbm_gib=spec.hbm_gib, seq_len_step=None, runs=None,
                config=sweep_config)

        header("decompose", "bench_decompose.py", right_sized)
        sf = flops.step_flops(LLAMA_8B, 1, 8192)
        attn, rest, total = GUIDE_DECOMPOSITION[gpu]
        def part(tflop, tflops_published):
            return {"tflop": tflop / 1e12, "tflops": float(tflops_published),
                    "ms": tflop / (tflops_published * 1e12) * 1e3}
        rec("decomposition", "decompose", "bench_decompose.py", seq_len=8192,
            buckets={"attention": part(sf.attention, attn)}, everything_else=part(sf.dense, rest),
            total=part(sf.model, total), attn_backend=backend, derived=["tflop", "ms"])

        header("mamf", "mamf-finder.py", {})
        for dtype, value in GUIDE_MAMF[gpu].items():
            peak = spec.peak_tflops(dtype)
            rec("mamf", "mamf", "mamf-finder.py", dtype=dtype, m=None, n=None, k=None,
                tflops_mean=value, tflops_median=None, tflops_max=None, peak_tflops=peak,
                efficiency=value / peak, notes="H200: measured on H100 (same die)" if gpu == "H200" else "")
    return out
