"""Series paired into comparisons and everything computed about each (speedups, ranges, the
format and attention-share rows): numbers, no prose; page/ words them."""
