"""What plot_results.py reads: input arguments to files, files to checked records, one at a time.

A folder argument reads its *.jsonl and those of its `reference/` subfolder, where published
figures ship (results/reference/guide.jsonl); a glob reads the regular files it matches;
`-` reads stdin. Anything else that is no regular file (a device such as /dev/zero, a named
pipe, a socket) is refused with what it is.

Lines are parsed by records.iter_records. A record whose fields the report uses have the
wrong type or an impossible value (`tflops_per_gpu: "200"`, `step_ms: 0`, `config: []`) is
skipped and counted with its reason, like a malformed line; so is one that claims what its
GPU cannot do (claims.py: a format it has no tensor cores for, a figure above its datasheet
bound, which the tally also keeps whole for the node check to name). Records of kinds the report does
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

from ...log import records
from ...log.checks import field_problem
from ..text import escape as text
from .claims import IMPOSSIBLE, problem as impossible_claim
from .series import KINDS_READ
from ...faults import BadInput
from ...paths import file_kind

REFERENCE_FOLDER = "reference"
MAX_LINE_CHARS = 16 * 2**20     # a longer line is no record of this suite (a binary file)


# ---------------------------------------------------------------- arguments to paths

def expand(args) -> list:
    """Input arguments -> paths (and '-'), in order, without repeats; BadInput names a bad one."""
    paths = []
    for arg in args:
        paths += [p for p in _paths_of(arg) if p not in paths]
    return paths


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
    raise BadInput(f"input {arg!r}: {file_kind(mode)}, not a file of JSON lines{hint}")


# ---------------------------------------------------------------- files to records

@dataclass
class Tally:
    """What reading dropped, per source: reasons of skipped lines and records, duplicates."""
    skipped: dict = field(default_factory=dict)      # source -> Counter(reason)
    duplicates: Counter = field(default_factory=Counter)   # source -> records seen before
    seen_again: dict = field(default_factory=dict)   # run_id -> sources that repeat its records
    impossible: list = field(default_factory=list)   # (record, its header, why): above its GPU's bound

    def skipped_total(self) -> int:
        return sum(sum(c.values()) for c in self.skipped.values())

    def skipped_lines(self, most: int = 8, name=str) -> list:
        """One line per source (shown by `name`: text.md_text on the page): how many were
        skipped and the commonest reasons."""
        out = []
        for source, reasons in self.skipped.items():
            if reasons:
                common = "; ".join(f"{n} x {why}" for why, n in reasons.most_common(most))
                more = len(reasons) - most
                out.append(f"{name(source)}: {sum(reasons.values())} skipped ({common}"
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


def _claim(claims: dict, record: dict, source: str) -> None:
    """BadInput where a record of a published run (`reference` set), or one claiming a
    published run's id, comes from another file than that run's other records with other
    content: two files cannot both be one published run, and merged they would mix figures."""
    run_id, published = record.get("run_id"), bool(record.get("reference"))
    if run_id is None:
        return
    first, first_published = claims.setdefault(run_id, (source, published))
    if first != source and (published or first_published):
        raise BadInput(f"run {run_id!r} is published in {first!r} and claimed with other figures by {source!r}: "
                       f"one published run cannot come from two files; give only one of them")
    if published and not first_published:
        claims[run_id] = (first, True)


def read(paths, tally: Tally):
    """The usable records of every path, in order, each once; BadInput ends the run."""
    seen, claims = set(), {}
    for path in paths:
        headers = {}  # run_id -> its latest header in this file: the GPU a figure is bounded by
        source = "<stdin>" if path == "-" else text.clean(path)  # a name is shown: one line, encodable
        skipped = tally.skipped.setdefault(source, Counter())
        try:
            with _stream(path) as stream:
                for record in records.iter_records(_lines(stream, skipped), source, skipped):
                    if text.too_deep(record):
                        skipped[f"nested deeper than {text.MAX_DEPTH} levels"] += 1
                        continue
                    record = text.clean_record(record)
                    kind = record["kind"]
                    if kind not in KINDS_READ:
                        continue
                    run_id = record.get("run_id")
                    header = headers.get(run_id) if isinstance(run_id, str) else None
                    problem = field_problem(record) or impossible_claim(record, header)
                    if problem:
                        skipped[f"{kind} record: {problem}"] += 1
                        if problem.startswith(IMPOSSIBLE):
                            tally.impossible.append((record, header, problem))
                        continue
                    if kind == "header" and isinstance(run_id, str):
                        headers[run_id] = record
                    key = _fingerprint(record)
                    if key in seen:
                        tally.duplicates[source] += 1
                        tally.seen_again.setdefault(record.get("run_id"), set()).add(source)
                        continue
                    seen.add(key)
                    _claim(claims, record, source)
                    yield record
        except records.SchemaTooNew as err:
            raise BadInput(str(err)) from None
        except OSError as err:
            raise BadInput(f"input {path!r}: {err.strerror or err}") from None
