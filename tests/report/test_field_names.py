"""Every string key the report reads from a record or a row (`.get("...")`, `x["..."]`) is a name
the log's schema defines (log/schema.FIELDS, any part of a dotted name, the envelope, the
training settings a header's config records) or one of the few keys of the report's own that
are listed below with where they come from: a misspelt field reads as "no data" without a
word, and fails here instead. The forecast's rows are the forecast's (not scanned here)."""
import re

from conftest import REPO
from upgrade_bench.log import schema
from upgrade_bench.training import variables

REPORT = REPO / "upgrade_bench" / "report"
KEY = re.compile(r"""(?:\.get\(|(?<=[\w\])])\[)["']([A-Za-z_]\w*)["']""")
# Keys that are no schema field, by where they come from.
OWN = {
    # added to each record as it is read (read/inputs.py, read/series.py: a run under a profiler)
    "log_file", "stack", "instrumented",
    # settings of other scripts' configs and environments: a published run's container, NCCL's network
    "CONTAINER", "NCCL_NET",
    # a `health:` capability's value (schema: `value any`): its faults and NVLink fields per GPU
    "faults", "nvlink_links_active",
    # a decomposition's buckets (the `buckets` field's own keys)
    "time_share",
    # the report's own rows still built as dicts: the decomposition and attention rows of
    # compare/ that page/details.py writes, and points.csv's columns (page/export.py)
    "base_ms", "base_share", "base_tflops", "other_ms", "other_share", "other_tflops", "bucket", "speedup",
    "configuration", "ratios", "all_reduce", "copy", "usd_per_gpu_hour", "usd_per_mtok",
    "usd_per_mtok_whole_model",
}


def known() -> set:
    names = {part for group in schema.FIELDS.values() for name in group for part in name.split(".")}
    return names | set(schema.ENVELOPE) | {v.name for v in variables.TRAINING_VARS} | OWN


def keys_read() -> dict:
    found = {}
    for path in REPORT.rglob("*.py"):
        if "forecast" not in path.relative_to(REPORT).parts:
            for key in KEY.findall(path.read_text()):
                found.setdefault(key, set()).add(path.relative_to(REPORT).as_posix())
    return found


def test_the_scan_finds_keys_read():
    assert KEY.findall('p.get("step_ms") + r["seq_len"] + ["a", "b"]') == ["step_ms", "seq_len"]
    assert {"step_ms", "seq_len", "tflops_per_gpu"} <= set(keys_read())


def test_every_key_the_report_reads_is_a_schema_field_or_its_own():
    unknown = {k: sorted(v) for k, v in keys_read().items() if k not in known()}
    assert unknown == {}, "a key no record or row of the report has (misspelt?)"


def test_each_own_key_is_still_read():
    assert sorted(OWN - set(keys_read())) == []  # one no longer read leaves the list
