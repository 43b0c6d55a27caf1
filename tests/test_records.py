"""JSONL records, failures and their exit codes, and the engine's pure helpers."""
import io
import json

import pytest
import torch

from conftest import mount_tmpfs, unmount
from upgrade_bench import engine, faults, records
from upgrade_bench.faults import BadInput


def test_every_record_has_the_contract_fields_and_is_appended(tmp_path):
    out = tmp_path / "sub" / "log.jsonl"
    stream = io.StringIO()
    writer = records.RecordWriter("x.py", str(out), run_id="r1", stream=stream)
    writer.write("step", step_ms=float("nan"), vals=[float("inf"), 1.0])
    writer.write("summary", tflops_per_gpu=1.5)
    lines = out.read_text().splitlines()
    assert stream.getvalue().splitlines() == lines
    first = json.loads(lines[0])
    assert {k: first[k] for k in ("kind", "schema", "script", "run_id")} == {
        "kind": "step", "schema": records.SCHEMA, "script": "x.py", "run_id": "r1"}
    assert first["step_ms"] is None and first["vals"] == [None, 1.0]  # JSON has no NaN


def test_disabled_writer_writes_nothing(tmp_path):
    stream = io.StringIO()
    records.RecordWriter("x.py", str(tmp_path / "log"), enabled=False, stream=stream).write("step")
    assert stream.getvalue() == "" and not (tmp_path / "log").exists()


def test_a_record_never_runs_into_a_partial_last_line(tmp_path):
    out = tmp_path / "p.jsonl"
    out.write_text('{"kind": "step", "schema": 1, "scrip')  # a writer killed mid-line
    records.RecordWriter("x.py", str(out), stream=io.StringIO()).write("header")
    lines = out.read_text().splitlines()
    assert lines[0] == '{"kind": "step", "schema": 1, "scrip'
    recs, skipped = records.read_lines(lines)
    assert [r["kind"] for r in recs] == ["header"] and skipped == 1
    assert out.read_text().endswith("\n")


def test_a_full_disk_stops_the_writer_leaving_every_earlier_record_whole(small_disk):
    out = small_disk / "night.jsonl"
    stream = io.StringIO()
    writer = records.RecordWriter("x.py", str(out), run_id="r1", stream=stream)
    step = 0
    with pytest.raises(faults.WriteFailed, match=r"night.jsonl \(No space left on device\): "
                                                  r"stopped at this 'step' record"):
        for step in range(10_000):
            writer.write("step", step=step, pad="x" * 100)
    text = out.read_text()
    assert text.endswith("\n")  # the line the disk cut short was taken back off
    recs, skipped = records.read_lines(text.splitlines())
    assert skipped == 0 and [r["step"] for r in recs] == list(range(step))
    assert len(stream.getvalue().splitlines()) == step + 1  # stdout has the one the file could not


def test_run_main_makes_a_write_failure_one_line_and_exit_4(capsys):
    def main():
        raise faults.WriteFailed("cannot append to /x (No space left on device): stopped")

    assert faults.run_main(main) == faults.EXIT_WRITE_FAILED == 4
    assert capsys.readouterr().err == "error: cannot append to /x (No space left on device): stopped\n"


def test_run_main_makes_bad_input_one_line_and_exit_2_and_passes_everything_else_on(capsys):
    def main(name):
        raise BadInput(f"{name}='x': expected an integer")

    assert faults.run_main(main, "STEPS") == faults.EXIT_BAD_INPUT == 2
    assert capsys.readouterr().err == "error: STEPS='x': expected an integer\n"
    assert faults.run_main(lambda: 0) == 0
    with pytest.raises(KeyError):  # a bug is no bad input: its traceback stays
        faults.run_main(lambda: {}["x"])


@pytest.mark.parametrize("path, problem", [
    ("TMP", "is a folder"),
    ("TMP/file/sub/log.jsonl", "TMP/file is a file, not a folder"),
    ("/dev/null", "is not a regular file"),
    ("/proc/log.jsonl", "no file can be created in /proc"),
    ("/proc/version", ""),  # opens for root; the write itself is refused
])
def test_an_output_that_cannot_be_appended_to_is_found_by_trying(tmp_path, path, problem):
    (tmp_path / "file").write_text("")
    found = records.output_problem(path.replace("TMP", str(tmp_path)))
    assert found and problem.replace("TMP", str(tmp_path)) in found


def test_an_output_that_can_be_appended_to_is_left_as_it_was(tmp_path):
    existing = tmp_path / "old.jsonl"
    existing.write_text("x\n")
    assert records.output_problem(str(existing)) is None and existing.read_text() == "x\n"
    assert records.output_problem(str(tmp_path / "new" / "log.jsonl")) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl"]  # nothing created


def test_an_output_on_a_read_only_file_system_is_refused(tmp_path):
    if not mount_tmpfs(tmp_path, "ro,size=4k"):
        pytest.skip("no tmpfs can be mounted here")
    try:
        assert "Read-only file system" in records.output_problem(str(tmp_path / "log.jsonl"))
    finally:
        unmount(tmp_path)


def test_reader_skips_garbage_and_counts_it():
    lines = ['{"kind": "header", "schema": 1, "run_id": "a"}', "not json", '{"kind": "st',
             "[1, 2]", "", '{"kind": "summary", "schema": 1, "run_id": "a"}']
    recs, skipped = records.read_lines(lines, "f.jsonl")
    assert [r["kind"] for r in recs] == ["header", "summary"] and skipped == 3


def test_reader_refuses_a_newer_schema():
    with pytest.raises(records.SchemaTooNew, match="f.jsonl:1: record schema 99"):
        records.read_lines(['{"kind": "summary", "schema": 99}'], "f.jsonl")


def test_arch_list_loses_suffixes_deepspeed_cannot_parse():
    assert engine.sanitize_arch_list("9.0a") == "9.0"
    assert engine.sanitize_arch_list("8.0;9.0a;10.0a+PTX") == "8.0;9.0;10.0+PTX"
    assert engine.sanitize_arch_list("10.0f 12.0") == "10.0 12.0"


def test_oom_classification():
    assert faults.is_oom(torch.OutOfMemoryError("CUDA out of memory"))
    assert faults.is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not faults.is_oom(RuntimeError("shape mismatch"))
    assert faults.exit_code_for(torch.OutOfMemoryError("x")) == 3
    assert faults.exit_code_for(ValueError("x")) == 1


def test_packed_batch_positions_and_labels():
    batch = engine.make_batch(2, 10, 4, 50, torch.device("cpu"), torch.Generator().manual_seed(0))
    assert batch["position_ids"][0].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    # the first token of documents 2 and 3 is never predicted from the previous document
    assert (batch["labels"][:, [4, 8]] == -100).all()
    assert (batch["labels"][:, [0, 1, 5, 9]] == batch["input_ids"][:, [0, 1, 5, 9]]).all()
    assert batch["use_cache"] is False and int(batch["input_ids"].max()) < 50


def test_token_limit_stays_below_special_tokens():
    from upgrade_bench import model

    assert engine.token_limit(model.load_config("llama-3.1-8b")) == 128000
    assert engine.token_limit(model.load_config("tiny")) == 1000


def test_process_env_fixes_the_arch_list_before_deepspeed_reads_it():
    environ = {"TORCH_CUDA_ARCH_LIST": "9.0a", "RANK": "1"}
    engine.prepare_process_env(environ)
    assert environ == {"TORCH_CUDA_ARCH_LIST": "9.0", "RANK": "1"}  # a launched rank keeps its world
    single = {}
    engine.prepare_process_env(single)
    assert single == {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"}  # no port
