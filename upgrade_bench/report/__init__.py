"""plot_results.py's report: from JSON-lines records to report.md, figures and $/token verdicts.

series        records grouped into runs, series (GPU + backend + configuration) and GPUs
stacks        software-stack parity (the guide's caveat 2)
comparisons   baseline, pairing, the guide's tables, $/token and verdicts
published     the guide's published H200/B200 figures as records
markdown      report.md
figures       the PNGs (matplotlib, imported only once the inputs are known good)
"""
