"""Shared pieces of the GPU-upgrade benchmark suite: one module per concern.

settings     environment variables of every script, validated, with --help
gpus         the GPU peak/HBM table and the lookup by device name
flops        FLOP accounting (the guide's convention): dense, attention, MFU, HFU
fingerprint  software and hardware stack for the header record
records      the JSON-lines writer and reader
attention    attention backends: discovery and the auto rule
model        model configs, presets, weights, building
engine       DeepSpeed setup, batches and the timed training step
timing       device timers and summary statistics
"""
