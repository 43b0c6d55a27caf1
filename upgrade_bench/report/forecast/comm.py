"""The interconnect ratio's source for a forecast: bus bandwidth measured by bench_comm.py on
both GPUs (`comm` records), else none, and forecast_model.hardware_ratios takes the datasheets'
link ratio. Either way the ratio's source says which.
"""
import statistics

from . import model as forecast_model

# Only sizes on the bandwidth plateau: ZeRO's collectives move hundreds of MB a call (DeepSpeed's
# reduce_bucket_size and allgather_bucket_size default to 5e8 elements), and below 64 MiB a
# call's fixed latency still weighs (the Open Book's all_reduce_bench: 3-7% off nccl-tests at
# 1-16 MiB, within 2% above).
PLATEAU_BYTES = 64 * 2**20


def _busbw(gpu) -> dict:
    """{(op, ranks, size_bytes): median busbw} of a GPU's measured, successful comm records
    on the plateau."""
    found = {}
    for r, reference in gpu.comm:
        if (not reference and r.get("status", "ok") == "ok" and (r.get("busbw_gbps") or 0) > 0
                and (r.get("size_bytes") or 0) >= PLATEAU_BYTES):
            found.setdefault((r["op"], r.get("ranks"), r["size_bytes"]), []).append(r["busbw_gbps"])
    return {k: statistics.median(v) for k, v in found.items()}


def measured_comm(data, base: str, cand: str) -> forecast_model.Ratio | None:
    """The candidate/baseline ratio of bus bandwidth bench_comm.py measured on both GPUs
    (`data`: the report's series.Dataset), call for call (the same op, rank count and size,
    64 MiB and up): their median, the range their lowest and highest; None where the logs
    lack either side."""
    base_gpu, cand_gpu = data.gpus.get(base), data.gpus.get(cand)
    if base_gpu is None or cand_gpu is None:
        return None
    b, c = _busbw(base_gpu), _busbw(cand_gpu)
    common = sorted(b.keys() & c.keys(), key=str)
    if not common:
        return None
    ratios = [c[k] / b[k] for k in common]
    ops = ", ".join(dict.fromkeys(op for op, _, _ in common))
    ranks = "/".join(sorted({str(n) for _, n, _ in common}))
    return forecast_model.Ratio(statistics.median(ratios), min(ratios), max(ratios),
                                f"bus bandwidth measured here on both GPUs (bench_comm.py: {ops} on {ranks} "
                                f"ranks, {len(common)} op x size points of 64 MiB and up)")
