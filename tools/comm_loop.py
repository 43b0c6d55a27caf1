#!/usr/bin/env python3
"""A yardstick for bench_comm.py: a plain torch.distributed loop, timed with CUDA events.

The same four collectives on float32 buffers of SIZES_MIB MiB each, timed the way nccl-tests
times them and independently of the suite's timing code, so the two can run side by side on
one machine: WARMUP calls, then one CUDA event pair around ITERS calls queued back to back (the
mean call; nccl-tests' defaults -w 5 -n 20), the ranks' times averaged (nccl-tests' -a 1).
Bytes and bus bandwidth by nccl-tests' doc/PERFORMANCE.md: S is all_reduce's buffer,
all_gather's output, reduce_scatter's input, all_to_all's send buffer; algbw = S / t;
busbw = algbw x 2(n-1)/n for all_reduce, x (n-1)/n for the others; decimal GB/s. NVLink
multicast off, as bench_comm.py has it (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1 where unset). Without a GPU, gloo and the host clock (to test the tool).

    SIZES_MIB="64 1024 4096" torchrun --nproc_per_node=8 tools/comm_loop.py   # a JSON line per op x size
"""
import json
import os
import sys
import time

from upgrade_bench import settings
from upgrade_bench.faults import run_main

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
VARS = [settings.Var("SIZES_MIB", "int_list", [1, 4, 16, 64, 256, 1024, 4096], "MiB of each call (nccl-tests' S)",
                     min=1, max=2**20),
        settings.Var("WARMUP", "int", 5, "untimed calls", min=0, max=100_000),
        settings.Var("ITERS", "int", 20, "timed calls, back to back", min=1, max=100_000)]


def nccl_tests_bytes(op: str, size_bytes: int, ranks: int) -> tuple[int, int, int]:
    """(S, input bytes, output bytes) of one rank: nccl-tests' counts (each rank's part of the
    sharded ops rounded down to 16 bytes, as its *GetCollByteCount do)."""
    if op == "all_reduce":
        return size_bytes, size_bytes, 0  # in place
    part = size_bytes // ranks // 16 * 16
    whole = part * ranks
    return whole, *{"all_gather": (part, whole), "reduce_scatter": (whole, part), "all_to_all": (whole, whole)}[op]


def bus_bandwidth(op: str, algbw: float, ranks: int) -> float:
    return algbw * (2 if op == "all_reduce" else 1) * (ranks - 1) / ranks


def main() -> int:
    s = settings.load(VARS, __doc__)
    for key, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                       ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(key, value)
    import torch
    import torch.distributed as dist

    gpu = torch.cuda.is_available()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if gpu else "gloo")
    ranks = dist.get_world_size()
    calls = {"all_reduce": lambda out, inp: dist.all_reduce(inp), "all_gather": dist.all_gather_single,
             "reduce_scatter": dist.reduce_scatter_single, "all_to_all": dist.all_to_all_single}
    for mib in s.SIZES_MIB:
        for op in OPS:
            size, inp_bytes, out_bytes = nccl_tests_bytes(op, mib * 2**20, ranks)
            inp = torch.rand(inp_bytes // 4, device=device)
            out = torch.empty(out_bytes // 4, device=device)
            for _ in range(s.WARMUP):
                calls[op](out, inp)
            if gpu:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(s.ITERS):
                    calls[op](out, inp)
                end.record()
                torch.cuda.synchronize()
                ms = start.elapsed_time(end) / s.ITERS
            else:
                t0 = time.perf_counter()
                for _ in range(s.ITERS):
                    calls[op](out, inp)
                ms = (time.perf_counter() - t0) * 1e3 / s.ITERS
            mean = torch.tensor([ms], dtype=torch.float64, device=device)
            dist.all_reduce(mean)
            ms = mean.item() / ranks
            algbw = size / (ms / 1e3) / 1e9
            if dist.get_rank() == 0:
                print(json.dumps({"tool": "comm_loop", "op": op, "size_mib": mib, "size_bytes": size, "ranks": ranks,
                                  "ms": ms, "algbw_gbps": algbw, "busbw_gbps": bus_bandwidth(op, algbw, ranks)}),
                      flush=True)
            del inp, out
            if gpu:
                torch.cuda.empty_cache()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
