"""Kernels and their timing.

attn_backends    the attention backend table: names, HF names, packages, GPUs, packing, the auto rule
attn_adapters    one call for every attention kernel: the flash packages and the SDPA kernels
attn_kernels     bench_flash_attn.py: discovery, inputs per layout, the float64 correctness check
linear_kernels   the Gated DeltaNet chunk kernel (FLA) as a backend of the same bench
attn_bench       bench_flash_attn.py: each backend checked then timed, a record per outcome, the table
timing           device timers (sustained, back to back; CUDA events, L2 flush), summary statistics, the window's settings
mamf, mamf_bench, mamf_run   mamf-finder.py: the search, one shape's timing, the run
hbm              bench_hbm.py: sustained device-memory bandwidth per op and size, bytes to GB/s, the datasheet share
"""
