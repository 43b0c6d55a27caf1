"""What a number format buys on one GPU: each low-precision series beside the bf16 series of
the same GPU and configuration (the format the only difference: PRECISION, and FP8_EXPERTS,
which says where it runs), per length: the speedup of the step, peak memory, and the loss next
to bf16's, a format whose loss departs marked.

A purchase pairs series of one precision (comparisons.py); this table is the other question,
what the format does for this workload on a GPU one has.
"""
from ..log import runs
from .series import Series, seq_label
from .tables import fmt, md_table

# Random tokens on random weights: the loss sits near ln(vocab) (11.8 for Llama-3's 128,256),
# and bf16 and a working FP8 recipe track each other to a few hundredths over a run's steps. A
# mean over the timed steps 0.1 away from bf16's (about 1% of that) is a format that is not
# computing the same thing: marked, never shown as a plain win.
LOSS_TOLERANCE = 0.1
FORMAT_KEYS = ("PRECISION", "FP8_EXPERTS")


def format_name(s: Series) -> str:
    """'fp8-tensorwise', '+ experts' where its MoE experts ran in it too."""
    return ", ".join(s.settings("PRECISION")) + (" + experts" if s.settings("FP8_EXPERTS") == [True] else "")


def low_precision_pairs(series: list) -> list:
    """[(bf16 series, low-precision series)] of measured sweeps on one GPU whose configurations
    differ in the format alone."""
    def key(s: Series) -> tuple:
        config = {k: v for k, v in s.config.items() if k not in FORMAT_KEYS}
        return s.gpu, s.backend, runs.run_identity(config)[1]

    measured = [s for s in series if s.is_sweep and not s.reference]
    bf16 = {key(s): s for s in measured if s.settings("PRECISION") == ["bf16"]}
    return [(bf16[key(s)], s) for s in measured if s.settings("PRECISION") != ["bf16"] and key(s) in bf16]


def loss_delta(base: dict, low: dict) -> float | None:
    """The low precision's mean loss over its timed steps minus bf16's at the same length."""
    a, b = base.get("loss_mean"), low.get("loss_mean")
    return None if a is None or b is None else b - a


def format_markdown(series: list) -> str:
    """The table, one row per pair and length both measured; '' without a pair."""
    rows = []
    for base, low in low_precision_pairs(series):
        for n in sorted(base.points.keys() & low.points.keys()):
            b, p = base.points[n], low.points[n]
            delta = loss_delta(b, p)
            departs = delta is not None and abs(delta) > LOSS_TOLERANCE
            rows.append([low.gpu, format_name(low), seq_label(n),
                         fmt(b["step_ms"] / p["step_ms"], "x") if b.get("step_ms") and p.get("step_ms") else "-",
                         fmt(p.get("low_precision_flop_share"), "pct"),
                         f"{fmt(b.get('peak_mem_gib'))} / {fmt(p.get('peak_mem_gib'))}",
                         (fmt(delta) if delta is not None else "-") + (" (departs)" if departs else "")])
    if not rows:
        return ""
    return ("Each low-precision series beside the bf16 series of the same GPU and configuration; speedup "
            "is bf16's step time over the format's. A loss that departs from bf16's by more than "
            f"{LOSS_TOLERANCE} (mean over the timed steps) is marked (departs): not a plain win.\n\n"
            + md_table(["GPU", "precision", "seq_len", "speedup over bf16", "FLOPs in the format",
                        "peak GiB bf16 / format", "loss minus bf16's"], rows))
