"""Step decompositions: the parts of one record, and a pair's per-part rows (TFLOPS, ms,
time share and the speed ratio of the candidate over the baseline)."""
from dataclasses import dataclass, field

from ..read.series import Series, labels
from .verdict import ratio


@dataclass
class DecompositionPair:
    base: Series
    other: Series
    ignored: list
    unlike: list
    stack: list
    rows: list
    model_built: list = field(default_factory=list)  # comparisons.model_built_difference


def decomposition_parts(record: dict) -> dict:
    """{part: {tflop, ms, tflops, time_share}}: the buckets, then `everything else` (all but
    attention, the guide's "rest of the step") and the total, where the record has them."""
    parts = dict(record.get("buckets") or {})
    parts["everything else"] = record.get("everything_else")
    parts["total"] = record.get("total")
    return {name: part for name, part in parts.items() if isinstance(part, dict)}


def decomposition_rows(base: Series, other: Series) -> list:
    """Per shared seq_len and part: TFLOPS, ms and the speed ratio (other over baseline)."""
    rows = []
    for n in sorted(set(base.decompositions) & set(other.decompositions)):
        b = decomposition_parts(base.decompositions[n])
        o = decomposition_parts(other.decompositions[n])
        for name in dict.fromkeys(list(b) + list(o)):
            bb, ob = b.get(name) or {}, o.get(name) or {}
            # Same work on both GPUs: the time ratio is the speedup; TFLOPS when no times.
            speed = ratio(bb.get("ms"), ob.get("ms")) or ratio(ob.get("tflops"), bb.get("tflops"))
            rows.append({"seq_len": n, "bucket": name, "base_tflops": bb.get("tflops"),
                         "other_tflops": ob.get("tflops"), "base_ms": bb.get("ms"),
                         "other_ms": ob.get("ms"), "base_share": bb.get("time_share"),
                         "other_share": ob.get("time_share"), "speedup": speed})
    return rows


def decomposed(series: list) -> tuple:
    """The series with a decomposition, and their labels among themselves: the names
    decomposition.png and the report's decomposition table both use."""
    members = [s for s in series if s.decompositions]
    return members, labels(members)
