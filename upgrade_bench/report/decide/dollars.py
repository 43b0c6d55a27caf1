"""The buyer's two other questions, per workload and GPU: what training the whole model on N
tokens costs and takes on a node (GPU-hours, dollars, days, each with its range), and what a
token costs a team that owns the GPUs (the hardware amortised plus the board's energy times
PUE times the price of a kWh), with the owner's per-token call beside the renter's.

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
from .answer import NO_FIT, Workload, workload_title
from .cost import (
    DEFAULT_PUE, DEFAULT_USD_PER_KWH, DEFAULT_YEARS, TRAINING_POWER_SHARE, board_j_per_token,
    owned_usd_per_gpu_hour, owner_usd_per_mtok, train_cost)
from ..read.series import seq_label
from ..text.tables import md_table
from ..text.escape import md_text
from ..read.whole_model import scaling_words
from ..compare.verdict import ABOVE, BELOW, UNDECIDED, WITHIN, call, step_time_range, tokens_per_s_per_gpu


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


def first_length(w: Workload) -> int | None:
    lengths = sorted({n for r in w.regimes for n in r.seq_lens} & set(w.base.points))
    return lengths[0] if lengths else None


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


@dataclass
class OwnerRow:
    side: Side
    cost: OwnerCost
    owner: str = ""     # a candidate's call for an owner: cheaper / even / dearer / no call
    renter: str = ""    # its call for a renter at the --price, beside it

    def usd_words(self, unit: str = "", terse: bool = True) -> str:
        """'$0.18 ($0.178-$0.201)' and `unit`, with where an estimated energy came from ('est.
        energy' where `terse`); or why there is none."""
        if self.cost.usd_per_mtok is None:
            return f"no owner's cost ({self.cost.why})"
        how = "" if self.side.energy_how == "measured" else " (est. energy)" if terse else f" ({self.side.energy_how})"
        return _fmt_range(self.cost.usd_per_mtok, "$") + unit + how


def owner_rows(w: Workload, opts: Assumptions, seq_len: int) -> list:
    """Per GPU at one length, the baseline first: the owner's cost and, for a candidate, the
    owner's call beside the renter's."""
    found = sides(w, seq_len)
    costs = [owner_cost(s, opts) for s in found]
    out = [OwnerRow(found[0], costs[0])] if found else []
    for side, cost in zip(found[1:], costs[1:]):
        renter = next((r.word for r in w.regimes if r.candidate == side.gpu and r.source == side.source
                       and seq_len in r.seq_lens), None)
        got = owner_call(costs[0], cost, side.fits, renter)
        out.append(OwnerRow(side, cost, OWNER_WORDS.get(got.word, got.word) if got else "no call",
                            OWNER_WORDS.get(renter, "no call")))
    return out


def owner_lines(w: Workload, opts: Assumptions, seq_len: int) -> list:
    """Per GPU at one length: the owner's $/1M tokens, and each candidate's call beside the renter's."""
    return [f"{row.side.gpu} {row.side.source}: {row.usd_words('/1M tokens')}"
            + (f"; owner {row.owner}, renter {row.renter}" if row.owner else "")
            for row in owner_rows(w, opts, seq_len)]


def assumptions_words(opts: Assumptions) -> str:
    owned = ", ".join(f"{gpu} ${usd:,.0f}/{years:g}y" for gpu, (usd, years) in opts.owned.items())
    return f"{owned}; ${opts.usd_per_kwh:g}/kWh, PUE {opts.pue:g}; board energy only"


def yours(workload_list: list) -> Workload | None:
    """The workload the terminal prices: the first (answer.workloads' order: a measured whole
    model before a cut before a published one, the most lengths first) with a priced length."""
    return next((w for w in workload_list if first_length(w) is not None and sides(w, first_length(w))), None)


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
                            + ([owner[i].usd_words(terse=False), owner[i].owner, owner[i].renter] if owner else []))
        if rows:
            scaled = "" if w.scope.whole else f" Scaled from the cut: {scaling_words(w.scope)}."
            out += ["", f"**[{number}] {md_text(workload_title(w))}**, on {node_gpus(w, opts)} "
                        f"GPU(s).{scaled}", "", md_table(headers, rows)]
    return "\n".join(out) + "\n"
