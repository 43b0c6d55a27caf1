"""Runs in a log: which header a record belongs to, and which configs describe the same run.

A record belongs to the run whose `header` has its run_id. A run's identity is its header's
config minus NOT_IDENTITY: two runs with the same identity measured the same workload, so
a sweep's RESUME skips a point the file already holds for it, the capacity search is seeded
with it, and the report puts both in one series.
"""
import dataclasses
import json

from ..models.layers import TORCH_FALLBACK

FALLBACK_KEY = "torch_fallback"  # not a setting: the config key of the fast kernels a header says ran as torch's code

# Config keys that vary per process of one sweep or do not change the workload: SEQ_LEN,
# OUTPUT and NOTES differ between a sweep's processes; STEPS and SEED (and bench_decompose's
# TIME_STEPS and PROFILE_STEPS) change the precision of a point, not what it measures;
# PEAK_TFLOPS changes only the MFU denominator; WORKLOAD only names the settings' defaults, which
# the config records one by one. (WARMUP_STEPS and ATTN_BACKEND: see run_identity.)
NOT_IDENTITY = frozenset({"SEQ_LEN", "SEQLENS", "OUTPUT", "NOTES", "SEED", "STEPS", "PEAK_TFLOPS",
                          "RUN_ID", "TIME_STEPS", "PROFILE_STEPS", "DECOMPOSE", "WORKLOAD"})


def torch_fallbacks(mixer_kernels) -> tuple:
    """The kernels a header's `mixer_kernels` says ran as transformers' torch fallback."""
    if not isinstance(mixer_kernels, dict):
        return ()
    return tuple(sorted(str(k) for k, where in mixer_kernels.items() if where == TORCH_FALLBACK))


# The header fields config_as_run reads; run_sweep copies them into the error it writes for a
# process that wrote its header and then failed.
AS_RUN_FIELDS = ("mixer_kernels", "low_precision")


def config_as_run(config: dict, header: dict) -> dict:
    """A training run's config with what its header says ran, where its settings do not say it:
    the fast kernels that ran as the torch fallback (the same settings on the kernels are another
    speed: `torch_fallback`), the precision its GEMMs ran in (`precision`: a config that lacks
    PRECISION or names another is not what ran), and whether MoE experts ran in FP8
    (`low_precision.converted_experts`: FP8_EXPERTS=1 converts none of gpt-oss's, and a log from
    before the setting may have converted some). The readers have checked these fields' types
    (log/checks.py)."""
    out = dict(config)
    if isinstance(header.get("precision"), str):
        out["PRECISION"] = header["precision"]
    slow = torch_fallbacks(header.get("mixer_kernels"))
    if slow:
        out[FALLBACK_KEY] = ", ".join(slow)
    low = header.get("low_precision")
    experts = low.get("converted_experts") if isinstance(low, dict) else None
    if type(experts) is int:
        out["FP8_EXPERTS"] = experts > 0
    return out


def run_identity(config: dict | None, ignore=()) -> tuple[dict, str]:
    """(the keys of `config` that identify its run, as recorded, for showing; the canonical
    text two runs are compared by);
    `ignore`: further keys that do not matter for this comparison.

    Built from what the run did, not how it was asked: ATTN_BACKEND is left out (the
    header's resolved attn_backend is what a series and RESUME compare, so `auto` and `fa3`
    that both ran fa3 are one run), and of WARMUP_STEPS only whether there was a warm-up
    (1 or 2 warm-up steps measure the same steady state; a capacity probe's cold step does
    not)."""
    kept = {k: v for k, v in sorted((config or {}).items()) if k not in NOT_IDENTITY and k not in ignore}
    return kept, json.dumps(_compared(kept), sort_keys=True, default=str)


def _compared(kept: dict) -> dict:
    compared = {k: v for k, v in kept.items() if k != "ATTN_BACKEND" and not is_default(k, v)}
    if "WARMUP_STEPS" in compared:
        compared["WARMUP_STEPS"] = "warm" if compared["WARMUP_STEPS"] else "cold"
    return compared


def identity_difference(recorded: dict | None, asked: dict, ignore=()) -> str | None:
    """The settings by which the run `recorded` describes is not the run `asked` for, each as
    "KEY=<recorded> there, <asked> asked" (unset: a setting one of them lacks), joined by "; ";
    None when run_identity makes them one run."""
    there, here = (_compared(run_identity(c, ignore)[0]) for c in (recorded, asked))
    shown = {key: [json.dumps(side[key], default=str) if key in side else "unset" for side in (there, here)]
             for key in sorted(set(there) | set(here))}
    return "; ".join(f"{key}={a} there, {b} asked" for key, (a, b) in shown.items() if a != b) or None


def with_headers(records) -> list[tuple[dict, dict | None]]:
    """[(record, its run's header or None)] for every non-header record, in input order.

    A record's header is the latest one of its run before it in the same file (`log_file`),
    so sweeps that share a RUN_ID still resolve; a record before any header of its run gets
    the run's first one in that file. Only a file with no header of the run borrows one from
    another file, and only when every file agrees on it (conflicting_runs lists the others):
    a B200's records are never joined to an H200 header that happens to share the run_id.
    """
    first, anywhere = {}, {}
    for r in records:
        if r.get("kind") == "header":
            first.setdefault((r.get("log_file"), r.get("run_id")), r)
            anywhere.setdefault(r.get("run_id"), {})[_gpu(r)] = r
    latest, out = {}, []
    for r in records:
        key = (r.get("log_file"), r.get("run_id"))
        if r.get("kind") == "header":
            latest[key] = r
            continue
        header = latest.get(key) or first.get(key)
        if header is None and len(anywhere.get(r.get("run_id"), {})) == 1:
            header = next(iter(anywhere[r.get("run_id")].values()))
        out.append((r, header))
    return out


def _gpu(header: dict):
    return str((header.get("hardware") or {}).get("gpu_name"))


def conflicting_runs(records) -> dict:
    """{run_id: sorted GPU names} of run ids whose headers name different GPUs."""
    seen = {}
    for r in records:
        if r.get("kind") == "header":
            seen.setdefault(r.get("run_id"), set()).add(_gpu(r))
    return {run_id: sorted(names) for run_id, names in seen.items() if len(names) > 1}


def training_config(settings, use_liger: bool, world_size: int, alloc_conf: str,
                    single_device: bool = False) -> dict:
    """The `config` a training-step header records: the settings (a settings object) as resolved
    on the machine, with what identifies the run and nothing that would part equal runs
    (single_device: FSDP2 shards nothing, training/engines.single_device)."""
    s = dataclasses.asdict(settings)
    s.update(USE_LIGER=use_liger, world_size=world_size)
    if single_device:  # only then: every FSDP2 run before it sharded its weights, one GPU too
        s["SINGLE_DEVICE"] = True
    # The caching allocator's settings move peak memory and the memory ceiling (on the
    # H200, expandable_segments took the 8-layer 32K peak from 98 to 79 GiB reserved),
    # so they are part of the configuration: RESUME, the capacity search and the
    # report keep runs with different settings apart. Only when set, so runs with
    # the default allocator compare equal to logs written before this field existed.
    if alloc_conf:
        s["PYTORCH_CUDA_ALLOC_CONF"] = alloc_conf
    # Only when they differ from the default, for the same reason: the leaf modules are the
    # default way to run an MoE, bf16 the guide's precision, all experts the model as published, random
    # tokens (no DATA) what every run before DATA trained on, DeepSpeed (uncompiled) the engine of every
    # run before ENGINE: a run on another engine is another run, for RESUME and the report alike.
    for name, default in IDENTITY_DEFAULTS.items():
        if s.get(name, default) == default:
            s.pop(name, None)
    return s


# Settings a config records only when they differ from these (logs written before each
# existed ran with it); readers take a missing key as the default. FALLBACK_KEY is no setting:
# config_as_run adds it only where a kernel fell back, so its absence reads as none did.
IDENTITY_DEFAULTS = {"WORKLOAD": "none", "ZERO3_LEAF_MOE": True, "PRECISION": "bf16", "NUM_EXPERTS": 0, "FP8_EXPERTS": False,
                     "DATA": "", "ENGINE": "deepspeed", "COMPILE": False, "SINGLE_DEVICE": False,
                     FALLBACK_KEY: ""}


def is_default(key: str, value) -> bool:
    """Whether `value` is the default of a key a config records only off it (a log that records
    it anyway, PRECISION=bf16 say, describes the run that leaves it out)."""
    return key in IDENTITY_DEFAULTS and type(value) is type(IDENTITY_DEFAULTS[key]) and value == IDENTITY_DEFAULTS[key]


_DEFAULT = object()  # a key recorded at its default, or left out


def same_setting(key: str, a: dict, b: dict) -> bool:
    """Whether two configs agree on `key` as run identities compare it: a default recorded or
    left out alike, values of one type and equal (True is not 1, nor 0.0 the default 0)."""
    va, vb = (c[key] if key in c and not is_default(key, c[key]) else _DEFAULT for c in (a, b))
    return type(va) is type(vb) and va == vb


def setting(config: dict, key: str):
    """A config's value of `key`: the default where a key recorded only off it is absent."""
    return config[key] if key in config else IDENTITY_DEFAULTS.get(key)
