#!/usr/bin/env python3
"""plot_results.py: from the suite's JSON-lines logs to the decision: $/token verdicts, figures.

The code and --help: upgrade_bench/report/main.py."""
from upgrade_bench.faults import require

require("plot_results.py", "matplotlib")  # python3 without .venv: one line, before any work

from upgrade_bench.faults import run_main  # noqa: E402
from upgrade_bench.report.main import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(run_main(main))
