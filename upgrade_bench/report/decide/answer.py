"""The answer a buyer reads first: per workload, one line per candidate and run of lengths.

A workload is a baseline series: the measured runs of the whole model first, then cuts of a
model (NUM_LAYERS, NUM_EXPERTS: their $/token scaled to the whole model by the FLOP count, or
said to be the cut's, whole_model.py), then published references. For each, each candidate
(measured, published, or forecast, said which) and each run of lengths where the call does
not change (for a forecast also where the kind of workload changes): how much faster (the
range), cheaper / even / dearer per token at the given prices with the margin (a call only
past the range and the noise floor, verdict.NOISE_FLOOR), both sides' $/1M tokens, the price
per GPU-hour below which the candidate pays off, whether the workload fits the candidate's
memory (no price call where it does not), and how sure. Every number is the verdict block's
or the forecast block's; this module collects and words them: terminal.py prints the same
regimes as plain text.
"""
from dataclasses import dataclass, field

from ...log.field_types import MAX_NUMBER
from ..compare.comparisons import HEALTH, Comparison
from .cost import break_even_usd_per_gpu_hour
from ..forecast.series import SeriesForecast
from ..read.series import Series, config_phrase, seq_label
from ..text.tables import fmt
from ..text.escape import md_text
from ..compare.verdict import ABOVE, BELOW, NOISE_FLOOR, UNDECIDED, WITHIN, call
from ..page.verdicts import one_sided
from ..read.whole_model import Scope, scaling_words, scope
from ..page.words import STACK_CAVEAT, ignored_words, stack_words, unlike_words

NO_FIT = "does not fit"  # a regime's word where the workload does not fit the candidate: no price call
CALL_WORDS = {BELOW: "cheaper per token", ABOVE: "dearer per token", WITHIN: "even per token",
              UNDECIDED: "cannot decide per token"}
SHORT_CALLS = {BELOW: "cheaper", ABOVE: "dearer", WITHIN: "even", UNDECIDED: "undecided"}


@dataclass
class Regime:
    """One candidate over a run of lengths with one call: the numbers the answer shows."""
    candidate: str                  # the GPU's name
    source: str                     # 'measured', "guide's published", 'forecast'
    seq_lens: list
    speedups: list                  # (mid, low, high) per length
    word: str | None                # a verdict call word, NO_FIT, or None (no price or no call)
    margins: list = field(default_factory=list)   # (low, high) cheaper or dearer per length
    base_usd: list = field(default_factory=list)  # $/1M tokens per length, scaled to the whole model for a cut
    cand_usd: list = field(default_factory=list)
    prices: tuple = (None, None)    # (baseline, candidate) USD per GPU-hour
    peak_gib: float | None = None   # the most memory the workload takes at these lengths
    hbm_gib: float | None = None    # the candidate's
    sure: str = ""                  # how sure, in words
    note: str = ""                  # instead of a call: why none
    across: str = ""                # the --ignore-config settings the pair differs in, with both values
    cand_j_per_token: list = field(default_factory=list)  # the candidate's measured board energy per length
    hbm_measured: bool = False      # the HBM as a run of the candidate measured it (GiB), not its datasheet's GB
    stack: str = ""                 # the software the two measured series differ in, with both versions

    @property
    def hbm_words(self) -> str:
        """'139.8 GiB' as measured, or '180 GB (datasheet)': the unit each source states."""
        return f"{fmt(self.hbm_gib)} GiB" if self.hbm_measured else f"{fmt(self.hbm_gib)} GB (datasheet)"

    @property
    def lengths(self) -> str:
        names = [seq_label(n) for n in self.seq_lens]
        return names[0] if len(names) == 1 else f"{names[0]}-{names[-1]}"

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


@dataclass
class Only:
    """A length one side of a candidate's pair cannot run (its OOM, or a capacity search's ceiling)."""
    candidate: str          # the candidate's GPU
    source: str             # its provenance, as Regime.source
    seq_len: int
    lacking: str            # the GPU that cannot run it
    why: str                # cannot_run's: 'OOM' or 'max fit 24K'
    baseline_lacks: bool = True  # the baseline cannot run it (else the candidate)
    estimate_gib: float | None = None  # a forecast candidate's memory estimate there (beyond_memory), if any


@dataclass
class Workload:
    base: Series
    scope: Scope
    regimes: list = field(default_factory=list)
    notes: list = field(default_factory=list)   # a candidate's line that is no regime (no verdict, one side only)
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
    """([Regime], [note]) of a measured or published candidate."""
    who = f"{c.other.gpu} ({c.other.provenance})"
    if c.unlike:
        return [], [f"{who}: no verdict, not like for like ({unlike_words(c)}: the two series do different "
                    "work per GPU)."]
    rows = [r for r in c.rows if r.speedup is not None]
    lonely = one_sided(c).strip()
    notes = [f"{who}: {lonely}"] if lonely else []
    if not rows:
        return [], notes or [f"{who}: no length measured on both sides."]
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
            c.usd_per_gpu_hour, max(filter(None, peaks), default=None), c.other.hbm_gib, sure_words(c),
            "" if seg[0].cost else (f"no price for {' and '.join(c.unpriced)}" if c.unpriced else
                                    "no throughput recorded"), ignored_words(c.ignored) if c.ignored else "",
            [(r.other or {}).get("energy_j_per_token") for r in seg], not c.other.reference,
            stack_words(c.stack) if c.stack and not (c.base.reference or c.other.reference) else ""))
    return out, notes


def sure_words(c: Comparison) -> str:
    sides = {s.provenance for s in (c.base, c.other)}
    floor = f"a call needs more than the {NOISE_FLOOR:.0%} run-to-run noise floor"
    if sides == {"measured"}:
        return f"measured on both GPUs, the range is the step-time spread of both; {floor}"
    return ("published figures carry only their rounding" + ("" if "measured" not in sides else
            ", the measured side its step-time spread") + f", no run-to-run spread; {floor}")


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
            f"{seg[0].calibration.kind}: {seg[0].calibration.words()}",
            "" if w else "no price for " + " and ".join(
                g for g, usd in zip((fc.base.gpu, fc.candidate), fc.prices) if not usd)))
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
                          rc.plan.peak_gib, fc.hbm_gib, f"a memory estimate ({rc.memory_how}) and the forecast's range",
                          "" if word else "no price for both GPUs"))
    return out


def forecast_only(fc: SeriesForecast) -> list:
    """The lengths the baseline ran out of memory at, which the forecast has no step for: with
    the candidate's memory estimate where the baseline's points give one (beyond_memory)."""
    forecast = {r.seq_len for r in fc.rows}
    estimates = {n: gib for n, gib, _ in fc.beyond}
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


WORKLOAD_KINDS = {0: "measured whole model", 1: "measured cut", 2: "published, not measured here"}
TERSE_KINDS = {0: "whole model", 1: "cut", 2: "published"}  # the terminal's: measured unless published


def workload_words(w: Workload, gpu: bool = True) -> str:
    """'llama-3.1-8b, 8 of 32 layers: 1 GPU, ZeRO-2, ... on H200 SXM': the series' label in
    the workload's words (its provenance is the workload's kind)."""
    model = ", ".join(str(m) for m in w.base.settings("MODEL")) or "model not recorded"
    settings = w.base.label.split(": ", 1)[1] if ": " in w.base.label else ""
    settings = settings.removesuffix(f" ({w.base.provenance})")
    settings = ", ".join(p for p in settings.split(", ") if p and not p.endswith("layers")
                         and not p.startswith("MODEL="))
    if "GPU" not in settings:  # the label names only the settings that differ between series
        settings = ", ".join(filter(None, [", ".join(config_phrase("world_size", v)
                                                     for v in w.base.settings("world_size")), settings]))
    shape = "" if w.scope.whole else f", {w.scope.words}"
    return f"{model}{shape}" + (f": {settings}" if settings else "") + (f"; {w.base.gpu}" if gpu else "")


def workload_title(w: Workload, gpu: bool = True, kinds: dict = WORKLOAD_KINDS) -> str:
    """'Measured whole model: llama-3.1-8b: 2 GPUs, ...; H200 SXM' (without the GPU where the
    page names it once for every workload)."""
    return f"{kinds[w.order].capitalize()}: {workload_words(w, gpu)}"


def _span(values: list, kind: str) -> str:
    low, high = min(values), max(values)
    return fmt(low, kind) if fmt(low, kind) == fmt(high, kind) else f"{fmt(low, kind)} to {fmt(high, kind)}"


def usd_per_hour(usd: float) -> str:
    """A price per GPU-hour to the cent ('$6.54'); a broken log's in a few characters."""
    return f"${usd:.2f}" if abs(usd) <= MAX_NUMBER else fmt(usd, "usd")


def regime_sentence(r: Regime, base_gpu: str) -> str:
    """One regime in words, every number with its length."""
    who = f"{r.candidate} ({r.source}{', not measured' if r.source.startswith('forecast') else ''})" + (
        f", paired across {r.across} (--ignore-config)" if r.across else "")
    mids = [s[0] for s in r.speedups]
    ends = [s[1] for s in r.speedups] + [s[2] for s in r.speedups]
    text = (f"{who} at {r.lengths.replace('-', ' to ')}: {_span(ends, 'x')}"
            f" as fast (point estimates {', '.join(fmt(m, 'x') for m in mids)})")
    if r.word == NO_FIT:
        text += (f"; no price call: it does not fit, the baseline's peak is {fmt(r.peak_gib)} GiB, more than its "
                 f"{r.hbm_words} (only a configuration that fits is priced: the reconfigured forecast's, where one "
                 "fits)")
    elif r.word:
        call = CALL_WORDS[r.word]
        if r.margins:
            call += f" by {_span([m[0] for m in r.margins] + [m[1] for m in r.margins], 'pct')}"
        usd = ", ".join(f"{fmt(b, 'usd')} vs {fmt(c, 'usd')} at {seq_label(n)}"
                        for n, b, c in zip(r.seq_lens, r.base_usd, r.cand_usd))
        pays = ", ".join((usd_per_hour(lo) if usd_per_hour(lo) == usd_per_hour(hi) else
                          f"{usd_per_hour(lo)} to {usd_per_hour(hi)}") + f" at {seq_label(n)}"
                         for n, (lo, hi) in zip(r.seq_lens, r.break_even_ends))
        text += (f"; {call} at ${r.prices[0]:.2f} vs ${r.prices[1]:.2f} per GPU-hour ($/1M tokens {base_gpu} vs "
                 f"{r.candidate}: {usd}); {r.candidate} pays off below {pays} per GPU-hour")
    else:
        text += f"; no $/token call: {r.note}"
    whose = ("the baseline's peak, " if r.source == "forecast" else
             "its estimate, " if r.source.startswith("forecast") else "")
    if r.word != NO_FIT:
        text += ("; memory not recorded" if r.fits is None else
                 f"; fits: {whose}{fmt(r.peak_gib)} GiB at most, in its {r.hbm_words}" if r.fits else
                 f"; does not fit: {whose}{fmt(r.peak_gib)} GiB of {r.hbm_words}")
    if r.stack:
        text += f"; software differs: {r.stack} ({STACK_CAVEAT})"
    return text + f"; how sure: {r.sure}."


def answer_markdown(a) -> str:
    """The first screen of report.md: per workload (numbered as in the terminal), its candidates'
    sentences, each naming its workload's number; '' where none."""
    found = workloads(a)
    if not found:
        return ""
    out = ["## The answer", ""]
    for i, w in enumerate(found, 1):
        out += [f"**[{i}] {md_text(workload_title(w))}**", ""]  # a model's name is the user's text
        if not w.scope.whole:
            out += [f"*{scaling_words(w.scope)}.*", ""]
        out += [f"- [{i}] {regime_sentence(r, w.base.gpu)}" for r in w.regimes] + [f"- [{i}] {n}" for n in w.notes]
        out.append("")
    return "\n".join(out)
