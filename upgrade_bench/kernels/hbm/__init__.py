"""bench_hbm.py: sustained device-memory bandwidth.

bench   per op and size, bytes to GB/s, the datasheet share
main    the script: its settings and run
"""
