#!/usr/bin/env python3
"""A yardstick for bench_hbm.py: device-memory bandwidth timed by triton's do_bench.

The same three ops on float32 buffers of SIZES_MIB MiB each (copy: `dst.copy_(src)`, read: a
sum of the buffer, write: `fill_`), timed with `triton.testing.do_bench` (CUDA events, a
256 MiB cache flush between calls, the median of its window), independently of the suite's
timing code, so the two can run side by side on one GPU. Bytes moved follow STREAM's
convention (copy 2 x the buffer, read and write 1 x); decimal GB/s, as datasheets count.

    SIZES_MIB="512 2048 8192" python tools/hbm_do_bench.py   # a JSON line per op x size
"""
import json
import sys

from upgrade_bench import settings
from upgrade_bench.faults import run_main

VARS = [settings.Var("SIZES_MIB", "int_list", [512, 2048, 8192], "MiB of each buffer", min=1, max=2**20)]


def main() -> int:
    s = settings.load(VARS, __doc__)
    import torch
    from triton.testing import do_bench

    for mib in s.SIZES_MIB:
        src = torch.empty(mib * 2**20 // 4, dtype=torch.float32, device="cuda").uniform_()
        dst = torch.empty_like(src)
        ops = {"copy": (lambda: dst.copy_(src), 2), "read": (lambda: src.sum(), 1),
               "write": (lambda: dst.fill_(1.0), 1)}
        for op, (fn, passes) in ops.items():
            ms = do_bench(fn, warmup=500, rep=1000, return_mode="median")
            print(json.dumps({"tool": "hbm_do_bench", "op": op, "buffer_mib": mib, "ms": ms,
                              "gb_per_s": passes * mib * 2**20 / (ms / 1e3) / 1e9}), flush=True)
        del src, dst
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
