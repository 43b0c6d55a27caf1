"""What plot_results.py reads: input arguments to files, files to checked records, one at a time.

A folder argument reads its *.jsonl and those of its `reference/` subfolder, where published
figures ship (results/reference/guide.jsonl); a glob reads the regular files it matches;
`-` reads stdin. Anything else that is no regular file (a device such as /dev/zero, a named
pipe, a socket) is refused with what it is.

Lines are parsed by records.iter_records. A record whose fields the report uses have the
wrong type or an impossible value (`tflops_per_gpu: "200"`, `step_ms: 0`, `config: []`) is
skipped and counted with its reason, like a malformed line. Records of kinds the report does
not use (`step`, `matmul`, `sweep`, ...) are dropped as they are read, and a record seen
before (the capacity log repeats the sweep's summaries) is kept once.
"""
import glob
import hashlib
import io
import json
import os
import stat
import sys
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field

from .. import records
from . import text
from ..faults import BadInput

REFERENCE_FOLDER = "reference"
MAX_LINE_CHARS = 16 * 2**20     # a longer line is no record of this suite (a binary file)
MAX_INT = 2**53                 # counts and lengths beyond this are no measurement
MAX_NUMBER = 1e15               # nor is any figure the report reads (and plotting overflows)


# ---------------------------------------------------------------- arguments to paths

def expand(args) -> list:
    """Input arguments -> paths (and '-'), in order, without repeats; BadInput names a bad one."""
    paths = []
    for arg in args:
        paths += [p for p in _paths_of(arg) if p not in paths]
    return paths


def _kind_of(mode: int) -> str:
    for test, what in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


def _paths_of(arg: str) -> list:
    if arg == "-":
        return ["-"]
    try:
        mode = os.stat(arg).st_mode
    except FileNotFoundError:
        matches = sorted(glob.glob(arg))
        found = [p for p in matches if os.path.isfile(p)]
        if not found:
            raise BadInput(f"input {arg!r}: no such file or folder, and no file matches it as a glob"
                             + (f" (it matches {len(matches)} entries, none a regular file)" if matches else ""))
        return found
    except OSError as err:
        raise BadInput(f"input {arg!r}: {err.strerror}") from None
    if stat.S_ISDIR(mode):
        folder = glob.escape(arg)
        found = [p for pattern in (os.path.join(folder, "*.jsonl"),
                                   os.path.join(folder, REFERENCE_FOLDER, "*.jsonl"))
                 for p in sorted(glob.glob(pattern)) if os.path.isfile(p)]
        if not found:
            raise BadInput(f"input {arg!r}: a folder with no *.jsonl file (nor in its {REFERENCE_FOLDER}/)")
        return found
    if stat.S_ISREG(mode):
        return [arg]
    hint = "; to read a pipe, give it on stdin as '-'" if stat.S_ISFIFO(mode) else ""
    raise BadInput(f"input {arg!r}: {_kind_of(mode)}, not a file of JSON lines{hint}")


# ---------------------------------------------------------------- field checks

def _is_number(v) -> bool:
    """A finite number within MAX_NUMBER (NaN compares false; a huge int never becomes a float)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and abs(v) <= MAX_NUMBER


def _is_count(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 < v <= MAX_INT


def _is_setting(v) -> bool:
    scalar = (str, int, float, bool, type(None))
    return isinstance(v, scalar) or (isinstance(v, list) and all(isinstance(x, scalar) for x in v))


POSITIVE = (lambda v: _is_number(v) and v > 0, "a positive number")
NON_NEGATIVE = (lambda v: _is_number(v) and v >= 0, "a number >= 0")
SHARE = (lambda v: _is_number(v) and 0 <= v <= 1, "a fraction from 0 to 1")
COUNT = (_is_count, f"a whole number from 1 to {MAX_INT}")
SIZE = (lambda v: v == 0 or _is_count(v), "a whole number >= 0")
TEXT = (lambda v: isinstance(v, str), "text")
FLAG = (lambda v: isinstance(v, bool), "true or false")
OBJECT = (lambda v: isinstance(v, dict), "an object")
LIST = (lambda v: isinstance(v, list), "a list")
SETTING = (_is_setting, "a value or a list of values")
PART = (lambda v: isinstance(v, dict) and all(v.get(k) is None or NON_NEGATIVE[0](v[k])
                                              for k in ("tflop", "ms", "tflops", "mfu", "time_share")),
        "an object of numbers >= 0 (tflop, ms, tflops, mfu, time_share)")

# kind -> {field: check}; "a.b" is field b of object a (and so on down), "a.*" every value of object a.
# Null is allowed everywhere (not recorded); REQUIRED fields must be there.
FIELDS = {
    "header": {"hardware": OBJECT, "hardware.gpu_name": TEXT, "hardware.gpu_count": SIZE,
               "hardware.hbm_gib": POSITIVE, "software": OBJECT, "software.*": SETTING,
               "config": OBJECT, "config.*": SETTING, "attn_backend": TEXT,
               "peak_tflops": POSITIVE, "notes": TEXT, "num_layers": COUNT,
               "layer_mix": OBJECT, "layer_mix.*": COUNT, "mixer_kernels": OBJECT,
               "mixer_kernels.*": TEXT},
    "summary": {"seq_len": COUNT, "batch_size": COUNT, "steps": COUNT, "step_ms": POSITIVE,
                "step_ms_min": POSITIVE, "step_ms_max": POSITIVE, "tflops_per_gpu": NON_NEGATIVE,
                "mfu": NON_NEGATIVE, "hfu": NON_NEGATIVE, "tokens_per_s_per_gpu": POSITIVE,
                "attn_flop_share": SHARE, "model_tflop_per_step": NON_NEGATIVE,
                "peak_mem_gib": NON_NEGATIVE, "peak_alloc_gib": NON_NEGATIVE, "world_size": COUNT,
                "attn_backend": TEXT, "sm_clock_mhz_median": NON_NEGATIVE,
                "sm_clock_mhz_min": NON_NEGATIVE, "power_w_mean": NON_NEGATIVE,
                "temp_c_max": NON_NEGATIVE, "throttle": LIST, "throttle.*": TEXT,
                "energy_j_per_token": NON_NEGATIVE, "earlier_points_in_process": SIZE},
    "error": {"seq_len": COUNT, "error": TEXT, "message": TEXT, "config": OBJECT, "config.*": SETTING},
    "decomposition": {"seq_len": COUNT, "wall_step_ms": POSITIVE, "attn_flop_share": SHARE,
                      "buckets": OBJECT, "buckets.*": PART, "buckets.other.moe_routing": PART,
                      "everything_else": PART, "total": PART},
    "capacity": {"max_fit_seq_len": COUNT, "min_fail_seq_len": COUNT, "peak_mem_gib_at_max": NON_NEGATIVE,
                 "hbm_gib": POSITIVE, "seq_len_step": COUNT, "config": OBJECT, "config.*": SETTING},
    "mamf": {"dtype": TEXT, "tflops_mean": POSITIVE, "tflops_median": POSITIVE, "tflops_max": POSITIVE,
             "peak_tflops": POSITIVE, "efficiency": NON_NEGATIVE, "m": COUNT, "n": COUNT, "k": COUNT},
    "capability": {"item": TEXT, "status": TEXT, "category": TEXT, "detail": TEXT},
    "attention": {"backend": TEXT, "pass": TEXT, "seq_len": COUNT, "tflops": NON_NEGATIVE,
                  "status": TEXT, "batch": COUNT, "heads": COUNT, "kv_heads": COUNT,
                  "head_dim": COUNT, "causal": FLAG, "dtype": TEXT, "packed_doc_len": SIZE,
                  "layer": TEXT, "v_head_dim": COUNT, "window": SIZE, "sinks": FLAG},
}
COMMON = {"run_id": TEXT, "script": TEXT, "reference": TEXT, "attn_backend": TEXT, "gpu_name": TEXT}
REQUIRED = {"summary": ("seq_len",), "decomposition": ("seq_len",), "attention": ("seq_len",),
            "capability": ("item", "status")}


def _values(record: dict, name: str):
    """(label, value) of a field: 'a.b' inside object a, 'a.*' every value of object a."""
    head, _, rest = name.partition(".")
    if not rest:
        return [(name, record.get(name))]
    inner = record.get(head)
    if isinstance(inner, list):
        return [(f"{head}[{i}]", v) for i, v in enumerate(inner)]
    if not isinstance(inner, dict):
        return []
    if "." in rest:  # deeper: 'a.b.c' is field c of object b of object a
        return [(f"{head}.{label}", v) for label, v in _values(inner, rest)]
    items = inner.items() if rest == "*" else [(rest, inner.get(rest))]
    return [(f"{head}.{k}", v) for k, v in items]


def _described(value) -> str:
    if isinstance(value, (int, float, bool)):
        return repr(value)
    return {str: "text", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def field_problem(record: dict) -> str | None:
    """Why a record of a kind the report reads cannot be used, or None."""
    kind = record["kind"]
    for name in REQUIRED.get(kind, ()):
        if record.get(name) is None:
            return f"no {name}"
    for name, (test, what) in {**COMMON, **FIELDS[kind]}.items():
        for label, value in _values(record, name):
            if value is not None and not test(value):
                if not isinstance(value, bool) and isinstance(value, (int, float)) and abs(value) > MAX_NUMBER:
                    shown = f"{value:.3g}" if isinstance(value, float) else \
                        f"a {len(str(abs(value)))}-digit integer"
                    return f"{label} is {shown}, beyond any measurement ({MAX_NUMBER:g})"
                return f"{label} is {_described(value)}, not {what}"
    low, mid, high = (record.get(k) for k in ("step_ms_min", "step_ms", "step_ms_max"))
    if None not in (low, mid, high) and not low <= mid <= high:
        return "step_ms is outside step_ms_min..step_ms_max"
    return None


# ---------------------------------------------------------------- files to records

@dataclass
class Tally:
    """What reading dropped, per source: reasons of skipped lines and records, duplicates."""
    skipped: dict = field(default_factory=dict)      # source -> Counter(reason)
    duplicates: Counter = field(default_factory=Counter)   # source -> records seen before
    seen_again: dict = field(default_factory=dict)   # run_id -> sources that repeat its records

    def skipped_total(self) -> int:
        return sum(sum(c.values()) for c in self.skipped.values())

    def skipped_lines(self, most: int = 8) -> list:
        """One line per source: how many were skipped and the commonest reasons."""
        out = []
        for source, reasons in self.skipped.items():
            if reasons:
                common = "; ".join(f"{n} x {why}" for why, n in reasons.most_common(most))
                more = len(reasons) - most
                out.append(f"{source}: {sum(reasons.values())} skipped ({common}"
                           + (f"; {more} other reasons" if more > 0 else "") + ")")
        return out


def _stream(path: str):
    """A context manager giving the text of a path ('-' is stdin), undecodable bytes replaced."""
    if path == "-":
        binary = getattr(sys.stdin, "buffer", None)
        return nullcontext(io.TextIOWrapper(binary, encoding="utf-8", errors="replace")
                           if binary is not None else sys.stdin)
    return open(path, encoding="utf-8", errors="replace")


def _lines(stream, skipped: Counter):
    """Lines of a stream; one longer than MAX_LINE_CHARS is counted and read past in chunks."""
    while True:
        line = stream.readline(MAX_LINE_CHARS)
        if not line:
            return
        if len(line) == MAX_LINE_CHARS and not line.endswith("\n"):
            skipped[f"a line longer than {MAX_LINE_CHARS // 2**20} MiB"] += 1
            while line and not line.endswith("\n"):
                line = stream.readline(MAX_LINE_CHARS)
            line = "\n"  # keeps the line numbers of later records right
        yield line


def _fingerprint(record: dict) -> bytes:
    text = json.dumps({k: v for k, v in record.items() if k != "log_file"}, sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def read(paths, tally: Tally):
    """The usable records of every path, in order, each once; BadInput ends the run."""
    seen = set()
    for path in paths:
        source = "<stdin>" if path == "-" else path
        skipped = tally.skipped.setdefault(source, Counter())
        try:
            with _stream(path) as stream:
                for record in records.iter_records(_lines(stream, skipped), source, skipped):
                    record = text.clean_record(record)
                    kind = record["kind"]
                    if kind not in FIELDS:
                        continue
                    problem = field_problem(record)
                    if problem:
                        skipped[f"{kind} record: {problem}"] += 1
                        continue
                    key = _fingerprint(record)
                    if key in seen:
                        tally.duplicates[source] += 1
                        tally.seen_again.setdefault(record.get("run_id"), set()).add(source)
                        continue
                    seen.add(key)
                    yield record
        except records.SchemaTooNew as err:
            raise BadInput(str(err)) from None
        except OSError as err:
            raise BadInput(f"input {path!r}: {err.strerror or err}") from None
