"""What a GPU-hour buys: a training run's GPU-hours, dollars and days, and
a token's cost to an owner (the hardware amortised plus the board's energy). Pure functions,
units in the names; page/dollars.py words them (the break-even price is compare/verdict.py's).
"""
from dataclasses import dataclass

HOURS_PER_YEAR = 365.25 * 24
J_PER_KWH = 3.6e6
TOKENS_PER_MTOK = 1e6

# Defaults of the flags, each said on the page beside the number it gives.
DEFAULT_TRAIN_TOKENS = 1e12   # --tokens: a trillion, the order of an 8B model's pretraining
# --pue: power usage effectiveness, the facility's energy over the IT load's. 1.3 is the upper
# end of what AI data centres report (1.1-1.3; the industry average is about 1.5): Uptime
# Institute, Global Data Center Survey.
DEFAULT_PUE = 1.3
# --kwh: about 8 US cents per kWh, the average price to US industrial customers (U.S. Energy
# Information Administration, Electric Power Monthly).
DEFAULT_USD_PER_KWH = 0.08
# --own GPU=USD[:YEARS]: a GPU's price spread over 4 years of round-the-clock use.
DEFAULT_YEARS = 4.0
# A GPU without a measured energy: training nodes draw about 76% of their rated power (Newkirk
# et al., arXiv 2506.14551, measured against TDP-based estimates).
TRAINING_POWER_SHARE = 0.76


@dataclass(frozen=True)
class TrainCost:
    gpu_hours: float
    usd: float | None     # None without a price
    days: float           # wall-clock on `gpus` GPUs


def train_cost(tokens: float, tokens_per_s_per_gpu: float, gpus: int, usd_per_gpu_hour: float | None) -> TrainCost:
    """`tokens` trained at `tokens_per_s_per_gpu` on each of `gpus` GPUs."""
    gpu_hours = tokens / tokens_per_s_per_gpu / 3600.0
    return TrainCost(gpu_hours, None if usd_per_gpu_hour is None else gpu_hours * usd_per_gpu_hour,
                     gpu_hours / gpus / 24.0)


def owned_usd_per_gpu_hour(usd_per_gpu: float, years: float) -> float:
    """A bought GPU's price spread over `years` of round-the-clock use (idle hours cost the same)."""
    return usd_per_gpu / (years * HOURS_PER_YEAR)


def energy_usd_per_mtok(j_per_token: float, pue: float, usd_per_kwh: float) -> float:
    """The facility's energy bill for a million tokens: the board's joules per token times PUE."""
    return j_per_token * TOKENS_PER_MTOK / J_PER_KWH * pue * usd_per_kwh


def owner_usd_per_mtok(usd_per_gpu_hour: float, tokens_per_s_per_gpu: float, j_per_token: float, pue: float,
                       usd_per_kwh: float) -> float:
    """An owner's $ per million tokens: the amortised hardware's hours plus the energy."""
    hardware = usd_per_gpu_hour * TOKENS_PER_MTOK / (tokens_per_s_per_gpu * 3600.0)
    return hardware + energy_usd_per_mtok(j_per_token, pue, usd_per_kwh)


def board_j_per_token(power_w: float, tokens_per_s_per_gpu: float) -> float:
    """Joules one GPU's board spends per token at a steady `power_w`."""
    return power_w / tokens_per_s_per_gpu
