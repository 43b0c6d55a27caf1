#!/usr/bin/env python3
"""bench_decompose.py: one-clock step decomposition, attention vs GEMMs vs the rest.

The code and --help: upgrade_bench/training/decompose_main.py."""
from upgrade_bench.faults import TRAINING_STACK, require

require("bench_decompose.py", *TRAINING_STACK)  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.training import decompose_main, engine  # noqa: E402

if __name__ == "__main__":
    engine.leave(run_main(decompose_main.main))
