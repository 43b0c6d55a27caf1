"""The guide's published H200/B200 figures, as records of this suite's schema.

Source of every number here: Stas Bekman, Machine Learning Engineering Open Book,
insights/when-to-upgrade-gpus (https://github.com/stas00/ml-engineering/tree/master/insights/when-to-upgrade-gpus):
8x GPU nodes, meta-llama/Llama-3.1-8B, DeepSpeed, micro-batch 1, fwd+bwd+step, H200 with
flash-attn-3, B200 with flash-attn-4 (beta), torch 2.13.0/cu130 on both. Peak TFLOPS are the
NVIDIA H200 and B200 datasheets' dense bf16 figures (989 and 2250) and HBM the guide's usable
~141 and ~180 GiB, both via gpus.py, where the guide's MAMF figures live too.

`guide_reference_records()` writes results/reference/guide.jsonl (plot_results.py
--write-guide-reference); the report reads it like any log, marked as published figures.
"""
import json

from ...models import architecture, flops
from ...hardware import gpus
from ...paths import REPO
from ...log import header, records
from ...log.checks import tokens_per_s

PUBLISHED_GPUS = ("H200", "B200")
SHIPPED_PATH = "results/reference/guide.jsonl"   # in the repository, written by --write-guide-reference
# The guide's sweep table, "same config on both GPUs": ZeRO-3 + activation checkpointing +
# CPU AdamW offload + Liger, unpacked: (seq_len, H200 TFLOPS, B200 TFLOPS), whole numbers.
GUIDE_SWEEP_TFLOPS = [(8192, 141, 167), (32768, 324, 524), (65536, 391, 719),
                      (131072, 420, 836), (196608, 422, 852), (262144, 419, 852)]
# The guide's memory table of the same runs: peak max_memory_reserved, worst rank, GiB.
GUIDE_PEAK_MEM_GIB = {"H200": (16.3, 25.8, 37.5, 66.5, 95.7, 124.5),
                      "B200": (16.3, 25.9, 37.6, 66.7, 95.7, 124.6)}
# "H200 tops out at 256K tokens (~125 GiB)": the largest length of the table that fit.
GUIDE_H200_MAX_FIT = (262144, 124.5)
# Right-sized 8K (ZeRO-2, no checkpointing/offload): attention / everything else / total TFLOPS.
GUIDE_DECOMPOSITION_TFLOPS = {"H200": (447, 463, 461), "B200": (834, 771, 778)}
# Isolated attention, fwd+bwd, causal, the 8B's heads: B200 (flash-attn-4) over H200
# (flash-attn-3), by sequence length. Kernel figures, as a MAMF table is: the forecast may
# read them (never the B200's workload figures above).
GUIDE_ISOLATED_ATTENTION_RATIO = {("H200 SXM", "B200 SXM"): {8192: 1.88, 32768: 1.95}}
# The guide publishes whole TFLOPS and no step-time spread: half a unit either side is the
# only range its figures carry.
PUBLISHED_ROUNDING_TFLOPS = 0.5
GUIDE_STACK = {"python": "3.12.12", "torch": "2.13.0+cu130", "cuda": "13.0", "transformers": "5.14.1",
               "deepspeed": "0.19.2", "liger-kernel": "0.8.0"}
GUIDE_ATTENTION_PACKAGE = {"H200": ("fa3", "flash-attn-3", "3.0.0"),
                           "B200": ("fa4", "flash-attn-4", "4.0.0b22")}
# The guide's model, from the preset the suite ships (its published config.json).
LLAMA_8B = architecture.describe(json.loads((REPO / "configs" / "llama-3.1-8b.json").read_text()))
NOTES = ("guide's published figures (Machine Learning Engineering Open Book, "
         "insights/when-to-upgrade-gpus), not measured by this suite")


def step_ms_of(model_tflop: float, tflops_per_gpu: float) -> float:
    """Step time of a step of `model_tflop` TFLOP per GPU at `tflops_per_gpu`."""
    return model_tflop / tflops_per_gpu * 1e3


# The guide's long-context run as a benchmark.py header of it records its config: the
# suite's defaults (the guide's config), Liger on, 8 GPUs. Written out rather than derived from
# the training settings, so the report reads no training code and a new setting cannot move
# the published run's identity (log/runs.IDENTITY_DEFAULTS keeps new settings' defaults out of
# a config; tests/test_layers.py checks the two still agree).
GUIDE_CONFIG = {"MODEL": "llama-3.1-8b", "WEIGHTS": "auto", "NUM_LAYERS": 0, "SEQ_LEN": [8192], "BATCH_SIZE": 1,
                "STEPS": 10, "WARMUP_STEPS": 2, "DECOMPOSE": 0, "ZERO_STAGE": 3, "OFFLOAD_OPTIMIZER": True,
                "GRAD_CHECKPOINT": True, "USE_LIGER": True, "ATTN_BACKEND": "auto", "PACKED_DOC_LEN": 0,
                "PEAK_TFLOPS": 0.0, "MEM_DEBUG": False, "SEED": 0, "OUTPUT": "", "NOTES": "", "world_size": 8}


def guide_reference_records() -> list:
    """The guide's published H200/B200 numbers as records of this suite's schema.

    Every record says `"reference": "guide"` and every header notes "guide's published
    figures"; fields the guide does not publish but that follow from its numbers with this
    suite's FLOP convention (step_ms and its range from the rounding of the published
    TFLOPS, tokens/s, MFU against the table peak, attention share) are listed in `derived`.
    Nothing here is a measurement of this suite.
    """
    sweep_config = dict(GUIDE_CONFIG)
    # the lengths each published run covers, as a measured run's header lists its SEQ_LEN
    sweep_config["SEQ_LEN"] = [n for n, _, _ in GUIDE_SWEEP_TFLOPS]
    right_sized = dict(sweep_config, ZERO_STAGE=2, OFFLOAD_OPTIMIZER=False, GRAD_CHECKPOINT=False, SEQ_LEN=[8192])
    out = []
    for gpu in PUBLISHED_GPUS:
        spec = gpus.lookup(gpu)
        backend, package, version = GUIDE_ATTENTION_PACKAGE[gpu]
        software = dict(GUIDE_STACK, **{"flash-attn-3": None, "flash-attn-4": None, package: version})

        def rec(kind, run, script, **fields):
            out.append(records.record(kind, script, f"guide-{gpu.lower()}-{run}", None, reference="guide",
                                      **fields))

        def run_header(run, script, config):
            rec("header", run, script, **header.fields(
                config, NOTES, stack=software,
                hardware={"gpu_name": f"NVIDIA {gpu}", "gpu_count": 8, "hbm_gib": spec.hbm_gib},
                attn_backend=backend, peak_tflops=spec.bf16, peak_source=f"table:{spec.name}",
                num_layers=len(LLAMA_8B.layers)))

        run_header("sweep", "benchmark.py", sweep_config)
        for (seq_len, h200, b200), peak_mem_gib in zip(GUIDE_SWEEP_TFLOPS, GUIDE_PEAK_MEM_GIB[gpu]):
            tflops_per_gpu = h200 if gpu == "H200" else b200
            sf = flops.step_flops(LLAMA_8B, 1, seq_len)
            step_ms = step_ms_of(sf.model / 1e12, tflops_per_gpu)
            rec("summary", "sweep", "benchmark.py", seq_len=seq_len, batch_size=1, packed_doc_len=0,
                step_ms=step_ms,
                step_ms_min=step_ms_of(sf.model / 1e12, tflops_per_gpu + PUBLISHED_ROUNDING_TFLOPS),
                step_ms_max=step_ms_of(sf.model / 1e12, tflops_per_gpu - PUBLISHED_ROUNDING_TFLOPS),
                tflops_per_gpu=float(tflops_per_gpu), mfu=tflops_per_gpu / spec.bf16,
                tokens_per_s_per_gpu=tokens_per_s(seq_len, 1, step_ms), attn_flop_share=sf.attn_share,
                model_tflop_per_step=sf.model / 1e12, peak_mem_gib=peak_mem_gib, attn_backend=backend,
                world_size=8, derived=["step_ms", "step_ms_min", "step_ms_max", "mfu",
                                       "tokens_per_s_per_gpu", "attn_flop_share", "model_tflop_per_step"])
        if gpu == "H200":
            fit, peak_mem_gib = GUIDE_H200_MAX_FIT
            rec("capacity", "sweep", "run_sweep.sh", max_fit_seq_len=fit, min_fail_seq_len=None,
                peak_mem_gib_at_max=peak_mem_gib, hbm_gib=spec.hbm_gib, seq_len_step=None, runs=None,
                config=sweep_config)

        run_header("decompose", "bench_decompose.py", right_sized)
        sf = flops.step_flops(LLAMA_8B, 1, 8192)
        attn, rest, total = GUIDE_DECOMPOSITION_TFLOPS[gpu]

        def part(tflop, tflops_published):
            return {"tflop": tflop / 1e12, "tflops": float(tflops_published),
                    "ms": step_ms_of(tflop / 1e12, tflops_published)}
        rec("decomposition", "decompose", "bench_decompose.py", seq_len=8192,
            buckets={"attention": part(sf.attention, attn)}, everything_else=part(sf.dense, rest),
            total=part(sf.model, total), attn_backend=backend, derived=["tflop", "ms"])

        run_header("mamf", "mamf-finder.py", {})
        # The guide's MAMF figures are the GPU table's (gpus.py), quoted from the guide.
        for dtype, value in (("bf16", spec.mamf_bf16), ("fp8", spec.mamf_fp8)):
            peak = spec.peak_tflops(dtype)
            rec("mamf", "mamf", "mamf-finder.py", dtype=dtype, m=None, n=None, k=None,
                tflops_mean=value, tflops_median=None, tflops_max=None, peak_tflops=peak,
                efficiency=value / peak, notes="H200: measured on H100 (same die)" if gpu == "H200" else "")
    return out
