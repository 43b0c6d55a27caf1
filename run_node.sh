#!/usr/bin/env bash
# run_node.sh: everything the decision page reads, measured on this node, into one folder
# (see ./run_node.sh --help). Interpreter as run_sweep.sh's: $PYTHON, else the venv install.sh made.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[[ -x "$PY" ]] || PY="$(command -v python3)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHON="$PY"
exec "$PY" -c 'import sys; from upgrade_bench.sweep.node import main; from upgrade_bench.faults import run_main; sys.exit(run_main(main.main))' "$@"
