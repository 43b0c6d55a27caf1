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
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from upgrade_bench import (attn_backends, attn_kernels, faults, fingerprint, flops, gpus, header, settings,
                           telemetry, timing)
from upgrade_bench.faults import BadInput, run_main
from upgrade_bench.records import RecordWriter

SCRIPT = "bench_flash_attn.py"
PASSES = ("fwd", "bwd", "fwd_bwd")
# Which check errors each pass's `ok` covers.
CHECKED = {"fwd": ("out",), "bwd": ("dq", "dk", "dv"), "fwd_bwd": ("out", "dq", "dk", "dv")}
REPEAT_KV_NOTE = ("kernel refused enable_gqa: K/V heads repeated to the query heads before "
                  "the call, outside the timed region")
MASK_NOTE = ("packed as a block-diagonal mask: the kernel still does the full s^2 work; "
             "tflops counts the useful sum(len^2) work")

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
            dims = model.dims(model.load_config(s["MODEL"]))
        except BadInput as err:  # explicit heads need no MODEL: say so
            raise BadInput(f"{err}; or set NHEADS, NHEADS_KV and HEAD_DIM") from None
        preset = dims.heads, dims.kv_heads, dims.head_dim
        heads, kv_heads, head_dim = (mine or theirs for mine, theirs in zip(explicit, preset))
    if heads % kv_heads:
        raise BadInput(f"NHEADS={heads}, NHEADS_KV={kv_heads}: query heads must be a multiple of "
                       f"key/value heads")
    return heads, kv_heads, head_dim


def memory_bytes(device) -> int:
    """What the inputs must fit in: the GPU's memory; on CPU the host's RAM, or the
    container's limit when lower (past it the kernel's OOM killer ends the run)."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        return min(ram, int(Path("/sys/fs/cgroup/memory.max").read_text()))
    except (OSError, ValueError):  # no cgroup v2, or "max"
        return ram


def too_big(need_bytes: int, capacity_bytes: int) -> str | None:
    if need_bytes <= capacity_bytes:
        return None
    return (f"the inputs alone need {need_bytes / 2**30:.1f} GiB, more than the "
            f"{capacity_bytes / 2**30:.1f} GiB this device has")


def check_fits(base: attn_kernels.AttentionShape, elem_bytes: int, capacity_bytes: int) -> None:
    """BadInput unless the smallest work of a run fits in `capacity_bytes`: the inputs
    of the shortest point, and the correctness check's float64 reference of its own shape."""
    need = max(base.input_bytes(elem_bytes), attn_kernels.check_shape(base).input_bytes(8))
    problem = too_big(need, capacity_bytes)
    if problem:
        raise BadInput(f"NHEADS={base.heads}, NHEADS_KV={base.kv_heads}, HEAD_DIM={base.head_dim}, "
                       f"BATCH={base.batch}: {problem}")


def pass_calls(forward, leaves, dout, pass_: str):
    """(before, timed) for one pass: `timed` is exactly the work the pass's time covers."""
    import torch

    if pass_ == "fwd":
        return None, forward
    if pass_ == "fwd_bwd":
        return None, lambda: torch.autograd.grad(forward(), leaves, dout)
    graph = {}

    def before():  # bwd: a fresh forward each iteration, outside the timed region
        graph["out"] = forward()

    return before, lambda: torch.autograd.grad(graph.pop("out"), leaves, dout)


@dataclass
class Bench:
    """What every point of one run shares."""
    s: dict                      # the settings
    dtype: object                # torch dtype of DTYPE
    device: object
    flush: timing.CacheFlusher
    peak: float | None           # dense peak TFLOPS of DTYPE, for mfu
    sampler: telemetry.RunSampler


def time_pass(forward, leaves, dout, pass_, b: Bench) -> dict:
    before, timed = pass_calls(forward, leaves, dout, pass_)

    def untimed():  # before every call: the pass's own work, then the cache flush
        if before:
            before()
        b.flush()

    untimed()
    timed()  # a first call (the backward's FA4 JIT compile, say) is never timed
    s = b.s
    (times, method), gpu = b.sampler.measure(lambda: timing.time_iterations(
        timed, b.device, s["ITERS"], s["WARMUP"], untimed, warmup_ms=s["WARMUP_MS"],
        time_ms=s["TIME_MS"]))
    stats = timing.summarize(times)
    return {"ms": stats["median"], "ms_min": stats["min"], "ms_max": stats["max"],
            "iters": stats["n"], **method, **gpu}


def free_memory(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_check(backend, base: attn_kernels.AttentionShape, b: Bench):
    """(gqa mode, Check), or the fields of the one record a backend gets when it cannot run."""
    try:
        return attn_kernels.check_backend(backend, attn_kernels.check_shape(base), b.dtype, b.device,
                                          b.s["SEED"])
    except attn_kernels.NoKernel as err:
        return {"status": "unavailable", "reason": f"torch has no {backend.name} kernel for these "
                f"inputs: {err}"}
    except Exception as err:
        fields = _failure(err)
        return {"status": "error", "reason": f"correctness check failed: {fields['reason']}"}


def prepare(backend, shape, mode: str, dtype, device, seed: int):
    """(forward, leaves, dout) for timing `shape`, or failure fields (OOM at long seq_len)."""
    import torch

    problem = too_big(shape.input_bytes(dtype.itemsize), memory_bytes(device))
    if problem:  # not allocated: past a CPU's RAM that would be the OOM killer, not an error
        return {"status": "oom", "reason": problem}
    torch.manual_seed(seed + shape.seq_len)
    try:
        args = attn_kernels.make_args(backend, shape, dtype, device, mode)
        leaves = attn_kernels.random_inputs(backend, shape, dtype, device, mode)
        forward = lambda: backend.run(*leaves, args)  # noqa: E731
        return forward, leaves, torch.randn_like(forward())  # dout strided like the real output
    except Exception as err:
        return _failure(err)


def measure(inputs, shape, pass_, verdict: dict, check, b: Bench) -> dict:
    """The fields of one point's record; never raises."""
    if pass_ != "fwd" and check.backward_error:
        return {**verdict, "status": "error",
                "reason": f"backward failed in the correctness check: {check.backward_error}"}
    try:
        measured = time_pass(*inputs, pass_, b)
    except Exception as err:
        return {**verdict, **_failure(err)}
    work = shape.flops(pass_)
    achieved = flops.tflops(work, measured["ms"])
    return {**verdict, **measured, "tflop": work / 1e12, "tflops": achieved,
            "mfu": flops.mfu(achieved, b.peak), "status": "ok", "reason": None}


def run_backend(backend, base: attn_kernels.AttentionShape, b: Bench, write):
    """The check, then every seq_len x pass of one backend; every outcome is a record."""
    s = b.s
    checked = run_check(backend, base, b)
    if isinstance(checked, dict):
        write(backend.name, base, None, **checked)
        return
    mode, check = checked
    tol = attn_kernels.TOLERANCE[s["DTYPE"]]
    notes = [REPEAT_KV_NOTE if mode == "repeat_kv" else "",
             MASK_NOTE if base.doc_len and backend.packed == "mask" else ""]
    common = {"gqa": mode, "tol": tol, "note": "; ".join(n for n in notes if n) or None}
    for seq_len in s["SEQLENS"]:
        shape = replace(base, seq_len=seq_len)
        inputs = prepare(backend, shape, mode, b.dtype, b.device, s["SEED"])
        for pass_ in s["PASSES"]:
            names = CHECKED[pass_] if pass_ == "fwd" or not check.backward_error else ("out",)
            verdict = attn_kernels.judge(check.errors, names, tol)
            fields = {**verdict, **inputs} if isinstance(inputs, dict) else measure(
                inputs, shape, pass_, verdict, check, b)
            write(backend.name, shape, pass_, **common, **fields)
            free_memory(b.device)  # after an OOM, and so the next point starts from a clean cache
        del inputs
        free_memory(b.device)


def _failure(err: BaseException) -> dict:
    fields = faults.error_fields(err)
    status = "oom" if fields["error"] == "oom" else "error"
    return {"status": status, "reason": f"{fields['exception']}: {fields['message']}"}


def format_table(records: list) -> str:
    """backend x pass rows, seq_len columns, TFLOPS (or the status) in each cell."""
    points = [r for r in records if r.get("pass")]
    seq_lens = sorted({r["seq_len"] for r in points})
    rows = {}
    for r in points:
        cell = f"{r['tflops']:.1f}" if r["status"] == "ok" else r["status"]
        if r["status"] == "ok" and not r["ok"]:
            cell += "!"
        rows.setdefault((r["backend"], r["pass"]), {})[r["seq_len"]] = cell
    head = ["backend", "pass"] + [f"{n // 1024}K" if n % 1024 == 0 else str(n) for n in seq_lens]
    lines = [head] + [[b, p] + [cells.get(n, "-") for n in seq_lens] for (b, p), cells in rows.items()]
    for r in records:
        if not r.get("pass"):
            lines.append([r["backend"], r["status"]] + [""] * len(seq_lens))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths)))
            for line in lines]
    return "\n".join(["TFLOPS (! = failed the correctness check)"] + text + [
        f"{r['backend']}: {r['reason']}" for r in records if not r.get("pass") and r.get("reason")])


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
    check_fits(base, dtype.itemsize, memory_bytes(device))
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
    records = []

    def write(backend, shape, pass_, **fields):
        """One `attention` record; fields a point did not reach are null."""
        for key in ("ms", "ms_min", "ms_max", "iters", "tflops", "mfu", "ok", "max_abs_err"):
            fields.setdefault(key, None)
        records.append(writer.write(
            "attention", backend=backend, seq_len=shape.seq_len if pass_ else None, **{"pass": pass_},
            batch=shape.batch, heads=shape.heads, kv_heads=shape.kv_heads, head_dim=shape.head_dim,
            causal=shape.causal, dtype=s["DTYPE"], packed_doc_len=shape.doc_len, **fields))

    bench = Bench(s, dtype, device, timing.CacheFlusher(device), peak,
                  telemetry.RunSampler(device.index or 0))
    bench.sampler.start()
    for name, reason in chosen:
        if reason:
            write(name, base, None, status="unavailable", reason=reason)
            continue
        run_backend(registry[name], base, bench, write)
    bench.sampler.stop()
    sys.stderr.write(format_table(records) + "\n")
    failed = [r for r in records if r["status"] == "error" or r["ok"] is False]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
