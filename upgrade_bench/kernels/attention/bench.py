"""bench_flash_attn.py's measurement: every backend's check, then each seq_len x pass timed
sustained, one `attention` record per outcome (an OOM or a kernel error is a record, never
a crash), and the table.

Timing as training sees it: a first call (FA4 JIT-compiles each configuration), then
WARMUP and ITERS calls back to back, a CUDA event pair around each and the cache flushed
before each, outside the pair (timing.time_iterations).
"""
import time
from dataclasses import dataclass, replace

from . import backends as attn_backends, kernels as attn_kernels, linear as linear_kernels
from .. import timing
from ... import faults
from ...models import flops
from ...hardware import fingerprint
from ...hardware import telemetry
from ...models.layers import LINEAR
from ...faults import BadInput
from ...numfmt import fmt_s, sig
from ...settings import Settings


PASSES = ("fwd", "bwd", "fwd_bwd")
# Which check errors each pass's `ok` covers.
CHECKED = {"fwd": ("out",), "bwd": ("dq", "dk", "dv"), "fwd_bwd": ("out", "dq", "dk", "dv")}
REPEAT_KV_NOTE = ("kernel refused enable_gqa: K/V heads repeated to the query heads before "
                  "the call, outside the timed region")
MASK_NOTE = ("packed as a block-diagonal mask: the kernel still does the full s^2 work; "
             "tflops counts the useful sum(len^2) work")
BAND_NOTE = ("window as a band mask: the kernel still does the full causal work; tflops counts "
             "the band's")
GVA_NOTE = ("q and k repeated from the key heads to the value heads before the call, outside "
            "the timed region, as transformers' Qwen3-Next layer does")


# A CPU run tests a script: its buffers take at most this share of the host's free memory, the
# rest left to the process's torch and to the host (bench_hbm.py's 8 GiB copy, 16.9 GB resident,
# had the OOM killer end a node run on a 24 GiB laptop).
CPU_SHARE = 0.5


def memory_bytes(device) -> int:
    """What the inputs must fit in: the GPU's memory; on CPU, CPU_SHARE of what the host (or
    its container) has free now, past which the kernel's OOM killer ends the run."""
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    return int(fingerprint.host_free_bytes() * CPU_SHARE)


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
class AttentionBench:
    """What every point of one run shares."""
    s: Settings                      # the settings
    dtype: object                # torch dtype of DTYPE
    device: object
    flush: timing.CacheFlusher
    peak: float | None           # dense peak TFLOPS of DTYPE, for mfu
    sampler: telemetry.RunSampler


def time_pass(forward, leaves, dout, pass_, b: AttentionBench) -> dict:
    before, timed = pass_calls(forward, leaves, dout, pass_)

    def untimed():  # before every call: the pass's own work, then the cache flush
        if before:
            before()
        b.flush()

    untimed()
    timed()  # a first call (the backward's FA4 JIT compile, say) is never timed
    s = b.s
    (times, method), gpu = b.sampler.during(lambda: timing.time_iterations(
        timed, b.device, s.ITERS, s.WARMUP, untimed, warmup_ms=s.WARMUP_MS,
        time_ms=s.TIME_MS))
    stats = timing.summarize(times)
    return {"ms": stats["median"], "ms_min": stats["min"], "ms_max": stats["max"],
            "iters": stats["n"], **method, **gpu}


def free_memory(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.empty_cache()


def run_check(backend, base: attn_kernels.AttentionShape, b: AttentionBench):
    """(gqa mode, Check), or the fields of the one record a backend gets when it cannot run."""
    try:
        if base.layer == LINEAR:
            return linear_kernels.check(backend, base, b.dtype, b.device, b.s.SEED)
        return attn_kernels.check_backend(backend, attn_kernels.check_shape(base), b.dtype, b.device,
                                          b.s.SEED)
    except attn_kernels.NoKernel as err:
        return {"status": "unavailable", "reason": f"torch has no {backend.name} kernel for these "
                f"inputs: {err}"}
    except Exception as err:
        fields = faults.point_status(err)
        return {"status": "error", "reason": f"correctness check failed: {fields['reason']}"}


def prepare(backend, shape, mode: str, b: AttentionBench):
    """(forward, leaves, dout) for timing `shape`, or failure fields (OOM at long seq_len)."""
    import torch

    problem = too_big(shape.input_bytes(b.dtype.itemsize), memory_bytes(b.device))
    if problem:  # not allocated: past a CPU's RAM that would be the OOM killer, not an error
        return {"status": "oom", "reason": problem}
    torch.manual_seed(b.s.SEED + shape.seq_len)
    try:
        if shape.layer == LINEAR:
            args, all_leaves = attn_kernels.Args(causal=True), linear_kernels.random_inputs(
                shape, b.dtype, b.device)
            leaves = all_leaves[:3]  # the gradients timed: q, k, v (g and beta's come along)
        else:
            args = attn_kernels.make_args(backend, shape, b.dtype, b.device, mode)
            all_leaves = leaves = attn_kernels.random_inputs(backend, shape, b.dtype, b.device, mode)
        forward = lambda: backend.run(*all_leaves, args)  # noqa: E731
        return forward, leaves, torch.randn_like(forward())  # dout strided like the real output
    except Exception as err:
        return faults.point_status(err)


def measure(inputs, shape, pass_, verdict: dict, check, b: AttentionBench) -> dict:
    """The fields of one point's record; never raises."""
    if pass_ != "fwd" and check.backward_error:
        return {**verdict, "status": "error",
                "reason": f"backward failed in the correctness check: {check.backward_error}"}
    try:
        measured = time_pass(*inputs, pass_, b)
    except Exception as err:
        return {**verdict, **faults.point_status(err)}
    work = shape.flops(pass_)
    achieved = flops.tflops(work, measured["ms"])
    return {**verdict, **measured, "tflop": work / 1e12, "tflops": achieved,
            "mfu": flops.peak_share(achieved, b.peak), "status": "ok", "reason": None}


# bench_flash_attn.py's default timing of a point. The call floors matter only at long
# lengths, where one call runs up to a second and the ms windows are met by a few calls (five
# timed calls still give a median there); the ms windows govern short lengths, where calls
# take milliseconds. With 10 timed and 3 warm-up calls the default run took 141 s on an H200,
# 67 s of it the six 128K points; with these, 96 s (results/h200-families-3/).
TIMING_DEFAULTS = {"ITERS": 5, "WARMUP": 1, "WARMUP_MS": 200.0, "TIME_MS": 500.0}


def floor_and_calls(s: Settings) -> tuple[float, int]:
    """(seconds, calls) every point costs whatever its kernel: the warm-up and timed windows'
    floors, and the first (JIT) call, WARMUP and ITERS calls."""
    return (s.WARMUP_MS + s.TIME_MS) / 1e3, 1 + s.WARMUP + s.ITERS


def points_s(work_flop: list, floor_s: float, calls: int, tflops: float) -> float:
    """Seconds the points of `work_flop` (FLOPs of one call each) take: each its floor (the
    warm-up and timed windows) and its calls at `tflops`; a None point (one known not to fit,
    recorded without running) takes none."""
    return sum(floor_s + calls * w / (tflops * 1e12) for w in work_flop if w is not None)


class Progress:
    """One stderr line per point: what ran, what it gave, and the time left. A point costs a
    fixed part (the warm-up and timed windows' floors, WARMUP_MS + TIME_MS) and its calls
    (the first, WARMUP and ITERS ones) at the kernel's speed; the speed is the best TFLOPS
    seen so far, so the estimate firms up as the long points arrive (bench_hbm counts bytes
    for FLOPs and TB/s for TFLOPS: the same arithmetic). On H200 (FA4, 128K) a
    FLOP-proportional estimate said 600 hours after the first 1K point."""

    def __init__(self, work: list, s: Settings, out):
        self.work, self.out = work, out
        self.floor_s, self.calls = floor_and_calls(s)
        self.n, self.best_tflops = 0, 0.0
        self.started = time.monotonic()

    def left_s(self) -> float | None:
        if not self.best_tflops:
            return None
        return points_s(self.work[self.n:], self.floor_s, self.calls, self.best_tflops)

    def point(self, text: str, tflops: float | None = None, points: int = 1) -> None:
        """A line for the next `points` points (bench_comm's: every op of one size)."""
        self.n += points
        self.best_tflops = max(self.best_tflops, tflops or 0.0)
        elapsed = time.monotonic() - self.started
        self.out.write(f"[{self.n}/{len(self.work)}] {text}  ({fmt_s(elapsed)} in, "
                       f"~{fmt_s(self.left_s())} left)\n")
        self.out.flush()


def point_text(layer: str, backend: str, seq_len: int, pass_: str, fields: dict) -> str:
    got = f"{sig(fields['tflops'])} TFLOPS, {sig(fields['ms'])} ms" if fields["status"] == "ok" else \
        fields["status"]
    return f"{layer} {backend} {pass_} {seq_len}: {got}"


def run_backend(backend, base: attn_kernels.AttentionShape, b: AttentionBench, write, progress):
    """The check, then every seq_len x pass of one backend on one layer shape; every outcome
    is a record."""
    s = b.s
    checked = run_check(backend, base, b)
    if isinstance(checked, dict):
        write(backend.name, base, None, **checked)
        for seq_len in s.SEQLENS:
            for pass_ in s.PASSES:
                progress.point(point_text(layer_label(base), backend.name, seq_len, pass_, checked))
        return
    mode, check = checked
    tol = attn_kernels.TOLERANCE[s.DTYPE]
    notes = [REPEAT_KV_NOTE if mode == "repeat_kv" else "", GVA_NOTE if mode == "gva" else "",
             MASK_NOTE if base.doc_len and backend.packed == "mask" else "",
             BAND_NOTE if base.window and backend.window == "mask" else ""]
    common = {"gqa": mode, "tol": tol, "note": "; ".join(n for n in notes if n) or None}
    for seq_len in s.SEQLENS:
        shape = replace(base, seq_len=seq_len)
        inputs = prepare(backend, shape, mode, b)
        for pass_ in s.PASSES:
            names = CHECKED[pass_] if pass_ == "fwd" or not check.backward_error else ("out",)
            verdict = attn_kernels.judge(check.errors, names, tol)
            fields = {**verdict, **inputs} if isinstance(inputs, dict) else measure(
                inputs, shape, pass_, verdict, check, b)
            write(backend.name, shape, pass_, **common, **fields)
            progress.point(point_text(layer_label(shape), backend.name, seq_len, pass_, fields),
                           fields.get("tflops"))
            free_memory(b.device)  # after an OOM, and so the next point starts from a clean cache
        del inputs
        free_memory(b.device)


def layer_label(shape: attn_kernels.AttentionShape) -> str:
    """sliding_attention(w=128, sinks) and the like: a layer shape in a word."""
    extra = [f"w={shape.window}"] if shape.window else []
    extra += ["sinks"] if shape.sinks else []
    if shape.v_head_dim and shape.v_head_dim != shape.head_dim:
        extra.append(f"qk {shape.head_dim}, v {shape.v_head_dim}")
    return shape.layer + (f"({', '.join(extra)})" if extra else "")


def format_table(records: list) -> str:
    """backend x pass rows, seq_len columns, TFLOPS (or the status) in each cell."""
    points = [r for r in records if r.get("pass")]
    seq_lens = sorted({r["seq_len"] for r in points})
    rows = {}
    for r in points:
        cell = sig(r["tflops"]) if r["status"] == "ok" else r["status"]
        if r["status"] == "ok" and not r["ok"]:
            cell += "!"
        rows.setdefault((_layer(r), r["backend"], r["pass"]), {})[r["seq_len"]] = cell
    layered = any(r.get("layer") for r in records)
    head = ["layer"] * layered + ["backend", "pass"] + [f"{n // 1024}K" if n % 1024 == 0 else str(n)
                                                       for n in seq_lens]
    lines = [head] + [[layer] * layered + [b, p] + [cells.get(n, "-") for n in seq_lens]
                      for (layer, b, p), cells in rows.items()]
    for r in records:
        if not r.get("pass"):
            lines.append([_layer(r)] * layered + [r["backend"], r["status"]] + [""] * len(seq_lens))
    names = 2 + layered  # the left-aligned columns
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(c.rjust(w) if i >= names else c.ljust(w) for i, (c, w) in enumerate(zip(line, widths)))
            for line in lines]
    return "\n".join(["TFLOPS (! = failed the correctness check)"] + text + [
        f"{_layer(r) + ' ' if layered else ''}{r['backend']}: {r['reason']}" for r in records
        if not r.get("pass") and r.get("reason")])


def _layer(r: dict) -> str:
    """A record's layer label (layer_label of its fields), '' for records without one."""
    if not r.get("layer"):
        return ""
    return layer_label(attn_kernels.AttentionShape(
        1, 1, 1, 1, r.get("head_dim") or 0, True, window=r.get("window") or 0, sinks=bool(r.get("sinks")),
        v_head_dim=r.get("v_head_dim") or 0, layer=r["layer"]))


def run_all(bench: AttentionBench, plan: list, writer, out) -> list[dict]:
    """Every layer shape of `plan` [(AttentionShape, [(backend, reason it cannot run or
    None)])], each outcome an `attention` record written by `writer`, a progress line per point
    on `out`; returns the records."""
    records = []

    def write(backend, shape, pass_, **fields):
        """One `attention` record; fields a point did not reach are null."""
        for key in ("ms", "ms_min", "ms_max", "iters", "tflops", "mfu", "ok", "max_abs_err"):
            fields.setdefault(key, None)
        records.append(writer.write(
            "attention", backend=backend, seq_len=shape.seq_len if pass_ else None, **{"pass": pass_},
            layer=shape.layer, batch=shape.batch, heads=shape.heads, kv_heads=shape.kv_heads,
            head_dim=shape.head_dim, v_head_dim=shape.v_dim, window=shape.window, sinks=shape.sinks,
            causal=shape.causal, dtype=bench.s.DTYPE, packed_doc_len=shape.doc_len, **fields))

    s = bench.s
    progress = Progress([replace(base, seq_len=n).flops(p) for base, chosen in plan
                         for name, reason in chosen if not reason
                         for n in s.SEQLENS for p in s.PASSES], s, out)
    bench.sampler.start()
    for base, chosen in plan:
        for name, reason in chosen:
            if reason:
                write(name, base, None, status="unavailable", reason=reason)
                continue
            registry = linear_kernels.KERNELS if base.layer == LINEAR else attn_backends.KERNELS
            run_backend(registry[name], base, bench, write, progress)
    bench.sampler.stop()
    return records
