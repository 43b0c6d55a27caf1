"""plot_results.py's report: from JSON-lines records to $/token verdicts, report.md and figures.

Rooms in the order the data flows; a room imports only the rooms above it in this list
(tests/test_layers.py ranks them):

text/       log text made safe where it is shown, and how a number and a table are written
            escape, tables
published/  published figures as records: the guide's and the other published pairs
            guide, runs, measured, pairs
read/       arguments to files, files to checked records, records to runs and series
            inputs, claims, series, stacks, whole_model
compare/    series paired into comparisons and everything computed about each (numbers only)
            verdict, baseline, engines, comparisons, decompositions, isolated_attention, precision, bound
node/       the node check: each measured node against a healthy node of its GPU kind (numbers)
            references, health, check
forecast/   what a GPU not measured would likely do: the model, its ratios' sources, calibration,
            the forecast series and its reconfiguration, the backtest
            model, attention, comm, calibration, stacks, knobs, series, reconfig, backtest
analysis    the whole analysis, built once and frozen: comparisons, forecasts, node checks
decide/     the calls, the dollars, the cost to train, the owner's cost (numbers only)
            cost, answer, dollars
page/       what is written: report.md, the terminal answer, their words and tables, points.csv
            words, verdicts, answer, dollars, precision, engines, bound, forecast, details, node, capabilities,
            markdown, terminal, export
figures/    the PNGs (matplotlib, imported only once the inputs are known good)
            style, comparison, draw
main        the command line: its arguments, the analysis, the outputs
"""
