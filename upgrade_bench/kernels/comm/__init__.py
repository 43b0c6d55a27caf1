"""bench_comm.py: the collectives' sustained bus bandwidth.

bench   one collective timed per size, its record
main    the script: ranks, rendezvous, the run
"""
