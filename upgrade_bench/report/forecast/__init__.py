"""The forecast: what a GPU you do not have would likely do for a measured configuration.

model        the pure model: a measured step's parts scaled by the GPUs' ratios
attention    the attention ratio's sources: isolated kernels measured on both GPUs, else published
comm         the interconnect ratio's source: bus bandwidth measured on both GPUs, else the datasheets'
calibration  a forecast's group (new architecture or same die family; attention- or dense-bound), its
             correction and range from published pairs of other sources
page         forecasts from measured series and the page's forecast block
reconfig     the reconfigured forecast: plans the candidate's memory holds, their memory and speed
backtest     every published pair forecast from its baseline alone, leave one source out
"""
