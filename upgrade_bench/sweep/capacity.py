"""FIND_MAX_SEQLEN: the largest sequence length that fits, to within SEQLEN_STEP, in few rounds.

One step per probe, doubling from the smallest SEQLENS value (a round, stopping at the first
length that does not fit), then the length where the peak-memory line of two fits (the
sweep's own, if its file holds them) meets HBM, then bisection. Pure: the search takes
run(lengths) -> probes, so tests give it any GPU; the sweep decides how many processes a
round takes (one per probe by default, so each peak is a fresh job's).
"""
from dataclasses import dataclass

from ..log.runs import run_identity, with_headers

# What every probe runs: one full step shows both fit and peak.
PROBE_STEPS = {"STEPS": 1, "WARMUP_STEPS": 0}
# Peak memory does not depend on how many steps ran (STEPS is no part of a run's identity
# anyway): any sweep summary of the configuration seeds the search.
MEMORY_IGNORED = ("WARMUP_STEPS",)


class ProbesInterrupted(Exception):
    """Ctrl-C or SIGTERM during a probe run; `probes`: what it measured before it stopped."""

    def __init__(self, probes=()):
        super().__init__()
        self.probes = list(probes)


@dataclass(frozen=True)
class Probe:
    """One short run at one sequence length: whether it fit, and its peak beside the GPU's memory."""
    seq_len: int
    fits: bool
    peak_mem_gib: float | None = None  # max reserved, worst rank (None: it did not fit)
    hbm_gib: float | None = None       # the GPU's memory, as its header says
    reason: str = "ok"  # ok | oom | timeout | exception | ...


def doubling_ladder(start: int, limit: int) -> list[int]:
    """start, 2*start, 4*start ... below limit, then limit itself."""
    ladder = []
    s = start
    while s < limit:
        ladder.append(s)
        s *= 2
    return ladder + [limit]


def bracket(probes: list[Probe]) -> tuple[int, int | None]:
    """(largest length that fit, 0 if none; smallest failing length above it, or None)."""
    lo = max((p.seq_len for p in probes if p.fits), default=0)
    fails = [p.seq_len for p in probes if not p.fits and p.seq_len > lo]
    return lo, min(fails, default=None)


def predict_fit_limit(probes: list[Probe]) -> float | None:
    """Length at which peak memory reaches HBM, on the line through two fitting probes.

    Peak memory is close to linear in tokens once activations dominate (the guide: 12.6 GiB
    + 0.00043 GiB/token), so the largest fit and the largest one at most half its length
    (far apart: little noise in the slope) predict the ceiling.
    """
    fits = sorted((p.seq_len, p.peak_mem_gib, p.hbm_gib) for p in probes
                  if p.fits and p.peak_mem_gib is not None and p.hbm_gib)
    if not fits:
        return None
    s2, m2, hbm = fits[-1]
    lower = [(s, m) for s, m, _ in fits if s <= s2 / 2]
    if not lower:
        return None
    s1, m1 = lower[-1]
    slope = (m2 - m1) / (s2 - s1)
    return s2 + (hbm - m2) / slope if slope > 0 else None


def find_max_seq_len(run, start: int, step: int, limit: int, known=(), guesses: int = 2) -> dict:
    """Largest length that fits, to within `step`, in few rounds.

    run(lengths) measures ascending `lengths` (a round) and returns a Probe for each length
    up to and including the first that does not fit (the round stops there). With no
    ceiling seen yet, the doubling ladder from `start` is one round. Once two
    fits give the memory line (predict_fit_limit), up to `guesses` rounds try the length it
    predicts plus the next one, so a good guess closes the bracket in one run; bisection
    does the rest. `known`: fits measured before (the sweep's own summaries), which can
    give the line before the first run.
    An interrupted run (ProbesInterrupted) ends the search with what is known so far:
    `complete` is then False and the bracket may be wider than `step`.
    """
    probes, runs, complete = list(known), 0, True

    def launch(lengths):
        nonlocal runs
        runs += 1
        probes.extend(run(lengths))

    lo, hi = bracket(probes)
    while (hi - lo > step) if hi is not None else (lo < limit):
        guess = predict_fit_limit(probes) if guesses else None
        top = limit + step if hi is None else hi  # every length tried stays below top
        try:
            if guess is not None:
                guesses -= 1
                candidate = min(max(int(guess) // step * step, lo + step), top - step)
                launch([candidate] + ([candidate + step] if candidate + step < top else []))
            elif hi is None:
                launch([s for s in doubling_ladder(start, limit) if s > lo])
            else:
                launch([lo + max(1, (hi - lo) // step // 2) * step])
        except ProbesInterrupted as stop:
            probes.extend(stop.probes)
            complete = False
        lo, hi = bracket(probes)
        if not complete:
            break
    at_max = [p.peak_mem_gib for p in probes if p.fits and p.seq_len == lo]
    return {"max_fit_seq_len": lo or None, "min_fail_seq_len": hi, "complete": complete,
            "peak_mem_gib_at_max": at_max[-1] if at_max else None,
            "hbm_gib": next((p.hbm_gib for p in probes if p.hbm_gib), None),
            "seq_len_step": step, "runs": runs, "limit_seq_len": limit,
            "probes": [vars(p) for p in sorted(probes, key=lambda p: p.seq_len)]}


def known_probes(records: list[dict], config: dict) -> list[Probe]:
    """What the file already shows for this config (any step counts): lengths that fit, with
    their peaks, and lengths that ran out of memory. They seed the search, so a search cut
    short (or run after the sweep, into the same file) goes on from there."""
    key = run_identity(config, MEMORY_IGNORED)[1]
    probes = []
    for r, header in with_headers(records):
        if r.get("kind") == "summary" and header and run_identity(header.get("config"), MEMORY_IGNORED)[1] == key:
            probes.append(Probe(r["seq_len"], True, r.get("peak_mem_gib"),
                                (header.get("hardware") or {}).get("hbm_gib")))
        elif (r.get("kind") == "error" and r.get("error") == "oom" and isinstance(r.get("seq_len"), int)
              and run_identity(r.get("config"), MEMORY_IGNORED)[1] == key):
            probes.append(Probe(r["seq_len"], False, reason="oom"))
    return probes
