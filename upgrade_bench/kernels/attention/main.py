"""bench_flash_attn.py: isolated attention kernels of a model's own layers, fwd / bwd / fwd+bwd TFLOPS.

The guide's isolated attention table: how fast attention alone runs on this GPU, per backend
(fa3, fa4, fa2, and torch SDPA's cudnn / flash / efficient / math kernels), sequence length
and pass. Every distinct mixer layer of MODEL is timed: full attention, sliding windows
(through the kernels' window arguments), sinks (where a kernel takes them, else a record says
why not), each layer's head dims, and the Gated DeltaNet chunk kernel of flash-linear-
attention for linear-attention layers (Qwen3-Next); a Mamba-2 layer (Granite 4.0-H) gets a
record saying it is not timed here. By default the kernels a training run here
would use (ATTN_BACKEND=auto's pick) and cuDNN SDPA, the common alternative; BACKENDS=all runs
every kernel that runs here. A line per point on stderr says what it gave and the time left. Before any timing each backend runs a small shape against a float64 reference;
every record carries that check's max_abs_err and ok, so a kernel that is fast but wrong is
visible. Timing is sustained, as training sees it: a first call (FA4 JIT-compiles each
configuration), then WARMUP and ITERS calls queued back to back, a CUDA event pair around
each and 256 MiB of cache zeroed before each (outside the pair), no idle gap between them;
median/min/max of ITERS (upgrade_bench/kernels/timing.py). `bwd` times the backward alone: each
iteration runs its forward before its event pair.

Writes JSON lines: a `header`, then one `attention` record per layer x backend x seq_len x
pass (status ok | oom | error), or one per layer and backend that cannot run (status
unavailable/error, with the reason); a table on stderr at the end. Exit 1 if a check failed (ok false) or a point
errored (OOM is a result, not a failure), 2 on bad input (inputs that cannot fit the device
among it) and when nothing was measured (every point unavailable or out of memory: the records
kept, one line naming why), 4 when a record cannot be written (a full disk).

    python bench_flash_attn.py                                   # Llama-3.1-8B heads, 1K..128K
    MODEL=gpt-oss-20b python bench_flash_attn.py                 # its windowed and full layers, sinks
    BACKENDS=all SEQLENS=32768 python bench_flash_attn.py        # every kernel that runs here
    PACKED_DOC_LEN=8192 SEQLENS="32768 131072" python bench_flash_attn.py
"""
import sys

from . import backends as attn_backends, bench as attn_bench, kernels as attn_kernels, linear as linear_kernels
from .. import timing
from ... import faults, settings
from ...hardware import fingerprint, gpus, telemetry
from ...log import header
from ...models.layers import LINEAR, MAMBA2
from .bench import PASSES
from ...faults import BadInput
from ...log.records import RecordWriter
from ...settings import Settings

SCRIPT = "bench_flash_attn.py"
REGISTRY = attn_backends.KERNELS
TIMING = attn_bench.TIMING_DEFAULTS
VARS = [
    settings.Var("BACKENDS", "str_list", ["auto"], "auto (what ATTN_BACKEND=auto trains with here, "
                 f"and {attn_kernels.ALTERNATIVE}), all (every kernel that runs here) or a list of "
                 + " ".join(REGISTRY)),
    settings.Var("SEQLENS", "int_list", [1024 * 2**i for i in range(8)], "sequence lengths; OOM "
                 "at the long ones becomes a record", min=1),
    settings.Var("MODEL", "str", "llama-3.1-8b", "time every distinct mixer layer of this model "
                 "preset (configs/), local config folder or cached hub id"),
    settings.Var("NHEADS", "int", 0, "query heads (0 = from MODEL)", min=0),
    settings.Var("NHEADS_KV", "int", 0, "key/value heads, GQA when fewer (0 = from MODEL)", min=0),
    settings.Var("HEAD_DIM", "int", 0, "head dimension (0 = from MODEL)", min=0),
    settings.Var("BATCH", "int", 1, "sequences per call", min=1),
    settings.Var("CAUSAL", "bool", True, "causal mask (the FLOP count halves)"),
    settings.Var("DTYPE", "choice", "bf16", "compute dtype", choices=("bf16", "fp16")),
    settings.Var("PACKED_DOC_LEN", "int", 0, "documents of this many tokens packed inside each "
                 "sequence (varlen; 0 = one document); FLOPs count sum(len^2)", min=0),
    settings.Var("PASSES", "str_list", list(PASSES), "passes to time: " + " ".join(PASSES)),
    *timing.window_vars(TIMING, "the first (JIT) call"),
    settings.Var("PEAK_TFLOPS", "float", 0.0, "dense peak TFLOPS of DTYPE for the mfu field "
                 "(0 = from the GPU table)", min=1, max=1e6, zero_means_unset=True),
    settings.Var("SEED", "int", 0, "random seed of the inputs", min=0, max=settings.SEED_MAX),
    settings.OUTPUT,
    settings.Var("NOTES", "str", "", "free text copied into the header"),
]


def validate(s: Settings, registry: dict = REGISTRY) -> None:
    """Cross-variable rules settings.Var cannot express; raises BadInput."""
    names = s.BACKENDS
    if names not in (["auto"], ["all"]) and (not names or any(n not in registry for n in names)):
        raise BadInput(f"BACKENDS={' '.join(names)!r}: expected auto, all or a list of "
                       f"{'|'.join(registry)}")
    if not s.PASSES or any(p not in PASSES for p in s.PASSES):
        raise BadInput(f"PASSES={' '.join(s.PASSES)!r}: expected a list of {'|'.join(PASSES)}")
    doc_len, shortest = s.PACKED_DOC_LEN, min(s.SEQLENS)
    if doc_len and doc_len >= shortest:
        raise BadInput(f"PACKED_DOC_LEN={doc_len}: must be shorter than every SEQLENS value "
                       f"(shortest {shortest}), or 0 for one document")


def layer_shapes(s: Settings) -> list:
    """The AttentionShapes to time, seq_len aside: NHEADS, NHEADS_KV and HEAD_DIM all set
    are one full-attention layer; else every distinct mixer of MODEL, each head count or dim
    set explicitly replacing the model's."""
    explicit = s.NHEADS, s.NHEADS_KV, s.HEAD_DIM
    seq_len, common = min(s.SEQLENS), (s.CAUSAL, s.PACKED_DOC_LEN)
    if all(explicit):
        shapes = [attn_kernels.AttentionShape(s.BATCH, seq_len, *explicit, *common)]
    else:
        from ...models import model

        try:
            mixers = model.spec(model.load_config(s.MODEL)).distinct_mixers()
        except BadInput as err:  # explicit heads need no MODEL: say so
            raise BadInput(f"{err}; or set NHEADS, NHEADS_KV and HEAD_DIM") from None
        shapes = []
        for m in mixers:
            preset = m.heads, m.kv_heads, m.qk_head_dim
            heads, kv_heads, head_dim = (mine or theirs for mine, theirs in zip(explicit, preset))
            v_dim = head_dim if s.HEAD_DIM else m.v_head_dim
            shapes.append(attn_kernels.AttentionShape(
                s.BATCH, seq_len, heads, kv_heads, head_dim, *common, window=m.window,
                sinks=m.sinks, v_head_dim=v_dim, layer=m.kind))
    for shape in shapes:
        if shape.heads % shape.kv_heads:
            raise BadInput(f"NHEADS={shape.heads}, NHEADS_KV={shape.kv_heads}: query heads must be a "
                           f"multiple of key/value heads")
        if shape.layer == LINEAR and (shape.doc_len or not shape.causal):
            raise BadInput(f"MODEL={s.MODEL!r} has linear-attention layers, which this benchmark "
                           f"times causal and unpacked only: set CAUSAL=1 and PACKED_DOC_LEN=0")
        if shape.window and not shape.causal:
            raise BadInput(f"MODEL={s.MODEL!r} has sliding-window layers, which are causal: set "
                           f"CAUSAL=1")
    return shapes


def family_refusals(s: Settings) -> dict:
    """{backend: why} of the attention backends MODEL's family cannot train with, so that
    BACKENDS=auto times what its training run would use; none for explicit heads."""
    if all((s.NHEADS, s.NHEADS_KV, s.HEAD_DIM)):
        return {}
    from ...models import architecture, model

    # layer_shapes has loaded the config already (a hub id's is cached since): read its type
    # from config.json rather than build it through transformers a second time
    return architecture.refusals(model.cheap_model_type(s.MODEL))


def plan(shapes: list, requested: list, device, refused: dict | None = None) -> list:
    """[(shape, [(backend, reason or None)])]: the backends each layer shape gets (`auto`:
    what the model's training would use, its family refusing `refused`)."""
    problems = attn_kernels.import_problems(attn_backends.KERNELS)
    linear_problems = attn_kernels.import_problems(linear_kernels.KERNELS)
    out = []
    for shape in shapes:
        if shape.layer == MAMBA2:  # no kernel for this mixer here: its record says so
            out.append((shape, [linear_kernels.MAMBA2_UNTIMED]))
            continue
        if shape.layer == LINEAR:  # one kernel for this mixer: FLA's, whatever BACKENDS says
            out.append((shape, attn_kernels.discover(["all"], linear_kernels.KERNELS, device,
                                                     linear_problems, False) or
                        [("fla", linear_problems["fla"] or attn_backends.arch_problem(
                            linear_kernels.FLA, device))]))
            continue
        out.append((shape, attn_kernels.discover(requested, attn_backends.KERNELS, device, problems,
                                                 bool(shape.doc_len), bool(shape.window), shape.sinks, refused)))
    return out


def main() -> int:
    s = settings.load(VARS, __doc__)
    validate(s, REGISTRY)
    shapes = layer_shapes(s)
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[s.DTYPE]
    for shape in shapes:
        attn_bench.check_fits(shape, dtype.itemsize, attn_bench.memory_bytes(device))
    chosen = plan(shapes, s.BACKENDS, fingerprint.device(), family_refusals(s))
    warnings = []
    peak, peak_source, warning = gpus.resolve_peak(fingerprint.gpu_name(), s.DTYPE, s.PEAK_TFLOPS)
    if warning:
        warnings.append(warning)
    if device.type != "cuda":
        warnings.append("no GPU: CPU wall-clock timings, for testing the script only")
    for shape, backends in chosen:
        if all(reason for _name, reason in backends):
            warnings.append(f"{attn_bench.layer_label(shape)}: no backend of BACKENDS="
                            f"{' '.join(s.BACKENDS)} runs it here")
    # The heads the run timed, where its layers share them; a hybrid's layers differ (a Mamba-2
    # layer's 128 heads beside full attention's 32), so its header keeps the settings (0: from
    # MODEL) and each record carries its own layer's heads.
    resolved = {(shape.heads, shape.kv_heads, shape.head_dim) for shape in shapes}
    dims = dict(zip(("NHEADS", "NHEADS_KV", "HEAD_DIM"), *resolved)) if len(resolved) == 1 else {}
    writer = RecordWriter(SCRIPT, s.OUTPUT)
    writer.write("header", **header.fields(
        {**settings.as_dict(s), **dims}, s.NOTES,
        warnings, backends={attn_bench.layer_label(shape): {name: reason or "available"
                                                            for name, reason in backends}
                            for shape, backends in chosen}, peak_tflops=peak,
        peak_source=peak_source))
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    bench = attn_bench.AttentionBench(s, dtype, device, timing.CacheFlusher(device), peak,
                                      telemetry.RunSampler(device.index or 0))
    records = attn_bench.run_all(bench, chosen, writer, sys.stderr)
    sys.stderr.write(attn_bench.format_table(records) + "\n")
    failed = [r for r in records if r["status"] == "error" or r["ok"] is False]
    if not failed and not any(r["status"] == "ok" for r in records):  # its records say why, each point
        why = sorted({f"{r['backend']}: {r['reason']}" for r in records if r.get("reason")})
        raise BadInput(f"nothing measured (BACKENDS={' '.join(s.BACKENDS)}): {'; '.join(why[:3])}"
                       f"{'; ...' if len(why) > 3 else ''}; choose BACKENDS that run here (--help)")
    return faults.EXIT_ERROR if failed else 0

