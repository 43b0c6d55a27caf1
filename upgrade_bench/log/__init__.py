"""The JSON-lines records: the only interface between the benchmarks and plot_results.py.

schema    what a record of each kind holds: fields, types, ranges, which are required
records   writing a record (whole or not at all) and reading logs back
header    the header record every script writes first: stack, hardware, config
runs      a run's identity (config keys that say what ran) and the join of records to their header
staged    output files written whole or not at all, renamed together
"""
