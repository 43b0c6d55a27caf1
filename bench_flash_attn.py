#!/usr/bin/env python3
"""bench_flash_attn.py: isolated attention kernels, every backend, fwd / bwd / fwd+bwd TFLOPS.

The guide's isolated attention table: how fast attention alone runs on this GPU, per backend
(fa3, fa4, fa2, and torch SDPA's cudnn / flash / efficient / math kernels), sequence length
and pass. Before any timing each backend runs a small shape against a float64 reference;
every record carries that check's max_abs_err and ok, so a kernel that is fast but wrong is
visible. Timing is sustained, as training sees it: a first call (FA4 JIT-compiles each
configuration), then WARMUP and ITERS calls queued back to back, a CUDA event pair around
each and 256 MiB of cache zeroed before each (outside the pair), no idle gap between them;
median/min/max of ITERS (upgrade_bench/timing.py). `bwd` times the backward alone: each
iteration runs its forward before its event pair.

Writes JSON lines: a `header`, then one `attention` record per backend x seq_len x pass
(status ok | oom | error), or one per backend that cannot run (status unavailable/error, with
the reason); a table on stderr at the end. Exit 1 if a check failed (ok false) or a point
errored (OOM is a result, not a failure), 2 on bad input (inputs that cannot fit the device
among it), 4 when a record cannot be written (a full disk).

    python bench_flash_attn.py                                   # Llama-3.1-8B heads, 1K..128K
    BACKENDS="fa4 sdpa-cudnn" SEQLENS=32768 python bench_flash_attn.py
    PACKED_DOC_LEN=8192 SEQLENS="32768 131072" python bench_flash_attn.py
"""
import sys

from upgrade_bench import (attn_backends, attn_bench, attn_kernels, fingerprint, gpus, header, settings,
                           telemetry, timing)
from upgrade_bench.attn_bench import PASSES
from upgrade_bench.faults import BadInput, run_main
from upgrade_bench.records import RecordWriter

SCRIPT = "bench_flash_attn.py"
VARS = [
    settings.Var("BACKENDS", "str_list", ["auto"], "auto (every backend importable and supported "
                 "here) or a list of " + " ".join(attn_backends.KERNELS)),
    settings.Var("SEQLENS", "int_list", [1024 * 2**i for i in range(8)], "sequence lengths; OOM "
                 "at the long ones becomes a record", min=1),
    settings.Var("MODEL", "str", "llama-3.1-8b", "take head shapes from this model preset "
                 "(llama-3.1-8b | tiny), local config folder or cached hub id"),
    settings.Var("NHEADS", "int", 0, "query heads (0 = from MODEL)", min=0),
    settings.Var("NHEADS_KV", "int", 0, "key/value heads, GQA when fewer (0 = from MODEL)", min=0),
    settings.Var("HEAD_DIM", "int", 0, "head dimension (0 = from MODEL)", min=0),
    settings.Var("BATCH", "int", 1, "sequences per call", min=1),
    settings.Var("CAUSAL", "bool", True, "causal mask (the FLOP count halves)"),
    settings.Var("DTYPE", "choice", "bf16", "compute dtype", choices=("bf16", "fp16")),
    settings.Var("PACKED_DOC_LEN", "int", 0, "documents of this many tokens packed inside each "
                 "sequence (varlen; 0 = one document); FLOPs count sum(len^2)", min=0),
    settings.Var("PASSES", "str_list", list(PASSES), "passes to time: " + " ".join(PASSES)),
    settings.Var("ITERS", "int", 20, "timed calls per point at least (median, min, max)", min=1),
    settings.Var("WARMUP", "int", 3, "untimed calls after the first (JIT) call, at least", min=1),
    settings.Var("WARMUP_MS", "float", 200.0, "untimed back-to-back calls fill at least this "
                 "many ms, so timing starts at the clock the power cap holds", min=0),
    settings.Var("TIME_MS", "float", 500.0, "timed calls fill at least this many ms: a sustained "
                 "window, not a burst", min=0),
    settings.Var("PEAK_TFLOPS", "float", 0.0, "dense peak TFLOPS of DTYPE for the mfu field "
                 "(0 = from the GPU table)", min=0),
    settings.Var("SEED", "int", 0, "random seed of the inputs", min=0, max=settings.SEED_MAX),
    settings.OUTPUT,
    settings.Var("NOTES", "str", "", "free text copied into the header"),
]


def validate(s: dict, registry: dict) -> None:
    """Cross-variable rules settings.Var cannot express; raises BadInput."""
    names = s["BACKENDS"]
    if names != ["auto"] and (not names or any(n not in registry for n in names)):
        raise BadInput(f"BACKENDS={' '.join(names)!r}: expected auto or a list of {'|'.join(registry)}")
    if not s["PASSES"] or any(p not in PASSES for p in s["PASSES"]):
        raise BadInput(f"PASSES={' '.join(s['PASSES'])!r}: expected a list of {'|'.join(PASSES)}")
    doc_len, shortest = s["PACKED_DOC_LEN"], min(s["SEQLENS"])
    if doc_len and doc_len >= shortest:
        raise BadInput(f"PACKED_DOC_LEN={doc_len}: must be shorter than every SEQLENS value "
                       f"(shortest {shortest}), or 0 for one document")


def resolve_heads(s: dict) -> tuple[int, int, int]:
    """(heads, kv_heads, head_dim): explicit settings win over the MODEL preset."""
    explicit = s["NHEADS"], s["NHEADS_KV"], s["HEAD_DIM"]
    if all(explicit):
        heads, kv_heads, head_dim = explicit
    else:
        from upgrade_bench import model

        try:
            shapes = model.spec(model.load_config(s["MODEL"])).attention_shapes()
        except BadInput as err:  # explicit heads need no MODEL: say so
            raise BadInput(f"{err}; or set NHEADS, NHEADS_KV and HEAD_DIM") from None
        if not shapes:
            raise BadInput(f"MODEL={s['MODEL']!r} has no softmax-attention layer to time; set NHEADS, "
                           f"NHEADS_KV and HEAD_DIM")
        # The first quadratic attention layer's heads (a model's layers share them here).
        _kind, heads, kv_heads, qk_dim, v_dim, _window = shapes[0]
        if qk_dim != v_dim:  # MLA: the kernels here take one head dim for q, k and v
            raise BadInput(f"MODEL={s['MODEL']!r}: attention scores over {qk_dim} dims and weighs "
                           f"values of {v_dim}, which this benchmark cannot time; set NHEADS, "
                           f"NHEADS_KV and HEAD_DIM")
        preset = heads, kv_heads, qk_dim
        heads, kv_heads, head_dim = (mine or theirs for mine, theirs in zip(explicit, preset))
    if heads % kv_heads:
        raise BadInput(f"NHEADS={heads}, NHEADS_KV={kv_heads}: query heads must be a multiple of "
                       f"key/value heads")
    return heads, kv_heads, head_dim


def main() -> int:
    s = settings.load(VARS, __doc__)
    registry = attn_backends.KERNELS
    validate(s, registry)
    heads, kv_heads, head_dim = resolve_heads(s)
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[s["DTYPE"]]
    base = attn_kernels.AttentionShape(s["BATCH"], min(s["SEQLENS"]), heads, kv_heads, head_dim,
                                       s["CAUSAL"], s["PACKED_DOC_LEN"])
    attn_bench.check_fits(base, dtype.itemsize, attn_bench.memory_bytes(device))
    chosen = attn_kernels.discover(s["BACKENDS"], registry, fingerprint.device(),
                                   attn_kernels.import_problems(registry), bool(base.doc_len))
    warnings = []
    peak, peak_source, warning = gpus.resolve_peak(fingerprint.gpu_name(), s["DTYPE"], s["PEAK_TFLOPS"])
    if warning:
        warnings.append(warning)
    if device.type != "cuda":
        warnings.append("no GPU: CPU wall-clock timings, for testing the script only")
    if not chosen:
        warnings.append("BACKENDS=auto found no backend that runs here")
    writer = RecordWriter(SCRIPT, s["OUTPUT"])
    writer.write("header", **header.fields(
        {**s, "NHEADS": heads, "NHEADS_KV": kv_heads, "HEAD_DIM": head_dim}, s["NOTES"], warnings,
        backends={name: reason or "available" for name, reason in chosen}, peak_tflops=peak,
        peak_source=peak_source))
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    bench = attn_bench.AttentionBench(s, dtype, device, timing.CacheFlusher(device), peak,
                                      telemetry.RunSampler(device.index or 0))
    records = attn_bench.run_all(bench, chosen, base, writer)
    sys.stderr.write(attn_bench.format_table(records) + "\n")
    failed = [r for r in records if r["status"] == "error" or r["ok"] is False]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
