"""What plot_results.py reads: records.read_lines on hostile lines, inputs.read's choice of records."""
import json
from collections import Counter

import pytest

from upgrade_bench.log import records, schema
from upgrade_bench.report.read import inputs, series


def test_non_finite_numbers_read_as_null_like_the_writer_writes_them():
    lines = ['{"kind": "summary", "step_ms": NaN, "tokens_per_s_per_gpu": Infinity, '
             '"mfu": -Infinity, "tflops_per_gpu": 1e400, "seq_len": 8192}']
    (r,), skipped = records.read_lines(lines, "f.jsonl")
    assert skipped == 0
    assert (r["step_ms"], r["tokens_per_s_per_gpu"], r["mfu"], r["tflops_per_gpu"]) == (None,) * 4
    assert r["seq_len"] == 8192 and r["log_file"] == "f.jsonl"


@pytest.mark.parametrize("schema", ['"999"', "2.0", "2", '" 7 "', "1e3"])
def test_a_newer_schema_in_any_spelling_is_refused(schema):
    with pytest.raises(records.SchemaTooNew, match="f.jsonl:2: record schema .* newer than this code"):
        records.read_lines(['{"kind": "header", "schema": 1}', '{"kind": "summary", "schema": %s}' % schema],
                           "f.jsonl")


def test_unreadable_schemas_kinds_and_a_bom_are_counted_with_their_reason():
    skipped = Counter()
    lines = ['\ufeff{"kind": "header", "schema": 1, "run_id": "a"}',   # a BOM: still a header
             '{"kind": ["summary"], "schema": 1}', '{"kind": "", "schema": 1}',
             '{"kind": "summary", "schema": "one"}', '{"kind": "summary", "schema": true}',
             '{"kind": "summary", "schema": 0}', '{"kind": "summary", "schema": 1.0}',
             '[1]', '{"schema": 1}', '{"kind": "summ', "9" * 5000, "[" * 100000]
    got = list(records.iter_records(lines, "f.jsonl", skipped))
    assert [r["kind"] for r in got] == ["header", "summary"]
    assert skipped == Counter({"not JSON": 3, "kind is a list, not a name": 1, "kind is empty": 1,
                               "schema 'one' is not a schema number": 1,
                               "schema 'True' is not a schema number": 1,
                               "schema '0' is not a schema number": 1,
                               "a JSON list, not a record": 1, "no kind": 1})


def test_a_backend_that_cannot_run_is_read_and_an_ok_point_without_a_length_is_skipped(tmp_path):
    # bench_flash_attn.py writes one record, without seq_len, for a backend that cannot run:
    # the report once counted every such record as skipped ("no seq_len") and warned about it.
    log = tmp_path / "attn.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [
        {"kind": "header", "schema": 1, "run_id": "r", "hardware": {"gpu_name": "NVIDIA H200"}},
        {"kind": "attention", "schema": 1, "run_id": "r", "backend": "fa3", "seq_len": None, "pass": None,
         "status": "unavailable", "reason": "flash-attn-3 is not installed"},
        {"kind": "attention", "schema": 1, "run_id": "r", "backend": "sdpa-flash", "seq_len": None,
         "pass": "fwd", "status": "ok", "tflops": 300.0},
        {"kind": "step", "schema": 1, "run_id": "r", "seq_len": 8192, "step": 0}]) + "\n")
    tally = inputs.Tally()
    read = list(inputs.read([str(log)], tally))
    assert [(r["kind"], r.get("status")) for r in read] == [("header", None), ("attention", "unavailable")]
    assert tally.skipped == {str(log): Counter({"attention record: no seq_len": 1})}  # `step`: not read


def test_what_the_report_keeps_of_a_header_is_what_the_schema_declares_for_it():
    # series.py keeps a few header fields as it reads; each is declared once, in log/schema.py
    declared = set(schema.ENVELOPE) | {name.split(".")[0] for name in schema.FIELDS["header"]}
    assert set(series.HEADER_FIELDS) <= declared
    assert set(series.KINDS_READ) <= set(schema.FIELDS)


def test_series_load_skips_a_kind_the_report_does_not_read_instead_of_raising():
    header = {"kind": "header", "schema": 1, "script": "benchmark.py", "run_id": "r", "time": 0.0,
              "hardware": {"gpu_name": "NVIDIA H200"}, "config": {}}
    mark = {"kind": "memory", "schema": 1, "script": "benchmark.py", "run_id": "r", "time": 0.0, "stage": "x"}
    data = series.load([header, mark])
    assert list(data.gpus) == ["H200 SXM"] and data.series == []
