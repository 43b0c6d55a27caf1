"""The verdict blocks report.md opens with and the terminal prints, one per comparison:
the two series in words, the headline call, the warnings, and the per-length table.

Every number shown is computed in comparisons.py (its formulas in verdict.py); this module
words it.
"""
from ...log.field_types import MAX_NUMBER
from ..compare.comparisons import HEALTH, Comparison
from ..read.series import Series, seq_label
from ..read.whole_model import cut_of
from ..text.tables import fmt, md_table
from ..compare.verdict import ABOVE, BELOW, NOISE_FLOOR, UNDECIDED, WITHIN, Call
from .words import STACK_CAVEAT, ignored_words, series_words, stack_words, title, unlike_note, unlike_words, who


def _range(low, high, kind: str) -> str:
    """'1.83x to 1.85x'; more digits where two places would print the ends the same."""
    if kind == "x" and max(abs(low), abs(high)) <= MAX_NUMBER:
        digits = next((d for d in (2, 3, 4) if f"{low:.{d}f}" != f"{high:.{d}f}"), 4)
        return f"{low:.{digits}f}x to {high:.{digits}f}x"
    return f"{fmt(low, kind)} to {fmt(high, kind)}"


def _signed(value: float) -> str:
    return f"{value:+.1%}"


ONE_SIDE_ONLY = "**no call: one side only**"   # the speedup cell says why


def cost_words(c: Comparison, row) -> str:
    """The $/token call of one point: cheaper / same / dearer with its margin and range."""
    if row.missing:
        return ONE_SIDE_ONLY
    if row.cost is None:
        return "no throughput recorded" if c.prices else f"no price ({price_flags(c)})"
    if c.unlike:
        return "no call: not like for like"
    return _call_words(row.cost, row, ("cheaper", "same $/token", "dearer"))


def speed_words(c: Comparison, row) -> str:
    """A health check's call: this node slower / as published / faster."""
    if row.missing:
        return ONE_SIDE_ONLY
    if row.speed is None:
        return "no TFLOPS recorded"
    if c.unlike:
        return "no call: not like for like"
    return _call_words(row.speed, row, ("slower than published", "as published", "faster than published"))


def price_flags(c: Comparison) -> str:
    """'--price B200=USD_PER_GPU_HOUR' for each GPU of a comparison without a price."""
    return " ".join(f"--price {gpu.split()[0]}=USD_PER_GPU_HOUR" for gpu in c.unpriced)


def no_spread_words(s: Series, summary: dict) -> str:
    """Why one side of a point has no step-time range."""
    if s.reference:
        return f"no spread published for {s.gpu}"
    if summary.get("steps") == 1:
        return f"one timed step on {who(s)}, no spread"
    return f"no step-time spread recorded for {who(s)}"


def _call_words(got: Call, row, words: tuple) -> str:
    below, within, above = words
    if got.word == UNDECIDED:
        side = below if got.value < 1 else above
        return (f"cannot decide: {'; '.join(no_spread_words(s, summary) for s, summary in row.no_range)}; point "
                f"estimate {abs(got.value - 1):.1%} {side}")
    if got.word == WITHIN:
        return (f"{within} within the spread and the {NOISE_FLOOR:.0%} noise floor ({_signed(got.low - 1)} to "
                f"{_signed(got.high - 1)})")
    if got.word == BELOW:
        return f"{1 - got.value:.1%} {below} ({1 - got.high:.1%} to {1 - got.low:.1%})"
    assert got.word == ABOVE
    return f"{got.value - 1:.1%} {above} ({got.low - 1:.1%} to {got.high - 1:.1%})"


def speedup_cell(c: Comparison, row) -> str:
    """A point's speedup with its range, or why one side has no point there; in a pair that is
    not like for like, the bare TFLOPS ratio, named as no speedup."""
    if row.missing:
        return row.missing
    if c.unlike and row.speedup is not None:
        return f"{fmt(row.speedup, 'x')} TFLOPS ratio, not a speedup: not like for like"
    return _with_range(row.speedup, row.speedup_range)


def break_even_cell(c: Comparison, row) -> str:
    """The price ratio of equal $/token, with its range; none where the pair is not like for
    like (it would be a verdict the block just said it cannot give)."""
    if c.unlike and not row.missing:
        return "none: not like for like"
    return _with_range(row.break_even, row.break_even_range)


def _with_range(value, value_range, kind: str = "x") -> str:
    if value is None:
        return "-"
    return fmt(value, kind) + (f" ({_range(*value_range, kind)})" if value_range else "")


def headline(c: Comparison) -> str:
    """One sentence: where the candidate is cheaper / the same / dearer, and how much faster;
    first, where the two series do different work per GPU, that this is no verdict."""
    if not c.unlike:
        return _findings(c)
    text = (f"**Not like for like** ({unlike_words(c)}): TFLOPS per GPU and $/token are not comparable, "
            f"so this pair gets no verdict: no cheaper or dearer call and no speedup headline.")
    above = [r for r in c.rows if r.speedup and c.peak_ratio and r.speedup > c.peak_ratio]
    if above:
        top = max(above, key=lambda r: r.speedup)
        text += (f" Its TFLOPS ratio reaches {fmt(top.speedup, 'x')} at {seq_label(top.seq_len)}, above the "
                 f"{fmt(c.peak_ratio, 'x')} peak ratio of the two GPUs: a configuration difference, not hardware.")
    return text + one_sided(c)


def _findings(c: Comparison) -> str:
    if c.kind == HEALTH:
        groups = _by_word(c, lambda r: r.speed, ("slower than published", "as published within the noise",
                                                 "faster than published"))
        return (f"This {c.other.gpu} node: {groups}." if groups else "") + one_sided(c)
    speeds = [r.speedup for r in c.rows if r.speedup]
    ends = dict.fromkeys(fmt(v, "x") for v in (min(speeds), max(speeds))) if speeds else {}
    pace = " to ".join(ends) + " the baseline's TFLOPS per GPU" if speeds else ""
    if not c.prices:
        unpriced = f"No price for {' and '.join(c.unpriced)} ({price_flags(c)})"
        return f"{unpriced}: speed only, {pace}." if pace else f"{unpriced}."
    groups = _by_word(c, lambda r: r.cost, ("cheaper per token", "even within the noise", "dearer per token"))
    groups = groups or "not priced at any length"
    return f"At these prices {c.other.gpu} is {groups}" + (f"; {pace}." if pace else ".") + one_sided(c)


def one_sided(c: Comparison) -> str:
    """' One side only: <why> at 192K; ...' for the lengths only one series has."""
    found = {}
    for r in c.rows:
        if r.missing:
            found.setdefault(r.missing, []).append(seq_label(r.seq_len))
    return " One side only: " + "; ".join(f"{why} at {', '.join(lens)}" for why, lens in found.items()) + "." \
        if found else ""


def _by_word(c: Comparison, get, words: tuple) -> str:
    names = dict(zip((BELOW, WITHIN, ABOVE, UNDECIDED), words + ("undecided",)))
    found = {}
    for r in c.rows:
        got = get(r)
        if got is not None:
            found.setdefault(names[got.word], []).append(seq_label(r.seq_len))
    return "; ".join(f"{name} at {', '.join(lens)}" for name, lens in found.items())


def block_heading(c: Comparison) -> str:
    return f"## {title(c)}" + (f" - ignored: {ignored_words(c.ignored)}" if c.ignored else "")


def verdict_block(c: Comparison, also_in: dict) -> str:
    """The block report.md opens with, one per comparison; the terminal prints it too."""
    b, o = c.base, c.other
    names = ("published", "this node") if c.kind == HEALTH else ("baseline", "candidate")
    words = [series_words(b, also_in), series_words(o, also_in)]
    rows = [[f"**{k}**", words[0][k], words[1][k]] for k in words[0]]
    if c.prices:
        times = f" ({fmt(c.price_ratio, 'x')} the baseline's)" if c.kind != HEALTH else ""
        rows.append(["**price**", f"${c.prices[0]:.2f} per GPU-hour", f"${c.prices[1]:.2f} per GPU-hour{times}"])
    else:
        rows.append(["**price**"] + [f"${usd:.2f} per GPU-hour" if usd else "not given" for usd in c.usd_per_gpu_hour])
    out = [block_heading(c), "", headline(c), "",
           md_table(["", f"{names[0]}: {who(b)}", f"{names[1]}: {who(o)}"], rows), ""]
    if c.unlike:
        out += [f"> {unlike_note(c)}", ""]
    mismatch = identity_note(c)
    if mismatch:
        out += [f"> {mismatch}", ""]
    precisions = (b.settings("PRECISION"), o.settings("PRECISION"))
    if precisions[0] != precisions[1]:
        out += [f"> **Precisions differ** ({', '.join(precisions[0])} vs {', '.join(precisions[1])}, paired as asked "
                f"with --ignore-config PRECISION): each GPU trains in its own number format; the model work per token "
                f"is the same, so the speedup and the call stand, for these formats, not for the same one on both.", ""]
    if c.stack:
        out += [f"> **Software stacks differ** ({STACK_CAVEAT}): "
                + stack_words(c.stack), ""]
    if c.kind == HEALTH and b.backend != o.backend:
        out += [f"> Attention backend differs: {b.backend} (published) vs {o.backend} (this node).", ""]
    if any(s.reference for s in (b, o)):
        out += ["Ranges: the guide publishes whole-number TFLOPS and no step-time spread, so the range "
                "of its figures is only their rounding (a run-to-run spread, which it does not publish, "
                "would be wider); a measured series' range is the spread of its timed steps and runs.", ""]
    out += [points_table(c), ""]
    runs = "; ".join(filter(None, (which_runs(side, [r.seq_len for r in c.rows]) for side in (b, o))))
    if runs:
        out += [f"Which run is the point, where a length ran more than once (the median of its runs; a run under "
                f"a profiler or MEM_DEBUG only where no other ran): {runs}.", ""]
    return "\n".join(out)


def which_runs(s, seq_lens: list) -> str:
    """'H200 SXM at 8K: run 2026...-b256b9 (294.2 ms); left out: 1 instrumented run (DECOMPOSE=3:
    301.8 ms)' for the lengths of `s` that ran more than once; '' where none did."""
    out = []
    for n in seq_lens:
        used, plain, aside = s.points.get(n), s.repeats.get(n, []), s.instrumented.get(n, [])
        if used is None or len(plain) + len(aside) < 2:
            continue
        text = (f"{s.gpu} at {seq_label(n)}: " + (f"the median of {len(plain)} runs, " if len(plain) > 1 else "")
                + f"run {used.get('run_id')} ({fmt(used.get('step_ms'))} ms)")
        if aside:
            text += (f"; left out: {len(aside)} instrumented run{'s' if len(aside) > 1 else ''} ("
                     + ", ".join(f"{r['instrumented']}: {fmt(r.get('step_ms'))} ms" for r in aside) + ")")
        out.append(text)
    return "; ".join(out)


def identity_note(c: Comparison) -> str:
    """The lengths where the speedup is not peak ratio x MFU ratio, or ''."""
    bad = [r for r in c.rows if r.identity_ok is False]
    if not bad:
        return ""
    at = "; ".join(f"{seq_label(r.seq_len)}: speedup {fmt(r.speedup, 'x')}, peak ratio x MFU ratio "
                   f"{fmt(r.identity, 'x')}" for r in bad)
    return (f"**Identity MISMATCH** ({at}): a run's MFU was computed against another peak than the GPU "
            "table's (PEAK_TFLOPS), so the MFU columns of the details do not compare; the speedup, from "
            "TFLOPS per GPU, does not depend on it.")


def points_table(c: Comparison) -> str:
    b, o = c.base, c.other
    if c.kind == HEALTH:
        return md_table(
            ["seq_len", "published TFLOPS", "this node TFLOPS", "this node / published", "verdict",
             f"{b.gpu} $/1M tokens published", "this node"],
            [[seq_label(r.seq_len), fmt((r.base or {}).get("tflops_per_gpu")),
              fmt((r.other or {}).get("tflops_per_gpu")), speedup_cell(c, r), speed_words(c, r),
              fmt(r.base_usd_per_mtok, "usd"), fmt(r.other_usd_per_mtok, "usd")]
             for r in c.rows])
    usd = [f"{s.gpu} $/1M tokens" + (f", the cut ({cut_of(s)})" if cut_of(s) else "") for s in (b, o)]
    return md_table(
        ["seq_len", "speedup", *usd,
         f"{o.gpu} per token at these prices", "break-even price ratio"],
        [[seq_label(r.seq_len), speedup_cell(c, r), fmt(r.base_usd_per_mtok, "usd"),
          fmt(r.other_usd_per_mtok, "usd"), cost_words(c, r), break_even_cell(c, r)]
         for r in c.rows])
