#!/usr/bin/env bash
# run_sweep.sh: the guide's sequence-length sweep (see ./run_sweep.sh --help).
# Interpreter: $PYTHON if set, else the venv install.sh made (no activation needed), else python3.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[[ -x "$PY" ]] || PY="$(command -v python3)"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
exec "$PY" -m upgrade_bench.sweep.runner "$@"
