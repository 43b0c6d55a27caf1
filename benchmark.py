#!/usr/bin/env python3
"""benchmark.py: one point (or several) of the guide's sequence-length sweep.

The code and --help: upgrade_bench/training/benchmark_main.py."""
from upgrade_bench.faults import TRAINING_STACK, require

require("benchmark.py", *TRAINING_STACK)  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.training import benchmark_main, engine  # noqa: E402

if __name__ == "__main__":
    engine.leave(run_main(benchmark_main.main))
