"""Records grouped for the report: runs by their header, series by GPU + backend + configuration.

A record belongs to the run whose `header` has its run_id (the latest such header before it,
so sweeps that share a RUN_ID still resolve). A run's GPU is the header's
`hardware.gpu_name`, normalised through the GPU table ('NVIDIA H200' -> 'H200 SXM'). A
*series* is one GPU + attention backend + configuration (the header config minus the
per-point fields in PER_POINT_FIELDS) + provenance (measured, or published figures fed
through the pipeline: `"reference": "guide"`). Its points are `summary` records by sequence
length.
"""
import json
from dataclasses import dataclass, field

from .. import gpus
from .stacks import stack_of

# Config fields that vary per sweep point or do not change the workload: not part of a
# series' identity (STEPS/SEED change precision, PEAK_TFLOPS only the MFU denominator).
# WARMUP_STEPS stays in: run_sweep's capacity probes (one cold step, no warm-up) are no
# steady-state throughput and must not mix with the sweep's points.
PER_POINT_FIELDS = frozenset({"SEQ_LEN", "SEQLENS", "OUTPUT", "NOTES", "SEED", "STEPS",
                              "PEAK_TFLOPS", "RUN_ID"})
GUIDE_LABEL = "guide's published"

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
    if value is None:  # not recorded (the guide's published runs leave some settings out)
        return "-"
    return str(int(value)) if isinstance(value, bool) else str(value)


# The order differing settings are named in a series label; others follow, sorted.


# The order differing settings are named in a series label; others follow, sorted.
LABEL_ORDER = ("world_size", "MODEL", "NUM_LAYERS", "ZERO_STAGE", "OFFLOAD_OPTIMIZER",
               "GRAD_CHECKPOINT", "USE_LIGER", "ATTN_BACKEND", "PACKED_DOC_LEN", "BATCH_SIZE",
               "WARMUP_STEPS")


def config_phrase(key: str, value) -> str:
    """How one setting reads in a label: "ZeRO-3", "no ckpt", "2 GPUs"; else KEY=value."""
    on = value in (True, 1, "1")
    none = value in (0, "0")
    phrases = {"world_size": f"{value} GPU{'' if value == 1 else 's'}",
               "NUM_LAYERS": "all layers" if none else f"{value} layers",
               "ZERO_STAGE": f"ZeRO-{value}",
               "OFFLOAD_OPTIMIZER": "offload" if on else "no offload",
               "GRAD_CHECKPOINT": "ckpt" if on else "no ckpt",
               "USE_LIGER": "Liger" if on else "no Liger",
               "ATTN_BACKEND": f"attn={value}",
               "PACKED_DOC_LEN": "dense" if none else f"docs of {value}",
               "BATCH_SIZE": f"batch {value}",
               "WARMUP_STEPS": f"{value} warm-up",
               # Recorded only when set (engine.RunConfig.header_config).
               "PYTORCH_CUDA_ALLOC_CONF": "default allocator" if value is None else f"allocator {value}"}
    return phrases.get(key, f"{key}={_short(value)}")


def _label(series: list) -> None:
    """GPU + backend, plus the config fields that differ between series of the same kind
    (sweep points vs decompositions), plus provenance."""
    rank = {k: i for i, k in enumerate(LABEL_ORDER)}
    for group in (True, False):
        members = [s for s in series if bool(s.repeats or s.errors) == group]
        keys = sorted({k for s in members for k in s.config}, key=lambda k: (rank.get(k, len(rank)), k))
        varying = [k for k in keys
                   if len({json.dumps(s.config.get(k), default=str) for s in members}) > 1]
        for s in members:
            phrases = [config_phrase(k, s.config.get(k)) for k in varying]
            tag = provenance(s.reference)
            s.label = f"{s.gpu} {s.backend}" + (": " + ", ".join(phrases) if phrases else "") \
                + (f" ({tag})" if tag else "")


def normalise_dtype(name) -> str:
    text = str(name or "").lower()
    for short, spellings in (("bf16", ("bf16", "bfloat16")), ("fp8", ("fp8", "float8")),
                             ("fp16", ("fp16", "float16", "half")), ("fp4", ("fp4", "float4"))):
        if any(s in text for s in spellings):
            return short
    return text


def seq_label(n) -> str:
    return f"{n // 1024}K" if isinstance(n, int) and n >= 1024 and n % 1024 == 0 else str(n)
