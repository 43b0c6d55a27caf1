"""A record checked against log/schema.py: the writer's check (types; a programming error
raises) and the readers' (types and ranges; a record of any origin is skipped with the reason)."""
from .field_types import MAX_NUMBER, in_range, is_number
from .schema import ENVELOPE, FIELDS, REQUIRED


# A summary's tokens/s is its tokens per step over its median step: the report prices a GPU-hour
# by it and times a step by step_ms, so a record where the two disagree would give a speedup and
# a $/token that disagree. Beyond rounding (1%) it is skipped with the reason.
THROUGHPUT_TOLERANCE = 0.01


def tokens_per_s(seq_len: int, batch_size: int, step_ms: float) -> float:
    """Tokens a GPU trains per second: its micro-batch of sequences per step over the step time."""
    return seq_len * batch_size / (step_ms * 1e-3)


class RecordError(TypeError):
    """A writer gave a field its kind does not declare, or a value of the wrong type."""


# Every field a record of each kind may carry, the envelope's included: built once, read per record.
DECLARED = {kind: {**ENVELOPE, **fields} for kind, fields in FIELDS.items()}


def _values(record: dict, name: str):
    """(label, value) of a field: 'a.b' inside object a, 'a.*' every value of object (or list) a."""
    head, _, rest = name.partition(".")
    if not rest:
        return [(name, record.get(name))]
    inner = record.get(head)
    if isinstance(inner, list):
        return [(f"{head}[{i}]", v) for i, v in enumerate(inner)] if rest == "*" else []
    if not isinstance(inner, dict):
        return []
    if "." in rest:  # deeper: 'a.b.c' is field c of object b of object a
        return [(f"{head}.{label}", v) for label, v in _values(inner, rest)]
    items = inner.items() if rest == "*" else [(rest, inner.get(rest))]
    return [(f"{head}.{k}", v) for k, v in items]


def _missing(record: dict) -> str | None:
    """A required field the record lacks, for writers and readers alike."""
    for name in REQUIRED.get(record["kind"], ()):
        if record.get(name) is None:
            return f"no {name}"
    if record["kind"] == "attention" and record.get("status", "ok") == "ok" and record.get("seq_len") is None:
        return "no seq_len"  # only a backend that cannot run has none
    return None


def write_problem(record: dict) -> str | None:
    """Why a writer may not write `record` (JSON-ready: tuples as lists, NaN as null), or None."""
    kind = record.get("kind")
    if kind not in FIELDS:
        return f"kind {kind!r} is not declared in log/schema.py"
    declared = DECLARED[kind]
    unknown = [k for k in record if k not in declared]
    if unknown:
        return f"{kind} record: {', '.join(unknown)} not declared in log/schema.py"
    missing = _missing(record)
    if missing:
        return f"{kind} record: {missing}"
    for name, (kind_of, _) in declared.items():
        for label, value in _values(record, name):
            if value is not None and not kind_of.writable(value):
                return f"{kind} record: {label} is {type(value).__name__} {value!r:.40}, not {kind_of.what}"
    return None


def _described(value) -> str:
    if isinstance(value, (int, float, bool)):
        return repr(value)
    return {str: "text", list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def field_problem(record: dict) -> str | None:
    """Why a reader cannot use a record of a declared kind, or None (undeclared fields are
    ignored: a log of another version may have them)."""
    missing = _missing(record)
    if missing:
        return missing
    for name, (kind_of, _) in DECLARED[record["kind"]].items():
        for label, value in _values(record, name):
            if value is not None and not kind_of.reads(value):
                if is_number(value) and not in_range(value) and value == value:
                    shown = f"{value:.3g}" if isinstance(value, float) else \
                        f"a {len(str(abs(value)))}-digit integer"
                    return f"{label} is {shown}, beyond any measurement ({MAX_NUMBER:g})"
                return f"{label} is {_described(value)}, not {kind_of.what}"
    low, mid, high = (record.get(k) for k in ("step_ms_min", "step_ms", "step_ms_max"))
    if None not in (low, mid, high) and not low <= mid <= high:
        return "step_ms is outside step_ms_min..step_ms_max"
    return throughput_problem(record) or parts_problem(record)


# A decomposition's buckets split one step: their time shares add up to the step's, to rounding
# (bench_decompose scales the profiled kernels to the unprofiled wall step). Past 1% more, a part
# is claimed twice or the record was written by hand: drawn, its bars would be the wrong step.
PARTS_TOLERANCE = 0.01


def parts_problem(record: dict) -> str | None:
    """Where a decomposition's buckets take more than the whole step: their time shares summed,
    a part without one counted by its ms over the wall step."""
    buckets, wall_ms = record.get("buckets"), record.get("wall_step_ms")
    if record["kind"] != "decomposition" or not isinstance(buckets, dict):
        return None
    total = 0.0
    for part in (p for p in buckets.values() if isinstance(p, dict)):
        share, ms = part.get("time_share"), part.get("ms")
        if not is_number(share) and is_number(ms) and is_number(wall_ms) and wall_ms > 0:
            share = ms / wall_ms
        total += share if is_number(share) else 0.0
    if total > 1 + PARTS_TOLERANCE:
        return f"its buckets' time shares sum to {total:.0%} of the step, which no split of one step can"
    return None


def throughput_problem(record: dict) -> str | None:
    """Where a summary's tokens_per_s_per_gpu is not its seq_len x batch_size over its step_ms.
    A figure the writer derived is left alone: a published pre-training run's step_ms is its
    whole global batch's, which no per-GPU batch_size describes (report/published/pairs.py)."""
    seq_len, step_ms, recorded = (record.get(k) for k in ("seq_len", "step_ms", "tokens_per_s_per_gpu"))
    derived = record.get("derived") if isinstance(record.get("derived"), list) else []
    if (record["kind"] != "summary" or None in (seq_len, step_ms, recorded)
            or {"step_ms", "tokens_per_s_per_gpu"} & set(derived)):
        return None
    expected = tokens_per_s(seq_len, record.get("batch_size") or 1, step_ms)
    if not expected or abs(recorded / expected - 1) <= THROUGHPUT_TOLERANCE:
        return None
    return (f"tokens_per_s_per_gpu is {recorded:.4g}, not seq_len x batch_size over step_ms "
            f"({expected:.4g}): one of them is wrong")
