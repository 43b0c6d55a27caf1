"""The report's outputs on the committed logs, as the README runs it (figures left out, they are
the slow part): report.md, the terminal answer, the warnings and points.csv, which
tests/report/test_golden.py compares byte for byte with tests/golden/. A change meant to change
what a user sees regenerates them and commits the reviewed diff, from the repository's root:

    .venv/bin/python -m tests.report.golden
"""
import contextlib
import io
import os
import tempfile
from pathlib import Path

from upgrade_bench.report import main as plot_results
from upgrade_bench.report.figures import draw

REPO = Path(__file__).resolve().parents[2]
GOLDEN = REPO / "tests" / "golden"
ARGS = ["results/", "--price", "H200=3.50", "--price", "B200=7.00", "--forecast", "B200", "--own", "H200=30000",
        "--own", "B200=45000"]
OUT = "<out>"  # the temporary --out folder, as the terminal's last line names it


def outputs() -> dict:
    """{file name: text} of plot_results.py ARGS, run in this process from the repository's root."""
    write_all, cwd = draw.write_all, os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        printed, warned = io.StringIO(), io.StringIO()
        draw.write_all = lambda analysis, out_dir, opener=open: []
        os.chdir(REPO)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(warned):
                code = plot_results.main(ARGS + ["--out", tmp])
        finally:
            draw.write_all = write_all
            os.chdir(cwd)
        assert code == 0, warned.getvalue()
        files = {name: (Path(tmp) / name).read_text(encoding="utf-8") for name in ("report.md", "points.csv")}
        return {**files, "terminal.txt": printed.getvalue().replace(tmp, OUT),
                "stderr.txt": warned.getvalue().replace(tmp, OUT)}


if __name__ == "__main__":
    GOLDEN.mkdir(exist_ok=True)
    for name, text in outputs().items():
        (GOLDEN / name).write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN / name}")
