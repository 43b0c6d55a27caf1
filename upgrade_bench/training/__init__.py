"""The training step benchmark.py and bench_decompose.py time.

variables        the training scripts' settings (TRAINING_VARS): the guide's config by default
run_config       the settings resolved against this machine before any work, and the header
engine           DeepSpeed setup, batches, the timed training step, a training script's main
memory           peak memory across ranks, MEM_DEBUG's staged probes and snapshot
decompose        the step decomposition's kernel classifier and the one-clock wall-time split
decompose_step   profiling steps of a live engine into a `decomposition` record
extensions       DeepSpeed's JIT-built ops: where they build, stale build locks
benchmark_main   benchmark.py: a point of the sweep, timed step by step, its summary
decompose_main   bench_decompose.py: the step split into attention, GEMMs, the rest and comm
"""
