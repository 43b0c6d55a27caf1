"""The answer in numbers: per workload, one regime per candidate and run of lengths.

A workload is a baseline series: the measured runs of the whole model first, then cuts of a
model (NUM_LAYERS, NUM_EXPERTS: their $/token scaled to the whole model by the FLOP count, or
the cut's, read/whole_model.py), then published references. For each, each candidate
(measured, published, or forecast) and each run of lengths where the call does not change (for
a forecast also where the kind of workload changes): the speedup range, the call at the given
prices with its margin (a call only past the range and the noise floor, verdict.NOISE_FLOOR),
both sides' $/1M tokens, the break-even price, whether the workload fits the candidate's
memory (no price call where it does not), what the call rests on, and the packages two
measured series differ in. A candidate's line that is no regime (no verdict, one side only) is
a Note that holds its comparison; a length only one GPU of the pair runs is an Only. Every number is
the verdict rows' or the forecast rows'; page/answer.py words them, page/terminal.py prints them.
"""
from dataclasses import dataclass, field

from ..compare.comparisons import HEALTH, Comparison
from ..forecast.series import Beyond, SeriesForecast
from ..read.series import Series
from ..compare.verdict import ABOVE, BELOW, break_even_usd_per_gpu_hour, call
from ..read.whole_model import Scope, scope

NO_FIT = "does not fit"  # a regime's word where the workload does not fit the candidate: no price call
# Why a regime has no call (Regime.no_call): a GPU without a price (Regime.unpriced names them),
# no throughput recorded, or (a reconfigured forecast) not both GPUs priced.
NO_PRICE, NO_THROUGHPUT, NO_PRICES = "no price", "no throughput", "no prices"
# A candidate's Note: not like for like, lengths of one side only, no length on both sides.
UNLIKE, ONE_SIDED, NOTHING_SHARED = "unlike", "one sided", "nothing shared"


@dataclass
class Regime:
    """One candidate over a run of lengths with one call: the numbers the answer shows."""
    candidate: str                  # the GPU's name
    source: str                     # 'measured', "guide's published", 'forecast', 'forecast, <its plan>'
    seq_lens: list
    speedups: list                  # (mid, low, high) per length
    word: str | None                # a verdict call word, NO_FIT, or None (no price or no call)
    margins: list = field(default_factory=list)   # (low, high) cheaper or dearer per length
    base_usd: list = field(default_factory=list)  # $/1M tokens per length, scaled to the whole model for a cut
    cand_usd: list = field(default_factory=list)
    prices: tuple = (None, None)    # (baseline, candidate) USD per GPU-hour
    peak_gib: float | None = None   # the most memory the workload takes at these lengths
    hbm_gib: float | None = None    # the candidate's
    sides: tuple = ()               # a comparison's: both series' provenances (how sure its range is)
    calibration: object = None      # a forecast's: its calibration (forecast/calibration.py)
    memory_how: str = ""            # a reconfigured forecast's: how its memory was estimated
    no_call: str = ""               # instead of a call: NO_PRICE, NO_THROUGHPUT or NO_PRICES
    unpriced: tuple = ()            # NO_PRICE's GPUs
    ignored: list = field(default_factory=list)  # the --ignore-config settings the pair differs in: (key, base, other)
    cand_j_per_token: list = field(default_factory=list)  # the candidate's measured board energy per length
    hbm_measured: bool = False      # the HBM as a run of the candidate measured it (GiB), not its datasheet's GB
    stack: list = field(default_factory=list)  # two measured series' software differences: (package, base, other)

    @property
    def break_even_usd(self) -> list:
        """The candidate's price per GPU-hour of equal $/token at each length (point estimates)."""
        if not self.prices[0]:
            return []
        return [break_even_usd_per_gpu_hour(self.prices[0], s[0]) for s in self.speedups]

    @property
    def break_even_ends(self) -> list:
        """(low, high) of that price at each length: for a forecast the baseline's price times the
        speedup's range (a forecast's range is its uncertainty); else the point estimate twice."""
        if not self.source.startswith("forecast"):
            return [(p, p) for p in self.break_even_usd]
        if not self.prices[0]:
            return []
        return [(break_even_usd_per_gpu_hour(self.prices[0], s[1]), break_even_usd_per_gpu_hour(self.prices[0], s[2]))
                for s in self.speedups]

    @property
    def fits(self) -> bool | None:
        return None if self.peak_gib is None or not self.hbm_gib else self.peak_gib <= self.hbm_gib


@dataclass(frozen=True)
class Note:
    """A candidate's line that is no regime: `kind` (UNLIKE, ONE_SIDED, NOTHING_SHARED) of its comparison."""
    kind: str
    comparison: Comparison


@dataclass(frozen=True)
class Only:
    """A length one side of a candidate's pair cannot run (its OOM, or a capacity search's ceiling)."""
    candidate: str          # the candidate's GPU
    source: str             # its provenance, as Regime.source
    seq_len: int
    lacking: str            # the GPU that cannot run it
    why: str                # cannot_run's: 'OOM' or 'max fit 24K'
    baseline_lacks: bool = True  # the baseline cannot run it (else the candidate)
    estimate: Beyond | None = None  # a forecast's memory estimate there, the candidate's fit beside it (beyond_memory)


@dataclass
class Workload:
    base: Series
    scope: Scope
    regimes: list = field(default_factory=list)
    notes: list = field(default_factory=list)   # Notes: a candidate's line that is no regime
    only: list = field(default_factory=list)    # Only: a length one GPU of the pair cannot run

    @property
    def order(self) -> int:
        """Measured whole models first, then cuts, then published references."""
        return 2 if self.base.reference else 0 if self.scope.whole else 1


def _segments(rows: list, key) -> list:
    """Runs of consecutive rows with the same key: [[row, ...], ...]."""
    out = []
    for r in rows:
        if out and key(out[-1][-1]) == key(r):
            out[-1].append(r)
        else:
            out.append([r])
    return out


def _margin(call) -> tuple:
    """(low, high) of how much cheaper (below) or dearer (above) a $/token ratio's range says."""
    if call.low is None:
        return (abs(call.value - 1),) * 2
    return (1 - call.high, 1 - call.low) if call.word == BELOW else (call.low - 1, call.high - 1)


def _scaled(usd, seq_len: int, sc: Scope):
    """A $/1M tokens of the workload as the whole model's: a cut's times its FLOP factor."""
    if usd is None or sc.whole:
        return usd
    return usd * sc.factors[seq_len] if seq_len in sc.factors else None


def comparison_regimes(c: Comparison, sc: Scope) -> tuple:
    """([Regime], [Note]) of a measured or published candidate."""
    if c.unlike:
        return [], [Note(UNLIKE, c)]
    rows = [r for r in c.rows if r.speedup is not None]
    notes = [Note(ONE_SIDED, c)] if any(r.missing for r in c.rows) else []
    if not rows:
        return [], notes or [Note(NOTHING_SHARED, c)]
    out = []
    for seg in _segments(rows, lambda r: r.cost.word if r.cost else None):
        word = seg[0].cost.word if seg[0].cost else None
        peaks = [(r.other or {}).get("peak_mem_gib") for r in seg]
        out.append(Regime(
            c.other.gpu, c.other.provenance, [r.seq_len for r in seg],
            [(r.speedup, *(r.speedup_range or (r.speedup, r.speedup))) for r in seg], word,
            [_margin(r.cost) for r in seg] if word in (BELOW, ABOVE) else [],
            [_scaled(r.base_usd_per_mtok, r.seq_len, sc) for r in seg],
            [_scaled(r.other_usd_per_mtok, r.seq_len, sc) for r in seg],
            c.usd_per_gpu_hour, max(filter(None, peaks), default=None), c.other.hbm_gib,
            sides=(c.base.provenance, c.other.provenance),
            no_call="" if seg[0].cost else NO_PRICE if c.unpriced else NO_THROUGHPUT, unpriced=tuple(c.unpriced),
            ignored=list(c.ignored), cand_j_per_token=[(r.other or {}).get("energy_j_per_token") for r in seg],
            hbm_measured=not c.other.reference,
            stack=list(c.stack) if not (c.base.reference or c.other.reference) else []))
    return out, notes


def forecast_regimes(fc: SeriesForecast, sc: Scope) -> list:
    """A forecast candidate's regimes, one per run of lengths with one call and one kind; a length
    whose workload does not fit the candidate's memory gets no price call."""
    def word(r):
        if r.fits is False:
            return NO_FIT
        return r.cost_call.word if r.cost_call else None
    out = []
    for seg in _segments(fc.rows, lambda r: (word(r), r.calibration.kind)):
        w = word(seg[0])
        priced = w not in (None, NO_FIT)
        out.append(Regime(
            fc.candidate, "forecast", [r.seq_len for r in seg], [r.speedup for r in seg], w,
            [_margin(r.cost_call) for r in seg] if w in (BELOW, ABOVE) else [],
            [_scaled(r.base_usd_per_mtok, r.seq_len, sc) for r in seg] if priced else [],
            [_scaled(r.usd_per_mtok[0], r.seq_len, sc) for r in seg] if priced else [],
            fc.prices, max((r.peak_mem_gib for r in seg if r.peak_mem_gib), default=None), fc.hbm_gib,
            calibration=seg[0].calibration, no_call="" if w else NO_PRICE,
            unpriced=tuple(g for g, usd in zip((fc.base.gpu, fc.candidate), fc.prices) if not usd)))
        if w == NO_FIT:  # only a configuration that fits gets a price: the reconfigured one, where there is one
            out += reconfigured_regimes(fc, sc, seg)
    return out


def reconfigured_regimes(fc: SeriesForecast, sc: Scope, rows: list) -> list:
    """For lengths whose configuration does not fit the candidate: the reconfigured forecast's
    configuration that does (forecast/reconfig.py), priced as the like-for-like one is: its $/token
    over the baseline's as measured is the price ratio over its speedup (tokens a second)."""
    base_usd = {r.seq_len: r.base_usd_per_mtok for r in rows}
    out = []
    for rc in (rc for rc in fc.reconfigured if rc.seq_len in base_usd):
        mid, low, high = rc.speedup
        cost, usd = None, []
        if all(fc.prices) and base_usd[rc.seq_len]:
            price_ratio = fc.prices[1] / fc.prices[0]
            cost = call(price_ratio / mid, (price_ratio / high, price_ratio / low))
            usd = [_scaled(x, rc.seq_len, sc) for x in (base_usd[rc.seq_len], base_usd[rc.seq_len] * cost.value)]
        word = cost.word if cost else None
        out.append(Regime(fc.candidate, f"forecast, {rc.plan.label}", [rc.seq_len], [rc.speedup], word,
                          [_margin(cost)] if word in (BELOW, ABOVE) else [], usd[:1], usd[1:], fc.prices,
                          rc.plan.peak_gib, fc.hbm_gib, memory_how=rc.memory_how,
                          no_call="" if word else NO_PRICES))
    return out


def forecast_only(fc: SeriesForecast) -> list:
    """The lengths the baseline ran out of memory at, which the forecast has no step for: with
    the memory estimate there and whether the candidate holds it, where there is one (beyond_memory)."""
    forecast = {r.seq_len for r in fc.rows}
    estimates = {b.seq_len: b for b in fc.beyond}
    return [Only(fc.candidate, "forecast", n, fc.base.gpu, "OOM", True, estimates.get(n))
            for n, err in sorted(fc.base.errors.items()) if err.get("error") == "oom" and n not in forecast]


def workloads(a) -> list:
    """Every baseline series with a candidate, in the answer's order."""
    by_base = {}

    def of(s: Series) -> Workload:
        if s.label not in by_base:
            by_base[s.label] = Workload(s, scope(s))
        return by_base[s.label]
    for c in a.comparisons:
        if c.kind != HEALTH:
            w = of(c.base)
            regimes, notes = comparison_regimes(c, w.scope)
            w.regimes += regimes
            w.notes += notes
            if not c.unlike:
                w.only += [Only(c.other.gpu, c.other.provenance, r.seq_len, *r.cannot) for r in c.rows if r.cannot]
    for fc in a.forecasts:
        w = of(fc.base)
        w.regimes += forecast_regimes(fc, w.scope)
        w.only += forecast_only(fc)
    # within a kind, a cut priced as its whole model before one that is not, then the workload
    # measured at the most lengths: the first is the one the bottom line prices
    return sorted(by_base.values(), key=lambda w: (w.order, not (w.scope.whole or w.scope.scaled),
                                                   -len({n for r in w.regimes for n in r.seq_lens})))
