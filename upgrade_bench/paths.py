"""Where the suite's own files are: the repository root, which holds the scripts, configs/,
models/ (staged weights) and results/."""
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
