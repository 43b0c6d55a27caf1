"""The JSON-lines records: the only interface between the benchmarks and plot_results.py.

schema    what a record of each kind holds: fields, types, which are required, what each means
checks    a record checked against the schema: by the writer (raises) and by every reader (skips)
field_types  the types a field may have: what a writer may give, what a reader accepts
records   writing a record (whole or not at all) and reading logs back
header    the header record every script writes first: stack, hardware, config
runs      a run's identity (config keys that say what ran) and the join of records to their header
staged    output files written whole or not at all, renamed together
"""
