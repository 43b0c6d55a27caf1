"""Records grouped for the report: runs by their header, series by GPU + backend + configuration.

A record belongs to the run whose `header` has its run_id, as runs.with_headers joins them
(the latest such header before it, so sweeps that share a RUN_ID still resolve; else the
first one anywhere). A run's GPU is the header's `hardware.gpu_name`, normalised through the
GPU table ('NVIDIA H200' -> 'H200 SXM'). A *series* is one GPU + attention backend + run
identity (runs.run_identity: the header config minus runs.NOT_IDENTITY and the keys the user
ignores) + provenance (measured, or published figures fed through the pipeline:
`"reference": "guide"`). Its points are `summary` records by sequence length; `load` keeps
of each header only what the report shows, as it is read. Capability items are read under
their current names (current_capability), so old and new logs share rows.
"""
import json
from dataclasses import dataclass, field

from ...hardware import gpus
from ...faults import DIVERGED
from ...log import records, runs
from .stacks import stack_of

GUIDE_LABEL = "guide's published"
MEASURED = "measured"
# What the report shows of a header; the rest (clocks, hostnames, ...) is dropped as read.
HEADER_FIELDS = ("run_id", "reference", "config", "attn_backend", "peak_tflops", "notes", "num_layers",
                 "layer_mix", "mixer_kernels", "model_cut", "n_total_params", "low_precision", "precision")


@dataclass
class Run:
    """One run of a series: where it was read and the header facts the report shows."""
    source: str
    run_id: str | None
    config: dict                # the run's whole configuration, per-point fields included
    gpu_count: int | None       # GPUs on the node
    num_layers: int | None      # decoder layers the model ran with
    notes: str
    layer_mix: dict | None = None  # {mixer kind: layers} (architecture.ModelSpec.mix)
    fallbacks: tuple = ()          # fast kernels that ran as transformers' torch fallback
    model_cut: str | None = None   # '4 of 48 layers, 64 of 512 experts' (models/cuts.Cut.label)
    total_params: int | None = None  # every parameter of the model as built (the header's n_total_params)

    @property
    def model_built(self) -> str | None:
        """'4 of 48 layers, 3.11B parameters': what MODEL built in this run, where its header says
        (one MODEL path may hold another config.json on another node)."""
        if not self.total_params:
            return None
        shape = self.model_cut or (f"{self.num_layers} layers" if self.num_layers else None)
        return ", ".join(filter(None, [shape, f"{self.total_params / 1e9:.2f}B parameters"]))


@dataclass
class Series:
    gpu: str                    # normalised name ('H200 SXM'), or the raw name if unknown
    gpu_raw: str | None
    backend: str
    config: dict                # the configuration that identifies the series
    identity: str               # its canonical text (runs.run_identity)
    reference: str | None       # e.g. "guide": published figures, not a measurement
    peak_tflops: float | None   # table bf16 peak, else the header's
    hbm_gib: float | None
    stacks: list = field(default_factory=list)      # distinct software stacks of its runs
    runs: dict = field(default_factory=dict)        # (source, run_id) -> Run, in reading order
    ignored: dict = field(default_factory=dict)     # --ignore-config key -> distinct values
    repeats: dict = field(default_factory=dict)     # seq_len -> [summary, ...]: the runs its point is of
    instrumented: dict = field(default_factory=dict)  # seq_len -> [summary, ...] of runs under a profiler or
    #                                                   MEM_DEBUG, left out where an un-instrumented run exists
    points: dict = field(default_factory=dict)      # seq_len -> the summary used
    errors: dict = field(default_factory=dict)      # seq_len -> error record
    decompositions: dict = field(default_factory=dict)  # seq_len -> decomposition record
    label: str = ""

    def settings(self, key: str) -> list:
        """Its values of a config key: the configuration's, or under --ignore-config those of
        its runs; a key a config records only off its default (PRECISION, NUM_EXPERTS, ...:
        log/runs.IDENTITY_DEFAULTS) reads as that default; else [] where no run recorded it."""
        found = list(self.ignored.get(key, [])) or ([self.config[key]] if key in self.config else [])
        return found or ([runs.IDENTITY_DEFAULTS[key]] if key in runs.IDENTITY_DEFAULTS else [])

    def alike_but(self, keys) -> tuple:
        """(GPU, attention backend, run identity less `keys`): what a series shares with one that
        differs from it in those keys alone (a number format, an engine) on the same GPU."""
        return self.gpu, self.backend, runs.run_identity(self.config, keys)[1]

    @property
    def is_sweep(self) -> bool:
        return bool(self.repeats or self.errors)

    @property
    def provenance(self) -> str:
        return provenance(self.reference) or MEASURED


@dataclass
class Gpu:
    name: str
    raw_names: set
    peak_tflops: float | None
    hbm_gib: float | None
    mamf: list = field(default_factory=list)           # mamf records, `reference` set from the header
    capabilities: dict = field(default_factory=dict)   # item -> capability record
    capacity: list = field(default_factory=list)       # (run identity or None, reference, record)
    attention: list = field(default_factory=list)      # (record, reference)
    hbm: list = field(default_factory=list)            # (bench_hbm record, reference)
    comm: list = field(default_factory=list)           # (bench_comm record, reference)


@dataclass
class Dataset:
    series: list
    gpus: dict                  # name -> Gpu
    failures: list = field(default_factory=list)   # (series, error record) without a sequence length
    orphans: int = 0            # records whose run has no header
    also_in: dict = field(default_factory=dict)    # run_id -> other sources that repeat its records
    conflicts: dict = field(default_factory=dict)  # run_id -> GPU names of headers that disagree


def gpu_identity(header) -> tuple:
    """(normalised name, raw name) of a run's GPU."""
    raw = ((header or {}).get("hardware") or {}).get("gpu_name")
    spec = gpus.lookup(raw)
    return (spec.name if spec else raw or "no GPU"), raw


def reference_of(record: dict, header) -> str | None:
    """'guide' (or another source) for published figures fed through the pipeline: the
    record's or its header's `reference` field, and nothing else (a measured run whose NOTES
    say "set up like the guide's published run" is a measurement)."""
    for r in (record, header or {}):
        if r.get("reference"):
            return str(r["reference"])
    return None


def provenance(reference: str | None) -> str:
    if not reference:
        return ""
    return GUIDE_LABEL if reference == "guide" else f"published: {reference}"


def median_record(records: list, key: str = "tflops_per_gpu") -> dict:
    """Of repeated measurements of one point, the one with the (lower) median `key`."""
    ranked = sorted(records, key=lambda r: r.get(key) or 0.0)
    return ranked[(len(ranked) - 1) // 2]


def _compact(header: dict) -> dict:
    hardware = header.get("hardware") or {}
    return {**{k: header.get(k) for k in HEADER_FIELDS}, "kind": "header", "stack": stack_of(header),
            "log_file": header.get("log_file"),
            "hardware": {k: hardware.get(k) for k in ("gpu_name", "gpu_count", "hbm_gib")}}


def _peak_and_hbm(raw_name, header) -> tuple:
    spec = gpus.lookup(raw_name)
    hw = (header or {}).get("hardware") or {}
    peak = spec.bf16 if spec else (header or {}).get("peak_tflops")
    return peak, hw.get("hbm_gib") or (spec.hbm_gib if spec else None)


def load(records, ignore_config=(), also_in=None) -> Dataset:
    """Group a stream of records into series (training points) and per-GPU collections."""
    data = Dataset([], {}, also_in=also_in if also_in is not None else {})
    # Headers cut to what the report shows as they are read; a GPU with a header alone counts.
    records = [_compact(r) if r["kind"] == "header" else r for r in records]
    for header in (r for r in records if r["kind"] == "header"):
        _gpu_entry(data.gpus, header)
    data.conflicts = runs.conflicting_runs(records)
    series = {}
    for r, header in runs.with_headers(records):
        if header is None:  # its run's header is missing: a GPU name on the record will do
            data.orphans += 1
            name = r.get("gpu_name")
            header = {"hardware": {"gpu_name": name}} if isinstance(name, str) and name else None
        _add(data, series, r, header, ignore_config)
    for s in series.values():
        for n in [n for n, rs in s.repeats.items() if any(map(diverged, rs))]:
            s.errors[n] = diverged_error(s.repeats.pop(n), n)
        for n, rs in s.repeats.items():
            plain = [r for r in rs if not r.get("instrumented")]
            if plain and len(plain) < len(rs):
                s.instrumented[n] = [r for r in rs if r.get("instrumented")]
                s.repeats[n] = plain
        s.points = {n: median_record(rs) for n, rs in sorted(s.repeats.items())}
    data.series = sorted(series.values(), key=lambda s: (s.gpu, bool(s.reference), s.backend, s.identity))
    _label(data.series)
    return data


def _add(data: Dataset, series: dict, record: dict, header, ignore_config) -> None:
    kind = record["kind"]
    gpu = _gpu_entry(data.gpus, header)  # every record's GPU has an entry, an orphan's too
    reference = reference_of(record, header)
    if kind in POINT_KINDS:
        s = _series_entry(series, header, record, reference, ignore_config)
        seq_len = record.get("seq_len")
        if kind == "summary":
            s.repeats.setdefault(seq_len, []).append(
                record if reference else with_instruments(with_position(record, header), header))
        elif kind == "decomposition":
            s.decompositions[seq_len] = record
        elif seq_len is not None:  # a log from before faults.DIVERGED named the error nonfinite_loss
            s.errors[seq_len] = dict(record, error=DIVERGED) if record.get("error") == "nonfinite_loss" else record
        else:
            data.failures.append((s, record))
    elif kind in GPU_KINDS:  # inputs.read keeps only KINDS_READ; a caller passing others loses them here
        GPU_KINDS[kind](gpu, record, reference, ignore_config)


# A run whose loss is not finite diverged: its point is a failure named so wherever the page shows
# it (tables, comparisons, what a number format buys), never a step time to call a speedup on.
LOSS_FIELDS = ("loss", "loss_mean")


def diverged(summary: dict) -> bool:
    """Whether a summary's loss was NaN or Infinity (read as null, its key in records.NONFINITE)."""
    marked = summary.get(records.NONFINITE)
    return isinstance(marked, list) and any(k in marked for k in LOSS_FIELDS)


def diverged_error(summaries: list, seq_len: int) -> dict:
    """The error a point whose runs diverged reads as (the first such summary's envelope)."""
    first = next(r for r in summaries if diverged(r))
    return {**{k: first.get(k) for k in ("schema", "script", "run_id", "time", "log_file")}, "kind": "error",
            "seq_len": seq_len, "error": DIVERGED,
            "message": f"loss not finite (NaN or Infinity) in {sum(map(diverged, summaries))} of "
                       f"{len(summaries)} run(s): the run diverged; no step time or speedup is read from it"}


def _add_capacity(gpu: Gpu, record: dict, reference, ignore_config) -> None:
    own = record.get("config")
    key = runs.run_identity(own, ignore_config)[1] if isinstance(own, dict) else None
    gpu.capacity.append((key, reference, record))


def _add_capability(gpu: Gpu, record: dict, reference, ignore_config) -> None:
    record = current_capability(record)
    gpu.capabilities[record["item"]] = record


# Where each kind the report reads goes: points of a series, or a GPU's collections.
POINT_KINDS = ("summary", "error", "decomposition")
GPU_KINDS = {
    "capacity": _add_capacity,
    "mamf": lambda gpu, r, reference, _: gpu.mamf.append(dict(r, reference=reference)),  # from the header too
    "capability": _add_capability,
    "attention": lambda gpu, r, reference, _: gpu.attention.append((r, reference)),
    "hbm": lambda gpu, r, reference, _: gpu.hbm.append((r, reference)),
    "comm": lambda gpu, r, reference, _: gpu.comm.append((r, reference)),
}
KINDS_READ = ("header", *POINT_KINDS, *GPU_KINDS)  # inputs.read drops the others as it reads


def current_capability(record: dict) -> dict:
    """A capability record under its item's current name. Logs written before the backend
    table named the SDPA kernels with '_' (attention:sdpa_cudnn) where the table has '-'
    (attention:sdpa-cudnn): read under today's name, old and new logs share a row."""
    category, _, name = record["item"].partition(":")
    if category != "attention" or not name.startswith("sdpa_"):
        return record
    return {**record, "item": f"{category}:{name.replace('_', '-')}"}


# Settings of a training run that time more than its steps: DECOMPOSE profiles the steps it times,
# MEM_DEBUG synchronises at each stage of the step (training/variables.py).
INSTRUMENTS = ("DECOMPOSE", "MEM_DEBUG")


def with_instruments(summary: dict, header) -> dict:
    """A measured summary with `instrumented` ('DECOMPOSE=3') where its run's configuration
    turned on what times more than the step; a run without it is the one a point prefers."""
    config = (header or {}).get("config") or {}
    on = [f"{k}={config[k]}" for k in INSTRUMENTS if config.get(k) and config.get(k) is not False]
    if not on or "instrumented" in summary:
        return summary
    derived = summary.get("derived") if isinstance(summary.get("derived"), list) else []
    return {**summary, "instrumented": ", ".join(on), "derived": derived + ["instrumented"]}


def with_position(summary: dict, header) -> dict:
    """A measured summary with `earlier_points_in_process`, which logs before it lack (and
    then list it as `derived`): benchmark.py runs its header's SEQ_LEN in order, so that list
    says how many lengths ran first."""
    lens = ((header or {}).get("config") or {}).get("SEQ_LEN")
    if "earlier_points_in_process" in summary or not isinstance(lens, list) or summary.get("seq_len") not in lens:
        return summary
    derived = summary.get("derived") if isinstance(summary.get("derived"), list) else []
    return {**summary, "earlier_points_in_process": lens.index(summary["seq_len"]),
            "derived": derived + ["earlier_points_in_process"]}


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
    # run_sweep writes a failed point's error under its own header, with the point's config and
    # what the failed process's header said ran (runs.AS_RUN_FIELDS)
    own = record.get("config")
    ran = {**h, **{k: record[k] for k in runs.AS_RUN_FIELDS if k in record}}
    run_config = runs.config_as_run(own if isinstance(own, dict) else h.get("config") or {}, ran)
    config, key = runs.run_identity(run_config, ignore_config)
    backend = h.get("attn_backend") or record.get("attn_backend") or "-"
    ident = (name, backend, key, reference)
    if ident not in series:
        peak, hbm = _peak_and_hbm(raw, header)
        series[ident] = Series(name, raw, backend, config, key, reference, peak, hbm)
    s = series[ident]
    if h.get("stack") is not None and h["stack"] not in s.stacks:
        s.stacks.append(h["stack"])
    for k in ignore_config:
        if k in run_config and run_config[k] not in s.ignored.setdefault(k, []):
            s.ignored[k].append(run_config[k])
    run = (record.get("log_file"), record.get("run_id"))
    if run not in s.runs:
        notes = h.get("notes") or run_config.get("NOTES") or ""
        s.runs[run] = Run(run[0], run[1], run_config, (h.get("hardware") or {}).get("gpu_count"),
                          h.get("num_layers"), notes if isinstance(notes, str) else str(notes),
                          h.get("layer_mix"), runs.torch_fallbacks(ran.get("mixer_kernels")),
                          h.get("model_cut") if isinstance(h.get("model_cut"), str) else None,
                          h.get("n_total_params") if type(h.get("n_total_params")) is int else None)
    return s


def _short(value) -> str:
    if value is None:  # not recorded (the guide's published runs leave some settings out)
        return "-"
    return str(int(value)) if isinstance(value, bool) else str(value)


# The order differing settings are named in a series label; others follow, sorted.
LABEL_ORDER = ("world_size", "ENGINE", "COMPILE", "SINGLE_DEVICE", "MODEL", "NUM_LAYERS", "ZERO_STAGE", "OFFLOAD_OPTIMIZER",
               "GRAD_CHECKPOINT", "USE_LIGER", "ATTN_BACKEND", "PACKED_DOC_LEN", "BATCH_SIZE",
               "WARMUP_STEPS")


def config_phrase(key: str, value) -> str:
    """How one setting reads in a label: "ZeRO-3", "no ckpt", "2 GPUs"; else KEY=value; None
    (not in the log) as "KEY not recorded"."""
    if value is None and key != "PYTORCH_CUDA_ALLOC_CONF":
        return f"{key} not recorded"
    on = value in (True, 1, "1")
    none = value in (0, "0")
    phrases = {"world_size": f"{value} GPU{'' if value == 1 else 's'}",
               "NUM_LAYERS": "all layers" if none else f"{value} layers",
               "ZERO_STAGE": f"ZeRO-{value}",
               "OFFLOAD_OPTIMIZER": "offload" if on else "no offload",
               "GRAD_CHECKPOINT": "ckpt" if on else "no ckpt",
               "USE_LIGER": "Liger" if on else "no Liger",
               "ATTN_BACKEND": f"attn={value}",
               "PACKED_DOC_LEN": "unpacked" if none else f"docs of {value}",
               "BATCH_SIZE": f"batch {value}",
               "WARMUP_STEPS": f"{value} warm-up",
               "PRECISION": str(value),
               # an engine the suite does not have (a hand-edited log) as recorded, never as another's name
               "ENGINE": ("FSDP2" if value == "fsdp2" else "DeepSpeed" if value == "deepspeed"
                          else f"ENGINE={_short(value)}"),
               "COMPILE": "compiled" if value else "uncompiled",
               "SINGLE_DEVICE": "unsharded" if value else "sharded",
               # the model's own experts (or a dense model's none): nothing to say
               "NUM_EXPERTS": "" if none else f"{value} experts",
               # Said where on: off is the default and a dense model's only value.
               "FP8_EXPERTS": ("experts in FP8" if value else "") if type(value) is bool else f"FP8_EXPERTS={value!r}",
               runs.FALLBACK_KEY: f"torch fallback: {value}" if value else "",
               # Recorded only when set (log/runs.training_config).
               "PYTORCH_CUDA_ALLOC_CONF": "default allocator" if value is None else f"allocator {value}"}
    return phrases.get(key, f"{key}={_short(value)}")


def ordered_keys(keys) -> list:
    """Config keys in the order labels name them (LABEL_ORDER, then the rest sorted)."""
    rank = {k: i for i, k in enumerate(LABEL_ORDER)}
    return sorted(keys, key=lambda k: (rank.get(k, len(rank)), k))


def labels(members: list) -> dict:
    """{id(series): label}: GPU + backend, plus the config fields that differ between these
    series, in words, plus provenance."""
    varying = [k for k in ordered_keys({k for s in members for k in list(s.config) + list(s.ignored)})
               if len({json.dumps(s.settings(k), default=str) for s in members}) > 1]
    out = {}
    for s in members:
        phrases = [" / ".join(filter(None, (config_phrase(k, v) for v in s.settings(k)))) if s.settings(k)
                   else config_phrase(k, None) for k in varying]
        phrases = [p for p in phrases if p]
        tag = provenance(s.reference)
        out[id(s)] = f"{s.gpu} {s.backend}" + (": " + ", ".join(phrases) if phrases else "") \
            + (f" ({tag})" if tag else "")
    return out


def _label(series: list) -> None:
    """Each series' label, among the series of its kind (sweep points vs decompositions)."""
    for group in (True, False):
        members = [s for s in series if s.is_sweep == group]
        named = labels(members)
        for s in members:
            s.label = named[id(s)]


def normalise_dtype(name) -> str:
    text = str(name or "").lower()
    for short, spellings in (("bf16", ("bf16", "bfloat16")), ("fp8", ("fp8", "float8")),
                             ("fp16", ("fp16", "float16", "half")), ("fp4", ("fp4", "float4"))):
        if any(s in text for s in spellings):
            return short
    return text


def seq_label(n) -> str:
    return f"{n // 1024}K" if isinstance(n, int) and n >= 1024 and n % 1024 == 0 else str(n)
