"""Published training-throughput pairs: the same model on two GPUs, as records the backtest reads.

The guide's H200/B200 pair lives in published.py. The others here are NVIDIA's Megatron-Bridge
performance summary (pre-training, tokens/s/GPU and model TFLOP/s/GPU per system and NeMo
container), every figure as published in MEGATRON_BRIDGE_SOURCE. Such tables change batch,
parallelism or precision between GPUs: each run's header records its own (config keys GBS, MBS,
TP, PP, CP, VP, EP, FSDP, PRECISION, CONTAINER), and the backtest names what differs between the
two sides of a pair and keeps like-for-like pairs apart.

Per run, published: tokens/s/GPU and model TFLOP/s/GPU. Derived with the published numbers
alone (listed in `derived`): the step time of one global batch (GBS x seq_len tokens over the
GPUs, at the published tokens/s/GPU) and the model TFLOP of that step per GPU (the published
TFLOP/s/GPU times it, so the publisher's FLOP convention stays theirs). The quadratic
attention share comes from this suite's FLOP count of the model (models/flops.py), the only
number here not from the table. Nothing here is a measurement of this suite.

`megatron_bridge_records()` writes results/published/megatron_bridge.jsonl (a test checks the
shipped file is what this code writes); the page does not read that folder, the backtest does.
"""
import json

from ...hardware import gpus
from ...log import header, records
from ...models import architecture, flops
from ...paths import REPO
from . import guide as published

REFERENCE = "megatron-bridge"
SHIPPED_PATH = "results/published/megatron_bridge.jsonl"
MEGATRON_BRIDGE_SOURCE = (
    "NVIDIA Megatron-Bridge performance summary, docs/performance-summary-archive.md, "
    "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/067f987df03b8355b03192d88d70f1709fedf51a/"
    "docs/performance-summary-archive.md (also https://docs.nvidia.com/nemo/megatron-bridge/latest/"
    "performance-summary.html)")
# Runs as published: (run id, NeMo container, system, model, GPUs, precision, GBS, MBS, seq_len,
# FSDP, TP, PP, CP, VP, EP, tokens/s/GPU, model TFLOP/s/GPU). 'n/a' cells as None.
_RUNS = [
    ("mb-2511-llama3-8b-h100", "25.11", "H100", "llama-3-8b", 8, "fp8", 128, 1, 8192, 8, 1, 1, 1, None, 1,
     14451, 744),
    ("mb-2511-llama3-8b-b200", "25.11", "B200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
     30624, 1576),
    ("mb-2511-llama3-8b-gb200", "25.11", "GB200", "llama-3-8b", 8, "fp8", 128, 2, 8192, 0, 1, 1, 1, None, 1,
     31508, 1622),
    ("mb-260401-llama3-70b-h100", "26.04.01", "H100", "llama-3-70b", 64, "fp8", 256, 1, 8192, 0, 4, 8, 1, 5,
     None, 1664, 731),
    ("mb-260401-llama3-70b-gb200", "26.04.01", "GB200", "llama-3-70b", 64, "fp8", 256, 2, 8192, 64, 1, 1, 1,
     None, None, 4224, 1892),
    ("mb-260401-llama31-405b-h100", "26.04.01", "H100", "llama-3.1-405b", 1024, "fp8", 1536, 1, 8192, 0, 8, 8,
     2, 8, None, 328, 827),
    ("mb-260401-llama31-405b-gb200", "26.04.01", "GB200", "llama-3.1-405b", 256, "fp8", 1536, 1, 8192, 0, 4,
     16, 1, 4, None, 864, 2144),
    ("mb-260401-gpt-oss-120b-h100", "26.04.01", "H100", "gpt-oss-120b", 64, "bf16", 1280, 1, 4096, 0, 1, 4, 1,
     None, 8, 5824, 158),
    ("mb-260401-gpt-oss-120b-b200", "26.04.01", "B200", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1,
     None, 8, 13568, 369),
    ("mb-260401-gpt-oss-120b-b300", "26.04.01", "B300", "gpt-oss-120b", 64, "bf16", 1280, 4, 4096, 0, 1, 1, 1,
     None, 8, 15232, 414),
]
# (baseline run, candidate run): the guide's pair first, then one container's runs of one model.
PAIRS = (("guide-h200-sweep", "guide-b200-sweep"), ("guide-h200-decompose", "guide-b200-decompose"),
         ("mb-2511-llama3-8b-b200", "mb-2511-llama3-8b-gb200"),
         ("mb-2511-llama3-8b-h100", "mb-2511-llama3-8b-b200"),
         ("mb-260401-llama3-70b-h100", "mb-260401-llama3-70b-gb200"),
         ("mb-260401-llama31-405b-h100", "mb-260401-llama31-405b-gb200"),
         ("mb-260401-gpt-oss-120b-b200", "mb-260401-gpt-oss-120b-b300"),
         ("mb-260401-gpt-oss-120b-h100", "mb-260401-gpt-oss-120b-b200"))
# Settings of a published run that are no part of the workload's identity across two GPUs.
NOT_COMPARED = ("world_size", "SEQ_LEN", "CONTAINER")


def _config(name: str) -> dict:
    return json.loads((REPO / "configs" / f"{name}.json").read_text())


def _model_specs() -> dict:
    """The published models' shapes (Meta's and OpenAI's published configs), from the shipped
    presets with the bigger models' dimensions."""
    llama = _config("llama-3.1-8b")
    oss = _config("gpt-oss-20b")
    return {"llama-3-8b": architecture.describe(llama),
            "llama-3-70b": architecture.describe(dict(llama, hidden_size=8192, intermediate_size=28672,
                                                      num_hidden_layers=80, num_attention_heads=64)),
            "llama-3.1-405b": architecture.describe(dict(llama, hidden_size=16384, intermediate_size=53248,
                                                         num_hidden_layers=126, num_attention_heads=128)),
            "gpt-oss-120b": architecture.describe(dict(
                oss, num_hidden_layers=36, num_local_experts=128,
                layer_types=["sliding_attention", "full_attention"] * 18))}


def megatron_bridge_records() -> list:
    """The Megatron-Bridge runs of _RUNS as records of this suite's schema, each marked
    `"reference": "megatron-bridge"` with its source in the header's notes."""
    specs = _model_specs()
    out = []
    for (run_id, container, system, model, n_gpus, precision, gbs, mbs, seq_len, fsdp, tp, pp, cp, vp, ep,
         tokens_per_s, tflops) in _RUNS:
        spec = gpus.lookup(f"NVIDIA {system}")
        config = {"MODEL": model, "PRECISION": precision, "GBS": gbs, "MBS": mbs, "FSDP": fsdp, "TP": tp, "PP": pp,
                  "CP": cp, "VP": vp, "EP": ep, "CONTAINER": f"NeMo {container}", "SEQ_LEN": [seq_len],
                  "world_size": n_gpus}
        notes = (f"published figures (DGX-{system}, NeMo {container} container, pre-training): "
                 f"{MEGATRON_BRIDGE_SOURCE}; not measured by this suite")
        out.append(records.record("header", "megatron-bridge", run_id, None, reference=REFERENCE, **header.fields(
            config, notes, stack={}, hardware={"gpu_name": f"NVIDIA {system}", "gpu_count": n_gpus,
                                               "hbm_gib": spec.hbm_gib},
            attn_backend="transformer-engine", peak_tflops=spec.peak_tflops(precision),
            peak_source=f"table:{spec.name}", num_layers=len(specs[model].layers))))
        step_ms = gbs * seq_len / n_gpus / tokens_per_s * 1e3
        out.append(records.record(
            "summary", "megatron-bridge", run_id, None, reference=REFERENCE, seq_len=seq_len,
            step_ms=step_ms, tflops_per_gpu=float(tflops), tokens_per_s_per_gpu=float(tokens_per_s),
            model_tflop_per_step=tflops * step_ms / 1e3,
            attn_flop_share=flops.step_flops(specs[model], 1, seq_len).attn_share, world_size=n_gpus,
            derived=["step_ms", "model_tflop_per_step", "attn_flop_share"]))
    return out


def all_records() -> list:
    """Every published pair's records: the guide's, then Megatron-Bridge's."""
    return published.guide_reference_records() + megatron_bridge_records()


def source_of(run_header: dict) -> str:
    """Where a published run's figures come from, in words."""
    if run_header.get("reference") == "guide":
        return "the guide (Machine Learning Engineering Open Book, insights/when-to-upgrade-gpus)"
    return f"Megatron-Bridge performance summary, {(run_header.get('config') or {}).get('CONTAINER')} container"


def differences(base_config: dict, cand_config: dict) -> list:
    """'MBS 1 vs 2' for each setting two published runs of a pair differ in, besides the GPU."""
    keys = sorted(k for k in set(base_config) | set(cand_config) if k not in NOT_COMPARED
                  and base_config.get(k) != cand_config.get(k))
    return [f"{k} {base_config.get(k)} vs {cand_config.get(k)}" for k in keys]
