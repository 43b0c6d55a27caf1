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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from upgrade_bench.faults import BadInput, run_main  # noqa: E402


def main() -> int:
    text = os.environ.get("SIZES_MIB", "512 2048 8192")
    sizes = [int(n) for n in text.split() if n.isdigit() and int(n) > 0]
    if not sizes or len(sizes) != len(text.split()):
        raise BadInput(f"SIZES_MIB={text!r}: expected whole numbers > 0")
    import torch
    from triton.testing import do_bench

    for mib in sizes:
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
