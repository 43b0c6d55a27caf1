"""The answer in words: report.md's first section (a sentence per workload, candidate and
regime, every number with its length) and the words the terminal shares with it (calls,
workload titles, how sure, why no call, the notes). The numbers are decide/answer.py's.
"""
from ...log.field_types import MAX_NUMBER
from ..compare.verdict import ABOVE, BELOW, NOISE_FLOOR, UNDECIDED, WITHIN
from ..decide.answer import NO_FIT, NO_PRICE, NO_PRICES, NO_THROUGHPUT, NOTHING_SHARED, ONE_SIDED, UNLIKE, Note, \
    Regime, Workload, workloads
from ..read.series import config_phrase, seq_label
from ..read.whole_model import scaling_words
from ..text.escape import md_text
from ..text.tables import fmt
from .verdicts import one_sided
from .words import STACK_CAVEAT, ignored_words, stack_words, unlike_words

CALL_WORDS = {BELOW: "cheaper per token", ABOVE: "dearer per token", WITHIN: "even per token",
              UNDECIDED: "cannot decide per token"}
SHORT_CALLS = {BELOW: "cheaper", ABOVE: "dearer", WITHIN: "even", UNDECIDED: "undecided"}


def hbm_words(r: Regime) -> str:
    """'139.8 GiB' as measured, or '180 GB (datasheet)': the unit each source states."""
    return f"{fmt(r.hbm_gib)} GiB" if r.hbm_measured else f"{fmt(r.hbm_gib)} GB (datasheet)"


def lengths(r: Regime) -> str:
    names = [seq_label(n) for n in r.seq_lens]
    return names[0] if len(names) == 1 else f"{names[0]}-{names[-1]}"


def sure_words(r: Regime) -> str:
    """How sure a regime's call is: what its range holds, and the noise floor a call needs."""
    if r.memory_how:
        return f"a memory estimate ({r.memory_how}) and the forecast's range"
    if r.calibration is not None:
        return f"{r.calibration.kind}: {r.calibration.words()}"
    sides = set(r.sides)
    floor = f"a call needs more than the {NOISE_FLOOR:.0%} run-to-run noise floor"
    if sides == {"measured"}:
        return f"measured on both GPUs, the range is the step-time spread of both; {floor}"
    return ("published figures carry only their rounding" + ("" if "measured" not in sides else
            ", the measured side its step-time spread") + f", no run-to-run spread; {floor}")


NO_CALL_WORDS = {NO_THROUGHPUT: "no throughput recorded", NO_PRICES: "no price for both GPUs"}


def no_call_words(r: Regime) -> str:
    """Why a regime has no call."""
    return "no price for " + " and ".join(r.unpriced) if r.no_call == NO_PRICE else NO_CALL_WORDS[r.no_call]


def across_words(r: Regime) -> str:
    """The --ignore-config settings a regime's pair differs in, with both values; '' where none."""
    return ignored_words(r.ignored) if r.ignored else ""


def note_words(n: Note) -> str:
    """A candidate's line that is no regime."""
    c = n.comparison
    who = f"{c.other.gpu} ({c.other.provenance})"
    if n.kind == UNLIKE:
        return (f"{who}: no verdict, not like for like ({unlike_words(c)}: the two series do different "
                "work per GPU).")
    if n.kind == ONE_SIDED:
        return f"{who}: {one_sided(c).strip()}"
    assert n.kind == NOTHING_SHARED, n.kind
    return f"{who}: no length measured on both sides."


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
        f", paired across {across_words(r)} (--ignore-config)" if r.ignored else "")
    mids = [s[0] for s in r.speedups]
    ends = [s[1] for s in r.speedups] + [s[2] for s in r.speedups]
    text = (f"{who} at {lengths(r).replace('-', ' to ')}: {_span(ends, 'x')}"
            f" as fast (point estimates {', '.join(fmt(m, 'x') for m in mids)})")
    if r.word == NO_FIT:
        text += (f"; no price call: it does not fit, the baseline's peak is {fmt(r.peak_gib)} GiB, more than its "
                 f"{hbm_words(r)} (only a configuration that fits is priced: the reconfigured forecast's, where one "
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
        text += f"; no $/token call: {no_call_words(r)}"
    whose = ("the baseline's peak, " if r.source == "forecast" else
             "its estimate, " if r.source.startswith("forecast") else "")
    if r.word != NO_FIT:
        text += ("; memory not recorded" if r.fits is None else
                 f"; fits: {whose}{fmt(r.peak_gib)} GiB at most, in its {hbm_words(r)}" if r.fits else
                 f"; does not fit: {whose}{fmt(r.peak_gib)} GiB of {hbm_words(r)}")
    if r.stack:
        text += f"; software differs: {stack_words(r.stack)} ({STACK_CAVEAT})"
    return text + f"; how sure: {sure_words(r)}."


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
        out += [f"- [{i}] {regime_sentence(r, w.base.gpu)}" for r in w.regimes] + [f"- [{i}] {note_words(n)}" for n in w.notes]
        out.append("")
    return "\n".join(out)
