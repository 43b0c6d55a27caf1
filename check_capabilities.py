#!/usr/bin/env python3
"""check_capabilities.py: can this GPU, with this software stack, do X? (the guide's first question)

The code and --help: upgrade_bench/capability/main.py."""
from upgrade_bench.faults import require

require("check_capabilities.py", "torch")  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.capability.main import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_main(main))
