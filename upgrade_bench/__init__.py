"""Shared pieces of the GPU-upgrade benchmark suite: one module per concern.

settings           environment variables of every script, validated, with --help
gpus               the GPU peak/HBM table and the lookup by device name
flops              FLOP accounting (the guide's convention): dense, attention, MFU, HFU
records            the JSON-lines writer and reader
runs               a run's identity (config keys that say what ran) and its records' header
numfmt             numbers in the text tables: significant figures, never 0.0 for a small one
faults             a failure's error record and exit code (3 = OOM, 2 = bad input)
fingerprint        software and hardware stack for the header record
model              model configs, presets, weights, building
attention          attention backends of the training step: discovery and the auto rule
engine             DeepSpeed setup, batches, the timed training step, a training script's main
timing             device timers (CUDA events, L2 flush) and summary statistics
telemetry          NVML sampling: clocks, power, temperature, throttle reasons, energy
sweep              run_sweep.sh's entry and runner: processes, failures, the sweep record
sweep_plan         the sweep's settings, commands, resume and results file; no torch
sweep_capacity     FIND_MAX_SEQLEN: the search for the largest length that fits
sweep_tables       the sweep's and the capacity search's text tables
procs              running a benchmark process group: its records live, timeouts, kills
devices            the GPUs visible here, from NVML (planning without torch)
interrupts         Ctrl-C and SIGTERM: one clean stop for every script
decompose          bench_decompose.py: the kernel classifier and the one-clock wall-time split
attn_kernels       bench_flash_attn.py: one adapter per attention kernel, correctness check
attn_bench         bench_flash_attn.py: each backend checked then timed, a record per outcome, the table
matmul             mamf-finder.py: the MAMF search over shapes
mamf_bench         mamf-finder.py: one shape's operands and timing, as the published tool
mamf_run           mamf-finder.py: a run's device, records, progress line and table
capabilities, capability_probes   check_capabilities.py: gates, classification, tiny probes
report, report_md, figures, reference   plot_results.py: analysis, markdown, PNGs, the guide's numbers
"""
