"""JSON-lines records: the only interface between the benchmarks and plot_results.py.

Every record carries `kind`, `schema`, `script` and `run_id`. A writer prints each record as
one line on stdout and, when given a path, appends it to that file whole or not at all
(`append_line`): a killed run loses at most the line being written, a full disk leaves the
file as it was before the record, and a record never runs into a line a killed writer left
unfinished. Floats that are not finite become null: JSON has no NaN, and a reader must never
choke on our own output.
"""
import json
import math
import os
import sys
import tempfile
import time
import uuid
from collections import Counter

from . import checks, schema
from .schema import SCHEMA
from ..faults import BadInput, WriteFailed


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


def _open_for_append(path: str) -> int:
    # Read access too: append_line reads the last byte to end a partial line.
    return os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)


def append_line(path: str, text: str) -> None:
    """Append `text` (a line, or lines) to `path` whole, or raise OSError leaving it as it was.

    A last line without its newline (a writer killed mid-line) is ended first, so `text`
    never runs into it. A write that fails part-way (a full disk) is cut back off: no
    partial line is left. The cut assumes nobody else appended meanwhile, which holds for
    our files: a sweep and its benchmark process take turns, and only rank 0 writes.
    """
    data = text.encode("utf-8")
    fd = _open_for_append(path)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            view = memoryview(data)
            while view:  # a short write (the disk filling up) is followed by an error
                view = view[os.write(fd, view):]
        except OSError:
            os.ftruncate(fd, size)
            raise
    finally:
        os.close(fd)


def output_problem(path: str) -> str | None:
    """Why records cannot be appended to `path`, or None.

    A real attempt that leaves nothing behind: permission bits cannot tell (root passes
    them, and /proc or a read-only mount refuse only the write itself). An existing file
    gets a zero-byte append; a new one, a temporary file in the nearest existing folder.
    """
    if os.path.isdir(path):
        return "is a folder"
    if os.path.exists(path):
        if not os.path.isfile(path):
            return "is not a regular file"
        try:
            fd = _open_for_append(path)
            try:
                os.write(fd, b"")
            finally:
                os.close(fd)
        except OSError as err:
            return err.strerror or str(err)
        return None
    return folder_problem(os.path.dirname(os.path.abspath(path)))


def folder_problem(path: str) -> str | None:
    """Why files cannot be created in folder `path` (made first if missing), or None: a
    temporary file in its nearest existing ancestor, removed at once; makes nothing."""
    parent = os.path.abspath(path)
    problem = length_problem(parent)
    if problem:
        return problem
    while not os.path.lexists(parent):
        parent = os.path.dirname(parent)
    if os.path.islink(parent) and not os.path.exists(parent):
        return f"{parent} is a symbolic link that leads nowhere (a loop, or a target that is gone)"
    if not os.path.isdir(parent):
        return f"{parent} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as err:
        return f"no file can be created in {parent}: {err.strerror or err}"
    return None


def length_problem(path: str) -> str | None:
    """A path longer than the system allows, or with a name longer than a folder may hold
    (both in bytes): a path that merely does not exist yet would make mkdir fail later."""
    name_max = os.pathconf("/", "PC_NAME_MAX")
    path_max = os.pathconf("/", "PC_PATH_MAX")
    if len(os.fsencode(path)) >= path_max:
        return f"the path is {len(os.fsencode(path))} bytes long; a path here has fewer than {path_max}"
    longest = max(os.fsencode(path).split(b"/"), key=len)
    if len(longest) > name_max:
        return f"a name in it is {len(longest)} bytes long; a file name here has at most {name_max}"
    return None


def record(kind: str, script: str, run_id: str, time_s: float | None, **fields) -> dict:
    """A record as written: the envelope, then `fields`, ready for JSON (tuples as lists,
    non-finite floats as null); checks.RecordError if log/schema.py does not allow it."""
    made = _clean({"kind": kind, "schema": SCHEMA, "script": script, "run_id": run_id, "time": time_s,
                   **fields})
    problem = checks.write_problem(made)
    if problem:
        raise checks.RecordError(problem)
    return made


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
        """Print and append one record (see `record`: a field the schema does not allow raises
        before anything is written); the record."""
        made = record(kind, self.script, self.run_id, round(time.time(), 3), **fields)
        if not self.enabled:
            return made
        line = json.dumps(made, allow_nan=False, default=str) + "\n"
        self.stream.write(line)
        self.stream.flush()
        if self.output:
            try:
                append_line(self.output, line)
            except OSError as err:
                raise WriteFailed(f"cannot append to {self.output} ({err.strerror or err}): stopped "
                                  f"at this {kind!r} record; every record before it is in the "
                                  f"file, whole") from None
        return made


class SchemaTooNew(ValueError):
    pass


# Set by the reader, never written: the keys of a record whose number (or a number within) was
# NaN, Infinity or past a float's range, each read as null. A loss that is not finite is a run
# that diverged (report/read/series.py), which a null alone would hide as "not recorded".
NONFINITE = "nonfinite"
_NOT_FINITE = object()


def _loads(line: str):
    """JSON with NaN, Infinity and overflowing floats (1e400) read as null, as the writer
    writes them (a non-finite number is never a result), and the keys that held one in NONFINITE."""
    seen = []

    def not_finite(_=None):
        seen.append(True)
        return _NOT_FINITE

    def number(text: str):
        value = float(text)
        return value if math.isfinite(value) else not_finite()

    value = json.loads(line, parse_constant=not_finite, parse_float=number)
    return _nulled(value) if seen else value


def _nulled(value):
    """`value` with every _NOT_FINITE as null; an object's keys that held one listed in NONFINITE
    (walked with its own stack: a line may nest as deep as the JSON reader goes)."""
    if value is _NOT_FINITE:
        return None
    if not isinstance(value, (dict, list)):
        return value
    keys = value.keys() if isinstance(value, dict) else range(len(value))
    marked = []
    for key in list(keys):
        found, stack = False, [(value, key)]
        while stack:
            parent, k = stack.pop()
            item = parent[k]
            if item is _NOT_FINITE:
                parent[k], found = None, True
            elif isinstance(item, dict):
                stack += [(item, j) for j in item]
            elif isinstance(item, list):
                stack += [(item, j) for j in range(len(item))]
        if found:
            marked.append(key)
    if isinstance(value, dict) and marked:
        value[NONFINITE] = marked
    return value


def schema_problem(record: dict, source: str, number: int) -> str | None:
    """Why a record's `schema` is unreadable (None when it is fine); SchemaTooNew when it
    names a newer schema in any spelling (2, 2.0, "999")."""
    if "schema" not in record:
        return None
    value = record["schema"]
    try:
        schema = float(value) if isinstance(value, (int, float, str)) and not isinstance(value, bool) else None
    except (ValueError, OverflowError):
        schema = None
    if schema is None or not math.isfinite(schema) or schema < 1:
        return f"schema {str(value)[:20]!r} is not a schema number"
    if schema > SCHEMA:
        raise SchemaTooNew(f"{source}:{number}: record schema {value!r} is newer than this "
                           f"code reads ({SCHEMA}); update the suite")
    return None


def iter_records(lines, source: str = "<input>", skipped=None):
    """Records of JSONL lines, one at a time; each skipped line adds its reason to the
    `skipped` Counter (when given). A newer schema raises SchemaTooNew.

    Blank lines are ignored; a UTF-8 byte-order mark at a line's start is dropped; malformed
    or truncated lines, non-record JSON and records whose `kind` is no string are skipped,
    so a log cut off by a crash still reads.
    """
    for number, line in enumerate(lines, 1):
        line = line.lstrip("\ufeff").strip()
        if not line:
            continue
        try:
            record = _loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError, too many digits, too deep
            reason = "not JSON"
        else:
            if not isinstance(record, dict):
                reason = f"a JSON {type(record).__name__}, not a record"
            elif "kind" not in record:
                reason = "no kind"
            elif not isinstance(record["kind"], str):
                reason = f"kind is a {type(record['kind']).__name__}, not a name"
            elif not record["kind"]:
                reason = "kind is empty"
            else:
                reason = schema_problem(record, source, number)
        if reason:
            if skipped is not None:
                skipped[reason] += 1
            continue
        record["log_file"] = source
        yield record


def read_lines(lines, source: str = "<input>"):
    """Parse JSONL lines into (records, skipped_count); newer schema -> SchemaTooNew."""
    skipped = Counter()
    records = list(iter_records(lines, source, skipped))
    return records, sum(skipped.values())


def read_log(path: str, name: str) -> list[dict]:
    """The records of a log the user named in setting `name` (OUT, CAPACITY_LOG), none if it
    does not exist yet; BadInput when it is no UTF-8 file of records this code can read."""
    if not os.path.exists(path):
        return []
    problem = None
    if not os.path.isfile(path):
        problem = "not a regular file"  # a folder, or /dev/zero: a read that never ends
    else:
        try:
            with open(path, encoding="utf-8") as f:
                found = read_lines(f, path)[0]
            # the report's checks: a run_id that is a list, a config that is text, a seq_len
            # in words make a record unusable here too, never a crash later
            return [r for r in found if r.get("kind") not in schema.FIELDS or not checks.field_problem(r)]
        except UnicodeDecodeError as err:  # a binary or UTF-16 file
            problem = f"not UTF-8 JSON lines ({err.reason} at byte {err.start})"
        except (OSError, SchemaTooNew) as err:
            problem = f"cannot be read ({err})"
    raise BadInput(f"{name}={path!r}: {problem}")
