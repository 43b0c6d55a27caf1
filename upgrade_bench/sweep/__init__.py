"""run_sweep.sh and run_node.sh.

runner           run_sweep.sh's entry: processes, failures, resume, the sweep record
plan             the sweep's settings, commands, resume and results file; no torch
capacity         FIND_MAX_SEQLEN: the search for the largest length that fits
tables           the sweep's and the capacity search's text tables
child_process    running a benchmark process group: its records live, timeouts, kills
node/            run_node.sh: every step of a node into one folder, its plan and estimate first
"""
