#!/usr/bin/env python3
"""mamf-finder.py: Maximum Achievable Matmul FLOPS (MAMF), the realistic ceiling, fast.

The code and --help: upgrade_bench/kernels/mamf/main.py."""
from upgrade_bench.faults import require

require("mamf-finder.py", "torch")  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.kernels.mamf.main import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_main(main))
