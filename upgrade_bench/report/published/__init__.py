"""Published figures, never measured here, each with its source.

guide   the guide's published H200/B200 figures as records (results/reference/guide.jsonl)
runs    the other sources' published runs and pairs, as published (Megatron-Bridge, NeMo Framework)
pairs   those runs as records (results/published/), every pair, and what differs in each
"""
