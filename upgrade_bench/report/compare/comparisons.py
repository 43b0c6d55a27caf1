"""Comparisons, the unit of the report: one baseline series and one candidate series.

Two series compare when their configurations match (or differ only in keys named with
--ignore-config):

- an upgrade pairs a series of the baseline GPU with one of another GPU. Measured with
  measured is the answer. Measured with published ("measured vs guide's published") is made
  where the measured side has no measured partner of that configuration: with logs of one
  GPU it says what the published candidate row implies at the user's prices. Published with
  published is the guide's own result at those prices.
- a health check pairs a measured series with the published figures of the same GPU and
  configuration: how this node and its stack compare with the guide's.

Everything about a comparison comes from its two series alone: their points and step-time
ranges, their OOM and capacity records, the MAMF of their GPU and provenance, their stacks.
A series in no comparison is listed with the nearest series it could pair with and how.
Every number is computed here (formulas in verdict.py); the page and the figures only show.
"""
import json
from dataclasses import dataclass, field

from ...faults import BadInput
from ...log import runs
from .baseline import choose_baseline, match_prices, published_hint
from .decompositions import DecompositionPair, decomposition_rows
from .engines import engine_rows
from .isolated_attention import attention_rows, attention_series
from ..read.series import Dataset, Gpu, Series, config_phrase, normalise_dtype, ordered_keys, seq_label
from ..read.stacks import differences_between
from .verdict import Call, call, ratio, step_time_range, time_ratio_range, tokens_per_s_per_gpu, usd_per_mtok

UPGRADE, HEALTH = "upgrade", "health check"
# Settings that change the work each GPU does: TFLOPS per GPU of series that differ in one
# of them are not comparable, whatever --ignore-config says. NUM_EXPERTS keeps the FLOPs per
# token but not the tokens each expert gets: 32 of Qwen3-30B-A3B's 128 experts ran its 8K step
# 1.32x faster than all of them (results/h200-moe-8).
NOT_LIKE_FOR_LIKE = ("world_size", "MODEL", "NUM_LAYERS", "NUM_EXPERTS", "OFFLOAD_OPTIMIZER")
# speedup = (mfu_new * peak_new) / (mfu_old * peak_old) is exact algebra when both MFUs use
# the table peaks; a gap above rounding means a run's MFU used another peak (PEAK_TFLOPS).
IDENTITY_TOLERANCE = 0.01


@dataclass
class Row:
    """One sequence length of a comparison; `other` over `base` throughout."""
    seq_len: int
    base: dict | None                      # the summary used, or None
    other: dict | None
    attn_share: float | None = None
    speedup: float | None = None           # TFLOPS per GPU ratio: the guide's speedup
    speedup_range: tuple | None = None
    speed: Call | None = None              # the speedup against 1 (health checks)
    mfu_ratio: float | None = None
    identity: float | None = None          # peak ratio x MFU ratio
    identity_ok: bool | None = None
    base_usd_per_mtok: float | None = None
    other_usd_per_mtok: float | None = None
    cost: Call | None = None               # $/token ratio against 1
    break_even: float | None = None        # price ratio (other over base) of equal $/token
    break_even_range: tuple | None = None
    missing: str | None = None             # why only one side has this length
    cannot: tuple | None = None            # (GPU, why, is the baseline) of the side that cannot run this length
    no_range: list = field(default_factory=list)   # (series, summary) of sides without a step-time range


@dataclass
class Comparison:
    kind: str                   # UPGRADE or HEALTH
    base: Series
    other: Series
    ignored: list               # (key, base values, other values) of --ignore-config keys that differ
    unlike: list                # those keys in NOT_LIKE_FOR_LIKE, and MODEL_BUILT where the models differ
    stack: list                 # (package, base versions, other versions)
    prices: tuple | None        # (base, other) USD per GPU-hour, when both are known
    peak_ratio: float | None
    mamf: tuple                 # (base bf16 MAMF, other bf16 MAMF) of each side's GPU and provenance
    rows: list = field(default_factory=list)
    number: int = 0
    usd_per_gpu_hour: tuple = (None, None)   # (base, other) --price of each side, None where not given
    model_built: list = field(default_factory=list)  # [(MODEL_BUILT, base's, other's)] where they differ
    precision: str = ""         # its number format, where the title must name it (named_precisions)

    @property
    def mamf_ratio(self) -> float | None:
        return ratio(self.mamf[1], self.mamf[0])

    @property
    def unpriced(self) -> list:
        """Its GPUs without a --price."""
        sides = zip((self.base.gpu, self.other.gpu), self.usd_per_gpu_hour)
        return list(dict.fromkeys(gpu for gpu, usd in sides if usd is None))

    @property
    def price_ratio(self) -> float | None:
        """The candidate's price per GPU-hour over the baseline's."""
        return ratio(self.prices[1], self.prices[0]) if self.prices else None

    @property
    def sources(self) -> str:
        """'measured vs guide's published' and the like."""
        return f"{self.base.provenance} vs {self.other.provenance}"


# ---------------------------------------------------------------- pairing

def _rank(kind: str, base: Series, other: Series) -> int:
    """Order of the verdicts: measured pairs, then measured vs published, health checks,
    and the guide's own pairs last."""
    published = bool(base.reference) + bool(other.reference)
    return {0: 0, 1: 1, 2: 3}[published] if kind == UPGRADE else 2


def pairs(members: list, baseline: str) -> list:
    """[(kind, base, other)] among series of one kind (sweeps or decompositions)."""
    by_key = {}
    for s in members:
        by_key.setdefault(s.identity, []).append(s)
    found = []
    for same in by_key.values():
        ups = [(b, o) for o in same if o.gpu != baseline for b in same if b.gpu == baseline]
        measured = {o.gpu for b, o in ups if not b.reference and not o.reference}
        found += [(UPGRADE, b, o) for b, o in ups
                  if bool(b.reference) == bool(o.reference) or o.gpu not in measured]
        found += [(HEALTH, p, m) for m in same if not m.reference
                  for p in same if p.reference and p.gpu == m.gpu]
    return sorted(found, key=lambda t: _rank(*t))


def ignored_differences(base: Series, other: Series) -> list:
    """(key, base values, other values) of --ignore-config keys whose values differ."""
    keys = ordered_keys(set(base.ignored) | set(other.ignored))
    return [(k, base.settings(k), other.settings(k)) for k in keys
            if sorted(map(json.dumps, base.settings(k))) != sorted(map(json.dumps, other.settings(k)))]


# Not a setting: what the headers say MODEL built. One MODEL path may hold another config.json on
# the other node, so two series of one configuration can train different models.
MODEL_BUILT = "model as built"


def model_built_difference(base: Series, other: Series) -> list:
    """[(MODEL_BUILT, base's, other's)] where both series' headers say what MODEL built and they
    differ; [] otherwise (a published series records none)."""
    runs_of = [[r for r in s.runs.values() if r.total_params] for s in (base, other)]
    if not all(runs_of) or {r.total_params for r in runs_of[0]} == {r.total_params for r in runs_of[1]}:
        return []  # compared by the count: a header without model_cut words the same model otherwise
    return [(MODEL_BUILT, *[sorted({r.model_built for r in side}) for side in runs_of])]


def pair_differences(base: Series, other: Series) -> tuple[list, list, list]:
    """(ignored, unlike, model_built) of a pair: its --ignore-config differences, what makes it
    not like for like (those in NOT_LIKE_FOR_LIKE, and the model as built), and the latter."""
    ignored, built = ignored_differences(base, other), model_built_difference(base, other)
    return ignored, [k for k, _, _ in ignored if k in NOT_LIKE_FOR_LIKE] + [k for k, _, _ in built], built


def differing_keys(a: dict, b: dict) -> list:
    return ordered_keys(k for k in set(a) | set(b) if not runs.same_setting(k, a, b))


def _phrase(config: dict, key: str) -> str:
    return config_phrase(key, runs.setting(config, key)) if key in config or key in runs.IDENTITY_DEFAULTS \
        else "not recorded"


def unpaired(members: list, paired: set, baseline: str) -> list:
    """[(series, why)] for series of one kind in no comparison: the nearest series it could
    pair with, what differs and the flags that would pair them."""
    out = []
    for s in members:
        if id(s) in paired:
            continue
        candidates = [c for c in members if c is not s and (
            (c.gpu != s.gpu and baseline in (c.gpu, s.gpu)) or
            (c.gpu == s.gpu and bool(c.reference) != bool(s.reference)))]
        if not candidates:
            published = any(c.reference for c in members)
            out.append((s, f"no series of {'another GPU' if s.gpu == baseline else baseline} and "
                           f"no {'measured' if s.reference else 'published'} {s.gpu} series to compare with"
                           + ("" if published else published_hint(s.gpu))))
            continue
        nearest, keys = min(((c, differing_keys(s.config, c.config)) for c in candidates),
                            key=lambda t: len(t[1]))
        diffs = ", ".join(f"{k} ({_phrase(s.config, k)} vs {_phrase(nearest.config, k)})" for k in keys)
        unlike = [k for k in keys if k in NOT_LIKE_FOR_LIKE]
        out.append((s, f"nearest: {nearest.label} differs in {diffs}; "
                       + " ".join(f"--ignore-config {k}" for k in keys) + " pairs them"
                       + (f" (then TFLOPS per GPU is not comparable: {', '.join(unlike)} "
                          f"differ{'s' if len(unlike) == 1 else ''})" if unlike else "")))
    return out


# ---------------------------------------------------------------- one comparison

def capacity_of(s: Series, gpu: Gpu) -> list:
    """The capacity records of a series' runs: its configuration (or none recorded) and provenance."""
    return [cap for key, reference, cap in gpu.capacity
            if (key is None or key == s.identity) and reference == s.reference]


def largest_fit(s: Series, gpu: Gpu, below: int | None = None) -> int | None:
    """The longest sequence its capacity records saw fit; with `below`, only from searches
    that failed at or below that length (a search that never failed sets no ceiling)."""
    fits = [cap["max_fit_seq_len"] for cap in capacity_of(s, gpu) if cap.get("max_fit_seq_len")
            and (below is None or (cap.get("min_fail_seq_len") or below + 1) <= below)]
    return max(fits, default=None)


def cannot_run(s: Series, gpu: Gpu, seq_len: int) -> str | None:
    """Why a series cannot run a point: its OOM there, or a capacity search that failed at or below it."""
    if seq_len in s.points:
        return None
    error = s.errors.get(seq_len)
    if error and error.get("error") == "oom":
        return "OOM"
    ceiling = largest_fit(s, gpu, below=seq_len)
    return f"max fit {seq_label(ceiling)}" if ceiling is not None and ceiling < seq_len else None


def missing_text(s: Series, gpu: Gpu, seq_len: int) -> str:
    """Why a point of one side has no partner on series `s`: cannot run, failed, or not measured."""
    who = f"{s.gpu} ({s.provenance})"
    why = cannot_run(s, gpu, seq_len)
    if why:
        return f"{who} cannot run this ({why})"
    if seq_len in s.errors:
        return f"{who} failed here ({s.errors[seq_len].get('error') or 'error'})"
    fit = largest_fit(s, gpu)
    return f"not measured on {who}" + (f" (largest fit on record: {seq_label(fit)})"
                                       if fit is not None and fit < seq_len else "")


def mamf_of(gpu: Gpu, reference: str | None, dtype: str = "bf16") -> float | None:
    """Best MAMF TFLOPS of a GPU for a dtype, from records of one provenance only."""
    values = [r.get("tflops_mean") or r.get("tflops_median") for r in gpu.mamf
              if normalise_dtype(r.get("dtype")) == dtype and r.get("reference") == reference]
    return max((v for v in values if v), default=None)


def usd_per_mtok_by_length(s: Series, usd_per_gpu_hour: float) -> dict:
    """{seq_len: $ per 1M tokens} of a series' points at one price."""
    return {n: usd_per_mtok(usd_per_gpu_hour, tokens_per_s_per_gpu(p)) for n, p in s.points.items()}


def _row(base: Series, other: Series, n: int, gpu_map: dict, prices: tuple | None,
         peak_ratio: float | None) -> Row:
    b, o = base.points.get(n), other.points.get(n)
    row = Row(n, b, o, attn_share=(o or b).get("attn_flop_share") if (o or b) else None)
    tokens = [tokens_per_s_per_gpu(x) if x else None for x in (b, o)]
    if prices:
        row.base_usd_per_mtok = usd_per_mtok(prices[0], tokens[0]) if b else None
        row.other_usd_per_mtok = usd_per_mtok(prices[1], tokens[1]) if o else None
    if not (b and o):
        lacking = base if o else other
        row.missing = missing_text(lacking, gpu_map[lacking.gpu], n)
        why = cannot_run(lacking, gpu_map[lacking.gpu], n)
        row.cannot = (lacking.gpu, why, lacking is base) if why else None
        return row
    base_range, other_range = step_time_range(base.repeats[n], b), step_time_range(other.repeats[n], o)
    row.no_range = [(s, x) for s, x, r in ((base, b, base_range), (other, o, other_range)) if r is None]
    row.speedup = ratio(o.get("tflops_per_gpu"), b.get("tflops_per_gpu"))
    row.speedup_range = time_ratio_range(row.speedup, base_range, other_range)
    row.speed = call(row.speedup, row.speedup_range)
    row.mfu_ratio = ratio(o.get("mfu"), b.get("mfu"))
    if peak_ratio and row.mfu_ratio and row.speedup:
        row.identity = peak_ratio * row.mfu_ratio
        row.identity_ok = abs(row.identity / row.speedup - 1) <= IDENTITY_TOLERANCE
    row.break_even = ratio(tokens[1], tokens[0])
    row.break_even_range = time_ratio_range(row.break_even, base_range, other_range)
    cost_ratio = ratio(row.other_usd_per_mtok, row.base_usd_per_mtok)
    row.cost = call(cost_ratio, time_ratio_range(cost_ratio, other_range, base_range))
    return row


def named_precisions(comparisons: list) -> None:
    """Each comparison's number format set to be named in its title where any is not bf16: a bf16
    and an fp8 comparison of one pair of GPUs otherwise read alike."""
    def words(c: Comparison) -> str:
        b, o = (", ".join(map(str, s.settings("PRECISION"))) for s in (c.base, c.other))
        return b if b == o else f"{o} vs {b}"
    found = {id(c): words(c) for c in comparisons if c.kind != HEALTH}
    if set(found.values()) - {"bf16"}:
        for c in comparisons:
            c.precision = found.get(id(c), "")


def compare(kind: str, base: Series, other: Series, gpu_map: dict, prices: dict) -> Comparison:
    """A comparison of two series, from their own data only."""
    ignored, unlike, built = pair_differences(base, other)
    given = (prices.get(base.gpu), prices.get(other.gpu))
    priced = None if None in given else given
    c = Comparison(kind, base, other, ignored, unlike,
                   differences_between(base.stacks, other.stacks), priced,
                   ratio(other.peak_tflops, base.peak_tflops),
                   (mamf_of(gpu_map[base.gpu], base.reference), mamf_of(gpu_map[other.gpu], other.reference)))
    c.usd_per_gpu_hour, c.model_built = given, built
    c.rows = [_row(base, other, n, gpu_map, priced, c.peak_ratio)
              for n in sorted(set(base.points) | set(other.points))]
    return c


# ---------------------------------------------------------------- the whole analysis

@dataclass(frozen=True)
class Analysis:
    """Everything the report shows, built whole once (report/analysis.py builds it with its
    forecasts and node checks; analyse() alone, without them) and never changed after."""
    data: Dataset
    baseline: str
    prices: dict                # GPU -> USD per GPU-hour
    comparisons: list           # Comparison, in verdict order
    decompositions: list        # DecompositionPair
    unpaired: list              # (series, why)
    mixed_stacks: list          # (series, [(package, versions, versions)]): one series, several stacks
    attention: dict             # (pass, shape) -> (lines of attention_series, attention_rows)
    mamf: dict                  # (GPU, reference) -> bf16 MAMF TFLOPS
    mamf_ratios: list           # (GPU, reference, bf16 MAMF over the baseline's of that provenance, peak ratio)
    utilisation: list           # (series, {seq_len: training TFLOPS / bf16 MAMF of its GPU and provenance})
    order: list                 # GPUs, baseline first
    forecasts: tuple = ()          # forecast SeriesForecasts, never merged with the rest
    forecast_prices: dict = field(default_factory=dict)  # GPU -> USD per GPU-hour of GPUs only forecast
    forecast_notes: tuple = ()     # a line per --forecast that gave no forecast, why
    node_checks: tuple = ()        # node/check.NodeCheck per measured node, page first
    engines: tuple = ()            # engines.EngineRow: series of one GPU beside another engine's


def _mamf_tables(data: Dataset, base: str, order: list) -> tuple:
    mamf = {}
    for g in order:
        for reference in dict.fromkeys(r.get("reference") for r in data.gpus[g].mamf):
            value = mamf_of(data.gpus[g], reference)
            if value:
                mamf[g, reference] = value
    ratios = [(g, ref, ratio(v, mamf[base, ref]), ratio(data.gpus[g].peak_tflops, data.gpus[base].peak_tflops))
              for (g, ref), v in mamf.items() if g != base and (base, ref) in mamf]
    utilisation = [(s, {n: ratio(p.get("tflops_per_gpu"), mamf[s.gpu, s.reference]) for n, p in s.points.items()})
                   for s in data.series if s.points and (s.gpu, s.reference) in mamf]
    return mamf, ratios, utilisation


def sort_series(data: Dataset, baseline: str | None = None) -> list:
    """The GPUs, the baseline first (the --baseline, else the lower bf16 peak), with data's
    series sorted in that order; BadInput on a --baseline the data lacks."""
    if not data.gpus:
        raise BadInput("no usable records in the input")
    with_series = sorted({s.gpu for s in data.series}) or sorted(data.gpus)
    base = choose_baseline(data.gpus, with_series, baseline)
    order = [base] + sorted(g for g in data.gpus if g != base)
    data.series.sort(key=lambda s: (order.index(s.gpu), bool(s.reference), s.backend, s.identity))
    return order


def analyse(data: Dataset, baseline: str | None = None, prices: dict | None = None, **beside) -> Analysis:
    """Everything the report shows, with `beside` (forecasts, forecast_prices, forecast_notes,
    node_checks: report/analysis.py's); BadInput on a --baseline or --price the data lacks."""
    order = sort_series(data, baseline)
    base = order[0]
    priced = match_prices(prices or {}, data.gpus)
    sweeps = [s for s in data.series if s.is_sweep]
    decomposed = [s for s in data.series if s.decompositions]
    comparisons = [compare(kind, b, o, data.gpus, priced) for kind, b, o in pairs(sweeps, base)]
    for number, c in enumerate(comparisons, 1):
        c.number = number
    named_precisions(comparisons)
    decompositions = []
    for _kind, b, o in pairs(decomposed, base):
        ignored, unlike, built = pair_differences(b, o)
        decompositions.append(DecompositionPair(b, o, ignored, unlike, differences_between(b.stacks, o.stacks),
                                                decomposition_rows(b, o), built))
    paired_sweeps = {id(s) for c in comparisons for s in (c.base, c.other)}
    paired_decompositions = {id(s) for p in decompositions for s in (p.base, p.other)}
    lonely = unpaired(sweeps, paired_sweeps, base) + \
        unpaired([s for s in decomposed if not s.is_sweep], paired_decompositions, base)
    mixed = [(s, differences_between(s.stacks[:1], s.stacks[1:])) for s in data.series if len(s.stacks) > 1]
    attention = {group: (lines, attention_rows(lines, base))
                 for group, lines in sorted(attention_series(data.gpus).items(), key=lambda kv: str(kv[0]))}
    return Analysis(data, base, priced, comparisons, decompositions, lonely, [(s, d) for s, d in mixed if d],
                    attention, *_mamf_tables(data, base, order), order,
                    engines=tuple(engine_rows(data.series)), **beside)
