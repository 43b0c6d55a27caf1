"""The decision in numbers: per workload and candidate the call, $/token, break-even price, cost to train and owner's cost."""
