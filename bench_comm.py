#!/usr/bin/env python3
"""bench_comm.py: the node's interconnect, measured under the collectives ZeRO and MoE run.

The code and --help: upgrade_bench/kernels/comm/main.py."""
from upgrade_bench.faults import run_main
from upgrade_bench.kernels.comm.main import main

if __name__ == "__main__":
    raise SystemExit(run_main(main))
