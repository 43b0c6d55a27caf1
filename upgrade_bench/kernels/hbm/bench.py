"""bench_hbm.py's measurement: sustained device-memory (HBM) bandwidth, the memory analogue of
MAMF, and the formulas that turn a call's time into decimal GB/s and a share of the datasheet.

The guide scales the non-attention part of a training step, which is bandwidth-bound, by the
HBM bandwidth ratio of the GPU table (H200 -> B200: 8.0 / 4.8 TB/s = 1.67x); this measures
what a GPU reaches of its table figure. Three ops, each on buffers of SIZES_MIB:

    copy   dst.copy_(src)                 reads the source, writes the destination
    read   torch.sum(buf, dim=0, out=acc) reads the buffer once into one scalar
    write  buf.fill_(1.0)                 writes the buffer once

Timing as training sees it (timing.time_iterations): a first call, then WARMUP and ITERS calls
(at least WARMUP_MS and TIME_MS of them) queued back to back, a CUDA event pair around each,
nothing between them. No cache flush: every default buffer is larger than any current GPU's
last-level cache (see DEFAULT_SIZES_MIB), so a call's own traffic evicts what the one before
it left; a flush would change nothing a call finds in the cache and would only put 256 MiB of
other traffic between the calls training runs back to back.
"""
from dataclasses import dataclass

from ..attention import bench as attn_bench
from .. import timing
from ... import faults
from ...hardware import telemetry
from ...hardware.bandwidth import OPS, best_by_op, datasheet_gb_per_s, gb_per_s, share_of_datasheet
from ...numfmt import grid, pct, sig

MIB = 2**20
# float32 elements: torch's reduction and fill kernels load and store them vectorised. The
# buffers hold random floats, as training's data: constant data toggles fewer bits and draws
# less power (mamf_bench's reason for random operands); `write` cannot help writing a constant.
ELEMENT_BYTES = 4
# Each at least twice the largest last-level cache of current GPUs (H100 50 MB of L2, B200
# 126 MB, MI300X 256 MB of Infinity Cache; 512 MiB is 537 MB), so no call is served from a
# cache; three sizes show the bandwidth is flat beyond it. `copy` at 8 GiB holds 16 GiB.
DEFAULT_SIZES_MIB = [512, 2048, 8192]
# A call takes 0.07-4 ms at datasheet rates (512 MiB read at 8 TB/s; the 8 GiB copy's 16 GiB
# at 4.8 TB/s), so the ms windows govern and the counts are floors: a second of timed calls per
# point is sustained, not a burst, and the 9 default points take 14 s of windows.
TIMING_DEFAULTS = {"ITERS": 10, "WARMUP": 3, "WARMUP_MS": 500.0, "TIME_MS": 1000.0}


def bytes_moved(op: str, buffer_bytes: int) -> int:
    """Bytes one call of `op` must move to or from device memory, the STREAM convention
    (McCalpin): `copy` reads its source and writes its destination, 2 x the buffer; `read`
    reads the buffer once (its one-scalar result is nothing); `write` writes it once. Traffic
    a cache adds on its own account (a CPU's write-allocate reads) is not counted."""
    if op not in OPS:
        raise ValueError(f"op {op!r}: not one of {'|'.join(OPS)}")
    return 2 * buffer_bytes if op == "copy" else buffer_bytes


def allocated_bytes(op: str, buffer_bytes: int) -> int:
    """Device memory one point holds: `copy` a source and a destination, the others one buffer."""
    return 2 * buffer_bytes if op == "copy" else buffer_bytes


def check_fits(sizes_mib: list, ops: list, capacity_bytes: int) -> None:
    """BadInput unless the smallest size fits in `capacity_bytes` for every op asked (a
    larger size that does not is an `oom` record)."""
    smallest = min(sizes_mib)
    problem = attn_bench.too_big(max(allocated_bytes(op, smallest * MIB) for op in ops), capacity_bytes)
    if problem:
        raise faults.BadInput(f"SIZES_MIB={smallest}: {problem}")


def make_call(op: str, buffer_bytes: int, device):
    """The call of `op` on fresh buffers of `buffer_bytes` each, filled with random data."""
    import torch

    src = torch.empty(buffer_bytes // ELEMENT_BYTES, dtype=torch.float32, device=device).uniform_()
    if op == "copy":
        dst = torch.empty_like(src)
        return lambda: dst.copy_(src)
    if op == "read":
        acc = torch.empty((), dtype=torch.float32, device=device)
        return lambda: torch.sum(src, dim=0, out=acc)
    return lambda: src.fill_(1.0)


@dataclass
class HbmBench:
    """What every point of one run shares."""
    s: dict                     # the settings
    device: object
    capacity_bytes: int         # what the buffers must fit in (attn_bench.memory_bytes)
    datasheet: float | None     # the GPU table's bandwidth, decimal GB/s
    sampler: telemetry.RunSampler


def measure(op: str, buffer_mib: int, b: HbmBench) -> dict:
    """The fields of one point's record; never raises: a size that cannot fit is `oom`
    without allocating, an op that raises is `oom` or `error`."""
    buffer_bytes = buffer_mib * MIB
    moved = bytes_moved(op, buffer_bytes)
    fields = {"op": op, "buffer_mib": buffer_mib, "bytes_moved": moved, "datasheet_gb_per_s": b.datasheet}
    problem = attn_bench.too_big(allocated_bytes(op, buffer_bytes), b.capacity_bytes)
    if problem:  # not allocated: past a CPU's RAM that would be the OOM killer, not an error
        return {**fields, "status": "oom", "reason": problem}
    s = b.s
    try:
        call = make_call(op, buffer_bytes, b.device)
        call()  # the first call (the allocator, a lazy kernel load) is never timed
        (times, method), gpu = b.sampler.during(lambda: timing.time_iterations(
            call, b.device, s.ITERS, s.WARMUP, warmup_ms=s.WARMUP_MS, time_ms=s.TIME_MS))
    except Exception as err:
        return {**fields, **faults.point_status(err)}
    finally:
        call = None  # the buffers go before the next point allocates its own
        attn_bench.free_memory(b.device)
    stats = timing.summarize(times)
    rate = gb_per_s(moved, stats["median"])
    return {**fields, "status": "ok", "reason": None, "ms": stats["median"], "ms_min": stats["min"],
            "ms_max": stats["max"], "iters": stats["n"], "gb_per_s": rate,
            "share_of_datasheet": share_of_datasheet(rate, b.datasheet), **method, **gpu}


# The fields of a point that ran; a point that did not (oom, error) has them null.
MEASURED = ("ms", "ms_min", "ms_max", "iters", "gb_per_s", "share_of_datasheet")


def point_text(fields: dict) -> str:
    got = f"{sig(fields['gb_per_s'])} GB/s, {sig(fields['ms'])} ms" if fields["status"] == "ok" else \
        f"{fields['status']} ({fields['reason']})"
    return f"{fields['op']} {fields['buffer_mib']} MiB: {got}"


def run_all(b: HbmBench, writer, out) -> list[dict]:
    """Every size x op of the settings, each an `hbm` record written by `writer`, a progress
    line per point on `out` (attn_bench.Progress with bytes for FLOPs: its speed is the best
    TB/s so far; a point too big to allocate costs no time); returns the records."""
    s = b.s
    points = [(op, mib) for mib in s.SIZES_MIB for op in s.OPS]
    fits = [not attn_bench.too_big(allocated_bytes(op, mib * MIB), b.capacity_bytes) for op, mib in points]
    progress = attn_bench.Progress([bytes_moved(op, mib * MIB) if fit else None
                                    for (op, mib), fit in zip(points, fits)], s, out)
    records = []
    b.sampler.start()
    for op, mib in points:
        fields = {**dict.fromkeys(MEASURED), **measure(op, mib, b)}  # what a point did not reach is null
        records.append(writer.write("hbm", **fields))
        progress.point(point_text(fields), (fields.get("gb_per_s") or 0.0) / 1e3)
    b.sampler.stop()
    return records


def format_table(records: list) -> str:
    """op rows, buffer-size columns, GB/s at the median call (or the status) in each cell."""
    cells = {(r["op"], f"{r['buffer_mib']} MiB"): sig(r["gb_per_s"]) if r["status"] == "ok" else r["status"]
             for r in records}
    return grid("GB/s (decimal) at the median call", "op", [op for op in OPS if any(r["op"] == op for r in records)],
                list(dict.fromkeys(f"{r['buffer_mib']} MiB" for r in records)),
                lambda op, size: cells.get((op, size), "-"), 6, 12)


def headline(records: list, datasheet: float | None, source: str | None) -> str:
    """Per op the best GB/s, its size and its share of the datasheet figure, copy first."""
    best = best_by_op(records)
    if not best:
        return "no point was measured"
    lines = [f"best {op}: {sig(r['gb_per_s'])} GB/s at {r['buffer_mib']} MiB"
             + (f", {pct(r['share_of_datasheet'])} of the {sig(datasheet)} GB/s datasheet ({source})"
                if datasheet else "") for op, r in best.items()]
    return "\n".join(lines + ([] if datasheet else ["share of the datasheet: null (no HBM bandwidth in "
                                                    "the GPU table for this device)"]))
