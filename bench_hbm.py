#!/usr/bin/env python3
"""bench_hbm.py: sustained device-memory (HBM) bandwidth, the memory analogue of MAMF.

The code and --help: upgrade_bench/kernels/hbm/main.py."""
from upgrade_bench.faults import require

require("bench_hbm.py", "torch")  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.kernels.hbm.main import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_main(main))
