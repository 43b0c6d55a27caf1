"""Published figures, never measured here, each with its source.

guide   the guide's published H200/B200 figures as records (results/reference/guide.jsonl)
pairs   the other published pairs (results/published/) as records, and every pair
"""
