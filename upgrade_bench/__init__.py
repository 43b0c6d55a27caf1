"""Shared pieces of the GPU-upgrade benchmark suite: one module per concern.

settings           environment variables of every script, validated, with --help
faults             bad input (a bad flag too: Parser) and failed writes as one line and an exit code (2, 4), OOM (3), error records
records            the JSON-lines writer and reader
runs               a run's identity (config keys that say what ran) and its records' header
header             the header record every script writes first: stack, hardware, config, its own fields
fingerprint        the software stack; the hardware and the device (NVIDIA or ROCm) as torch sees them
devices            the GPUs visible here, NVIDIA (NVML) or AMD (amdsmi), without torch; the header's hardware
paths              the repository root
gpus               the GPU peak/HBM/MAMF table, each row citing its source, and the lookup by name
flops              FLOP accounting (the guide's convention): dense, attention, MFU, HFU
numfmt             numbers in the text tables: significant figures, never 0.0 for a small one
interrupts         Ctrl-C and SIGTERM: one clean stop for every script
model              model configs, presets, weights, building
attn_backends      the attention backend table: names, HF names, packages, GPUs, packing, the auto rule
attn_adapters      one call for every attention kernel: the flash packages and the SDPA kernels
engine             DeepSpeed setup, batches, the timed training step, a training script's main
memory             peak memory across ranks, MEM_DEBUG's staged probes and snapshot
timing             device timers (CUDA events, L2 flush) and summary statistics
telemetry          NVML sampling: clocks, power, temperature, throttle reasons, energy
sweep              run_sweep.sh's entry and runner: processes, failures, the sweep record
sweep_plan         the sweep's settings, commands, resume and results file; no torch
sweep_capacity     FIND_MAX_SEQLEN: the search for the largest length that fits
sweep_tables       the sweep's and the capacity search's text tables
child_process      running a benchmark process group: its records live, timeouts, kills
decompose          bench_decompose.py: the kernel classifier and the one-clock wall-time split
attn_kernels       bench_flash_attn.py: discovery, inputs per layout, the float64 correctness check
attn_bench         bench_flash_attn.py: each backend checked then timed, a record per outcome, the table
mamf               mamf-finder.py: the MAMF search over shapes
mamf_bench         mamf-finder.py: one shape's operands and timing, as the published tool
mamf_run           mamf-finder.py: a run's device, records, progress line and table
capabilities, capability_probes   check_capabilities.py: gates, classification, tiny probes
report             plot_results.py: comparisons, $/token verdicts, report.md, figures, flat table
"""
