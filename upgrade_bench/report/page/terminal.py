"""What plot_results.py prints: the answer as plain text that fits a 100-column terminal.

One line per workload (its kind, model, cut and settings), then one per candidate and run of
lengths with one call: the speedup range, the call, both sides' $/1M tokens at the first of
those lengths, the price per GPU-hour below which the candidate pays off, and memory fit.
Everything else (the sentences with every number, the verdict blocks, forecasts, tables)
is in report.md; the last line says where.
"""
import textwrap

from ...log.field_types import MAX_NUMBER
from ..decide.answer import NO_FIT, Regime, workloads
from .answer import SHORT_CALLS, TERSE_KINDS, across_words, lengths, note_words, workload_title
from ..decide.dollars import Assumptions, yours
from .dollars import text_lines
from .engines import engine_lines
from .forecast import need_words
from .markdown import no_comparison_words, prices_line
from ..node.health import NO_VERDICT
from .node import headline
from .words import STACK_CAVEAT, stack_words
from ..read.series import seq_label
from ..text.tables import fmt
from ..compare.verdict import NOISE_FLOOR
from ..read.whole_model import scaling_words

WIDTH = 100
MOST_LINES = 30        # one screen; what does not fit is in report.md, the last line says so
MOST_SERIES = 6        # series named where nothing pairs
SOURCES = {"measured": "measured", "forecast": "forecast"}
COLUMNS = (("candidate", 19), ("lengths", 10), ("speedup", 11), ("per token", 16), ("$/1M tok at 1st", 17),
           ("pays off below", 15), ("GiB/HBM", 0))


def _row(cells: list) -> str:
    return "  " + "".join(c.ljust(w) if w else c for c, (_, w) in zip(cells, COLUMNS)).rstrip()


def _range(values: list, suffix: str = "", digits: int = 2) -> str:
    low, high = min(values), max(values)
    fixed = max(abs(low), abs(high)) <= MAX_NUMBER  # a broken log's ratio: not its 300 digits
    a, b = (f"{low:.{digits}f}", f"{high:.{digits}f}") if fixed else (f"{low:.3g}", f"{high:.3g}")
    return f"{a}{suffix}" if a == b else f"{a}-{b}{suffix}"


def regime_row(r: Regime) -> str:
    source = SOURCES.get(r.source, "reconfig." if r.source.startswith("forecast") else "published")
    speed = _range([s[1] for s in r.speedups] + [s[2] for s in r.speedups], "x")
    if r.word == NO_FIT:
        call = "no call"
    elif r.word is None:
        call = "no price"
    else:
        call = SHORT_CALLS[r.word]
        if r.margins:
            call += " " + _range([m[0] * 100 for m in r.margins] + [m[1] * 100 for m in r.margins], "%", 0)
    usd = (f"{fmt(r.base_usd[0], 'usd')} v {fmt(r.cand_usd[0], 'usd')}"
           if r.base_usd and r.base_usd[0] is not None and r.cand_usd[0] is not None else "-")
    pays = (f"${_range([x for ends in r.break_even_ends for x in ends])}/h" if r.break_even_usd
            and r.word not in (NO_FIT, None) else "-")
    memory = ("not recorded" if r.fits is None else
              f"{r.peak_gib:.0f}/{r.hbm_gib:.0f}" if r.fits else f"NO: {r.peak_gib:.0f}>{r.hbm_gib:.0f}")
    return _row([f"{r.candidate} {source}", lengths(r), speed, call, usd, pays, memory])


def _wrapped(text: str, indent: str) -> list:
    # a path longer than the line stays whole, to be copied (break_long_words would cut it)
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=False)


def answer_lines(found: list, budget: int = MOST_LINES) -> list:
    """The answer's plain-text lines: a column heading, then per workload (numbered) its line
    and its candidates', as many workloads as `budget` lines hold (one kept for saying how many
    more report.md has)."""
    if not found:
        return []
    bases = {w.base.gpu for w in found}
    one = bases.pop() if len(bases) == 1 else None  # the usual case: named once, in the heading
    out = [_row([f"vs {one}" if one else "candidate"] + [name for name, _ in COLUMNS[1:]])]
    for i, w in enumerate(found, 1):
        lines = workload_lines(i, w, not one)
        if len(out) + len(lines) > budget - (i < len(found)) and i > 1:
            out.append(f"... and {len(found) - i + 1} more workloads in report.md")
            break
        out += lines
    return out


def workload_lines(i: int, w, gpu: bool) -> list:
    """Workload `w` numbered `i`: its line, a cut's scaling, a line per candidate and run of lengths."""
    out = _wrapped(f"[{i}] {workload_title(w, gpu=gpu, kinds=TERSE_KINDS)}", "")
    if not w.scope.whole:
        out += _wrapped(scaling_words(w.scope), "  ")
    for r in w.regimes:
        out += [regime_row(r)] + (_wrapped(f"(paired across {across_words(r)}, --ignore-config)", "    ") if r.ignored else [])
        out += _wrapped(f"(software differs: {stack_words(r.stack)}; {STACK_CAVEAT})", "    ") if r.stack else []
    for note in w.notes:
        out += _wrapped(note_words(note), "  ")
    return out


def nothing_lines(a) -> list:
    """Where there is no answer: why, and the series that pair with nothing (the first few)."""
    out = _wrapped(f"No comparison and no forecast: {no_comparison_words(a)}.", "")
    for s, why in a.unpaired[:MOST_SERIES]:
        out += _wrapped(f"{s.label}: {why}", "  ")
    if len(a.unpaired) > MOST_SERIES:
        out.append(f"  ... and {len(a.unpaired) - MOST_SERIES} more series in report.md")
    return out


def prices_text(a) -> str:
    text = prices_line(a)
    return (text + f" Cheaper/dearer: beyond range + {NOISE_FLOOR:.0%} noise."
            if a.prices or a.forecast_prices else text)


def only_words(only: list, candidate: str) -> str:
    """What one GPU of the pair cannot run: 'only it runs 32K (H100 SXM: out of memory)' where
    the candidate runs it, 'H100 SXM ran out of memory at 32K (...)' where the baseline could not
    and the candidate is forecast."""
    if not only:
        return ""
    why = {"OOM": "out of memory"}
    if only[0].source != "forecast":
        return "; ".join(f"only {'it' if o.baseline_lacks else 'the baseline'} runs {seq_label(o.seq_len)} "
                         f"({o.lacking}: {why.get(o.why, o.why)})" for o in only)
    return "; ".join(f"{o.lacking} ran out of memory at {seq_label(o.seq_len)}, " + estimate_words(o, candidate)
                     for o in only)


def estimate_words(o, candidate: str) -> str:
    """What a forecast's memory estimate says of a length the baseline ran out of memory at."""
    b = o.estimate
    if b is None:
        return f"not forecast on {candidate} (no memory estimate)"
    if b.fits is None:
        return f"not forecast on {candidate} (its memory estimate, {need_words(b)}, is a floor within its HBM)"
    if b.fits:
        return f"which {candidate}'s memory would hold by estimate ({need_words(b)}; no step time)"
    return f"which {candidate}'s memory would not hold either by estimate ({need_words(b)}, more than its HBM)"


NO_FIT_WORDS = "does not fit"  # a verb of its own: "is cheaper at 8K; does not fit at 32K"


def bottom_line(number: int, w) -> list:
    """Per candidate of workload `w` (yours): its calls by lengths, the price it pays off below, and
    the lengths only one GPU of the pair runs."""
    out = []
    for cand in dict.fromkeys([(r.candidate, r.source) for r in w.regimes] + [(o.candidate, o.source) for o in w.only]):
        regimes = [r for r in w.regimes if (r.candidate, r.source) == cand]
        runs = []  # consecutive regimes of one call, as one run of lengths
        for r in (r for r in regimes if r.word):
            if runs and runs[-1][0] == r.word:
                runs[-1][2] = r.seq_lens[-1]
            else:
                runs.append([r.word, r.seq_lens[0], r.seq_lens[-1]])
        calls = "; ".join(f"{SHORT_CALLS[word] if word != NO_FIT else NO_FIT_WORDS} at {seq_label(first)}"
                          + (f"-{seq_label(last)}" if last != first else "") for word, first, last in runs)
        only = only_words([o for o in w.only if (o.candidate, o.source) == cand], cand[0])
        if not (calls or only):
            continue
        pays = [p for r in regimes if r.word not in (None, NO_FIT) for ends in r.break_even_ends for p in ends]
        price = regimes[0].prices[1] if regimes else None
        text = (f"Bottom line [{number}]: {cand[0]} ({cand[1]})"
                + (f" at ${price:.2f}/GPU-hour" if price else ", without a price,")
                + ((f" {calls}" if calls.startswith(NO_FIT_WORDS) else f" is {calls}") if calls else "")
                + (f"; it pays off below ${_range(pays)}/GPU-hour" if pays else "")
                + (f"{'; ' if calls else ': '}{only}" if only else "") + ".")
        out += _wrapped(text, "")
    return out


def terminal_text(a, opts: Assumptions, report: str | None = None) -> str:
    """What plot_results.py prints: each node's check, the prices, the answer, the bottom line,
    the cost to train and the owner's cost of your workload, what the engine buys on one GPU,
    and where the rest is (why a --forecast gave nothing goes to stderr)."""
    # each node's own check first: a sick baseline skews every verdict after it (the page lists all)
    head = [line for c in a.node_checks if c.status != NO_VERDICT
            for line in _wrapped(headline(c).replace("**", ""), "")]
    head += _wrapped(prices_text(a), "")
    found = workloads(a)
    w = yours(found)
    tail = []
    if w is not None:
        number = found.index(w) + 1
        tail += bottom_line(number, w)
        tail += [wrapped for line in text_lines(w, number, opts)
                 for wrapped in (_wrapped(line[2:], "  ") if line.startswith("  ") else _wrapped(line, ""))]
    tail += [wrapped for line in engine_lines(a.engines) for wrapped in _wrapped(line, "")]
    if report:
        tail.append(f"Every series, sentence, table and figure: {report}")
    body = answer_lines(found, MOST_LINES - len(head) - len(tail)) or nothing_lines(a)
    return "\n".join(head + body + tail) + "\n"
