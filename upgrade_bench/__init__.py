"""Shared pieces of the GPU-upgrade benchmark suite, in wings: one folder per part of the plan.

Where to add something:
  a model family        models/architecture.py (FAMILIES: a row and its reader)
  a FLOP formula        models/flops.py
  a GPU                 hardware/gpus.py (one row: peaks, HBM, bandwidth, link, published MAMF)
  an attention backend  kernels/attn_backends.py (one table) and its call in kernels/attn_adapters.py
  a record field        log/schema.py (FIELDS: every writer and reader checks against it)
  a setting             training/variables.py (TRAINING_VARS) or the script's own VARS

models/     what a model is (its layers, read from the HF config), what it costs in FLOPs, and
            building it (presets, weights, Liger, fast-kernel bindings)
hardware/   the GPU table, the GPUs visible here (devices/), the stack's fingerprint, NVML
            telemetry, capability probes
kernels/    attention backends and their calls, isolated attention and linear-mixer timing,
            sustained kernel timing, the MAMF search
training/   the DeepSpeed training step, peak memory, the step decomposition and its kernel
            classifier, DeepSpeed's JIT-built ops
sweep/      run_sweep.sh and run_node.sh: planning without torch, child processes, the memory
            ceiling search, the text tables
log/        the JSON-lines records: the schema of every kind, writing and reading them, the
            header, a run's identity, outputs written whole or not at all
report/     plot_results.py: from records to comparisons, forecasts, verdicts, report.md, figures

Cross-cutting, at the top:
  faults       bad input, failed writes and OOM as one line and an exit code: the only home of exit codes
  interrupts   Ctrl-C and SIGTERM: one clean stop for every script
  settings     environment variables of every script, validated, with --help
  numfmt       numbers in text tables: significant figures, never 0.0 for a small one
  paths        the repository root
"""
