"""mamf-finder.py: Maximum Achievable Matmul FLOPS.

search   the search: coarse scan, refinement, the final measurement
bench    one shape's timing (bf16, fp8 scalings)
run      the run: records, interrupts, the best so far
main     the script: its flags
"""
