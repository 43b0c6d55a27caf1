"""The cost to train and the owner's cost in words: report.md's section (per workload, length
and GPU: GPU-hours, dollars and wall-clock time on a node, and with --own the owner's $/1M tokens and
call beside the renter's) and the terminal's lines on your workload. The numbers are
decide/dollars.py's (formulas in decide/cost.py).
"""
from ..compare.verdict import ABOVE, BELOW, UNDECIDED, WITHIN
from ..decide.cost import DEFAULT_PUE, DEFAULT_USD_PER_KWH, DEFAULT_YEARS, TRAINING_POWER_SHARE, train_cost
from ..decide.dollars import Assumptions, OwnerRow, Side, first_length, node_gpus, owner_rows, sides
from ..decide.answer import Workload
from ..read.series import seq_label
from ..read.whole_model import scaling_words
from ..text.escape import md_text
from ..text.tables import md_table
from .answer import workload_title

OWNER_WORDS = {BELOW: "cheaper", ABOVE: "dearer", WITHIN: "even", UNDECIDED: "undecided"}  # else 'no call'


def compact(v: float) -> str:
    """3 significant digits with K, M, B or T: 188K, 1.2M, 1T."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= scale:
            return f"{v / scale:.3g}{suffix}"
    return f"{v:.3g}"


def _fmt_range(t: tuple, unit: str = "") -> str:
    """'$1.23M ($1.10M-$1.40M)': the mid and its range, compact; the mid alone where they print alike."""
    mid, low, high = (unit + compact(v) for v in t)
    return mid if low == high == mid else f"{mid} ({low}-{high})"


DAYS_PER_YEAR = 365.25


def duration(days: tuple) -> str:
    """A wall-clock (mid, low, high) in days as a person would say it, in the mid's unit: '5
    hours', '12 days', '4.3 years (4.2-4.5 years)'; thousands of years compact ('5.5K years')."""
    mid = days[0]
    scale, unit = (1 / 24, "hours") if mid < 1 else (1.0, "days") if mid < DAYS_PER_YEAR else (DAYS_PER_YEAR, "years")

    def one(v: float) -> str:
        v /= scale
        return compact(v) if v >= 1000 else f"{v:.2g}" if v < 10 and unit == "years" else f"{v:.0f}"
    low, high = one(min(days)), one(max(days))
    return f"{one(mid)} {unit}" + ("" if low == high == one(mid) else f" ({low}-{high} {unit})")


def train_cells(side: Side, opts: Assumptions, g: int) -> tuple:
    """(GPU-hours, dollars, time) of training on `g` GPUs, each its mid and range; none where the
    workload does not fit the GPU's memory as configured."""
    if not side.fits:
        return "-", "no price: does not fit its memory as configured", "-"
    costs = [train_cost(opts.tokens, t, g, side.usd_per_gpu_hour) for t in side.tokens_per_s]
    by_time = (costs[0], costs[2], costs[1])  # the mid, the fastest throughput, the slowest
    usd = _fmt_range(tuple(c.usd for c in by_time), "$") if side.usd_per_gpu_hour else "no price"
    return (_fmt_range(tuple(c.gpu_hours for c in by_time)), usd, duration(tuple(c.days for c in by_time)))


def train_lines(w: Workload, opts: Assumptions, seq_len: int) -> list:
    """Per GPU at one length: '<GPU> <source>: N GPU-h, $X, 4.3 years', each with its range."""
    out = []
    for side in sides(w, seq_len):
        hours, usd, time = train_cells(side, opts, node_gpus(w, opts))
        out.append(f"{side.gpu} {side.source}: " + (f"{hours} GPU-h, {usd}, {time}" if side.fits else usd))
    return out


def usd_words(row: OwnerRow, unit: str = "", terse: bool = True) -> str:
    """'$0.18 ($0.178-$0.201)' and `unit`, with where an estimated energy came from ('est.
    energy' where `terse`); or why there is none."""
    if row.cost.usd_per_mtok is None:
        return f"no owner's cost ({row.cost.why})"
    how = "" if row.side.energy_how == "measured" else " (est. energy)" if terse else f" ({row.side.energy_how})"
    return _fmt_range(row.cost.usd_per_mtok, "$") + unit + how


def calls(row: OwnerRow) -> tuple:
    """(owner's call, renter's call) of a candidate's row in words; ('', '') for the baseline's."""
    if not row.candidate:
        return "", ""
    return (OWNER_WORDS.get(row.owner, row.owner) if row.owner else "no call", OWNER_WORDS.get(row.renter, "no call"))


def owner_lines(w: Workload, opts: Assumptions, seq_len: int) -> list:
    """Per GPU at one length: the owner's $/1M tokens, and each candidate's call beside the renter's."""
    return [f"{row.side.gpu} {row.side.source}: {usd_words(row, '/1M tokens')}"
            + ("; owner {}, renter {}".format(*calls(row)) if row.candidate else "")
            for row in owner_rows(w, opts, seq_len)]


def assumptions_words(opts: Assumptions) -> str:
    owned = ", ".join(f"{gpu} ${usd:,.0f}/{years:g}y" for gpu, (usd, years) in opts.owned.items())
    return f"{owned}; ${opts.usd_per_kwh:g}/kWh, PUE {opts.pue:g}; board energy only"


def text_lines(w: Workload, number: int, opts: Assumptions) -> list:
    """The terminal's lines on workload `w` (numbered `number` above) at its first length: the
    cost to train, and with --own the owner's cost; items indented by two spaces."""
    n = first_length(w)
    scaled = "" if w.scope.whole else f", scaled by FLOPs from the cut ({w.scope.words})"
    out = [f"Training the whole model of [{number}] on {compact(opts.tokens)} tokens (--tokens) at {seq_label(n)}, "
           f"{node_gpus(w, opts)} GPU(s) (--gpus){scaled}:"]
    out += [f"  {line}" for line in train_lines(w, opts, n)]
    if opts.owned:
        out.append(f"Owning ({assumptions_words(opts)}), at {seq_label(n)}:")
        out += [f"  {line}" for line in owner_lines(w, opts, n)]
    return out


def dollars_markdown(workload_list: list, opts: Assumptions) -> str:
    """report.md's section: per workload, length and GPU the cost to train, and with --own the
    owner's cost per token and call beside the renter's."""
    out = [f"## Cost to train the whole model on {compact(opts.tokens)} tokens", "",
           "GPU-hours, dollars and wall-clock time on a node (`--tokens`, `--gpus`; else the node of the workload's logs), "
           "from measured step times: a candidate's is the baseline's throughput times its speedup range; a "
           "cut's is scaled to the whole model by its FLOPs per token, at the cut's TFLOPS per GPU. Ranges: the "
           "step-time spread, or a forecast's range."]
    if opts.owned:
        out += ["", f"Owner's cost per token: {assumptions_words(opts)}. Defaults: PUE {DEFAULT_PUE} (AI data "
                f"centres report 1.1-1.3, Uptime Institute), ${DEFAULT_USD_PER_KWH}/kWh (US industrial average, "
                f"EIA), {DEFAULT_YEARS:g} years. Energy: each run's measured board energy per token; a GPU without "
                f"it (a forecast or published GPU) takes its rated board power at the share of its rating the "
                f"baseline drew on the same workload, up to {TRAINING_POWER_SHARE:.0%} (measured training power "
                "against rated, Newkirk et al., arXiv 2506.14551), said so; a measured run without it gets no "
                "owner's cost. Not counted: the host CPUs, network "
                "and storage; the hardware is taken to work round the clock."]
    headers = ["seq_len", "GPU", "GPU-hours", "dollars", "time on the node"]
    headers += ["owner's $/1M tokens", "owner's call", "renter's call"] if opts.owned else []
    for number, w in enumerate(workload_list, 1):
        rows = []
        for n in sorted({n for r in w.regimes for n in r.seq_lens} & set(w.base.points)):
            owner = owner_rows(w, opts, n) if opts.owned else None
            for i, side in enumerate(sides(w, n)):
                rows.append([seq_label(n), f"{side.gpu} ({side.source})", *train_cells(side, opts, node_gpus(w, opts))]
                            + ([usd_words(owner[i], terse=False), *calls(owner[i])] if owner else []))
        if rows:
            scaled = "" if w.scope.whole else f" Scaled from the cut: {scaling_words(w.scope)}."
            out += ["", f"**[{number}] {md_text(workload_title(w))}**, on {node_gpus(w, opts)} "
                        f"GPU(s).{scaled}", "", md_table(headers, rows)]
    return "\n".join(out) + "\n"
