"""tools/titan_log.py: torchtitan's log read into the suite's records, its throughput counted
with the suite's own FLOPs. The log lines are in torchtitan's formats, 0.2.2's and 0.3.0's alike
(its logger's `[titan] time - root - INFO -` prefix, MetricsProcessor.log's colored metrics line,
Trainer's init line); the numbers are hand-computed."""
import json

import pytest

from conftest import REPO, import_script

tool = import_script("tools/titan_log.py")
CONFIG = json.loads((REPO / "configs" / "llama-3.1-8b.json").read_text())

WORKLOAD = ('titan_train: workload {"model": "llama-3.1-8b", "num_layers": 8, "precision": "bf16", '
            '"attn": "sdpa", "compile": true}')
INIT = ("[titan] 2026-12-07 10:01:02,345 - root - INFO - Trainer is initialized with local batch size 1, "
        "global batch size 1, gradient accumulation steps 1, sequence length 8192, total steps 12 (warmup 200)")


def step_line(step: int, tps: str, mem: str = "61.20") -> str:
    # MetricsProcessor.log, colors on (torchtitan's default), as a terminal-less stdout gets them
    return (f"[titan] 2026-12-07 10:01:0{step % 10},000 - root - INFO - \x1b[31mstep: {step:2}  "
            f"\x1b[32mloss: 11.93750  \x1b[33mgrad_norm:  3.1416  \x1b[36mmemory: {mem}GiB(77.27%)  "
            f"\x1b[34mtps: {tps}  \x1b[36mtflops: 401.23  \x1b[35mmfu: 40.57%\x1b[39m")


def test_a_step_is_its_tokens_over_torchtitans_tps_and_its_tflops_the_suites_model_flops():
    # Llama-3.1-8B cut to 8 layers at 8192, batch 1: 6 * 2,270,167,040 active weights * 8192
    # tokens + 8 layers * 6 * 8192^2/2 pairs * (128 + 128) * 32 heads = 124.777389883392 TFLOP
    text = "\n".join([WORKLOAD, INIT, step_line(1, "1,024", "55.00"), step_line(2, "25,000"),
                      step_line(3, "25,515", "61.25"), step_line(4, "25,515")])
    recs = tool.records(tool.parse(text), CONFIG, warmup=2, log="t.log")
    steps, summary = recs[:-1], recs[-1]
    assert [r["warmup"] for r in steps] == [True, True, False, False]
    assert steps[1]["step_ms"] == pytest.approx(8192 / 25000 * 1e3)
    assert steps[1]["tflops_per_gpu"] == pytest.approx(380.7903744)        # 124.777389883392 * 25000 / 8192
    assert summary["status"] == "ok" and summary["steps"] == 2
    assert summary["step_ms"] == pytest.approx(321.0660395845581)           # 8192 / 25515 s
    assert summary["tflops_per_gpu"] == pytest.approx(388.63465611264)      # 124.777389883392 * 25515 / 8192
    assert summary["model_tflop_per_step"] == pytest.approx(124.777389883392)
    assert summary["peak_mem_gib"] == 61.25                                 # the largest, warmup included
    assert summary["titan_tflops"] == 401.23
    assert {k: summary[k] for k in ("stack", "precision", "seq_len", "batch_size", "num_layers", "attn")} == {
        "stack": "torchtitan", "precision": "bf16", "seq_len": 8192, "batch_size": 1, "num_layers": 8, "attn": "sdpa"}


def test_a_validation_line_is_not_a_step_and_a_run_without_steps_is_a_failed_record():
    validate = ("[titan] 2026-12-07 10:01:09,000 - root - INFO - validate step:  5  loss:  7.1234  "
                "memory: 40.00GiB(50.00%)  tps: 99,999")
    parsed = tool.parse("\n".join([WORKLOAD, INIT, validate]))
    assert parsed["steps"] == []
    crash = "\n".join([WORKLOAD, INIT, "Traceback (most recent call last):",
                       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB"])
    (rec,) = tool.records(tool.parse(crash), CONFIG, warmup=2, log="t.log")
    assert rec["status"] == "failed" and rec["error"].startswith("torch.OutOfMemoryError: CUDA out of memory")
    assert rec["seq_len"] == 8192 and rec["precision"] == "bf16"


def test_the_tool_writes_a_json_line_per_record_and_exits_1_when_a_run_failed(tmp_path, capsys):
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text("\n".join([WORKLOAD, INIT] + [step_line(i, "25,515") for i in range(1, 5)]) + "\n")
    bad.write_text(WORKLOAD + "\n")
    config = str(REPO / "configs" / "llama-3.1-8b.json")
    assert tool.main([str(good), "--config", config]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["kind"] for r in lines] == ["step"] * 4 + ["summary"]
    assert tool.main([str(good), str(bad), "--config", config]) == 1
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["error"] == "no step line in the log"
    assert tool.run_main(tool.main, [str(tmp_path / "none.log"), "--config", config]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'none.log'}: cannot be read")
