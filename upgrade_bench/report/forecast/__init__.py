"""The forecast: what a GPU you do not have would likely do for a measured configuration.

model        the pure model: a measured step's parts scaled by the GPUs' ratios
attention    the attention ratio's sources: isolated kernels measured on both GPUs, else published
comm         the interconnect ratio's source: bus bandwidth measured on both GPUs, else the datasheets'
calibration  a forecast's group (pair class and step kind), its range (and a correction only on
             pairs of its own two GPUs) from published pairs of other sources
stacks       stack priors: the share of peak each vendor's training stack reaches, cited
series       a forecast series from a measured series (its block on the page: page/forecast.py)
reconfig     the reconfigured forecast: plans the candidate's memory holds, their memory and speed
backtest     every published pair forecast from its baseline alone, leave one source out
"""
