"""Shared pieces of the GPU-upgrade benchmark suite: one module per concern.

settings           environment variables of every script, validated, with --help
faults             bad input and failed writes as one line and an exit code (2, 4), OOM (3), error records
records            the JSON-lines writer and reader
header             the header record every script writes first: stack, hardware, config, its own fields
fingerprint        software and hardware stack; the device (compute capability, NVIDIA or ROCm)
paths              the repository root
gpus               the GPU peak/HBM/MAMF table, each row citing its source, and the lookup by name
flops              FLOP accounting (the guide's convention): dense, attention, MFU, HFU
model              model configs, presets, weights, building
attn_backends      the attention backend table: names, HF names, packages, GPUs, packing, the auto rule
attn_adapters      one call for every attention kernel: the flash packages and the SDPA kernels
engine             DeepSpeed setup, batches, the timed training step, a training script's main
memory             peak memory across ranks, MEM_DEBUG's staged probes and snapshot
timing             device timers (CUDA events, L2 flush) and summary statistics
telemetry          NVML sampling: clocks, power, temperature, throttle reasons, energy
sweep, child_process   run_sweep.sh: planning, resume, the capacity search; running a process group
decompose          bench_decompose.py: the kernel classifier and the one-clock wall-time split
attn_kernels       bench_flash_attn.py: discovery, inputs per layout, the float64 correctness check
mamf               mamf-finder.py: the MAMF search over shapes
capabilities, capability_probes   check_capabilities.py: gates, classification, tiny probes
report             plot_results.py: comparisons, $/token verdicts, report.md, figures, flat table
"""
