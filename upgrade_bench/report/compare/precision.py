"""What a number format buys on one GPU: each low-precision series beside the bf16 series of
the same GPU and configuration (the format the only difference: PRECISION, and FP8_EXPERTS,
which says where it runs), per length: the speedup of the step, peak memory, and the loss next
to bf16's.

The loss is a convergence test only where the runs trained on the same fresh tokens (`DATA=`, a
file of token ids: training/data.py) and bf16 ran with at least two seeds: a format's loss then
departs (marked) where its gap to bf16's exceeds bf16's own seed-to-seed spread at that length.
Without DATA every step trains on one batch of random tokens, which the model memorises at any
precision: the page says the column is no convergence test and marks nothing. A run whose loss
is not finite diverged (faults.DIVERGED): its row says so and has no speedup.

A purchase pairs series of one precision (comparisons.py); this table is the other question,
what the format does for this workload on a GPU one has.
"""
from ...log import runs
from ...faults import DIVERGED
from ..read.series import Series, seq_label
from ..text.tables import fmt, md_table

FORMAT_KEYS = ("PRECISION", "FP8_EXPERTS")


def format_name(s: Series) -> str:
    """'fp8-tensorwise', '+ experts' where its MoE experts ran in it too."""
    return ", ".join(map(str, s.settings("PRECISION"))) + (" + experts" if s.settings("FP8_EXPERTS") == [True] else "")


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


def trained_on_data(s: Series) -> bool:
    """Whether the series' runs fed their steps a file of tokens (DATA), fresh each step."""
    return any(v not in (None, "") for v in s.settings("DATA"))


def seed_spread(s: Series, seq_len: int) -> float | None:
    """The spread (max - min) of loss_mean at `seq_len` over the series' runs of different
    SEEDs, one loss per seed; None with fewer than two seeds."""
    seeds = {(run.source, run.run_id): run.config.get("SEED") for run in s.runs.values()}
    by_seed = {}
    for r in s.repeats.get(seq_len, []):
        seed = seeds.get((r.get("log_file"), r.get("run_id")))
        if r.get("loss_mean") is not None and seed is not None:
            by_seed.setdefault(seed, r["loss_mean"])
    losses = list(by_seed.values())
    return max(losses) - min(losses) if len(losses) > 1 else None


def diverged_at(s: Series) -> set:
    return {n for n, e in s.errors.items() if e.get("error") == DIVERGED}


def _row(base: Series, low: Series, n: int, convergence: bool) -> list:
    gone = [who for who, s in (("bf16", base), (format_name(low), low)) if n in diverged_at(s)]
    if gone:
        said = f"{' and '.join(gone)} diverged"
        return [low.gpu, format_name(low), seq_label(n), f"- ({said})", "-", "-", "-", said]
    b, p = base.points[n], low.points[n]
    delta, spread = loss_delta(b, p), seed_spread(base, n)
    departs = convergence and delta is not None and spread is not None and abs(delta) > spread
    return [low.gpu, format_name(low), seq_label(n),
            fmt(b["step_ms"] / p["step_ms"], "x") if b.get("step_ms") and p.get("step_ms") else "-",
            fmt(p.get("low_precision_flop_share"), "pct"),
            f"{fmt(b.get('peak_mem_gib'))} / {fmt(p.get('peak_mem_gib'))}",
            fmt(spread) if spread is not None else "one seed",
            (fmt(delta) if delta is not None else "-") + (" (departs)" if departs else "")]


def format_markdown(series: list) -> str:
    """The table, one row per pair and length both ran; '' without a pair."""
    rows, fresh, stale = [], False, False
    for base, low in low_precision_pairs(series):
        convergence = trained_on_data(base) and trained_on_data(low)
        fresh, stale = fresh or convergence, stale or not convergence
        lens = (set(base.points) | diverged_at(base)) & (set(low.points) | diverged_at(low))
        rows += [_row(base, low, n, convergence) for n in sorted(lens)]
    if not rows:
        return ""
    notes = ["Each low-precision series beside the bf16 series of the same GPU and configuration; speedup is "
             "bf16's step time over the format's. A run whose loss is not finite diverged: no speedup is read "
             "from it."]
    if stale:
        notes.append("**The loss is not a convergence test here**: runs without DATA= train every step on one "
                     "batch of random tokens, which a model memorises at any precision; no departure is marked. "
                     "Set DATA= (a file of token ids) for bf16 and the format, and run bf16 with two SEEDs or more.")
    if fresh:
        notes.append("Where both trained on the same tokens (DATA=, fresh each step), a loss further from bf16's "
                     "than bf16's own spread between seeds at that length is marked (departs): not a plain win.")
    return ("\n\n".join(notes) + "\n\n"
            + md_table(["GPU", "precision", "seq_len", "speedup over bf16", "FLOPs in the format",
                        "peak GiB bf16 / format", "bf16 loss spread over seeds", "loss minus bf16's"], rows))
