"""Kernels and their timing, a sub-package per script.

attention/   bench_flash_attn.py: the attention backend table and calls, isolated attention and
             linear-mixer timing
mamf/        mamf-finder.py: the MAMF search
hbm/         bench_hbm.py: sustained device-memory bandwidth per op and size
comm/        bench_comm.py: the collectives' sustained bus bandwidth
timing       device timers (sustained, back to back; CUDA events, L2 flush), summary statistics,
             the window's settings
"""
