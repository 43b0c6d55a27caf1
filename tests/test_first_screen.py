"""Issue 54: the first screen tells the whole truth, on the real H100/H200 pair measured on one
stack (results/h100-node-10/node: 8K, out of memory at 32K; results/h200-precision-7/node: 8K,
16K, 32K at 84.4 GiB). In-process, without figures."""
import json
import pathlib

import pytest

from test_plot_results import cli, skip_figures

H100, H200 = "results/h100-node-10/node", "results/h200-precision-7/node"
PRICES = ("--price", "H100=2.40", "--price", "H200=3.50")


@pytest.fixture(autouse=True)
def no_figures(monkeypatch):
    skip_figures(monkeypatch)


def run(capsys, tmp_path, *args):
    code, out, err = cli(capsys, *args, "--out", tmp_path / "o")
    assert code == 0, err
    return out, (tmp_path / "o" / "report.md").read_text()


def bottom(out: str) -> str:
    """The bottom line as one line of text."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Bottom line"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    return " ".join(line.strip() for line in lines[start:end])


def test_the_bottom_line_names_the_length_only_the_h200_runs(capsys, tmp_path):
    out, _ = run(capsys, tmp_path, H100, H200, *PRICES)
    line = bottom(out)
    assert "dearer at 8K" in line and "only it runs 32K (H100 SXM: out of memory)" in line, line


def test_the_forecast_s_bottom_line_names_what_the_baseline_could_not_run(capsys, tmp_path):
    out, _ = run(capsys, tmp_path, H100, "--forecast", "H200", *PRICES)
    line = bottom(out)
    assert "at 8K" in line and "H100 SXM ran out of memory at 32K" in line, line


def test_a_forecast_without_a_price_that_does_not_fit_has_a_bottom_line_not_a_traceback(capsys, tmp_path):
    out, _ = run(capsys, tmp_path, "results/h200-moe-8/node", "--price", "H200=3.5", "--forecast", "H100")
    line = bottom(out)
    assert "H100 SXM (forecast), without a price," in line and "does not fit at 32K" in line, line


def restacked(tmp_path, folder: str, **versions) -> str:
    """A copy of `folder` whose headers name other software versions (the same measurements)."""
    out = tmp_path / "restacked"
    out.mkdir()
    for path in pathlib.Path(folder).glob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for r in records:
            if r.get("kind") == "header":
                r["software"].update(versions)
        (out / path.name).write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(out)


def test_stacks_that_differ_are_named_beside_the_call_they_qualify(capsys, tmp_path):
    h200 = restacked(tmp_path, H200, torch="2.12.0", **{"flash-attn-4": "4.0.0b22"})
    out, page = run(capsys, tmp_path, H100, h200, *PRICES)
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.lstrip().startswith("H200 SXM measured"))
    told = " ".join(line.strip() for line in lines[row + 1:row + 3])
    assert "software differs: torch 2.11.0 vs 2.12.0; flash-attn-4 4.0.0b36 vs 4.0.0b22" in told, out
    answer = page.split("## The answer")[1].split("##")[0]
    assert "software differs: torch 2.11.0 vs 2.12.0" in answer
    same, _ = run(capsys, tmp_path / "same", H100, H200, *PRICES) if (tmp_path / "same").mkdir() is None else None
    assert "software differs" not in same
