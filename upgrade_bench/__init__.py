"""Shared pieces of the GPU-upgrade benchmark suite, in wings: one folder per part of the plan.

Where to add something (a model family, a GPU, a precision, an attention backend, a benchmark
script, a record field, a setting): docs/layout.md, the one copy of each recipe.

models/     what a model is (its layers, read from the HF config), what it costs in FLOPs, and
            building it (presets, weights, Liger, fast-kernel bindings)
hardware/   the GPU table, the formats' silicon floors, the training precisions, the GPUs
            visible here (devices/), the stack's fingerprint, NVML telemetry
kernels/    attention backends and their calls, isolated attention and linear-mixer timing,
            sustained kernel timing, the MAMF search
capability/ check_capabilities.py's verdicts and probes, above the kernels they call
training/   the one resolver of what a run runs, the DeepSpeed training step, low precision, peak memory, the step decomposition and its kernel
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
