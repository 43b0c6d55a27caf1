"""Collectives' bytes and bandwidth as nccl-tests counts them (NVIDIA/nccl-tests,
doc/PERFORMANCE.md, and each op's *GetCollByteCount and *GetBw in src/), and their share of
the GPU table's link figure: pure arithmetic, which kernels/comm.py measures with and the
report reads.

A call's size S is its whole array, algbw = S / t for every op, and busbw = algbw x 2(n-1)/n
for all_reduce, x (n-1)/n for all_gather, reduce_scatter and all_to_all, a figure that does not
depend on the rank count and compares with one link direction's peak.
"""
from . import gpus
from ..numfmt import best_by

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
ALIGN_BYTES = 16  # nccl-tests' part per rank: (count/nranks) & ~(16/eltSize - 1) elements


def _check_op(op: str) -> None:
    if op not in OPS:
        raise ValueError(f"op {op!r}: not one of {'|'.join(OPS)}")


def part_bytes(op: str, size_bytes: int, ranks: int) -> int:
    """Each rank's part of a sharded op (all_gather's input, reduce_scatter's output,
    all_to_all's chunk for one peer): S / n rounded down to 16 bytes; all_reduce's whole S."""
    _check_op(op)
    if op == "all_reduce":
        return size_bytes
    return size_bytes // ranks // ALIGN_BYTES * ALIGN_BYTES


def op_bytes(op: str, size_bytes: int, ranks: int) -> int:
    """S, nccl-tests' size of one call asked to move `size_bytes`: all_reduce's buffer, the
    others' n parts (a little less than asked where n does not divide it)."""
    part = part_bytes(op, size_bytes, ranks)
    return part if op == "all_reduce" else part * ranks


def buffer_bytes(op: str, size_bytes: int, ranks: int) -> tuple[int, int]:
    """(input, output) bytes one rank holds: all_reduce works in place (no output)."""
    part, whole = part_bytes(op, size_bytes, ranks), op_bytes(op, size_bytes, ranks)
    return {"all_reduce": (whole, 0), "all_gather": (part, whole), "reduce_scatter": (whole, part),
            "all_to_all": (whole, whole)}[op]


def allocated_bytes(op: str, size_bytes: int, ranks: int) -> int:
    return sum(buffer_bytes(op, size_bytes, ranks))


def bus_factor(op: str, ranks: int) -> float:
    """busbw / algbw (nccl-tests, doc/PERFORMANCE.md): all_reduce moves each element 2(n-1)
    times over n links, the others (n-1) times."""
    _check_op(op)
    return (2 if op == "all_reduce" else 1) * (ranks - 1) / ranks


def algbw_gbps(size_bytes: int, ms: float) -> float | None:
    """nccl-tests' algbw: S over the time, decimal GB/s (1e9 B/s, as datasheets and nccl-tests
    count); None for no time."""
    return size_bytes / (ms / 1e3) / 1e9 if ms and ms > 0 else None


def busbw_gbps(op: str, algbw: float | None, ranks: int) -> float | None:
    return None if algbw is None else algbw * bus_factor(op, ranks)


def link_gbps(gpu_name: str | None) -> tuple[float | None, str | None]:
    """(the GPU table's link bandwidth in one direction, decimal GB/s; the row's name). The
    table holds the datasheets' duplex figures (H200's NVLink 4: 900 GB/s, 450 each way);
    busbw is one direction's rate, so it is compared with half ("compare the outcome against
    the advertised unidirectional peak": the Open Book's all_reduce_bench.py, and its
    network/README's NVLink table). (None, None) for a GPU without a link figure."""
    spec = gpus.lookup(gpu_name)
    return (spec.link_gbps / 2, spec.name) if spec and spec.link_gbps else (None, None)


def share_of_link(busbw: float | None, link: float | None) -> float | None:
    """busbw over the link's one-direction figure; None when either is unknown. Above 1 is
    possible where the switch reduces (NVLS), which the multicast settings turn off."""
    return busbw / link if busbw and link else None


def best_by_op(records: list) -> dict:
    """{op: the `ok` record of highest busbw}, in OPS order: the run's headline, and the
    report's row of a node."""
    return best_by(records, "busbw_gbps", OPS)
