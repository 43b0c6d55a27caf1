"""JSON-lines records: the only interface between the benchmarks and plot_results.py.

Every record carries `kind`, `schema`, `script` and `run_id`. A writer prints each record as
one line on stdout and, when given a path, appends it to that file and flushes, so a killed
run loses at most the line being written. Floats that are not finite become null: JSON has
no NaN, and a reader must never choke on our own output.
"""
import json
import math
import os
import sys
import time
import uuid

SCHEMA = 1


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]


def _clean(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def claim_stdout():
    """A stream on the real stdout for records; everything else printed goes to stderr.

    DeepSpeed, its JIT builds and the launcher print to stdout (some from C code); moving
    fd 1 to stderr keeps a script's stdout pure JSON lines, fit for a pipe.
    """
    records = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stdout.flush()
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return records


class RecordWriter:
    """Writes records of one script run; only the writing rank should have enabled=True."""

    def __init__(self, script: str, output: str = "", run_id: str = "", enabled: bool = True,
                 stream=None):
        self.script = script
        self.output = output
        self.run_id = run_id or os.environ.get("RUN_ID") or new_run_id()
        self.enabled = enabled
        self.stream = stream or sys.stdout
        if output and enabled:
            parent = os.path.dirname(os.path.abspath(output))
            os.makedirs(parent, exist_ok=True)

    def write(self, kind: str, **fields) -> dict:
        record = {"kind": kind, "schema": SCHEMA, "script": self.script, "run_id": self.run_id,
                  "time": round(time.time(), 3), **fields}
        if not self.enabled:
            return record
        line = json.dumps(_clean(record), allow_nan=False, default=str)
        self.stream.write(line + "\n")
        self.stream.flush()
        if self.output:
            with open(self.output, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        return record


class SchemaTooNew(ValueError):
    pass


def read_lines(lines, source: str = "<input>"):
    """Parse JSONL lines into (records, skipped_count); newer schema -> SchemaTooNew.

    Blank lines are ignored; malformed or truncated lines and non-record JSON are skipped
    and counted, so a log cut off by a crash still reads.
    """
    records, skipped = [], 0
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if not isinstance(record, dict) or "kind" not in record:
            skipped += 1
            continue
        schema = record.get("schema", SCHEMA)
        if isinstance(schema, int) and schema > SCHEMA:
            raise SchemaTooNew(f"{source}:{number}: record schema {schema} is newer than this "
                               f"code reads ({SCHEMA}); update the suite")
        record["log_file"] = source
        records.append(record)
    return records, skipped
