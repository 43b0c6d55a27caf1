"""Memory bandwidth figures as records and the report read them: decimal GB/s, the GPU table's
datasheet figure and a measurement's share of it, a run's best per op (kernels/hbm.py
measures; report/page/details.py shows)."""
from . import gpus

OPS = ("copy", "read", "write")  # bench_hbm.py's: a STREAM-like copy, a read (sum), a write (fill)


def gb_per_s(nbytes: int, ms: float) -> float | None:
    """Decimal GB/s (1e9 bytes a second) of `nbytes` moved in `ms` milliseconds; None for no
    time. Decimal because datasheets quote decimal TB/s (the H200's 4.8 TB/s is 4.8e12 B/s):
    a share of the datasheet figure needs its unit, and GiB/s would read 7% low."""
    return nbytes / (ms / 1e3) / 1e9 if ms and ms > 0 else None


def datasheet_gb_per_s(gpu_name: str | None) -> tuple[float | None, str | None]:
    """(the GPU table's HBM bandwidth in decimal GB/s, the row's name); (None, None) for a
    device the table lacks: never another card's figure."""
    spec = gpus.lookup(gpu_name)
    return (spec.hbm_tbps * 1e3, spec.name) if spec else (None, None)


def share_of_datasheet(measured_gb_per_s: float | None, datasheet: float | None) -> float | None:
    """Measured over datasheet bandwidth; None when either is unknown."""
    return measured_gb_per_s / datasheet if measured_gb_per_s and datasheet else None


def best_by_op(records: list) -> dict:
    """{op: the `ok` record of highest gb_per_s}, in OPS order: the run's headline, and the
    report's row of a GPU."""
    best = {}
    for r in records:
        if r.get("status", "ok") == "ok" and r.get("gb_per_s") is not None and (
                r["op"] not in best or r["gb_per_s"] > best[r["op"]]["gb_per_s"]):
            best[r["op"]] = r
    return {op: best[op] for op in OPS if op in best}
