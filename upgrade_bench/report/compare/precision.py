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

A purchase pairs series of one precision (comparisons.py); this is the other question, what the
format does for this workload on a GPU one has: the rows here, their table page/precision.py's.
"""
from dataclasses import dataclass

from ...faults import DIVERGED
from ..read.series import Series

FORMAT_KEYS = ("PRECISION", "FP8_EXPERTS")


def format_name(s: Series) -> str:
    """'fp8-tensorwise', '+ experts' where its MoE experts ran in it too."""
    return ", ".join(map(str, s.settings("PRECISION"))) + (" + experts" if s.settings("FP8_EXPERTS") == [True] else "")


def low_precision_pairs(series: list) -> list:
    """[(bf16 series, low-precision series)] of measured sweeps on one GPU whose configurations
    differ in the format alone."""
    measured = [s for s in series if s.is_sweep and not s.reference]
    bf16 = {s.alike_but(FORMAT_KEYS): s for s in measured if s.settings("PRECISION") == ["bf16"]}
    return [(bf16[s.alike_but(FORMAT_KEYS)], s) for s in measured
            if s.settings("PRECISION") != ["bf16"] and s.alike_but(FORMAT_KEYS) in bf16]


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


@dataclass(frozen=True)
class FormatRow:
    """One low-precision series beside its bf16 one at one length."""
    base: Series
    low: Series
    seq_len: int
    diverged: tuple                      # who diverged here ('bf16', the format's name); then nothing else
    convergence: bool = False            # both trained on the same fresh tokens (DATA)
    speedup: float | None = None         # bf16's step time over the format's
    low_precision_flop_share: float | None = None
    base_peak_gib: float | None = None
    low_peak_gib: float | None = None
    spread: float | None = None          # bf16's loss spread over seeds (None: one seed)
    loss_delta: float | None = None      # the format's loss minus bf16's
    departs: bool = False                # a convergence test, and the gap exceeds bf16's spread


def format_row(base: Series, low: Series, n: int, convergence: bool) -> FormatRow:
    gone = tuple(who for who, s in (("bf16", base), (format_name(low), low)) if n in diverged_at(s))
    if gone:
        return FormatRow(base, low, n, gone, convergence)
    b, p = base.points[n], low.points[n]
    delta, spread = loss_delta(b, p), seed_spread(base, n)
    return FormatRow(base, low, n, (), convergence, b["step_ms"] / p["step_ms"] if b.get("step_ms") and p.get("step_ms")
                     else None, p.get("low_precision_flop_share"), b.get("peak_mem_gib"), p.get("peak_mem_gib"),
                     spread, delta, convergence and delta is not None and spread is not None and abs(delta) > spread)


def format_rows(series: list) -> list:
    """A FormatRow per pair and length both ran (or diverged at)."""
    rows = []
    for base, low in low_precision_pairs(series):
        convergence = trained_on_data(base) and trained_on_data(low)
        lens = (set(base.points) | diverged_at(base)) & (set(low.points) | diverged_at(low))
        rows += [format_row(base, low, n, convergence) for n in sorted(lens)]
    return rows
