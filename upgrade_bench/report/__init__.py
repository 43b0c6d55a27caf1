"""plot_results.py's report: from JSON-lines records to $/token verdicts, report.md and figures.

inputs        arguments to files, files to checked records (types, duplicates), one at a time
series        records grouped into runs, series (GPU + backend + configuration) and GPUs
stacks        software-stack parity (the guide's caveat 2)
verdict       the formulas: ratios, $/1M tokens, step-time ranges, the call against 1
comparisons   pairing series into comparisons and everything computed about each
published     the guide's published H200/B200 figures as records (results/reference/guide.jsonl)
forecast_model  the forecast's pure model: a measured step's parts scaled by the GPUs' ratios
forecasts     forecasts from measured series, the page's forecast block and the backtest
markdown      the verdict blocks and report.md
capability_table  check_capabilities' records side by side, one column per GPU
figures       the PNGs (matplotlib, imported only once the inputs are known good)
export        the flat table for pandas (points.csv, points.jsonl)
"""
