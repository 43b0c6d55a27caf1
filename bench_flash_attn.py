#!/usr/bin/env python3
"""bench_flash_attn.py: isolated attention kernels of a model's own layers, fwd / bwd / fwd+bwd TFLOPS.

The code and --help: upgrade_bench/kernels/attention/main.py."""
from upgrade_bench.faults import require

require("bench_flash_attn.py", "torch", "transformers")  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.kernels.attention.main import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_main(main))
