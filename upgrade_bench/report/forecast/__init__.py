"""The forecast: what a GPU you do not have would likely do for a measured configuration.

model        the pure model: a measured step's parts scaled by the GPUs' ratios
attention    the attention ratio's sources: isolated kernels measured on both GPUs, else published
comm         the interconnect ratio's source: bus bandwidth measured on both GPUs, else the datasheets'
calibration  kinds of workload (attention- or dense-bound, precision) and each kind's range widening
page         forecasts from measured series and the page's forecast block
backtest     every published pair forecast from its baseline alone
"""
