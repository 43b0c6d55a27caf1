"""Published training-throughput pairs: the same model on two GPUs, as records the backtest reads.

The guide's H200/B200 pair lives in guide.py. The others are NVIDIA's performance tables
(runs.py: Megatron-Bridge's and NeMo Framework's, pre-training and fine-tuning, tokens/s/GPU and
model TFLOP/s/GPU per system and NeMo container), every figure as its source publishes it. Such
tables change batch, parallelism or precision between GPUs: each run's header records its own
(config keys GBS, MBS, TP, PP, CP, VP, EP, FSDP, PRECISION, CONTAINER, and TASK for
fine-tuning), and the backtest names what differs between the two sides of a pair and keeps
like-for-like pairs apart.

Per run, published: tokens/s/GPU and model TFLOP/s/GPU. Derived with the published numbers
alone (listed in `derived`): the step time of one global batch (GBS x seq_len tokens over the
GPUs, at the published tokens/s/GPU) and the model TFLOP of that step per GPU (the published
TFLOP/s/GPU times it, so the publisher's FLOP convention stays theirs). The quadratic
attention share comes from this suite's FLOP count of the model (models/flops.py), the only
number here not from the table. Nothing here is a measurement of this suite.

`write_shipped()` writes results/published/<source>.jsonl, one file a source (run this module:
`.venv/bin/python -m upgrade_bench.report.published.pairs`; a test checks each shipped file is
what the code writes); the page does not read that folder, the backtest does.
"""
import json

from ...hardware import gpus
from ...log import header, records
from ...models import architecture, flops
from ...paths import REPO
from . import guide as published, measured, runs as published_runs

SHIPPED_PATHS = {source: f"results/published/{source.replace('-', '_')}.jsonl"
                 for source in published_runs.SOURCES}
GUIDE = "guide"
# (baseline run, candidate run): the guide's pairs first, then each source's.
PAIRS = ((("guide-h200-sweep", "guide-b200-sweep"), ("guide-h200-decompose", "guide-b200-decompose"))
         + tuple(pair for pairs in published_runs.PAIRS.values() for pair in pairs) + measured.PAIRS)
# Settings of a published run that are no part of the workload's identity across two GPUs (a
# pair's lengths are matched one by one). 'n/a' parallel sizes are written as 1, what they mean.
NOT_COMPARED = ("SEQ_LEN",)


def _config(name: str) -> dict:
    return json.loads((REPO / "configs" / f"{name}.json").read_text())


def _model_specs() -> dict:
    """The published models' shapes (Meta's, OpenAI's, Qwen's and DeepSeek's published configs),
    from the shipped presets with the bigger models' dimensions."""
    llama = _config("llama-3.1-8b")
    oss = _config("gpt-oss-20b")
    qwen = _config("qwen3-30b-a3b")
    return {"qwen3-30b-a3b": architecture.describe(qwen),
            "qwen3-235b-a22b": architecture.describe(dict(qwen, hidden_size=4096, num_hidden_layers=94,
                                                          num_attention_heads=64, moe_intermediate_size=1536)),
            "deepseek-v3": architecture.describe(_config("deepseek-v3")),
            "llama-3-8b": architecture.describe(llama),
            "llama-3.1-8b": architecture.describe(llama),
            "llama-3-70b": architecture.describe(dict(llama, hidden_size=8192, intermediate_size=28672,
                                                      num_hidden_layers=80, num_attention_heads=64)),
            "llama-3.1-70b": architecture.describe(dict(llama, hidden_size=8192, intermediate_size=28672,
                                                        num_hidden_layers=80, num_attention_heads=64)),
            "llama-3.1-405b": architecture.describe(dict(llama, hidden_size=16384, intermediate_size=53248,
                                                         num_hidden_layers=126, num_attention_heads=128)),
            "gpt-oss-120b": architecture.describe(dict(
                oss, num_hidden_layers=36, num_local_experts=128,
                layer_types=["sliding_attention", "full_attention"] * 18))}


def source_records(source: str) -> list:
    """One source's runs (published_runs.RUNS) as records of this suite's schema, each marked
    `"reference": source` with its citation in the header's notes."""
    specs = _model_specs()
    out = []
    for run in published_runs.RUNS[source]:
        (run_id, container, system, model, n_gpus, precision, gbs, mbs, seq_len, fsdp, tp, pp, cp, vp, ep,
         tokens_per_s, _tflops) = run
        tflops, derived = published_runs.tflops_of(run)
        device = published_runs.DEVICE[source].format(system)
        spec = gpus.lookup(device)
        task = published_runs.FINE_TUNING.get(run_id)
        config = {"MODEL": model, "PRECISION": precision, "GBS": gbs, "MBS": mbs, "FSDP": fsdp, "TP": tp, "PP": pp,
                  "CP": cp, "VP": vp or 1, "EP": ep or 1, "CONTAINER": published_runs.CONTAINER[source].format(container),
                  "SEQ_LEN": [seq_len], "world_size": n_gpus, **({"TASK": task} if task else {})}
        where = (f"DGX-{system}, NeMo {container} container" if device.startswith("NVIDIA")
                 else f"{device}, {container} container")
        notes = (f"published figures ({where}, {task or 'pre-training'}): "
                 f"{published_runs.SOURCES[source]}; not measured by this suite")
        if derived:
            notes += (f"; model TFLOP/s/GPU derived from the published tokens/s/GPU with the TFLOP per token of "
                      f"{published_runs.TFLOP_PER_TOKEN_FROM[run_id]}"
                      + ("; global batch unpublished: a step of one micro-batch per GPU" if gbs is None else ""))
        out.append(records.record("header", source, run_id, None, reference=source, **header.fields(
            config, notes, stack={}, hardware={"gpu_name": device, "gpu_count": n_gpus,
                                               "hbm_gib": spec.hbm_gib},
            attn_backend="transformer-engine", peak_tflops=spec.peak_tflops(precision),
            peak_source=f"table:{spec.name}", num_layers=len(specs[model].layers))))
        step_ms = (gbs or mbs * n_gpus) * seq_len / n_gpus / tokens_per_s * 1e3
        out.append(records.record(
            "summary", source, run_id, None, reference=source, seq_len=seq_len,
            step_ms=step_ms, tflops_per_gpu=float(tflops), tokens_per_s_per_gpu=float(tokens_per_s),
            model_tflop_per_step=tflops * step_ms / 1e3,
            attn_flop_share=flops.step_flops(specs[model], 1, seq_len).attn_share, world_size=n_gpus,
            derived=["step_ms", "model_tflop_per_step", "attn_flop_share"] + (["tflops_per_gpu"] if derived else [])))
    return out


def all_records() -> list:
    """Every pair's records: the guide's, each published source's, then this project's measured pairs."""
    return published.guide_reference_records() + [r for source in published_runs.SOURCES
                                                   for r in source_records(source)] + measured.records()


def source_key(run_header: dict) -> str:
    """The source a published run belongs to: 'guide' or a key of published_runs.SOURCES."""
    return run_header.get("reference") or ""


SOURCE_NAMES = {GUIDE: "the guide (Machine Learning Engineering Open Book, insights/when-to-upgrade-gpus)",
                published_runs.MEGATRON_BRIDGE: "Megatron-Bridge performance summary",
                published_runs.NEMO_FRAMEWORK: "NeMo Framework performance summary",
                published_runs.AMD_PRIMUS: "AMD Primus / ROCm performance results (MI325X)",
                measured.PROJECT: measured.SOURCE}


def source_of(run_header: dict) -> str:
    """Where a published run's figures come from, in words."""
    key = source_key(run_header)
    container = (run_header.get("config") or {}).get("CONTAINER")
    return SOURCE_NAMES.get(key, key) + (f", {container} container" if key != GUIDE and container else "")


def differences(base_config: dict, cand_config: dict) -> list:
    """'MBS 1 vs 2' for each setting two published runs of a pair differ in, besides the GPU; a
    setting one side does not publish (None: AMD's global batch) is no difference found, and a
    model published under another name with the same shapes (SAME_SHAPES) is the same model."""
    def value(config, k):
        v = config.get(k)
        return published_runs.SAME_SHAPES.get(v, v) if k == "MODEL" else v
    keys = sorted(k for k in set(base_config) | set(cand_config) if k not in NOT_COMPARED
                  and None not in (base_config.get(k, 0), cand_config.get(k, 0))
                  and value(base_config, k) != value(cand_config, k))
    return [f"{k} {base_config.get(k)} vs {cand_config.get(k)}" for k in keys]


def write_shipped() -> list:
    """Each source's records to its SHIPPED_PATHS file; the paths written."""
    for source, path in SHIPPED_PATHS.items():
        (REPO / path).write_text("".join(json.dumps(r) + "\n" for r in source_records(source)))
    return list(SHIPPED_PATHS.values())


if __name__ == "__main__":
    print("\n".join(write_shipped()))
