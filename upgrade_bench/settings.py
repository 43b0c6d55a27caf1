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
    kind: str  # int | float | bool | choice | str | int_list | str_list | output (a file appended to) | path
    default: object
    help: str
    choices: tuple = ()
    min: float | None = None
    max: float | None = None
    zero_means_unset: bool = False  # 0 (the default: "from the table") is taken below `min` too
    # A choice that names a set of other settings' defaults ({value: {setting: raw value}}):
    # WORKLOAD=right-sized-8b. A setting set explicitly wins over its preset.
    presets: dict | None = None

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
    if var.kind in ("output", "path"):  # a file or folder name: refused, not made valid
        check_utf8(var.name, raw)
    check_text(var.name, raw)
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
    return raw


def check_text(name: str, raw: str) -> None:
    """BadInput for a setting that is not UTF-8: its invalid bytes arrive as lone surrogates
    (Python's surrogateescape). Refused, not made valid (U+FFFD): a MODEL or HOSTFILE would name
    another file than the one given, and no record may carry text that cannot be encoded."""
    bad = [ord(c) - 0xDC00 for c in raw if 0xDC80 <= ord(c) <= 0xDCFF]
    if bad:
        shown = ", ".join(f"0x{b:02x}" for b in bad[:8]) + (", ..." if len(bad) > 8 else "")
        raise BadInput(f"{name}={raw!r}: not UTF-8 (bytes {shown}); give it in UTF-8")


def check_utf8(name: str, path: str) -> None:
    """BadInput for a file name that is not UTF-8 (its bytes arrive as lone surrogates): made
    valid, it would be written under another name."""
    if path != path.encode("utf-8", "surrogateescape").decode("utf-8", "replace"):
        raise BadInput(f"{name}={path!r}: a file name that is not UTF-8 (it would be written under another "
                       f"name); name it in UTF-8")


def check_output(name: str, path: str) -> None:
    """BadInput unless records can be appended to `path`: the one check of every
    results file (OUTPUT, --output_file, the sweep's OUT), made before any work."""
    check_utf8(name, path)
    problem = output_problem(path)
    if problem:
        raise BadInput(f"{name}={path!r}: cannot write there ({problem})")


# The Python type each kind of Var parses to.
TYPES = {"int": int, "float": float, "bool": bool, "choice": str, "str": str, "int_list": list[int],
         "str_list": list[str], "output": str, "path": str}


class Settings:
    """What every script's settings object is (settings_type): frozen, a typed field per Var."""


@functools.cache
def _settings_type(fields: tuple) -> type:
    return make_dataclass("Settings", [(name, TYPES[kind]) for name, kind in fields], bases=(Settings,), frozen=True)


def settings_type(variables) -> type:
    """The frozen dataclass of a variable table: a typed field per Var, named as the variable."""
    return _settings_type(tuple((v.name, v.kind) for v in variables))


def preset_values(variables, environ) -> dict:
    """{setting: raw value} the table's preset choices (Var.presets) set, as `environ` picks them."""
    out = {}
    for var in variables:
        if var.presets:
            raw = environ.get(var.name, "")
            out.update(var.presets.get(var.default if raw == "" else parse_value(var, raw), {}))
    return out


def parse(variables, environ=None):
    """Resolve every Var from `environ` (default os.environ); unset or empty -> a preset's
    value (Var.presets), else the default."""
    environ = os.environ if environ is None else environ
    preset = preset_values(variables, environ)
    values = {}
    for var in variables:
        raw = environ.get(var.name, "") or preset.get(var.name, "")
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


# The variables Triton reads (triton/knobs.py's env_* knobs, and the C++ side's in
# include/triton/Tools/Sys/GetEnv.hpp), Triton 3.7 as install.sh pins it: a TRITON_ variable
# close to one of these but none is a misspelling (TRITON_CACHE_AUTOTUNNING); one far from
# every name may be a newer Triton's own and passes.
TRITON_VARS = (
    "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS", "TRITON_ALWAYS_COMPILE", "TRITON_CACHE_AUTOTUNING", "TRITON_CACHE_DIR",
    "TRITON_CACHE_MANAGER", "TRITON_CUDACRT_PATH", "TRITON_CUDART_PATH", "TRITON_CUOBJDUMP_PATH",
    "TRITON_CUPTI_LIB_PATH", "TRITON_DEBUG", "TRITON_DEFAULT_FP_FUSION", "TRITON_DISABLE_LINE_INFO",
    "TRITON_DISABLE_RESHAPE_ENCODING_INFERENCE", "TRITON_DUMP_DIR", "TRITON_DUMP_PTXAS_LOG", "TRITON_ENABLE_ASAN",
    "TRITON_ENABLE_EXPERIMENTAL_CONSAN", "TRITON_ENABLE_LLVM_DEBUG", "TRITON_ENABLE_NVTX",
    "TRITON_ENABLE_PYTHON_STACKTRACE", "TRITON_F32_DEFAULT", "TRITON_FRONT_END_DEBUGGING",
    "TRITON_HIP_GLOBAL_PREFETCH", "TRITON_HIP_LOCAL_PREFETCH", "TRITON_HIP_USE_ASYNC_COPY",
    "TRITON_HIP_USE_BLOCK_PINGPONG", "TRITON_HIP_USE_IN_THREAD_TRANSPOSE", "TRITON_HOME", "TRITON_INTERPRET",
    "TRITON_KERNEL_DUMP", "TRITON_KERNEL_OVERRIDE", "TRITON_LIBCUDA_PATH", "TRITON_LIBDEVICE_PATH",
    "TRITON_LIBHIP_PATH", "TRITON_LLVM_DEBUG_ONLY", "TRITON_MOCK_PTX_VERSION", "TRITON_NVDISASM_PATH",
    "TRITON_OVERRIDE_ARCH", "TRITON_OVERRIDE_DIR", "TRITON_PRINT_AUTOTUNING", "TRITON_PTXAS_PATH",
    "TRITON_REDIS_HOST", "TRITON_REDIS_KEY_FORMAT", "TRITON_REDIS_PORT", "TRITON_REMOTE_CACHE_BACKEND",
    "TRITON_REPRODUCER_PATH", "TRITON_STORE_BINARY_ONLY")
# What a launcher (torchrun, deepspeed, bench_comm.py's RANKS) sets in each rank: never a
# misspelling (RANK beside bench_comm.py's RANKS).
LAUNCHER_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# How Triton reads a boolean variable (knobs.env_bool): on for these, in any case; off for anything
# else. The suite reads TRITON_CACHE_AUTOTUNING too (the node's estimate): it takes Triton's on and a
# plain off, and refuses the rest ('2', 'garbage'), which Triton would read as off without a word.
TRITON_ON = ("1", "true", "yes", "on", "y")
TRITON_OFF = ("", "0", "false", "no", "off", "n")


def triton_flag(environ, name: str) -> bool:
    """Whether Triton reads the boolean variable `name` as on; BadInput for a value that is
    neither its on nor a plain off."""
    raw = environ.get(name, "")
    if raw.strip().lower() in TRITON_OFF:
        return False
    if raw.lower() in TRITON_ON:
        return True
    raise BadInput(f"{name}={raw!r}: Triton reads it as off; expected one of {', '.join(TRITON_ON)} (on, any "
                   f"case) or 0 (off)")


def misspelt(variables, environ=None, known=()) -> list[str]:
    """Environment variables that look like a setting of `variables` but are none (SEQLEN for
    SEQ_LEN, seq_len for SEQ_LEN: the environment is case-sensitive) or like a variable Triton
    reads (TRITON_VARS): set, they would be silently ignored. Names in `known` are settings of
    the script's parent or of a sibling it passes its environment to (run_node.sh's, say),
    never misspellings, in upper case."""
    environ = os.environ if environ is None else environ
    names = [v.name for v in variables]
    out = []
    for key in sorted(environ):
        if key in names or key in known or key in TRITON_VARS or key in LAUNCHER_VARS:
            continue
        upper = key.upper()
        match = ([upper] if upper in names or upper in known else
                 difflib.get_close_matches(upper, names, n=1, cutoff=0.8))
        if match:
            out.append(f"{key} is not a setting of this script: did you mean {match[0]}?")
        elif upper.startswith("TRITON_"):
            match = difflib.get_close_matches(upper, TRITON_VARS, n=1, cutoff=0.8)
            if match:
                out.append(f"{key} is not a variable Triton reads: did you mean {match[0]}?")
    return out


def check_misspelt(variables, environ=None, known=()) -> None:
    """BadInput, before any work, when a variable looks like a misspelt setting, or the Triton
    flag the suite reads has a value Triton would take for off by accident (triton_flag)."""
    environ = os.environ if environ is None else environ
    lines = misspelt(variables, environ, known)
    if lines:
        raise BadInput("; ".join(lines) + " Nothing ran: fix or unset it (a misspelt setting would be ignored)")
    triton_flag(environ, "TRITON_CACHE_AUTOTUNING")


# torch seeds are unsigned 64-bit, and the scripts seed with SEED + seq_len: a SEED below 2^63
# leaves room for any sequence length.
SEED_MAX = 2**63 - 1
OUTPUT = Var("OUTPUT", "output", "", "append every JSON line to this file too (stdout always)")
