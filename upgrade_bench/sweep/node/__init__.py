"""run_node.sh: every step of a node into one folder.

main   the command: settings, the plan printed, each step run, the closing summary
plan   the steps, their commands and identities, what the folder already holds
cost   the estimate: each step's rough cost and what it rests on
"""
