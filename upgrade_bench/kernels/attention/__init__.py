"""bench_flash_attn.py: isolated attention and linear-mixer kernels.

backends   the attention backend table: names, HF names, packages, GPUs, packing, the auto rule
adapters   one call for every attention kernel: the flash packages and the SDPA kernels
kernels    discovery, inputs per layout, the float64 correctness check
linear     the Gated DeltaNet chunk kernel (FLA) as a backend of the same bench
bench      each backend checked then timed, a record per outcome, the table
main       the script: its settings, the layers of MODEL, the plan, the run
"""
