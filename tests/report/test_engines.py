"""Issue 56: two engines are never paired silently. A run on FSDP2 and one on DeepSpeed differ in
ENGINE, a setting of the run's identity: no verdict pairs them unless --ignore-config ENGINE
asks, and then the engine is named as a stack difference, as a package's version is. A log
from before ENGINE (no `engine` in its header) ran DeepSpeed. On one GPU, what the engine buys is
a question of its own: series that differ in the engine's settings alone, side by side.
In-process, without figures."""
import pytest

from report.helpers import B200_PEAK, H200_PEAK, analysis_of, cli, header, rec, skip_figures, summary, write_jsonl
from upgrade_bench.report.page import answer, engines as engine_section, words
from upgrade_bench.report.read import stacks

PRICES = {"H200": 3.5, "B200": 7.0}


@pytest.fixture(autouse=True)
def no_figures(monkeypatch):
    skip_figures(monkeypatch)


def engines_log(b200_engine="fsdp2", compiled=False):
    """H200 on DeepSpeed (an old log: no `engine`, no ENGINE) and B200 on `b200_engine`, as the
    training scripts record it (ENGINE and COMPILE in the config only off their defaults)."""
    h, b = "run-h200", "run-b200"
    config = {"ENGINE": b200_engine, **({"COMPILE": True} if compiled else {})}
    return [header(h, "NVIDIA H200", hbm=139.8),
            summary(h, 1024, 400.0, H200_PEAK, 10000.0, 102.4, (100.0, 110.0)),
            header(b, "NVIDIA B200", backend="fa4", hbm=178.4, config=config, engine=b200_engine),
            summary(b, 1024, 800.0, B200_PEAK, 21000.0, 48.8, (48.0, 50.0))]


def test_a_log_without_an_engine_ran_deepspeed():
    assert stacks.stack_of({"software": {"torch": "2.11.0"}})["engine"] == "deepspeed"
    assert stacks.stack_of({"software": {"torch": "2.11.0"}, "engine": "fsdp2"})["engine"] == "fsdp2"
    assert stacks.stack_of({"software": {}})["engine"] is None  # a published figure names no stack
    # a DeepSpeed run that records its engine pairs with one from before ENGINE, no difference named
    a = analysis_of(engines_log("deepspeed"), prices=PRICES)
    (c,) = a.comparisons
    assert c.stack == [] and c.ignored == []


def test_two_engines_do_not_pair_without_ignore_config():
    a = analysis_of(engines_log(), prices=PRICES)
    assert a.comparisons == []
    reasons = sorted(why for _, why in a.unpaired)
    assert reasons[0] == ("nearest: B200 SXM fa4: FSDP2 differs in ENGINE (DeepSpeed vs FSDP2); "
                          "--ignore-config ENGINE pairs them")
    a = analysis_of(engines_log(compiled=True), prices=PRICES)
    assert sorted(why for _, why in a.unpaired)[0].startswith(
        "nearest: B200 SXM fa4: FSDP2, compiled differs in ENGINE (DeepSpeed vs FSDP2), COMPILE (uncompiled vs compiled)")


def test_ignore_config_engine_pairs_them_and_names_the_engine_as_a_stack_difference():
    a = analysis_of(engines_log(compiled=True), ignore=("ENGINE", "COMPILE"), prices=PRICES)
    (c,) = a.comparisons
    assert c.stack == [("engine", ["deepspeed"], ["fsdp2"])]
    assert c.ignored == [("ENGINE", ["deepspeed"], ["fsdp2"]), ("COMPILE", [False], [True])]
    assert ("; software differs: engine deepspeed vs fsdp2 (the stack alone moves results by double-digit "
            "percent)") in answer.answer_markdown(a)
    # the series' words: the configuration names the engine off DeepSpeed, the software its packages
    fsdp2, deepspeed = (words.series_words(s, {}) for s in (c.other, c.base))
    assert fsdp2["configuration"].startswith("FSDP2, compiled, bf16, ZeRO-3")
    assert deepspeed["configuration"].startswith("bf16, ZeRO-3")
    assert "engine" not in fsdp2["software"] + deepspeed["software"]


def test_the_command_line_gives_no_verdict_across_engines_unless_asked(capsys, tmp_path):
    log = write_jsonl(tmp_path / "engines.jsonl", engines_log())
    prices = ("--price", "H200=3.50", "--price", "B200=7.00")
    code, out, err = cli(capsys, log, *prices, "--out", tmp_path / "a")
    assert code == 0, err
    assert "Bottom line" not in out and "No comparison and no forecast" in out
    assert "--ignore-config ENGINE pairs them" in out
    code, out, err = cli(capsys, log, *prices, "--ignore-config", "ENGINE", "--out", tmp_path / "b")
    assert code == 0, err
    assert "Bottom line [1]: B200 SXM (measured) at $7.00/GPU-hour is even at 1K" in out
    assert "(paired across ENGINE deepspeed vs fsdp2, --ignore-config)" in out
    assert "(software differs: engine deepspeed vs fsdp2; the stack alone moves results" in out
    page = (tmp_path / "b" / "report.md").read_text()
    assert "**Software stacks differ** (the stack alone moves results by double-digit percent): " \
           "engine deepspeed vs fsdp2" in page


# ---------------------------------------------------------------- what the engine buys on one GPU

H100_PEAK = 989.0
DEEPSPEED = {"ZERO_STAGE": 2}  # USE_LIGER on (helpers.CONFIG), no ENGINE: DeepSpeed, uncompiled
FSDP2_COMPILED = {"ZERO_STAGE": 2, "ENGINE": "fsdp2", "COMPILE": True, "USE_LIGER": False}


def point(run_id, seq_len, tflops, step_ms, peak_gib):
    return dict(summary(run_id, seq_len, tflops, H100_PEAK, None, step_ms), peak_mem_gib=peak_gib)


def failed(run_id, seq_len, error):
    return rec("error", run_id, error=error, message=f"{error} at {seq_len}", seq_len=seq_len)


def one_gpu_engines_log():
    """On one H100: DeepSpeed (ZeRO-2, Liger) at 4K, 8K and out of memory at 16K; FSDP2 compiled
    without Liger at 8K and 16K, diverged at 4K. Beside them, series that differ in more than the
    engine: FSDP2 at ZeRO-3, FSDP2 on another attention backend, FSDP2 on an H200."""
    e = "fsdp2"
    return [header("ds", "NVIDIA H100 80GB HBM3", "fa4", config=DEEPSPEED, hbm=79.2),
            point("ds", 4096, 350.0, 100.0, 40.0), point("ds", 8192, 400.0, 300.0, 62.5), failed("ds", 16384, "oom"),
            header("fs", "NVIDIA H100 80GB HBM3", "fa4", config=FSDP2_COMPILED, hbm=79.2, engine=e),
            failed("fs", 4096, "diverged"), point("fs", 8192, 500.0, 240.0, 49.8),
            point("fs", 16384, 520.0, 900.0, 70.0),
            header("z3", "NVIDIA H100 80GB HBM3", "fa4", config={**FSDP2_COMPILED, "ZERO_STAGE": 3}, engine=e),
            point("z3", 8192, 450.0, 260.0, 45.0),
            header("fa3", "NVIDIA H100 80GB HBM3", "fa3", config=FSDP2_COMPILED, engine=e),
            point("fa3", 8192, 450.0, 260.0, 45.0),
            header("h200", "NVIDIA H200", "fa4", config=FSDP2_COMPILED, hbm=139.8, engine=e),
            point("h200", 8192, 600.0, 200.0, 49.8)]


def test_series_pair_by_engine_only_when_the_engine_settings_alone_differ():
    a = analysis_of(one_gpu_engines_log())
    pairs = {(r.base.gpu, r.base.backend, r.other.gpu, r.other.backend, r.other.config["ZERO_STAGE"]) for r in a.engines}
    assert pairs == {("H100 SXM", "fa4", "H100 SXM", "fa4", 2)}  # not ZeRO-3, not fa3, not the H200
    assert {r.base.settings("ENGINE")[0] for r in a.engines} == {"deepspeed"}  # the guide's engine, the baseline
    rows = {r.seq_len: r for r in a.engines}
    assert sorted(rows) == [4096, 8192, 16384]
    at_8k = rows[8192]
    assert (at_8k.base_tflops, at_8k.other_tflops, at_8k.base_step_ms, at_8k.other_step_ms) == (400.0, 500.0, 300.0, 240.0)
    assert (at_8k.base_peak_gib, at_8k.other_peak_gib, at_8k.failed) == (62.5, 49.8, ())
    assert at_8k.speedup == pytest.approx(300.0 / 240.0)
    # a failed side gives no speedup; the side that ran keeps its own numbers
    assert [(s.settings("ENGINE"), why) for s, why in rows[16384].failed] == [(["deepspeed"], "oom")]
    assert (rows[16384].speedup, rows[16384].base_step_ms, rows[16384].other_step_ms) == (None, None, 900.0)
    assert [why for _, why in rows[4096].failed] == ["diverged"] and rows[4096].speedup is None
    assert rows[4096].base_step_ms == 100.0


def test_two_gpus_on_two_engines_are_no_engine_pair():
    assert analysis_of(engines_log()).engines == ()
    assert analysis_of(engines_log(compiled=True)).engines == ()


def test_without_deepspeed_the_uncompiled_engine_is_the_baseline():
    e = {"ZERO_STAGE": 2, "ENGINE": "fsdp2"}
    log = [header("eager", "NVIDIA H100 80GB HBM3", "fa4", config=e, engine="fsdp2"),
           point("eager", 8192, 400.0, 300.0, 66.0),
           header("comp", "NVIDIA H100 80GB HBM3", "fa4", config={**e, "COMPILE": True, "USE_LIGER": False},
                  engine="fsdp2"),
           point("comp", 8192, 500.0, 240.0, 49.8)]
    (r,) = analysis_of(log).engines
    assert (r.base.settings("COMPILE"), r.other.settings("COMPILE")) == ([False], [True])
    assert engine_section.engine_lines(analysis_of(log).engines) == [
        "Engine on one GPU (H100 SXM fa4, bf16, 8K): FSDP2, compiled, no Liger steps 1.25x as fast as FSDP2, Liger"]


def test_the_page_and_the_terminal_say_what_the_engine_buys(capsys, tmp_path):
    log = write_jsonl(tmp_path / "one-gpu.jsonl", one_gpu_engines_log())
    code, out, err = cli(capsys, log, "--out", tmp_path / "out")
    assert code == 0, err
    # 300 / 240 ms = 1.25x; the numbers each side's own summary
    assert ("Engine on one GPU (H100 SXM fa4, bf16, 8K): FSDP2, compiled, no Liger steps 1.25x as fast as\n"
            "  DeepSpeed ZeRO-2, Liger") in out
    page = (tmp_path / "out" / "report.md").read_text()
    section = page.split("## What the engine buys (same GPU)\n")[1].split("\n## ")[0]
    assert "a verdict between GPUs never pairs two engines unless --ignore-config ENGINE asks" in section
    table = [line for line in section.splitlines() if line.startswith("| H100")]
    head = "| H100 SXM fa4, bf16 | {} | DeepSpeed ZeRO-2, Liger | FSDP2, compiled, no Liger | "
    assert table == [head.format("4K") + "350.0 / - | 100.0 / - | 40.0 / - | - (FSDP2, compiled, no Liger: diverged) |",
                     head.format("8K") + "400.0 / 500.0 | 300.0 / 240.0 | 62.5 / 49.8 | 1.25x |",
                     head.format("16K") + "- / 520.0 | - / 900.0 | - / 70.0 | - (DeepSpeed ZeRO-2, Liger: oom) |"]


def test_nothing_is_said_of_engines_without_such_a_pair(capsys, tmp_path):
    log = write_jsonl(tmp_path / "engines.jsonl", engines_log())
    code, out, err = cli(capsys, log, "--out", tmp_path / "out")
    assert code == 0, err
    assert "Engine on one GPU" not in out
    assert "What the engine buys" not in (tmp_path / "out" / "report.md").read_text()
    assert engine_section.engines_markdown(()) == "" and engine_section.engine_lines(()) == []


def test_an_engine_the_suite_does_not_know_is_named_as_recorded_never_as_deepspeed(capsys, tmp_path):
    # a hand-edited (or a later suite's) log: its engine's name is markup, a line break in it
    odd = "fsdp3|<b>x</b>\n# hi"
    log = [entry for entry in one_gpu_engines_log() if entry.get("run_id") in ("ds", "fs")]
    for entry in log:
        if entry.get("run_id") == "fs" and entry.get("kind") == "header":
            entry["config"] = {**entry["config"], "ENGINE": odd}
            entry["engine"] = odd
    (r,) = [row for row in analysis_of(log).engines if row.seq_len == 8192]
    assert "DeepSpeed" not in words.engine_words(r.other) and "ZeRO" not in words.engine_words(r.other)
    code, out, err = cli(capsys, write_jsonl(tmp_path / "odd.jsonl", log), "--out", tmp_path / "out")
    assert code == 0, err
    section = (tmp_path / "out" / "report.md").read_text().split("## What the engine buys (same GPU)\n")[1]
    row = next(line for line in section.splitlines() if line.startswith("| H100") and "| 8K |" in line)
    assert row.count(" | ") == 7 and "<b>" not in row and "fsdp3" in row  # one row of 8 cells, shown as typed
    said = " ".join(out.split())  # the terminal wraps its lines
    assert ("Engine on one GPU (H100 SXM fa4, bf16, 8K): ENGINE=fsdp3|<b>x</b> # hi, compiled, no Liger steps 1.25x "
            "as fast as DeepSpeed ZeRO-2, Liger") in said
