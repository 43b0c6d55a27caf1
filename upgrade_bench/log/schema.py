"""What a record of each kind holds: its fields, their types (units in the names), which are
required, and what each means. The one home of that knowledge:

- the writer (records.RecordWriter) refuses a field its kind does not declare, or a value of
  the wrong type, before anything is written: a programming error a test catches;
- every reader (the report, report/inputs.py; the sweep's resume, records.read_log) skips a
  record whose declared fields have the wrong type or an impossible value, with the reason
  (a list for a run_id once crashed RESUME with an unhashable type), and ignores fields it
  does not know (logs of other versions); log/checks.py holds both checks;
- docs/records.md's field tables are `markdown()` (tests/test_readme.py checks them).

A field is added here once, with its meaning; `python -m upgrade_bench.log.schema` prints
the docs' tables.
"""
from .field_types import (ANY, COUNT, FLAG, INTEGER, LIST, NON_NEGATIVE, NUMBER, OBJECT, PART, POSITIVE,
                          SETTING, SHARE, SIZE, TEXT)

SCHEMA = 1                      # the schema number every record carries; readers refuse a newer one

# Every record: the envelope RecordWriter writes, and what published figures add.
ENVELOPE = {
    "kind": (TEXT, "the record's kind: a section of this page"),
    "schema": (INTEGER, f"this table's number ({SCHEMA})"),
    "script": (TEXT, "the script that wrote it"),
    "run_id": (TEXT, "the run's identity, shared by its header and records"),
    "time": (NUMBER, "seconds since the epoch when written (null in published figures)"),
    "reference": (TEXT, "published figures fed through the pipeline (`guide`), not measured here"),
    "derived": (LIST, "fields computed from published figures, not published themselves"),
    "derived.*": (TEXT, "a field name"),
    "gpu_name": (TEXT, "the GPU, where a record of a foreign log names it itself"),
}
TELEMETRY = {  # NVML over the timed work (telemetry.aggregate); null without NVML
    "telemetry_samples": (SIZE, "NVML samples taken"),
    "sm_clock_mhz_median": (NON_NEGATIVE, "median SM clock"),
    "sm_clock_mhz_min": (NON_NEGATIVE, "lowest SM clock"),
    "mem_clock_mhz_median": (NON_NEGATIVE, "median memory clock"),
    "power_w_mean": (NON_NEGATIVE, "mean board power"),
    "temp_c_max": (NON_NEGATIVE, "highest GPU temperature"),
    "throttle": (LIST, "clock throttle reasons seen"),
    "throttle.*": (TEXT, "a reason"),
}
TIMING = {  # how a kernel was timed (timing.time_iterations)
    "timing": (TEXT, "`back-to-back` CUDA events, or the host clock without a GPU"),
    "warmup_iters": (SIZE, "untimed calls before the timed ones"),
    "iters": (SIZE, "timed calls"),
    "flush_mib": (SIZE, "device memory zeroed before each call, outside its timing"),
    "spin_ms": (NON_NEGATIVE, "GPU held this long so the host could queue every call first"),
    "host_ms_per_call": (NON_NEGATIVE, "host enqueue time per call"),
    "gpu_ms_per_call": (NON_NEGATIVE, "device time per call, before the timed calls"),
}
PEAK_MEMORY = {  # the caching allocator's figures since the point began (memory.worst_rank_memory)
    "peak_mem_gib": (NON_NEGATIVE, "max reserved (what runs out first), worst rank"),
    "peak_alloc_gib": (NON_NEGATIVE, "max allocated, worst rank"),
    "num_alloc_retries": (SIZE, "allocations that freed the cache and retried, worst rank"),
    "num_ooms": (SIZE, "allocations that failed, worst rank"),
}
POINT = {  # what a training point ran with
    "seq_len": (COUNT, "tokens per sequence"),
    "batch_size": (COUNT, "sequences per GPU per step"),
    "packed_doc_len": (SIZE, "tokens per packed document (0: unpacked)"),
    "attn_backend": (TEXT, "the attention backend that ran"),
    "world_size": (COUNT, "ranks (GPUs) of the run"),
    "earlier_points_in_process": (SIZE, "lengths the same process ran before this one"),
}
KINDS = {  # kind: (who writes it, when)
    "header": "every script, first: the stack, the hardware and the resolved configuration",
    "step": "benchmark.py, one per training step",
    "summary": "benchmark.py, one per sequence length, over the timed (non-warm-up) steps",
    "error": "benchmark.py, run_sweep.sh, bench_decompose.py, mamf-finder.py: a failed point",
    "memory": "benchmark.py, bench_decompose.py with `MEM_DEBUG=1`: a stage of the first step",
    "memory_snapshot": "`MEM_DEBUG=1`: after the first timed step's forward, the allocator's segments",
    "sweep": "run_sweep.sh, last: where the sweep's time went",
    "capacity": "run_sweep.sh `FIND_MAX_SEQLEN=1`: the largest length that fits",
    "node_step": "run_node.sh, one per step of the node's run",
    "attention": "bench_flash_attn.py, one per backend x length x pass (or per backend that cannot run)",
    "decomposition": "bench_decompose.py (and benchmark.py `DECOMPOSE=N`): the step split by kernel bucket",
    "matmul": "mamf-finder.py, one per shape measured",
    "mamf": "mamf-finder.py, last: the best shape, also after an interrupt",
    "capability": "check_capabilities.py, one per item",
}

FIELDS = {
    "header": {
        "software": (OBJECT, "versions of the stack (python, torch, cuda, cudnn, nccl, transformers, "
                             "deepspeed, liger-kernel, every attention package)"),
        "software.*": (SETTING, "a version, null where not installed"),
        "hardware": (OBJECT, "the host and GPU 0 as this process numbers it, the same fields everywhere"),
        "hardware.hostname": (TEXT, "the host"),
        "hardware.cpu_count": (COUNT, "CPU cores"),
        "hardware.gpu_name": (TEXT, "as torch names it"),
        "hardware.gpu_count": (SIZE, "GPUs the process sees"),
        "hardware.arch": (TEXT, "`sm_90`, `gfx94` or `cpu`"),
        "hardware.compute_capability": (TEXT, "`9.0` (gfx numbering on ROCm)"),
        "hardware.hbm_gib": (POSITIVE, "device memory"),
        "hardware.sm_count": (COUNT, "multiprocessors (null where NVML alone was asked)"),
        "hardware.driver": (TEXT, "driver version"),
        "hardware.power_limit_w": (NON_NEGATIVE, "enforced power limit"),
        "hardware.max_sm_clock_mhz": (NON_NEGATIVE, "highest SM clock"),
        "hardware.max_mem_clock_mhz": (NON_NEGATIVE, "highest memory clock"),
        "config": (OBJECT, "every resolved setting, plus `PYTORCH_CUDA_ALLOC_CONF` when set (it moves "
                           "peak memory)"),
        "config.*": (SETTING, "a setting"),
        "warnings": (LIST, "what the run warned about"),
        "warnings.*": (TEXT, "a warning"),
        "notes": (TEXT, "the user's NOTES"),
        "attn_backend": (TEXT, "the attention backend that runs"),
        "attn_backend_why": (TEXT, "why `auto` chose it"),
        "attn_versions": (OBJECT, "installed version of each backend's package"),
        "weights": (TEXT, "`pretrained` or `random`"),
        "model_type": (TEXT, "the HF config's model_type"),
        "num_layers": (COUNT, "decoder layers the model ran with"),
        "layer_mix": (OBJECT, "layers per mixer kind"),
        "layer_mix.*": (COUNT, "layers"),
        "n_active_params": (COUNT, "parameters a token passes through"),
        "n_total_params": (COUNT, "all parameters"),
        "mixer_kernels": (OBJECT, "where a hybrid's fast kernels come from"),
        "mixer_kernels.*": (TEXT, "a package, or `torch fallback`"),
        "z3_leaf_moe_blocks": (FLAG, "MoE blocks are ZeRO-3 leaf modules"),
        "peak_tflops": (POSITIVE, "the dense peak MFU is taken against"),
        "peak_source": (TEXT, "where that peak came from (`table:<GPU>` or the setting)"),
        "published_mamf_tflops": (POSITIVE, "the guide's measured MAMF of this GPU (mamf-finder.py)"),
        "backends": (OBJECT, "per layer shape, each backend's availability (bench_flash_attn.py)"),
        "out": (TEXT, "the sweep's records file (run_sweep.sh)"),
        "log": (TEXT, "the sweep's benchmark log (run_sweep.sh)"),
        "skipped_seq_lens": (LIST, "lengths already done in OUT, not run again (run_sweep.sh)"),
        "steps": (LIST, "the steps planned (run_node.sh)"),
    },
    "step": {
        "seq_len": POINT["seq_len"],
        "step": (SIZE, "index of the step, warm-up included"),
        "warmup": (FLAG, "a warm-up step, not in the summary"),
        "step_ms": (POSITIVE, "wall time of the synchronized step"),
        "tokens": (COUNT, "tokens per GPU per step"),
        "tflops_per_gpu": (NON_NEGATIVE, "model TFLOPS per GPU"),
        "mfu": (NON_NEGATIVE, "model FLOPs utilisation: share of the dense peak"),
        "loss": (NUMBER, "training loss"),
        **PEAK_MEMORY,
    },
    "summary": {
        **POINT,
        "steps": (COUNT, "timed steps"),
        "step_ms": (POSITIVE, "median step time"),
        "step_ms_min": (POSITIVE, "fastest step"),
        "step_ms_max": (POSITIVE, "slowest step"),
        "step_ms_spread": (NON_NEGATIVE, "(max - min) / median"),
        "tflops_per_gpu": (NON_NEGATIVE, "model TFLOPS per GPU at the median step"),
        "mfu": (NON_NEGATIVE, "model FLOPs utilisation: share of the dense peak"),
        "hfu": (NON_NEGATIVE, "hardware FLOPs utilisation: recompute counted too"),
        "tokens_per_s_per_gpu": (POSITIVE, "throughput at the median step"),
        "attn_flop_share": (SHARE, "attention's share of the model FLOPs"),
        "model_tflop_per_step": (NON_NEGATIVE, "model TFLOP per GPU per step"),
        "loss": (NUMBER, "the last step's loss"),
        **PEAK_MEMORY,
        **TELEMETRY,
        "energy_j_per_token": (NON_NEGATIVE, "board energy per token"),
    },
    "error": {
        "seq_len": (COUNT, "the point that failed (null: no point, e.g. mamf-finder's)"),
        "error": (TEXT, "`oom`, `timeout`, `exception`, `nonfinite_loss`, `bad_input`, `write_failed`, "
                        "`unsupported`"),
        "message": (TEXT, "what happened, in a line"),
        "exception": (TEXT, "the exception's type"),
        "traceback_tail": (TEXT, "the traceback's last 2000 characters"),
        "config": (OBJECT, "the configuration of the point"),
        "config.*": (SETTING, "a setting"),
        "phase": (TEXT, "mamf-finder's phase when a shape failed"),
        "exit_code": (INTEGER, "the benchmark process's exit code (run_sweep.sh)"),
        "stderr_tail": (TEXT, "the benchmark's last stderr lines (run_sweep.sh)"),
    },
    "memory": {
        "stage": (TEXT, "`model_built`, `engine_ready`, `forward`, `backward` or `step`"),
        "rank": (SIZE, "the rank measured"),
        "allocated_gib": (NON_NEGATIVE, "allocated now"),
        "reserved_gib": (NON_NEGATIVE, "reserved now"),
        "max_allocated_gib": (NON_NEGATIVE, "max allocated so far"),
    },
    "memory_snapshot": {
        "path": (TEXT, "the pickle to load at https://pytorch.org/memory_viz"),
        "note": (TEXT, "why there is none"),
        "segments": (SIZE, "segments the allocator holds"),
        "reserved_gib": (NON_NEGATIVE, "in all segments"),
        "allocated_gib": (NON_NEGATIVE, "in all segments"),
        "free_in_segments_gib": (NON_NEGATIVE, "free blocks inside segments (fragmentation)"),
        "largest_free_blocks_gib": (LIST, "the largest free blocks"),
        "largest_segments_gib": (LIST, "the largest segments: [total, allocated]"),
        "streams": (OBJECT, "per CUDA stream: segments, reserved_gib, allocated_gib"),
    },
    "sweep": {
        "mode": (TEXT, "`sweep` or `capacity`"),
        "reuse_process": (FLAG, "all lengths ran in one process"),
        "interrupted": (FLAG, "Ctrl-C or SIGTERM stopped it"),
        "wall_s": (NON_NEGATIVE, "the sweep's wall time"),
        "points_ok": (SIZE, "points with a summary"),
        "points_failed": (SIZE, "points with an error"),
        "process_wall_s": (NON_NEGATIVE, "benchmark processes' wall time, summed"),
        "startup_s": (NUMBER, "process wall minus step time, summed"),
        "steps_s": (NON_NEGATIVE, "step time, summed"),
        "timed_steps_s": (NON_NEGATIVE, "timed-step time, summed"),
        "processes": (LIST, "per process: seq_lens, finished, status, exit_code and its times"),
    },
    "capacity": {
        "max_fit_seq_len": (COUNT, "the largest length that fit"),
        "min_fail_seq_len": (COUNT, "the smallest that did not"),
        "complete": (FLAG, "false when interrupted: the bracket so far"),
        "peak_mem_gib_at_max": (NON_NEGATIVE, "peak reserved at max_fit_seq_len"),
        "hbm_gib": (POSITIVE, "the GPU's memory"),
        "seq_len_step": (COUNT, "the search's resolution"),
        "runs": (SIZE, "probe processes run"),
        "limit_seq_len": (COUNT, "the search's upper bound (MAX_SEQLEN_LIMIT)"),
        "probes": (LIST, "each probe: seq_len, fits, peak_mem_gib, hbm_gib, reason"),
        "config": (OBJECT, "the configuration searched"),
        "config.*": (SETTING, "a setting"),
    },
    "node_step": {
        "step": (TEXT, "`capabilities`, `mamf`, `attention`, `sweep` or `decomposition`"),
        "argv": (LIST, "its command"),
        "env": (OBJECT, "the variables it was given"),
        "exit_code": (INTEGER, "how it ended"),
        "estimate_s": (NON_NEGATIVE, "the plan's estimate"),
        "wall_s": (NON_NEGATIVE, "how long it took"),
        "output": (TEXT, "its records file, in the node's folder"),
    },
    "attention": {
        "backend": (TEXT, "the attention backend"),
        "status": (TEXT, "`ok`, `unavailable`, `oom` or `error`"),
        "reason": (TEXT, "why it is not `ok`"),
        "seq_len": (COUNT, "tokens per sequence (null: the backend cannot run at any length)"),
        "pass": (TEXT, "`fwd`, `bwd` or `fwd_bwd`"),
        "layer": (TEXT, "the model's layer kind the shape is"),
        "batch": (COUNT, "sequences"), "heads": (COUNT, "query heads"), "kv_heads": (COUNT, "key/value heads"),
        "head_dim": (COUNT, "query/key head size"), "v_head_dim": (COUNT, "value head size"),
        "window": (SIZE, "sliding window (0: none)"), "sinks": (FLAG, "attention sinks"),
        "causal": (FLAG, "causal mask"), "dtype": (TEXT, "`bf16` or `fp16`"),
        "packed_doc_len": POINT["packed_doc_len"],
        "ms": (NON_NEGATIVE, "median call time"), "ms_min": (NON_NEGATIVE, "fastest call"),
        "ms_max": (NON_NEGATIVE, "slowest call"),
        "tflop": (NON_NEGATIVE, "TFLOP per call (the useful work)"),
        "tflops": (NON_NEGATIVE, "TFLOPS at the median call"),
        "mfu": (NON_NEGATIVE, "share of the dense peak"),
        "ok": (FLAG, "passed the correctness check"),
        "max_abs_err": (NUMBER, "largest absolute error against the float64 reference"),
        "max_rel_err": (NUMBER, "that error scaled as the tolerance is"),
        "tol": (NON_NEGATIVE, "the tolerance of `max_rel_err`"),
        "gqa": (TEXT, "how grouped K/V heads were given to the kernel"),
        "note": (TEXT, "what the timing includes beyond the kernel"),
        **TIMING,
        **TELEMETRY,
    },
    "decomposition": {
        **POINT,
        "wall_step_ms": (POSITIVE, "median unprofiled step"),
        "wall_step_ms_min": (POSITIVE, "fastest unprofiled step"),
        "wall_step_ms_max": (POSITIVE, "slowest unprofiled step"),
        "time_steps": (COUNT, "unprofiled steps timed"),
        "profile_steps": (COUNT, "profiled steps"),
        "profiled_rank": (SIZE, "the rank profiled"),
        "source": (TEXT, "`cuda kernels`, or `cpu ops (self time)` without a GPU"),
        "use_liger": (FLAG, "Liger kernels on"),
        "buckets": (OBJECT, "`attention`, `gemm`, `linear_mixer`, `other`: tflop, ms, tflops, mfu, "
                            "time_share, kernel_ms_per_step"),
        "buckets.*": (PART, "a bucket"),
        "buckets.other.moe_routing": (PART, "the MoE router's share of `other`"),
        "everything_else": (PART, "all but attention: the guide's \"rest of the step\""),
        "total": (PART, "the whole step"),
        "kernel_busy_share": (NON_NEGATIVE, "busy compute-kernel time over the wall step"),
        "comm_share": (SHARE, "NCCL's share of kernel time"),
        "comm_kernel_ms_per_step": (NON_NEGATIVE, "NCCL kernel time per step"),
        "attn_flop_share": (SHARE, "attention's share of the model FLOPs"),
        "top_kernels": (LIST, "the longest kernels: name, bucket, ms"),
        "unclassified_top": (LIST, "the longest kernels no bucket rule matched: name, ms"),
        **PEAK_MEMORY,
    },
    "matmul": {
        "m": (COUNT, "rows of A"), "n": (COUNT, "columns of B"), "k": (COUNT, "the inner size"),
        "dtype": (TEXT, "torch's name of the operands' dtype"),
        "phase": (TEXT, "the search's phase"),
        "tflops_mean": (POSITIVE, "TFLOPS at the mean iteration"),
        "tflops_median": (POSITIVE, "TFLOPS at the median iteration"),
        "tflops_max": (POSITIVE, "TFLOPS at the fastest iteration"),
        "ms_mean": (NON_NEGATIVE, "mean iteration"), "ms_median": (NON_NEGATIVE, "median iteration"),
        "ms_min": (NON_NEGATIVE, "fastest iteration"), "ms_max": (NON_NEGATIVE, "slowest iteration"),
        **TIMING,
        **TELEMETRY,
    },
    "mamf": {
        "dtype": (TEXT, "torch's name of the operands' dtype"),
        "m": (COUNT, "the best shape's rows of A"), "n": (COUNT, "its columns of B"), "k": (COUNT, "its inner size"),
        "tflops_mean": (POSITIVE, "the MAMF: the best shape's TFLOPS at its mean iteration"),
        "tflops_median": (POSITIVE, "at its median iteration"),
        "tflops_max": (POSITIVE, "at its fastest iteration"),
        "iters": TIMING["iters"],
        "peak_tflops": (POSITIVE, "the dtype's dense peak"),
        "efficiency": (NON_NEGATIVE, "the MAMF's share of that peak"),
        "published_mamf_tflops": (POSITIVE, "the guide's measured MAMF of this GPU"),
        "shapes_tried": (SIZE, "shapes measured"),
        "measurements": (SIZE, "measurements, screening included"),
        "elapsed_s": (NON_NEGATIVE, "the run's wall time"),
        "search_s": (NON_NEGATIVE, "the search's wall time"),
        "warmup_s": (NON_NEGATIVE, "the accelerator's warm-up"),
        "mode": (TEXT, "`search` or `scan`"),
        "interrupted": (FLAG, "the best so far, when Ctrl-C or SIGTERM stopped the run"),
        "notes": (TEXT, "a published figure's provenance"),
        **{k: TELEMETRY[k] for k in ("sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean",
                                     "throttle", "throttle.*")},
    },
    "capability": {
        "item": (TEXT, "what is asked: `matmul:bf16`, `attention:fa3`, ..."),
        "category": (TEXT, "`dtype`, `attention`, `memory` or `interconnect`"),
        "status": (TEXT, "`ok`, `unsupported_hardware`, `unsupported_stack`, `unavailable` or `error`"),
        "detail": (TEXT, "what ran, or why not"),
        "value": (ANY, "a measured value or a version"),
        "probe_s": (NON_NEGATIVE, "how long the item took"),
    },
}
REQUIRED = {"summary": ("seq_len",), "decomposition": ("seq_len",), "attention": ("backend",),
            "capability": ("item", "status")}


def markdown() -> str:
    """docs/records.md's field tables: per kind, who writes it, then field, type, meaning."""
    out = []
    for kind, written in KINDS.items():
        out += [f"### `{kind}`", "", written[0].upper() + written[1:] + ".", "",
                "| field | type | meaning |", "| --- | --- | --- |"]
        out += [f"| `{name}` | {kind_of.what}{' (required)' if name in REQUIRED.get(kind, ()) else ''} | "
                f"{meaning} |" for name, (kind_of, meaning) in FIELDS[kind].items()]
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    print(markdown(), end="")
