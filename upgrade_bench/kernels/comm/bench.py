"""bench_comm.py's measurement: the node's interconnect under the collectives ZeRO and MoE run
(the formulas that turn a call's time into nccl-tests' algorithm and bus bandwidth and a share
of the GPU table's link figure are hardware/collectives.py's, which the report reads too).

    all_reduce      dist.all_reduce(buf)                   ZeRO-1/2's gradients, in place
    all_gather      dist.all_gather_single(out, part)      ZeRO-3's parameters before a layer
    reduce_scatter  dist.reduce_scatter_single(part, buf)  ZeRO-2/3's gradient shards
    all_to_all      dist.all_to_all_single(out, buf)       MoE's tokens to and from their experts

Bytes and bandwidth as nccl-tests counts them (NVIDIA/nccl-tests, doc/PERFORMANCE.md, and each
op's *GetCollByteCount and *GetBw in src/): a call's size S is its whole array, algbw = S / t
for every op, and busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for all_gather,
reduce_scatter and all_to_all, a figure that does not depend on the rank count and compares
with one link direction's peak. S is all_reduce's buffer; all_gather's gathered output (n x
each rank's input), reduce_scatter's input (n x each rank's output), all_to_all's send buffer
on each rank (n x the part for each peer); each rank's part rounded down to 16 bytes, as
nccl-tests does. A call's time is its median over the timed calls of the mean over ranks,
call by call (nccl-tests' default `-a 1` averages the ranks' times).

Timing is the suite's (kernels/timing.time_iterations): a first call, then WARMUP and ITERS
calls (at least WARMUP_MS and TIME_MS of them) queued back to back, a CUDA event pair around
each; every rank runs the same calls (the counts are agreed before they are set: a rank that
ran one call more would wait forever for the others). NCCL on GPUs, gloo on CPU ranks.
"""
from dataclasses import dataclass

from ... import faults
from ..attention import bench as attn_bench
from .. import timing
from ...hardware import telemetry
from ...hardware.collectives import OPS, algbw_gbps, allocated_bytes, best_by_op, buffer_bytes, busbw_gbps, link_gbps, op_bytes, part_bytes, share_of_link
from ...numfmt import grid, pct, sig

MIB = 2**20
# float32: nccl-tests' default (-d float) and the Open Book's all_reduce_bench.py; a link
# carries bytes, so the element type changes only a reduction's arithmetic.
ELEMENT_BYTES = 4
# 1 MiB (latency still shows) to 4 GiB (ZeRO's buckets are hundreds of MB: DeepSpeed's
# reduce_bucket_size and allgather_bucket_size default to 5e8 elements), a step of 4x.
DEFAULT_SIZES_MIB = [1, 4, 16, 64, 256, 1024, 4096]
# 4 GiB all_reduce on 8 H200 at nccl-tests' ~370 GB/s busbw (no NVLS) takes 20 ms a call: the
# ms windows govern, and a second of timed calls per point is sustained, as in bench_hbm.py.
TIMING_DEFAULTS = {"ITERS": 10, "WARMUP": 3, "WARMUP_MS": 500.0, "TIME_MS": 1000.0}
# NVLink multicast (NVLS, NVSwitch SHARP; symmetric memory's and NVSHMEM's multicast objects)
# off unless the user set them: on a shared host a multicast object can break other tenants'
# GPUs. nccl-tests' H200 figures without NVLS (~370 GB/s) are then the ones to compare with.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def multicast_env(environ) -> tuple[dict, list]:
    """Sets MULTICAST_OFF's variables the user left unset in `environ`, before any process
    group exists; ({NCCL_* and multicast variables as the collectives will see them},
    [a warning for each multicast switch the user turned on])."""
    for key, value in MULTICAST_OFF.items():
        environ.setdefault(key, value)
    warnings = [f"{key}={environ[key]} as set: NVLink multicast may run (busbw above the link's rate, "
                f"and on a shared host a risk to other GPUs); {value} turns it off"
                for key, value in MULTICAST_OFF.items() if environ[key] != value]
    seen = {k: v for k, v in environ.items() if k.startswith("NCCL_") or k in MULTICAST_OFF}
    return dict(sorted(seen.items())), warnings


@dataclass
class CommBench:
    """What every point of one run shares."""
    s: dict                     # the settings
    device: object
    ranks: int
    capacity_bytes: int         # what one rank's buffers must fit in
    link: float | None          # the GPU table's link, one direction, decimal GB/s
    sampler: telemetry.RunSampler


def over_ranks(values: list, device, op: str) -> list:
    """`values` reduced element by element over the ranks: "max" or "mean"; a collective."""
    import torch
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
    return [v / (1 if op == "max" else dist.get_world_size()) for v in t.tolist()]


def make_call(op: str, size_bytes: int, ranks: int, device):
    """The call of `op` on fresh float32 buffers, the input random (training's data, not a
    constant); all_reduce sums in place, as ZeRO's gradient all-reduce: the values grow to inf
    within a few hundred calls, which changes nothing a link carries."""
    import torch
    import torch.distributed as dist

    inp, out = (n // ELEMENT_BYTES for n in buffer_bytes(op, size_bytes, ranks))
    src = torch.empty(inp, dtype=torch.float32, device=device).uniform_()
    if op == "all_reduce":
        return lambda: dist.all_reduce(src)
    dst = torch.empty(out, dtype=torch.float32, device=device)
    if op == "all_gather":
        return lambda: dist.all_gather_single(dst, src)
    if op == "reduce_scatter":
        return lambda: dist.reduce_scatter_single(dst, src)
    return lambda: dist.all_to_all_single(dst, src)


# A point's status on every rank, agreed by the worst: a rank that could not allocate must
# keep the others out of a collective it will never join.
STATUS_CODES = ("ok", "oom", "error")


def point_fields(op: str, size_mib: int, b: CommBench) -> dict:
    """What a point's record says whatever came of it."""
    return {"op": op, "size_mib": size_mib, "size_bytes": op_bytes(op, size_mib * MIB, b.ranks), "ranks": b.ranks,
            "link_gbps": b.link}


def measure(op: str, size_mib: int, b: CommBench) -> dict:
    """The fields of one point's record, the same on every rank; a collective. A size that
    cannot fit is `oom` without allocating (past a CPU's RAM that would be the OOM killer); a
    size that does not fit or fails to allocate on any rank makes the point `oom` or `error`
    on all. A collective that raises is not caught here (run_all)."""
    asked = size_mib * MIB
    fields = point_fields(op, size_mib, b)
    problem = attn_bench.too_big(allocated_bytes(op, asked, b.ranks), b.capacity_bytes)
    call, local = None, {"status": "oom" if problem else "ok", "reason": problem}
    if not problem:
        try:
            call = make_call(op, asked, b.ranks, b.device)
        except Exception as err:
            local = faults.point_status(err)
    worst = STATUS_CODES[int(over_ranks([STATUS_CODES.index(local["status"])], b.device, "max")[0])]
    if worst != "ok":
        call = None
        attn_bench.free_memory(b.device)
        return {**fields, "status": worst, "reason": local["reason"] or f"{worst} on another rank"}
    s = b.s
    try:
        call()  # the first call (NCCL's connections, a lazy kernel load) is never timed
        (times, method), gpu = b.sampler.during(lambda: timing.time_iterations(
            call, b.device, s.ITERS, s.WARMUP, warmup_ms=s.WARMUP_MS, time_ms=s.TIME_MS,
            agree=lambda values: over_ranks(values, b.device, "max")))
    finally:
        call = None  # the buffers go before the next point allocates its own
        attn_bench.free_memory(b.device)
    stats = timing.summarize(over_ranks(times, b.device, "mean"))
    alg = algbw_gbps(fields["size_bytes"], stats["median"])
    bus = busbw_gbps(op, alg, b.ranks)
    return {**fields, "status": "ok", "reason": None, "ms": stats["median"], "ms_min": stats["min"],
            "ms_max": stats["max"], "iters": stats["n"], "algbw_gbps": alg, "busbw_gbps": bus,
            "share_of_link": share_of_link(bus, b.link), **method, **gpu}


# The fields of a point that ran; a point that did not (oom, error) has them null.
MEASURED = ("ms", "ms_min", "ms_max", "iters", "algbw_gbps", "busbw_gbps", "share_of_link")


def size_text(size_mib: int, records: list) -> str:
    """A size's progress line: each op's busbw in GB/s, or its status."""
    return f"{size_mib} MiB: busbw " + ", ".join(
        f"{r['op']} {sig(r['busbw_gbps']) if r['status'] == 'ok' else r['status']}" for r in records) + " GB/s"


def run_all(b: CommBench, write, out) -> list[dict]:
    """Every size x op of the settings, each a `comm` record passed to `write`, a progress
    line per size on `out` (attn_bench.Progress with bytes for FLOPs: its speed is the best
    algbw so far; a size too big to allocate costs no time); returns the records. A collective
    that raises is an `error` record and the last: the ranks may no longer run the same calls.
    Ctrl-C or SIGTERM (interrupts.Interrupted) ends it between two collectives."""
    s = b.s
    points = [(op, mib) for mib in s.SIZES_MIB for op in s.OPS]
    work = [None if attn_bench.too_big(allocated_bytes(op, mib * MIB, b.ranks), b.capacity_bytes)
            else op_bytes(op, mib * MIB, b.ranks) for op, mib in points]
    progress = attn_bench.Progress(work, s, out)
    records = []
    b.sampler.start()
    failed = False
    try:
        for mib in s.SIZES_MIB:
            done = []
            for op in s.OPS:
                try:
                    fields = measure(op, mib, b)
                except Exception as err:  # in a collective: nothing after it can be trusted to match
                    fields, failed = {**point_fields(op, mib, b), **faults.point_status(err)}, True
                done.append(write("comm", **{**point_fields(op, mib, b), **dict.fromkeys(MEASURED), **fields}))
                if failed:
                    break
            records += done
            best = max((r["algbw_gbps"] or 0.0 for r in done), default=0.0)
            progress.point(size_text(mib, done), best / 1e3, points=len(done))
            if failed:
                break
    finally:
        b.sampler.stop()
    return records


def format_table(records: list) -> str:
    """op rows, size columns, busbw GB/s at the median call (or the status) in each cell."""
    cells = {(r["op"], f"{r['size_mib']} MiB"): sig(r["busbw_gbps"]) if r["status"] == "ok" else r["status"]
             for r in records}
    return grid("busbw GB/s (decimal, nccl-tests' convention) at the median call", "op",
                [op for op in OPS if any(r["op"] == op for r in records)],
                list(dict.fromkeys(f"{r['size_mib']} MiB" for r in records)),
                lambda op, size: cells.get((op, size), "-"), 15, 11)


def headline(records: list, link: float | None, source: str | None) -> str:
    """Per op the best busbw, its size and its share of the link's one-direction figure (none
    without a link: the run's warning says why)."""
    lines = []
    for op, r in best_by_op(records).items():
        share = f", {pct(r['share_of_link'])} of the {sig(link)} GB/s link per direction ({source})" if link else ""
        lines.append(f"best {op}: busbw {sig(r['busbw_gbps'])} GB/s at {r['size_mib']} MiB on {r['ranks']} "
                     f"ranks{share}")
    return "\n".join(lines) or "no point was measured"
