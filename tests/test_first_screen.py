"""Issue 54: the first screen tells the whole truth, on the real H100/H200 pair measured on one
stack (results/h100-node-10/node: 8K, out of memory at 32K; results/h200-precision-7/node: 8K,
16K, 32K at 84.4 GiB). In-process, without figures."""
import csv
import json
import pathlib

import pytest

from report.helpers import cli, skip_figures
from upgrade_bench.report.page import dollars
from upgrade_bench.report.figures import comparison as comparison_figure
from upgrade_bench.report.read import inputs, series

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
    assert "H100 SXM (forecast), without a price, does not fit at 32K" in line, line  # not "is does not fit"


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


def test_a_point_run_twice_is_the_uninstrumented_run_and_the_page_says_which(capsys, tmp_path):
    """The H200 ran 8K in the sweep (294.2 ms, 424.1 TFLOPS) and under the decomposition's
    profiler (301.8 ms, 413.4): the point is the sweep's, the break-even follows it."""
    (s,) = series.load(list(inputs.read(inputs.expand([H200]), inputs.Tally()))).series
    assert s.points[8192]["step_ms"] == pytest.approx(294.2125, abs=1e-3)
    assert [r["step_ms"] for r in s.instrumented[8192]] == [pytest.approx(301.8466, abs=1e-3)]
    out, page = run(capsys, tmp_path, H100, H200, *PRICES)
    assert "$2.63/GPU-hour" in bottom(out)  # 2.40 x 424.1 / 386.6; the decomposition's run gave $2.57
    assert ("H200 SXM at 8K: run 20261202T164025-b256b9 (294.2 ms); left out: 1 instrumented run "
            "(DECOMPOSE=3: 301.8 ms)") in page


def test_a_length_that_does_not_fit_gets_its_speedup_and_why_and_no_price_anywhere(capsys, tmp_path):
    """The H200's 32K (84.4 GiB) forecast on an H100 (80 GB): no $/token, no call, no cost to train."""
    out, page = run(capsys, tmp_path, H200, "--forecast", "H100", *PRICES, "--own", "H100=25000",
                    "--own", "H200=30000")
    forecast = next(line for line in page.splitlines() if line.startswith("| 32K | dense-bound"))
    cells = [c.strip() for c in forecast.split("|")]
    assert cells[6].endswith("x)") and "84.4 GiB > HBM" in forecast  # the speedup and why
    assert cells[8] == "-" and cells[9] == "no call: does not fit", cells  # no $/1M tokens, no call
    cost = [line for line in page.splitlines() if line.startswith("| 32K | H100 SXM (forecast)")]
    assert cost and all("$" not in line and "does not fit" in line for line in cost), cost
    with open(tmp_path / "o" / "points.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["source"] == "forecast" and r["seq_len"] == "32768"]
    assert rows and rows[0]["usd_per_mtok"] == ""


def test_a_point_timed_once_is_undecided_for_the_owner_and_in_the_cost_table(capsys, tmp_path):
    h100 = tmp_path / "h100"
    h100.mkdir()
    for path in pathlib.Path(H100).glob("*.jsonl"):  # the sweep's 8K timed once, the decomposition's run gone
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if path.name == "decompose.jsonl":
            continue
        for r in records:
            if r.get("kind") == "summary":
                r.update(steps=1, step_ms_min=r["step_ms"], step_ms_max=r["step_ms"])
        (h100 / path.name).write_text("".join(json.dumps(r) + "\n" for r in records))
    out, page = run(capsys, tmp_path, h100, H200, *PRICES, "--own", "H100=25000", "--own", "H200=30000")
    assert "owner undecided, renter undecided" in out, out
    row = next(line for line in page.splitlines() if line.startswith("| 8K | H200 SXM (measured)"))
    assert row.endswith("| undecided | undecided |"), row


@pytest.mark.parametrize("days, said", [(0.2, "5 hours"), (12.4, "12 days"), (250.0, "250 days"),
                                        (1570.0, "4.3 years"), (12_000.0, "33 years"), (2e6, "5.48K years")])
def test_a_time_to_train_reads_in_days_and_years_a_person_would_say(days, said):
    assert dollars.duration((days, days, days)) == said


def test_the_cost_to_train_on_one_gpu_says_years_not_thousands_of_days(capsys, tmp_path):
    out, page = run(capsys, tmp_path, H100, H200, *PRICES)
    line = next(line for line in out.splitlines() if line.strip().startswith("H100 SXM measured:"))
    assert line.endswith("4.2 years (4.2-4.3 years)") and "K days" not in out + page, line


def test_bf16_and_fp8_comparisons_of_one_pair_have_titles_that_name_the_precision(capsys, tmp_path):
    """The H100's and the H200's 8K in bf16 (their node folders) and in fp8-tensorwise (beside them)."""
    fp8 = ["results/h100-node-10/fp8_tensorwise.jsonl", "results/h200-precision-7/fp8_tensorwise.jsonl"]
    out, page = run(capsys, tmp_path, H100, H200, *fp8, *PRICES)
    titles = [line for line in page.splitlines() if line.startswith("## ") and " vs H100 SXM" in line]
    assert {"## 1. H200 SXM vs H100 SXM, fp8-tensorwise: measured vs measured",
            "## 2. H200 SXM vs H100 SXM, bf16: measured vs measured"} <= set(titles), titles
    alone, _ = run(capsys, tmp_path / "alone", H100, H200, *PRICES) if (tmp_path / "alone").mkdir() is None else None
    assert "## 1. H200 SXM vs H100 SXM: measured vs measured" in (tmp_path / "alone" / "o" / "report.md").read_text()


@pytest.mark.parametrize("flags", [("--kwh", "0.12"), ("--pue", "1.1"), ("--kwh", "0.12", "--pue", "1.1")])
def test_kwh_or_pue_without_own_says_in_one_line_that_they_change_nothing(capsys, tmp_path, flags):
    code, out, err = cli(capsys, H100, H200, *PRICES, *flags, "--out", tmp_path / "o")
    assert code == 0, err
    said = [line for line in err.splitlines() if "change nothing" in line]
    assert said == [f"note: {' and '.join(f for f in flags if f.startswith('--'))} change nothing without --own "
                    "(they price the owner's energy)"], err
    code, out, err = cli(capsys, H100, H200, *PRICES, *flags, "--own", "H100=25000", "--own", "H200=30000",
                         "--out", tmp_path / "o")
    assert code == 0 and "change nothing" not in err


def test_a_cut_s_dollars_per_token_are_named_the_cut_s_wherever_shown(capsys, tmp_path, monkeypatch):
    out, page = run(capsys, tmp_path, H100, H200, *PRICES)
    head = next(line for line in page.splitlines() if line.startswith("| seq_len | speedup |"))
    assert "H100 SXM $/1M tokens, the cut (8 of 32 layers)" in head, head
    with open(tmp_path / "o" / "points.csv", newline="") as f:
        row = next(r for r in csv.DictReader(f) if r["gpu"] == "H200 SXM" and r["seq_len"] == "8192"
                   and r["status"] == "ok" and not r.get("instrumented"))
    cut, whole = float(row["usd_per_mtok"]), float(row["usd_per_mtok_whole_model"])
    assert whole == pytest.approx(cut * 3.38, rel=0.01) and row["model_cut"] == "8 of 32 layers"
    assert "$0.118" in out and whole == pytest.approx(0.118, abs=0.001)  # the terminal's: the whole model's
    assert comparison_figure.money_title((2.40, 3.50), ("H100 SXM", "H200 SXM"), "8 of 32 layers") == \
        "$/1M tokens of the cut (8 of 32 layers)\nat H100 SXM $2.40, H200 SXM $3.50 per GPU-hour"


def test_decomposition_png_marks_the_length_one_gpu_could_not_run_and_no_published_hatching(tmp_path):
    from upgrade_bench.report.compare import comparisons
    from upgrade_bench.report.figures import draw
    data = series.load(list(inputs.read(inputs.expand([H100, H200]), inputs.Tally())))
    fig = draw.draw_decomposition(comparisons.analyse(data))
    (at_8k, at_32k) = fig.axes[:2]
    texts = [t.get_text() for t in at_32k.texts]
    assert any(t.startswith("out of memory at 32K") for t in texts), texts
    assert [t.get_text() for t in at_32k.get_yticklabels()] == ["H100 SXM fa4", "H200 SXM fa4"]
    assert "published" not in at_8k.get_xlabel() + at_32k.get_xlabel()
    fig.savefig(tmp_path / "decomposition.png")
