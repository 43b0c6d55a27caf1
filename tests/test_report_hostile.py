"""Issue 38's report-side fails, each reproduced: a page that misleads, a traceback, a silent
no-op. In-process and without figures (what is said and written, not what is drawn)."""
import json
import os

import pytest

from conftest import REPO
from report.helpers import bad, cli, header, rec, skip_figures, summary, two_gpu_log, write_jsonl
from upgrade_bench.report.forecast import series as forecasts
from upgrade_bench.report.published import guide as published
from upgrade_bench.report.read import series
from upgrade_bench.report.page import words
from upgrade_bench.report import main as plot_results

H200_PEAK = 989.0


@pytest.fixture(autouse=True)
def no_figures(monkeypatch):
    skip_figures(monkeypatch)


def sweep(run_id="m", gpu="NVIDIA H200", mems=(60.0, 40.0), oom_at=None, config=None, flops=True):
    """A measured two-length sweep: 8K and 32K with the peak memories given, an OOM beyond."""
    out = [header(run_id, gpu, backend="fa4", config=config, hbm=139.8)]
    for n, mem in zip((8192, 32768), mems):
        s = summary(run_id, n, 400.0, H200_PEAK, 8192 / 0.3, 300.0 * n / 8192, (290.0 * n / 8192, 310.0 * n / 8192))
        s["peak_mem_gib"] = mem
        if flops:
            s.update(model_tflop_per_step=0.12 * n / 1024, attn_flop_share=0.1 * n / 8192)
        out.append(s)
    if oom_at:
        out.append(rec("error", run_id, error="oom", message="exit code 3", seq_len=oom_at))
    return out


def test_a_record_nested_500_deep_is_skipped_with_its_reason(tmp_path, capsys):
    deep = 1
    for _ in range(500):
        deep = {"a": deep}
    log = write_jsonl(tmp_path / "deep.jsonl", two_gpu_log() + [dict(header("x", "NVIDIA H200"), notes=deep)])
    code, out, err = cli(capsys, log, "--out", tmp_path / "o")
    assert code == 0, err
    assert "1 skipped (1 x nested deeper than 32 levels)" in err


def test_a_log_name_that_is_not_utf8_with_a_bad_line_writes_its_report(tmp_path, capsys):
    path = os.path.join(os.fsencode(tmp_path), b"bad\xff.jsonl")
    with open(path, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in two_gpu_log()) + "{not json\n")
    code, out, err = cli(capsys, os.fsdecode(path), "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text(encoding="utf-8")
    assert "bad?.jsonl: 1 skipped (1 x not JSON)" in page


def test_an_output_name_that_is_not_utf8_is_refused_not_renamed(tmp_path, capsys):
    target = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"out\xff"))
    assert "a file name that is not UTF-8" in bad(capsys, "results/", "--out", target)
    assert os.listdir(tmp_path) == []


def test_a_file_name_with_a_markdown_heading_stays_text_on_the_page(tmp_path, capsys):
    name = tmp_path / "x\n# Heading *bold* [link](y) <b>.jsonl"
    write_jsonl(name, two_gpu_log(), extra_lines=["{bad"])
    code, _, err = cli(capsys, name, "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert not [line for line in page.splitlines() if "Heading" in line and line.lstrip("- ").startswith("#")]
    assert "x \\# Heading \\*bold\\* \\[link\\](y) &lt;b>.jsonl: 1 skipped" in page  # no tag either


def test_memory_that_falls_with_length_is_never_extrapolated_below_what_was_measured():
    data = series.load(json.loads(json.dumps(sweep(mems=(60.0, 40.0), oom_at=65536))))
    (s,) = data.series
    # what the points say, where the baseline's HBM is not recorded
    s.hbm_gib = None
    (b,) = forecasts.beyond_memory(s, 180.0)
    assert (b.seq_len, b.gib) == (65536, 60.0) and "did not grow with length" in b.how
    assert b.floor and b.fits is None  # a floor within the candidate's HBM says nothing of fitting
    grows = series.load(json.loads(json.dumps(sweep(mems=(40.0, 60.0), oom_at=65536)))).series[0]
    hbm_gib, grows.hbm_gib = grows.hbm_gib, None
    (b,) = forecasts.beyond_memory(grows, 180.0)
    assert (b.seq_len, b.gib, b.floor, b.fits) == (65536, pytest.approx(60.0 + 20.0 / 24576 * 32768), False, True)
    assert forecasts.beyond_memory(grows, 80.0)[0].fits is False  # 86.7 GiB: more than the candidate's
    # where it is: the length outgrew the baseline's HBM, so it needs at least that
    grows.hbm_gib = hbm_gib
    (b,) = forecasts.beyond_memory(grows, 180.0)
    assert (b.gib, b.floor, b.fits) == (hbm_gib, True, None) and "gives less (86.7 GiB)" in b.how


def test_a_second_file_claiming_a_published_run_is_refused_naming_both(tmp_path, capsys):
    guide = [r for r in published.guide_reference_records() if r["run_id"] == "guide-h200-sweep"]
    write_jsonl(tmp_path / "a.jsonl", guide)
    faster = [dict(r, tflops_per_gpu=r["tflops_per_gpu"] * 1.5) if r["kind"] == "summary" else r for r in guide]
    write_jsonl(tmp_path / "b.jsonl", faster)  # other figures, each under the H200's peak
    err = bad(capsys, tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--out", tmp_path / "o")
    assert "'guide-h200-sweep'" in err and "a.jsonl" in err and "b.jsonl" in err
    err = bad(capsys, tmp_path / "b.jsonl", tmp_path / "a.jsonl", "--out", tmp_path / "o")  # either order
    assert "a.jsonl" in err and "b.jsonl" in err
    assert not (tmp_path / "o").exists()
    write_jsonl(tmp_path / "c.jsonl", guide)  # the same records again are one run, counted once
    code, _, err = cli(capsys, tmp_path / "a.jsonl", tmp_path / "c.jsonl", "--out", tmp_path / "o")
    assert code == 0, err


def test_a_forecast_beside_a_measured_candidate_of_another_configuration_says_so(tmp_path, capsys):
    logs = sweep(config={"ZERO_STAGE": 2}) + sweep("b", "NVIDIA B200", config={"ZERO_STAGE": 3})
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--forecast", "B200",
                         "--ignore-config", "ZERO_STAGE", "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert "B200 SXM measured TFLOPS (another configuration)" in page
    assert "paired by --ignore-config (ZERO_STAGE 2 here vs 3 there)" in page
    # the first screen's sentence names the difference too, not only the verdict block below it
    answer = page.split("## The answer")[1].split("\n## ")[0]
    assert "B200 SXM (measured), paired across ZERO_STAGE 2 vs 3 (--ignore-config) at 8K" in answer


def test_every_price_a_forecast_uses_is_printed(tmp_path, capsys):
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", sweep()), "--forecast", "B200", "--price",
                         "H200=3.50", "--price", "B200=7.25", "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert "B200 SXM $7.25 (prices its forecast only: no log" in out
    assert "B200 SXM $7.25 (prices its forecast only: no log of it)" in page
    assert "$3.50 vs $7.25 per GPU-hour" in page
    assert "at H200 SXM $3.50 and B200 SXM $7.25 per GPU-hour" in page


@pytest.mark.parametrize("logs, forecast, why", [
    (sweep(), "H200", "already measured on H200 SXM"),
    (sweep(gpu="NVIDIA RTX 9999"), "B200", "NVIDIA RTX 9999 is no GPU of the GPU table"),
    (sweep(gpu="cpu"), "B200", "cpu is no GPU of the GPU table (a CPU run"),
    (sweep(flops=False), "B200", "its summaries record no FLOP count"),
])
def test_a_forecast_that_cannot_forecast_says_why_in_one_line(tmp_path, capsys, logs, forecast, why):
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--forecast", forecast,
                         "--out", tmp_path / "o")
    assert code == 0, err
    (note,) = [line for line in err.splitlines() if line.startswith("note: --forecast")]
    assert f"no forecast: " in note and why in note
    assert why in (tmp_path / "o" / "report.md").read_text()


def test_backtest_writes_nothing_where_the_report_is_refused(tmp_path, capsys):
    bad(capsys, tmp_path / "missing.jsonl", "--backtest", "--out", tmp_path / "o")
    bad(capsys, write_jsonl(tmp_path / "l.jsonl", sweep()), "--backtest", "--price", "A100=1",
        "--out", tmp_path / "o")  # a price for a GPU the logs lack: found only after reading
    assert not (tmp_path / "o").exists()
    code, _, err = cli(capsys, "--backtest", "--out", tmp_path / "o")  # alone, it writes its table
    assert code == 0 and sorted(os.listdir(tmp_path / "o")) == ["backtest.csv", "backtest.md"], err


def test_the_guides_published_rows_carry_the_lengths_their_run_covers(tmp_path):
    sweep_header = next(r for r in published.guide_reference_records()
                        if r["kind"] == "header" and r["run_id"] == "guide-h200-sweep")
    assert sweep_header["config"]["SEQ_LEN"] == [n for n, _, _ in published.GUIDE_SWEEP_TFLOPS]
    assert plot_results.main(["results/reference/guide.jsonl", "--export", str(tmp_path / "t"),
                              "--out", str(tmp_path / "o")]) == 0
    rows = (tmp_path / "t" / "points.csv").read_text().splitlines()
    at_32k = next(line for line in rows if ",32768," in line and "guide-h200-sweep" in line)
    assert "8192" not in at_32k.split(",32768,")[1].split(",")[0:3] and "262144" in at_32k


# --------------------------------------------------------------- hostile round 5

def test_a_setting_recorded_at_its_default_is_the_run_that_leaves_it_out(tmp_path, capsys):
    # bf16, all experts and leaf MoE blocks are recorded only off their defaults; a log that
    # records them anyway (another tool's, a hand-edited one) stayed unpaired "(bf16 vs not recorded)"
    explicit = {"PRECISION": "bf16", "NUM_EXPERTS": 0, "ZERO3_LEAF_MOE": True}
    logs = sweep(config=explicit) + sweep("b", "NVIDIA B200")
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert "## 1. B200 SXM vs H200 SXM: measured vs measured\n" in page and "Series not compared" not in page


def test_an_unpaired_series_names_a_default_setting_by_its_value_not_as_unrecorded(tmp_path, capsys):
    logs = sweep() + sweep("b", "NVIDIA B200", config={"PRECISION": "fp8-tensorwise"})
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert "differs in PRECISION (bf16 vs fp8-tensorwise)" in page and "not recorded" not in page


def test_series_of_different_expert_cuts_get_no_verdict_even_paired_as_asked(tmp_path, capsys):
    # the cut flatters: 32 of Qwen3-30B-A3B's 128 experts ran its 8K step 1.32x faster
    # (results/h200-moe-8), so a 32-expert baseline against a 64-expert candidate is no upgrade's price
    logs = sweep(config={"NUM_EXPERTS": 32}) + sweep("b", "NVIDIA B200", config={"NUM_EXPERTS": 64})
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--ignore-config", "NUM_EXPERTS",
                         "--price", "H200=3", "--price", "B200=6", "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert "B200 SXM (measured): no verdict, not like for like (NUM_EXPERTS 32 vs 64: " in page
    assert "dearer per token" not in page and "cheaper per token" not in page
    assert words.unlike_across(series.load(json.loads(json.dumps(logs))).series).startswith(
        "Not like for like: these series differ in expert cut (")


def test_one_model_path_that_built_two_models_is_no_like_for_like_pair(tmp_path, capsys):
    # MODEL=/shared/cfg on two nodes whose files differ: the same configuration, another model
    logs = sweep() + sweep("b", "NVIDIA B200")
    logs[0].update(model_cut="4 of 48 layers", n_total_params=3_114_795_008)
    logs[3].update(model_cut="8 of 48 layers", n_total_params=5_800_000_000)
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--price", "H200=3", "--price",
                         "B200=6", "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert ("B200 SXM (measured): no verdict, not like for like (model as built 4 of 48 layers, 3.11B parameters "
            "vs 8 of 48 layers, 5.80B parameters: ") in page
    assert "dearer per token" not in page and "cheaper per token" not in page
    # the same model on both sides pairs as before, its count compared, not its words (a header
    # from before model_cut says "4 layers"); a figure of both series names the difference
    assert words.unlike_across(series.load(json.loads(json.dumps(logs))).series).startswith(
        "Not like for like: these series differ in model as built (4 of 48 layers, 3.11B parameters; "
        "8 of 48 layers, 5.80B parameters)")
    del logs[0]["model_cut"]
    logs[0]["num_layers"] = 4
    logs[3].update(model_cut="4 of 48 layers", n_total_params=3_114_795_008)
    code, out, err = cli(capsys, write_jsonl(tmp_path / "m.jsonl", logs), "--price", "H200=3", "--price",
                         "B200=6", "--out", tmp_path / "p")
    assert "per token" in (tmp_path / "p" / "report.md").read_text().split("## The answer")[1].split("\n## ")[0]
    assert "not like for like" not in (tmp_path / "p" / "report.md").read_text()


def test_a_default_recorded_as_another_type_is_named_where_it_keeps_series_apart():
    # NUM_EXPERTS 0.0 is no run's identity of "all experts" (0): the two stay apart, and the
    # reason names the key rather than an empty list
    from upgrade_bench.report.compare import comparisons

    assert comparisons.differing_keys({"NUM_EXPERTS": 0.0}, {}) == ["NUM_EXPERTS"]
    assert comparisons.differing_keys({"NUM_EXPERTS": 0}, {}) == []
    assert comparisons.differing_keys({"ZERO3_LEAF_MOE": 1}, {"ZERO3_LEAF_MOE": True}) == ["ZERO3_LEAF_MOE"]


def test_the_shipped_published_figures_are_read_whole():
    # their step_ms is derived (Megatron-Bridge's: the whole global batch's), so the throughput
    # check leaves them be: no record of theirs is skipped
    from upgrade_bench.report.read import inputs

    for path in (REPO / "results" / "published" / "megatron_bridge.jsonl", REPO / "results" / "reference" / "guide.jsonl"):
        tally = inputs.Tally()
        records = inputs.read([path], tally)
        assert records and tally.skipped_total() == 0, (path, tally.skipped)


def test_a_summary_whose_throughput_contradicts_its_step_time_is_skipped_with_the_reason(tmp_path, capsys):
    # the speedup is read from step times and the $/token from tokens/s: a record where the two
    # disagree (tokens/s 10x its seq_len over its step_ms) would give a call its own speedup denies
    logs = sweep() + sweep("b", "NVIDIA B200")
    logs[-2]["tokens_per_s_per_gpu"] *= 10
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--price", "H200=3", "--price",
                         "B200=6", "--out", tmp_path / "o")
    assert code == 0, err
    assert "tokens_per_s_per_gpu is 2.731e+05, not seq_len x batch_size over step_ms (2.731e+04)" in \
        (tmp_path / "o" / "report.md").read_text()


def test_a_figure_a_millionfold_off_prints_in_a_few_characters_not_hundreds(tmp_path, capsys):
    # tokens/s and TFLOPS of 1e-300 are positive numbers the reader takes; their $/1M tokens and
    # speedup printed 300 digits in a cell and in the answer
    logs = sweep() + sweep("b", "NVIDIA B200")
    for r in logs[1:3]:  # without a step time to contradict it (beyond MAX_NUMBER, a step_ms is refused)
        r.update(tokens_per_s_per_gpu=1e-300, tflops_per_gpu=1e-300, step_ms=None, step_ms_min=None,
                 step_ms_max=None)
    code, out, err = cli(capsys, write_jsonl(tmp_path / "l.jsonl", logs), "--price", "H200=3", "--price",
                         "B200=6", "--out", tmp_path / "o")
    assert code == 0, err
    page = (tmp_path / "o" / "report.md").read_text()
    assert max(map(len, page.split())) < 200 and max(map(len, out.split())) < 200
    assert "4e+302x" in page
