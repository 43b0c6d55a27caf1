"""The formulas of a verdict: ratios, $/1M tokens, step-time ranges, break-even, the call.

Pure functions, units in the names. The guide's rule (Machine Learning Engineering Open
Book, insights/when-to-upgrade-gpus): decide on $/token, not TFLOPS; a 2x speedup at a 2x
price is a tie, broken on wall-clock and memory headroom.

Uncertainty: a summary's step time is the median of its timed steps, with the fastest and
slowest in step_ms_min/step_ms_max; several runs of one point add their spread. A ratio of
two step times is known to within the product of both relative ranges, and a call is
"same" (even) when that range, widened by the noise floor, holds 1. A point timed once has no
range: the data cannot decide.
"""
import math
from dataclasses import dataclass

from ...log.checks import tokens_per_s

BELOW, WITHIN, ABOVE, UNDECIDED = "below", "within", "above", "cannot decide"
# The least margin a call needs beyond its range: the run-to-run spread of one step the suite
# measured on one GPU. run_node.sh's 8-layer Llama-3.1-8B 8K step (1 GPU, ZeRO-2) on three lent
# H200s took 294.2, 302.9 and 305.3 ms (results/h200-precision-7/node/sweep.jsonl,
# results/h200-experts-9/llama8k.jsonl, results/h200-moe-8/node/sweep.jsonl): 3.8%, rounded up.
# A range from one run's steps (or a published figure's rounding) is narrower than that.
NOISE_FLOOR = 0.04


def ratio(new, old) -> float | None:
    """new / old, or None where either is missing or the result is not a finite number."""
    if new is None or old is None or old == 0:
        return None
    value = new / old
    return value if math.isfinite(value) else None


def tokens_per_s_per_gpu(summary: dict) -> float | None:
    if summary.get("tokens_per_s_per_gpu"):
        return summary["tokens_per_s_per_gpu"]
    if not summary.get("step_ms"):
        return None
    return tokens_per_s(summary["seq_len"], summary.get("batch_size") or 1, summary["step_ms"])


def usd_per_mtok(usd_per_gpu_hour: float, tokens_per_s: float | None) -> float | None:
    """$ per million tokens for one GPU at a price per GPU-hour."""
    return ratio(usd_per_gpu_hour * 1e6, tokens_per_s * 3600.0) if tokens_per_s else None


def break_even_usd_per_gpu_hour(base_usd_per_gpu_hour: float, speedup: float) -> float:
    """The candidate's price per GPU-hour at which its $/token equals the baseline's: it does
    `speedup` times the work per GPU-hour, so it pays off below that many baseline GPU-hours."""
    return base_usd_per_gpu_hour * speedup


def step_time_range(summaries: list, used: dict) -> tuple | None:
    """(fastest, slowest) step time over a point's runs as factors of the step time used,
    or None where no spread is known (one run of one timed step, or no step_ms_min/max)."""
    step_ms = used.get("step_ms")
    spread = [s for s in summaries if s.get("step_ms_min") and s.get("step_ms_max") and s.get("steps") != 1]
    times = [s["step_ms"] for s in summaries if s.get("step_ms")]
    if not step_ms or not (spread or len(times) > 1):
        return None
    low = min([s["step_ms_min"] for s in spread] + times)
    high = max([s["step_ms_max"] for s in spread] + times)
    return low / step_ms, high / step_ms


def time_ratio_range(value: float | None, numerator_range, denominator_range) -> tuple | None:
    """Range of a ratio that moves as one step time over another, from their ranges:
    the fastest numerator over the slowest denominator, and back. A speed (TFLOPS, tokens/s,
    the break-even price ratio: other over base) is base time over other time; a $/token
    ratio (other over base) is other time over base time."""
    if value is None or numerator_range is None or denominator_range is None:
        return None
    return value * numerator_range[0] / denominator_range[1], value * numerator_range[1] / denominator_range[0]


@dataclass(frozen=True)
class Call:
    """Where a ratio stands against 1: below, within its range, or above; or undecided."""
    word: str
    value: float
    low: float | None = None
    high: float | None = None


def call(value: float | None, value_range: tuple | None, floor: float = NOISE_FLOOR) -> Call | None:
    """A ratio is below or above 1 when its whole range is, by more than `floor`; "within"
    (even, as far as the data can tell) otherwise; without a range it cannot be decided."""
    if value is None:
        return None
    if value_range is None:
        return Call(UNDECIDED, value)
    low, high = value_range
    return Call(BELOW if high < 1 - floor else ABOVE if low > 1 + floor else WITHIN, value, low, high)
