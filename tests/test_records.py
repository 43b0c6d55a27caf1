"""upgrade_bench.log.records: the JSONL writer and reader, and the check that an output can be
appended to."""
import io
import json
import re

import pytest

from conftest import mount_tmpfs, unmount
from upgrade_bench import faults
from upgrade_bench.log import checks, records


def test_every_record_has_the_contract_fields_and_is_appended(tmp_path):
    out = tmp_path / "sub" / "log.jsonl"
    stream = io.StringIO()
    writer = records.RecordWriter("x.py", str(out), run_id="r1", stream=stream)
    writer.write("step", step_ms=float("nan"), seq_len=64)
    writer.write("summary", seq_len=64, tflops_per_gpu=1.5, throttle=("a", "b"))
    lines = out.read_text().splitlines()
    assert stream.getvalue().splitlines() == lines
    first, second = map(json.loads, lines)
    assert {k: first[k] for k in ("kind", "schema", "script", "run_id")} == {
        "kind": "step", "schema": 1, "script": "x.py", "run_id": "r1"}
    assert first["step_ms"] is None and second["throttle"] == ["a", "b"]  # JSON has no NaN, no tuple


@pytest.mark.parametrize("kind, fields, problem", [
    ("step", {"seq_len": 64, "stepms": 1.0}, "step record: stepms not declared in log/schema.py"),
    ("summary", {"seq_len": "64"}, "summary record: seq_len is str '64', not a whole number"),
    ("summary", {"seq_len": 64, "peak_mem_gib": [1.0, 2.0]}, "summary record: peak_mem_gib is list"),
    ("summary", {"seq_len": True}, "summary record: seq_len is bool True"),
    ("summary", {"tflops_per_gpu": 1.0}, "summary record: no seq_len"),
    ("attention", {"backend": "fa4", "status": "ok"}, "attention record: no seq_len"),  # only `unavailable` has none
    ("header", {"config": {"SEQ_LEN": {"a": 1}}}, "header record: config.SEQ_LEN is dict"),
    ("steps", {}, "kind 'steps' is not declared in log/schema.py"),
])
def test_a_record_the_schema_does_not_allow_is_refused_before_anything_is_written(tmp_path, kind, fields,
                                                                                   problem):
    out = tmp_path / "log.jsonl"
    stream = io.StringIO()
    writer = records.RecordWriter("x.py", str(out), run_id="r1", stream=stream)
    writer.write("step", seq_len=64, step=0)
    for enabled in (True, False):  # every rank checks, not only the one that writes
        writer.enabled = enabled
        with pytest.raises(checks.RecordError, match=f"^{re.escape(problem)}"):
            writer.write(kind, **fields)
    assert [json.loads(line)["kind"] for line in out.read_text().splitlines()] == ["step"]
    assert len(stream.getvalue().splitlines()) == 1


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
            writer.write("step", step=step, loss=0.1)
    text = out.read_text()
    assert text.endswith("\n")  # the line the disk cut short was taken back off
    recs, skipped = records.read_lines(text.splitlines())
    assert skipped == 0 and [r["step"] for r in recs] == list(range(step))
    assert len(stream.getvalue().splitlines()) == step + 1  # stdout has the one the file could not


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


@pytest.mark.parametrize("content, problem", [
    ('{"kind": "summary", "schema": "2", "script": "benchmark.py", "run_id": "x"}\n',
     "cannot be read ("),
    (b"\xff\xfe\x00binary", "not UTF-8 JSON lines (invalid start byte at byte 0)"),
])
def test_a_log_the_user_named_that_cannot_be_read_is_bad_input(tmp_path, content, problem):
    # RESUME reads OUT, check_capabilities reads CAPACITY_LOG: one line, never a traceback.
    from upgrade_bench.sweep import plan as sweep_plan

    path = tmp_path / "log.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(faults.BadInput) as err:
        sweep_plan.existing_records(str(path))
    assert str(err.value).startswith(f"OUT={str(path)!r}: {problem}")
    assert records.read_log(str(tmp_path / "not-yet.jsonl"), "OUT") == []
    with pytest.raises(faults.BadInput, match="not a regular file"):
        records.read_log(str(tmp_path), "OUT")
