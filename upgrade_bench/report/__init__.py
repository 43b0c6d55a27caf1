"""plot_results.py's report: from JSON-lines records to $/token verdicts, report.md and figures.

main          the script: its arguments, the analysis, the outputs

inputs        arguments to files, files to checked records (types, duplicates), one at a time
claims        what a log claims that the hardware says cannot be (a format its GPU lacks)
series        records grouped into runs, series (GPU + backend + configuration) and GPUs
stacks        software-stack parity (the guide's caveat 2)
verdict       the formulas: ratios, $/1M tokens, step-time ranges, the call against 1
baseline      the GPUs a user names (--baseline, --price) matched to the logs', the default baseline
comparisons   pairing series into comparisons and everything computed about each
decompositions  a step decomposition's parts and a pair's per-part rows
isolated_attention  isolated attention kernel lines per GPU and the best-backend ratios
published/    published figures as records: the guide's, and the other published pairs
forecast/     the forecast: its model, ratios' sources, calibration, page block and backtest
node_health   the node check's thresholds, verdict and likely causes (pure)
node_check    each measured node's figures against a healthy node of its GPU kind
node_page     the node check in words: the page's opening block, run_node.sh's closing lines
words         a series and a comparison in words, shared by the page and the figures
whole_model   which workload a series is (whole model or cut) and a cut's FLOP factor to its model
cost          the dollar formulas: break-even price, cost to train, the owner's $/token
answer        the answer: per workload, each candidate and regime (numbers, and report.md's sentences)
terminal      what the terminal prints: the answer in 100 columns, the bottom line, the costs
dollars       the cost to train and the owner's cost per workload, GPU and length
verdict_blocks  the verdict block of each comparison, which follows the answer
formats       what a number format buys on one GPU: a low precision beside bf16, same configuration
workload      where each measured workload sits: attention- or dense-bound, per series and length
text          text from a log made safe where it is shown (markdown, HTML)
tables        how the report writes a number and a markdown table
detail_tables the tables after the verdicts: the guide's details, memory, decomposition, MAMF,
              memory bandwidth, interconnect, ...
markdown      report.md, in order
plotkit       the figures' shared look: colours, line styles, length axes, legends, saving
comparison_figure  comparison-N.png, the guide's 2x2 plus $/token per comparison
figures       upgrade.png, attention.png, decomposition.png and write_all (matplotlib, imported
              only once the inputs are known good)
capability_table  check_capabilities' records side by side, one column per GPU
export        the flat table for pandas (points.csv, points.jsonl)
"""
