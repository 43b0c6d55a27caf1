"""bench_hbm.py: sustained device-memory (HBM) bandwidth, the memory analogue of MAMF.

The guide scales the non-attention part of a training step, which is bandwidth-bound, by the
GPU table's HBM bandwidth ratio (H200 -> B200: 8.0 / 4.8 TB/s = 1.67x); mamf-finder.py
measures the matmul ceiling, this the bandwidth a GPU reaches: per op (copy: dst.copy_(src),
2 x the buffer moved; read: a sum of the buffer into one scalar; write: a fill) and buffer
size, decimal GB/s (1e9 B/s, the datasheets' unit) at the median call, and its share of the
GPU table's datasheet figure (null for a GPU the table lacks). Every default buffer is twice
any current GPU's last-level cache or more, so no cache is flushed between calls. Timing is
sustained, as training sees it: a first call, then WARMUP and ITERS calls (at least WARMUP_MS
and TIME_MS of them) back to back, a CUDA event pair around each, no idle gap between them;
median/min/max of the timed calls (upgrade_bench/kernels/timing.py). A line per point on
stderr says what it gave and the time left; the headline (each op's best, copy first) and a
table end the run. Without a GPU it times host memory on the CPU, for testing the script.

Writes JSON lines: a `header`, then one `hbm` record per size x op (status ok | oom | error:
a size that does not fit is an oom record). Exit 1 if a point errored (OOM is a result, not a
failure), 2 on bad input (the smallest size not fitting the device among it), 4 when a record
cannot be written (a full disk).

    python bench_hbm.py                                  # copy, read, write at 512 MiB .. 8 GiB
    OPS=copy SIZES_MIB="1024 4096" python bench_hbm.py
    SIZES_MIB="1 2" python bench_hbm.py                  # CPU, seconds
"""
import sys

from ... import faults, settings
from ...hardware import bandwidth, fingerprint, telemetry
from ..attention import bench as attn_bench
from . import bench as hbm
from .. import timing
from ...log import header
from ...faults import BadInput
from ...log.records import RecordWriter
from ...settings import Settings

SCRIPT = "bench_hbm.py"
VARS = [
    settings.Var("OPS", "str_list", list(bandwidth.OPS), "ops to time: copy (2 x the buffer moved), read, "
                 "write"),
    settings.Var("SIZES_MIB", "int_list", hbm.DEFAULT_SIZES_MIB, "MiB of each buffer (copy holds "
                 "two); a size that does not fit becomes an oom record", min=1, max=2**20),
    *timing.window_vars(hbm.TIMING_DEFAULTS, "the first call"),
    settings.OUTPUT,
    settings.Var("NOTES", "str", "", "free text copied into the header"),
]


def validate(s: Settings) -> None:
    """Cross-variable rules settings.Var cannot express; raises BadInput."""
    if not s.OPS or any(op not in bandwidth.OPS for op in s.OPS):
        raise BadInput(f"OPS={' '.join(s.OPS)!r}: expected a list of {'|'.join(bandwidth.OPS)}")


def main() -> int:
    s = settings.load(VARS, __doc__)
    validate(s)
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    capacity = attn_bench.memory_bytes(device)
    hbm.check_fits(s.SIZES_MIB, s.OPS, capacity)
    gpu_name = fingerprint.gpu_name()
    datasheet, row = bandwidth.datasheet_gb_per_s(gpu_name)
    source = f"table:{row}" if row else None
    warnings = []
    if device.type != "cuda":
        warnings.append("no GPU: CPU wall-clock timings, for testing the script only")
    if datasheet is None:
        what = f"{gpu_name!r}" if gpu_name else "this device (no GPU)"
        warnings.append(f"no HBM bandwidth in the GPU table for {what}: share_of_datasheet is null")
    writer = RecordWriter(SCRIPT, s.OUTPUT)
    writer.write("header", **header.fields(settings.as_dict(s), s.NOTES, warnings))
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    bench = hbm.HbmBench(s, device, capacity, datasheet, telemetry.RunSampler(device.index or 0))
    records = hbm.run_all(bench, writer, sys.stderr)
    sys.stderr.write(hbm.format_table(records) + "\n" + hbm.headline(records, datasheet, source) + "\n")
    return faults.EXIT_ERROR if any(r["status"] == "error" for r in records) else 0

