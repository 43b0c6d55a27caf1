"""The whole analysis, built once: the logs' series compared (compare/), each --forecast GPU's
forecast of every measured series of another GPU (forecast/), each measured node's check
(node/), the prices split into those of GPUs measured and of GPUs only forecast; then one frozen
Analysis. BadInput (a key, a price, a reference, a stack) before anything is written.
"""
from ..faults import BadInput
from ..hardware import gpus
from .compare import comparisons
from .compare.baseline import match_prices
from .forecast import attention as forecast_attention, comm as forecast_comm, series as forecasts
from .forecast import reconfig as forecast_reconfig
from .node import check as node_check
from .read import series


def why_no_forecast(s, cand: str) -> str | None:
    """Why a series gives no forecast of `cand`, or None where it may."""
    if s.reference:
        return None  # published figures are the backtest's, never a forecast's baseline
    if not s.points:
        return "no training summaries"
    if s.gpu == cand:
        return f"already measured on {cand}"
    if not gpus.lookup(s.gpu):
        return f"{s.gpu} is no GPU of the GPU table (a CPU run, or a GPU without datasheet figures): no ratios"
    if not forecasts.series_parts(s):
        return "its summaries record no FLOP count (model_tflop_per_step, attn_flop_share) to split the step by"
    return None


def forecasts_of(data, candidates: list, prices: dict, calibration: dict, node_checks: tuple = ()) -> tuple:
    """([SeriesForecast], [note]): each candidate's forecast for every measured series of another
    GPU in the table (reading its baseline node's health in `node_checks`), and for a candidate
    with none, one line saying why. `data`'s series are in the analysis' order
    (comparisons.sort_series)."""
    made_all, notes = [], []
    for cand in candidates:
        made, why = 0, {}
        for s in data.series:
            reason = why_no_forecast(s, cand)
            if reason:
                why.setdefault(reason, []).append(s.label)
            if reason or s.reference:
                continue
            other = next((o for o in data.series if o.gpu == cand and
                          o.identity == s.identity and not o.reference), None)
            fc = forecast_reconfig.forecast_reconfigured(
                s, cand, prices, calibration, other, forecast_attention.measured_attention(data, s, cand, other),
                forecast_comm.measured_comm(data, s.gpu, cand), forecasts.node_of(node_checks, s),
                forecast_reconfig.alternatives_of(s, data.series))
            if fc.rows:
                made_all.append(fc)
                made += 1
        if not made:
            said = "; ".join(f"{', '.join(labels)}: {reason}" for reason, labels in why.items())
            notes.append(f"--forecast {cand}: no forecast: " + (said or "the logs hold no measured training series"))
    return made_all, notes


def node_checks(records: list, references: list, refused: list = ()) -> list:
    """Each measured node's check against --reference's nodes, else the shipped references
    (`refused`: the figures read/claims.py refused as impossible, said in the check)."""
    try:
        return node_check.checks_of(records, references, refused)
    except BadInput as err:
        raise BadInput(f"--reference: {err}") from None


def check_ignored_keys(keys: list, data) -> None:
    """BadInput for an --ignore-config key no run of the inputs records (a typo such as
    'worldsize' would otherwise pair nothing and say nothing)."""
    known = {k for s in data.series for run in s.runs.values() for k in run.config}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise BadInput(f"--ignore-config {unknown[0]!r}: no run of the inputs records that key; "
                       f"keys they record: {', '.join(sorted(known)) or '(none)'}")


def stack_errors(a: comparisons.Analysis) -> list:
    """--strict-stack: differences between measured series compared, or within one series."""
    found = [f"{c.other.label} vs {c.base.label}: " + "; ".join(f"{p} {'/'.join(x)} vs {'/'.join(y)}"
                                                               for p, x, y in c.stack)
             for c in a.comparisons if c.stack and not (c.base.reference or c.other.reference)]
    return found + [f"{s.label} mixes stacks" for s, _ in a.mixed_stacks if not s.reference]


def build(records: list, also_in: dict, prices: dict, candidates: list, calibration: dict, ignore: list = (),
          baseline: str | None = None, references: list = (), strict_stack: bool = False,
          refused: list = ()) -> comparisons.Analysis:
    """The analysis of checked `records` (read/inputs.py's; `also_in`: the records seen again in
    other logs), `prices` as given (--price), the --forecast `candidates` (GPU table names)
    calibrated by `calibration`; BadInput before anything is written."""
    data = series.load(records, list(ignore), also_in)
    check_ignored_keys(list(ignore), data)
    # a price of a GPU only forecast (no log of it) prices the forecast, not a comparison
    only_forecast = {name for name in prices if gpus.table_name(name) in candidates and
                     gpus.table_name(name) not in data.gpus}
    measured_prices = {n: u for n, u in prices.items() if n not in only_forecast}
    order = comparisons.sort_series(data, baseline)  # the forecasts follow the analysis' order
    match_prices(measured_prices, data.gpus)  # a price the logs lack: said before the forecasts' work
    checks = node_checks(records, list(references), list(refused))  # a forecast reads its baseline node's health
    node_check.set_roles(checks, order[0], order)
    checks = tuple(checks)
    made, notes = forecasts_of(data, candidates, prices, calibration, checks)
    analysis = comparisons.analyse(data, baseline, measured_prices, forecasts=tuple(made),
                                   forecast_prices={gpus.table_name(n): prices[n] for n in only_forecast},
                                   forecast_notes=tuple(notes), node_checks=checks)
    if strict_stack and stack_errors(analysis):
        raise BadInput("--strict-stack: software stacks differ (" + "; ".join(stack_errors(analysis)) + "); pin "
                       "the same stack on every GPU (./install.sh) or drop --strict-stack")
    return analysis
