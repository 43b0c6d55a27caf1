"""Series paired into comparisons and everything computed about each: numbers, no prose."""
