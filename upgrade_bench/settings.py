"""Environment-variable settings: one declarative table per script, validated up front.

A script lists its `Var`s, calls `load(VARS, __doc__)`, and gets a frozen, typed settings
object read by attribute with each variable's own name (`s.SEQ_LEN`). Any bad
value raises faults.BadInput naming the variable, the value and what is allowed, before a
model or a GPU is touched (the script's run_main makes it one line and exit 2), and so does
a variable that looks like a setting but is none (MODLE for MODEL): a warning scrolled by
while the default 8B trained for an hour. `--help` prints the table.
"""
import difflib
import math
import os
import re
import sys
import copy
import functools
from dataclasses import asdict, dataclass, make_dataclass, replace

from .faults import BadInput
from .log.records import output_problem

# Exactly what --help and the README name ("0 or 1"): a "yes" or "on" is refused, not guessed.
_TRUE = {"1"}
_FALSE = {"0"}


@dataclass(frozen=True)
class Var:
    name: str
    kind: str  # int | float | bool | choice | str | int_list | str_list | output (a file appended to)
    default: object
    help: str
    choices: tuple = ()
    min: float | None = None
    max: float | None = None
    zero_means_unset: bool = False  # 0 (the default: "from the table") is taken below `min` too

    def allowed(self) -> str:
        if self.kind == "bool":
            return "0 or 1"
        if self.kind == "choice":
            return "one of " + "|".join(self.choices)
        if self.kind in ("int", "float", "int_list"):
            what = {"int": "an integer", "float": "a finite number",
                    "int_list": "space- or comma-separated integers"}[self.kind]
            bound = (lambda x: f"{x:g}") if self.kind == "float" else (lambda x: str(int(x)))
            lo = "" if self.min is None else f" >= {bound(self.min)}"
            hi = "" if self.max is None else f" <= {bound(self.max)}"
            text = what + (f"{lo} and{hi}" if lo and hi else lo or hi)
            return f"0 or {text}" if self.zero_means_unset else text
        return "text"


def _integer(text: str) -> int:
    """An optionally signed run of decimal digits; ValueError otherwise. int() alone also takes
    '6_4' (as 64) and other Python literal forms --help does not name."""
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(text)
    return int(text)


def _check_range(var: Var, value: float, raw: str) -> None:
    if var.zero_means_unset and value == 0:
        return
    if (var.min is not None and value < var.min) or (var.max is not None and value > var.max):
        raise BadInput(f"{var.name}={raw!r}: expected {var.allowed()}")


def parse_value(var: Var, raw: str):
    """Turn one raw string into the Var's type, or raise BadInput."""
    text = raw.strip()
    bad = BadInput(f"{var.name}={raw!r}: expected {var.allowed()}")
    if var.kind == "int":
        try:
            value = _integer(text)
        except ValueError:
            raise bad from None
        _check_range(var, value, raw)
        return value
    if var.kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise bad from None
        if not math.isfinite(value):  # nan, inf, and 1e400, which float() makes inf
            raise bad
        _check_range(var, value, raw)
        return value + 0.0  # -0.0 is 0.0
    if var.kind == "bool":
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise bad
    if var.kind == "choice":
        if text not in var.choices:
            raise bad
        return text
    if var.kind == "int_list":
        parts = text.replace(",", " ").split()
        if not parts:
            raise bad
        try:
            values = [_integer(p) for p in parts]
        except ValueError:
            raise bad from None
        for v in values:
            _check_range(var, v, raw)
        return values
    if var.kind == "str_list":
        return text.replace(",", " ").split()
    # Invalid UTF-8 in the environment arrives as lone surrogates (Python's surrogateescape):
    # made valid here, as U+FFFD, so no record carries text that cannot be encoded.
    return raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def check_output(name: str, path: str) -> None:
    """BadInput unless records can be appended to `path`: the one check of every
    results file (OUTPUT, --output_file, the sweep's OUT), made before any work."""
    problem = output_problem(path)
    if problem:
        raise BadInput(f"{name}={path!r}: cannot write there ({problem})")


# The Python type each kind of Var parses to.
TYPES = {"int": int, "float": float, "bool": bool, "choice": str, "str": str, "int_list": list[int],
         "str_list": list[str], "output": str}


class Settings:
    """What every script's settings object is (settings_type): frozen, a typed field per Var."""


@functools.cache
def _settings_type(fields: tuple) -> type:
    return make_dataclass("Settings", [(name, TYPES[kind]) for name, kind in fields], bases=(Settings,), frozen=True)


def settings_type(variables) -> type:
    """The frozen dataclass of a variable table: a typed field per Var, named as the variable."""
    return _settings_type(tuple((v.name, v.kind) for v in variables))


def parse(variables, environ=None):
    """Resolve every Var from `environ` (default os.environ); unset or empty -> default."""
    environ = os.environ if environ is None else environ
    values = {}
    for var in variables:
        raw = environ.get(var.name, "")
        values[var.name] = copy.copy(var.default) if raw == "" else parse_value(var, raw)
    return settings_type(variables)(**values)


def as_dict(s) -> dict:
    """A settings object as {variable name: value}, for a record's config."""
    return asdict(s)


def with_defaults(variables, **defaults):
    """The same table with some defaults changed (bench_decompose's right-sized 8K)."""
    return [replace(v, default=defaults[v.name]) if v.name in defaults else v for v in variables]


def help_text(variables, doc: str) -> str:
    if not variables:
        return doc.strip() + "\n\nNo environment variables."
    lines = [doc.strip(), "", "Environment variables:"]
    width = max(len(v.name) for v in variables)
    for v in variables:
        default = " ".join(map(str, v.default)) if isinstance(v.default, list) else v.default
        if isinstance(default, bool):
            default = int(default)
        lines.append(f"  {v.name:<{width}}  {v.help} [{v.allowed()}; default: {default}]")
    return "\n".join(lines)


def print_help(text: str) -> None:
    """--help's text on stdout, then exit 0; a reader that leaves early (`--help | head`)
    ends it quietly, as it would end any text tool, not with a BrokenPipeError traceback."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at nothing so that flush is silent.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)


def load(variables, doc: str, argv=None, known=()):
    """Entry point for scripts: --help, then parse; BadInput on an argument, a value or a
    misspelt setting (`known`: further names that are settings, see check_misspelt)."""
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print_help(help_text(variables, doc))
    # The DeepSpeed launcher appends --local_rank=N; anything else is a mistake.
    unknown = [a for a in argv if not a.startswith("--local_rank")]
    if unknown:
        raise BadInput(f"unexpected argument {unknown[0]!r}: this script is configured by "
                       f"environment variables (see --help)")
    values = parse(variables)
    for var in variables:
        if var.kind == "output" and getattr(values, var.name):
            check_output(var.name, getattr(values, var.name))
    check_misspelt(variables, known=known)
    return values


def misspelt(variables, environ=None, known=()) -> list[str]:
    """Environment variables that look like a setting of `variables` but are none (SEQLEN for
    SEQ_LEN): set, they would be silently ignored. Names in `known` are settings of the
    script's parent or of a sibling it passes its environment to (run_node.sh's, say), never
    misspellings."""
    environ = os.environ if environ is None else environ
    names = [v.name for v in variables]
    out = []
    for key in sorted(environ):
        if key in names or key in known:
            continue
        match = difflib.get_close_matches(key, names, n=1, cutoff=0.8)
        if match:
            out.append(f"{key} is not a setting of this script: did you mean {match[0]}?")
    return out


def check_misspelt(variables, environ=None, known=()) -> None:
    """BadInput, before any work, when a variable looks like a misspelt setting."""
    lines = misspelt(variables, environ, known)
    if lines:
        raise BadInput("; ".join(lines) + " Nothing ran: fix or unset it (a misspelt setting would be ignored)")


# torch seeds are unsigned 64-bit, and the scripts seed with SEED + seq_len: a SEED below 2^63
# leaves room for any sequence length.
SEED_MAX = 2**63 - 1
OUTPUT = Var("OUTPUT", "output", "", "append every JSON line to this file too (stdout always)")
