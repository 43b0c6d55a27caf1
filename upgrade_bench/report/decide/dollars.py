"""The buyer's two other questions in numbers, per workload and GPU: each side's throughput and
energy at a length (from which page/dollars.py words what training the whole model on N tokens
costs and takes on a node), and what a token costs a team that owns the GPUs (the hardware
amortised plus the board's energy times PUE times the price of a kWh), with the owner's
per-token call beside the renter's.

Throughput is the workload's measured tokens per second per GPU (a candidate's: measured, or
the baseline's times its speedup range); a cut's is scaled to the whole model by the FLOP
count (whole_model.py), said so. Energy is the summaries' measured board energy per token
(`energy_j_per_token`); a GPU without it in its logs (published, forecast) takes its rated
board power at the share the baseline drew on this workload, to the share measured in training
(cost.TRAINING_POWER_SHARE), or from that share to all of it where the baseline's power is not
measured, labelled an estimate; a measured run without telemetry (a CPU, no NVML) says so and
gets no owner's cost. Formulas in cost.py.
"""
from dataclasses import dataclass, field

from ...hardware import gpus
from .answer import NO_FIT, Workload
from .cost import (
    DEFAULT_PUE, DEFAULT_USD_PER_KWH, TRAINING_POWER_SHARE, board_j_per_token, owned_usd_per_gpu_hour,
    owner_usd_per_mtok)
from ..compare.verdict import UNDECIDED, call, step_time_range, tokens_per_s_per_gpu


@dataclass
class Assumptions:
    tokens: float                          # --tokens
    gpus: int | None = None                # --gpus; None: the node of the workload's logs
    owned: dict = field(default_factory=dict)   # GPU table name -> (USD per GPU, years)
    usd_per_kwh: float = DEFAULT_USD_PER_KWH
    pue: float = DEFAULT_PUE


@dataclass
class Side:
    """One GPU running one workload at one length: its throughput and energy, each (mid, low, high)."""
    gpu: str
    source: str                  # 'measured', "guide's published", 'forecast'
    tokens_per_s: tuple          # whole-model tokens per second per GPU
    j_per_token: tuple | None    # whole-model board joules per token; None: not measured
    energy_how: str              # 'measured', 'rated board power ...', or why none
    usd_per_gpu_hour: float | None
    fits: bool = True
    power_share: float | None = None   # measured mean board power over the rated: how hard this workload drives a GPU


def _triple(mid: float, factors: tuple | None) -> tuple:
    """(mid, low, high) of a throughput whose step time spans `factors` of its own (fast, slow)."""
    return (mid, mid / factors[1], mid / factors[0]) if factors else (mid, mid, mid)


def _rated(gpu: str, tokens_per_s: tuple, share: float | None = None, base: str = "") -> tuple:
    """(J/token (mid, low, high), how) from the GPU table's board power, or (None, why): at
    `share` of it, the share the baseline `base` drew measured on this workload (an offloaded
    step leaves a GPU idle for long), between it and the share measured in training; without
    one, from that share to the whole rating."""
    spec = gpus.lookup(gpu)
    if spec is None or not spec.tdp_w:
        return None, "no measured energy and no rated board power in the GPU table"
    if share:
        mid, low, high = share, min(share, TRAINING_POWER_SHARE), max(share, TRAINING_POWER_SHARE)
        how = (f"estimated: {share:.0%} of its rated {spec.tdp_w:.0f} W as the {base} drew here, to "
               f"{TRAINING_POWER_SHARE:.0%}")
    else:
        mid, low, high = TRAINING_POWER_SHARE, TRAINING_POWER_SHARE, 1.0
        how = f"estimated: {TRAINING_POWER_SHARE:.0%} to 100% of its rated {spec.tdp_w:.0f} W"
    watts = [spec.tdp_w * min(x, 1.0) for x in (mid, low, high)]
    return ((board_j_per_token(watts[0], tokens_per_s[0]), board_j_per_token(watts[1], tokens_per_s[2]),
             board_j_per_token(watts[2], tokens_per_s[1])), how)


def _power_share(gpu: str, point: dict) -> float | None:
    """The point's measured mean board power over its GPU's rated power, or None."""
    spec = gpus.lookup(gpu)
    watts = point.get("power_w_mean")
    return watts / spec.tdp_w if spec and spec.tdp_w and isinstance(watts, (int, float)) and watts > 0 else None


def base_side(w: Workload, seq_len: int, price: float | None) -> Side | None:
    s = w.base
    point = s.points.get(seq_len)
    tok = tokens_per_s_per_gpu(point) if point else None
    if not tok:
        return None
    factor = 1.0 if w.scope.whole else w.scope.factors.get(seq_len)
    if factor is None:
        return None
    tokens = _triple(tok / factor, step_time_range(s.repeats.get(seq_len) or [point], point))
    energy = point.get("energy_j_per_token")
    if energy:
        return Side(s.gpu, s.provenance, tokens, (energy * factor,) * 3, "measured", price,
                    power_share=_power_share(s.gpu, point))
    if not s.reference:
        return Side(s.gpu, s.provenance, tokens, None, "not measured: its summaries record no board energy "
                    "(a CPU run, or no GPU telemetry)", price)
    return Side(s.gpu, s.provenance, tokens, *_rated(s.gpu, tokens), price)


def candidate_side(base: Side, regime, seq_len: int, factor: float) -> Side:
    """A candidate at one length: the baseline's median throughput times its speedup range (the
    speedup range already holds the baseline's step-time spread: taking the baseline's range too
    would count it twice); its own measured energy where its logs hold one (a cut's times
    `factor`); a measured candidate whose logs hold none has no energy, anything else its rated
    power's."""
    i = regime.seq_lens.index(seq_len)
    mid, low, high = regime.speedups[i]
    tokens = (base.tokens_per_s[0] * mid, base.tokens_per_s[0] * low, base.tokens_per_s[0] * high)
    measured = regime.cand_j_per_token[i] if regime.cand_j_per_token else None
    if measured:
        j, how = (measured * factor,) * 3, "measured"
    elif regime.source == "measured":
        j, how = None, "not measured: its summaries record no board energy (a CPU run, or no GPU telemetry)"
    else:
        j, how = _rated(regime.candidate, tokens, base.power_share, base.gpu)
    return Side(regime.candidate, regime.source, tokens, j, how, regime.prices[1], regime.word != NO_FIT)


def sides(w: Workload, seq_len: int) -> list:
    """The baseline and each candidate at one length, baseline first; [] where unknown."""
    price = next((r.prices[0] for r in w.regimes if r.prices[0]), None)
    base = base_side(w, seq_len, price)
    if base is None:
        return []
    factor = 1.0 if w.scope.whole else w.scope.factors[seq_len]
    return [base] + [candidate_side(base, r, seq_len, factor) for r in w.regimes if seq_len in r.seq_lens]


def node_gpus(w: Workload, opts: Assumptions) -> int:
    """--gpus, else the GPUs the workload's runs trained on (world_size; their node's count where
    a run records none): the configuration its title names."""
    counts = [r.config.get("world_size") or r.gpu_count for r in w.base.runs.values()]
    counts = [c for c in counts if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    return opts.gpus or (max(counts) if counts else 1)


@dataclass
class OwnerCost:
    usd_per_mtok: tuple | None   # (mid, low, high), None without an owned price or energy
    why: str = ""


def owner_cost(side: Side, opts: Assumptions) -> OwnerCost:
    owned = opts.owned.get(side.gpu)
    if not side.fits:
        return OwnerCost(None, "does not fit its memory as configured")
    if owned is None:
        return OwnerCost(None, f"no --own {side.gpu.split()[0]}=USD")
    if side.j_per_token is None:
        return OwnerCost(None, f"energy {side.energy_how}")
    hourly = owned_usd_per_gpu_hour(*owned)
    # the dearest end: the slowest throughput with the most energy; the cheapest: the reverse
    mids = [owner_usd_per_mtok(hourly, t, j, opts.pue, opts.usd_per_kwh)
            for t, j in ((side.tokens_per_s[0], side.j_per_token[0]), (side.tokens_per_s[2], side.j_per_token[1]),
                         (side.tokens_per_s[1], side.j_per_token[2]))]
    return OwnerCost(tuple(mids))


def owner_call(base: OwnerCost, cand: OwnerCost, fits: bool, renter: str | None = None):
    """The owner's per-token call of a candidate (verdict.call over both ranges), or None; by the
    renter's rule: undecided where the renter's is (a point timed once has no range to call on)."""
    if not (base.usd_per_mtok and cand.usd_per_mtok) or not fits:
        return None
    b, c = base.usd_per_mtok, cand.usd_per_mtok
    if renter == UNDECIDED:
        return call(c[0] / b[0], None)
    # The candidate's range is the speedup's around the baseline's median (candidate_side): set it
    # against the baseline's median, as the renter's call sets the speedup range against one price.
    return call(c[0] / b[0], (min(c[1], c[2]) / b[0], max(c[1], c[2]) / b[0]))


def first_length(w: Workload) -> int | None:
    lengths = sorted({n for r in w.regimes for n in r.seq_lens} & set(w.base.points))
    return lengths[0] if lengths else None


@dataclass
class OwnerRow:
    side: Side
    cost: OwnerCost
    candidate: bool = False      # the baseline's row is the first, without calls
    owner: str | None = None     # a candidate's call for an owner (a verdict word), None: no call
    renter: str | None = None    # its regime's word for a renter at the --price, beside it


def owner_rows(w: Workload, opts: Assumptions, seq_len: int) -> list:
    """Per GPU at one length, the baseline first: the owner's cost and, for a candidate, the
    owner's call (a verdict word) beside the renter's (its regime's word)."""
    found = sides(w, seq_len)
    costs = [owner_cost(s, opts) for s in found]
    out = [OwnerRow(found[0], costs[0])] if found else []
    for side, cost in zip(found[1:], costs[1:]):
        renter = next((r.word for r in w.regimes if r.candidate == side.gpu and r.source == side.source
                       and seq_len in r.seq_lens), None)
        got = owner_call(costs[0], cost, side.fits, renter)
        out.append(OwnerRow(side, cost, True, got.word if got else None, renter))
    return out


def yours(workload_list: list) -> Workload | None:
    """The workload the terminal prices: the first (answer.workloads' order: a measured whole
    model before a cut before a published one, the most lengths first) with a priced length."""
    return next((w for w in workload_list if first_length(w) is not None and sides(w, first_length(w))), None)


