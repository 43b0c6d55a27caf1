"""Issue 56: two engines are never paired silently. A run on FSDP2 and one on DeepSpeed differ in
ENGINE, a setting of the run's identity: no verdict pairs them unless --ignore-config ENGINE
asks, and then the engine is named as a stack difference, as a package's version is. A log
from before ENGINE (no `engine` in its header) ran DeepSpeed. In-process, without figures."""
import pytest

from report.helpers import B200_PEAK, H200_PEAK, analysis_of, cli, header, skip_figures, summary, write_jsonl
from upgrade_bench.report.page import answer, words
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
