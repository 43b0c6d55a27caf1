"""What a record of each kind holds: its fields, their types (units in the names), which are
required, and what each means. The one home of that knowledge:

- the writer (records.RecordWriter) refuses a field its kind does not declare, or a value of
  the wrong type, before anything is written: a programming error a test catches;
- every reader (the report, report/read/inputs.py; the sweep's resume, records.read_log) skips a
  record whose declared fields have the wrong type or an impossible value, with the reason
  (a log from anywhere may hold a list where a run_id goes), and ignores fields it
  does not know (logs of other versions); log/checks.py holds both checks;
- docs/records.md's field tables are `markdown()` (tests/test_readme.py checks them).

A field is added here once, a line of its kind's table (name, type, meaning; the types are
field_types.TYPES); `python -m upgrade_bench.log.schema` prints the docs' tables.
"""
from .field_types import TYPES

SCHEMA = 1                      # the schema number every record carries; readers refuse a newer one


def table(text: str) -> dict:
    """{field: (Type, meaning)} of lines 'name  type  meaning'."""
    rows = [line.split(None, 2) for line in text.strip().splitlines()]
    return {name: (TYPES[kind], meaning) for name, kind, meaning in rows}


def pick(group: dict, *names) -> dict:
    return {name: group[name] for name in names}


# Every record: the envelope RecordWriter writes, and what published figures add.
ENVELOPE = table("""
kind       text          the record's kind: a section of this page
schema     integer       the version of this table (schema.SCHEMA)
script     text          the script that wrote it
run_id     text          the run's identity, shared by its header and records
time       number        seconds since the epoch when written (null in published figures)
reference  text          published figures fed through the pipeline (`guide`), not measured here
derived    list          fields computed from published figures, not published themselves
derived.*  text          a field name
gpu_name   text          the GPU, where a record of a foreign log names it itself
""")

# NVML over the timed work (telemetry.aggregate); null without NVML.
TELEMETRY = table("""
telemetry_samples     size          NVML samples taken
sm_clock_mhz_median   non-negative  median SM clock
sm_clock_mhz_min      non-negative  lowest SM clock
mem_clock_mhz_median  non-negative  median memory clock
power_w_mean          non-negative  mean board power
temp_c_max            non-negative  highest GPU temperature
throttle              list          clock throttle reasons seen
throttle.*            text          a reason
""")

# How a kernel was timed (timing.time_iterations).
TIMING = table("""
timing            text          `back-to-back` CUDA events, or the host clock without a GPU
warmup_iters      size          untimed calls before the timed ones
iters             size          timed calls
flush_mib         size          device memory zeroed before each call, outside its timing
spin_ms           non-negative  GPU held this long so the host could queue every call first
host_ms_per_call  non-negative  host enqueue time per call
gpu_ms_per_call   non-negative  device time per call, before the timed calls
""")

# The caching allocator's figures since the point began (memory.point_peaks).
PEAK_MEMORY = table("""
peak_mem_gib             non-negative  max reserved (what runs out first), worst rank
peak_mem_gib_per_rank    list          max reserved of each rank, in rank order
peak_mem_gib_per_rank.*  non-negative  a rank's
peak_alloc_gib           non-negative  max allocated, worst rank
num_alloc_retries        size          allocations that freed the cache and retried, worst rank
num_ooms                 size          allocations that failed, worst rank
""")

# What a training point ran with.
POINT = table("""
seq_len                    count         tokens per sequence
batch_size                 count         sequences per GPU per step
packed_doc_len             size          tokens per packed document (0: unpacked)
attn_backend               text          the attention backend that ran
world_size                 count         ranks (GPUs) of the run
earlier_points_in_process  size          lengths the same process ran before this one
""")

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
    "hbm": "bench_hbm.py, one per op x buffer size: sustained device-memory bandwidth",
    "comm": "bench_comm.py, one per op x size: a collective's sustained algorithm and bus bandwidth",
    "capability": "check_capabilities.py, one per item",
}

FIELDS = {
    "header": table("""
software                     object        versions of the stack, every attention package's too
software.*                   setting       a version, null where not installed
hardware                     object        the host and this process's GPU 0, the same fields everywhere
hardware.hostname            text          the host
hardware.cpu_count           count         CPU cores
hardware.gpu_name            text          as torch names it
hardware.gpu_count           size          GPUs the process sees
hardware.arch                text          `sm_90`, `gfx94` or `cpu`
hardware.compute_capability  text          `9.0` (gfx numbering on ROCm)
hardware.hbm_gib             positive      device memory
hardware.sm_count            count         multiprocessors (null where NVML alone was asked)
hardware.driver              text          driver version
hardware.power_limit_w       non-negative  enforced power limit
hardware.default_power_limit_w  non-negative  the board's default power limit (NVML)
hardware.max_sm_clock_mhz    non-negative  highest SM clock
hardware.max_mem_clock_mhz   non-negative  highest memory clock
config                       object        every resolved setting, and `PYTORCH_CUDA_ALLOC_CONF` when set
config.*                     setting       a setting
config.PRECISION             text          the training precision asked (the report reads `precision`, what ran, first)
config.FP8_EXPERTS           flag          MoE experts asked in FP8 (the report reads `low_precision.converted_experts` first)
warnings                     list          what the run warned about
warnings.*                   text          a warning
notes                        text          the user's NOTES
workload                     text          the named workload (WORKLOAD) whose settings were the run's defaults; `none`: each setting's own
attn_backend                 text          the attention backend that runs
attn_backend_why             text          why `auto` chose it
attn_versions                object        installed version of each backend's package
weights                      text          `pretrained` or `random`
model_type                   text          the HF config's model_type
num_layers                   count         decoder layers the model ran with
model_cut                    text          the cut: `4 of 48 layers, 64 of 512 experts`, `all 32 layers`
precision                    text          the training precision of the GEMMs (`bf16`, `fp8-tensorwise`, ...)
data                         text          DATA's token file as read: its format and how many tokens (null: random tokens)
low_precision                object        what converted to it: recipe, library, converted_linears, kept_linears, converted_experts, kept_experts, experts (what their grouped GEMMs ran in), converted_params (weights a token passes through in converted GEMMs), rule, keeps, compiled
low_precision.*              any           a part of that
low_precision.converted_experts  size      MoE experts modules converted to FP8 (0: the experts ran bf16)
layer_mix                    object        layers per mixer kind
layer_mix.*                  count         layers
n_active_params              count         parameters a token passes through
n_total_params               count         all parameters
mixer_kernels                object        where a hybrid's fast kernels come from
mixer_kernels.*              text          a package, or `torch fallback`
z3_leaf_moe_blocks           flag          MoE blocks are ZeRO-3 leaf modules
peak_tflops                  positive      the dense peak MFU is taken against
peak_source                  text          where that peak came from (`table:<GPU>` or the setting)
published_mamf_tflops        positive      the guide's measured MAMF of this GPU (mamf-finder.py)
backends                     object        per layer shape, each backend's availability (bench_flash_attn.py)
out                          text          the sweep's records file (run_sweep.sh)
log                          text          the sweep's benchmark log (run_sweep.sh)
skipped_seq_lens             list          lengths already done in OUT, not run again (run_sweep.sh)
steps                        list          the steps planned (run_node.sh)
comm_env                     object        NCCL_ and multicast variables as the collectives ran (bench_comm.py)
comm_env.*                   text          a variable's value
nccl_transports              list          the transports NCCL's connections took, from its INFO lines (`P2P/CUMEM`, `SHM/direct`, `NET/IB`, `NET/Socket`: TCP); null where NCCL_DEBUG was the user's or on CPU (bench_comm.py)
nccl_transports.*            text          a transport
"""),
    "step": {**pick(POINT, "seq_len"), **table("""
step            size          index of the step, warm-up included
warmup          flag          a warm-up step, not in the summary
step_ms         positive      wall time of the synchronized step
tokens          count         tokens per GPU per step
tflops_per_gpu  non-negative  model TFLOPS per GPU
mfu             non-negative  model FLOPs utilisation: share of the dense peak
loss            number        training loss
"""), **PEAK_MEMORY},
    "summary": {**POINT, **table("""
steps                 count         timed steps
step_ms               positive      median step time
step_ms_min           positive      fastest step
step_ms_max           positive      slowest step
step_ms_spread        non-negative  (max - min) / median
tflops_per_gpu        non-negative  model TFLOPS per GPU at the median step
mfu                   non-negative  model FLOPs utilisation: share of the dense peak
hfu                   non-negative  hardware FLOPs utilisation: recompute counted too
tokens_per_s_per_gpu  positive      throughput at the median step
attn_flop_share       share         attention's share of the model FLOPs
model_tflop_per_step  non-negative  model TFLOP per GPU per step
gemm_tflop_per_step   non-negative  what the weight matmuls execute per GPU per step: their model TFLOP and their checkpoint recompute
loss                  number        the last step's loss
loss_mean             number        the mean loss over the timed steps (a low precision's numerics beside bf16's)
low_precision_flop_share  share     share of the model FLOPs in low-precision GEMMs (0 in bf16)
precision_bound_ms    positive      the step at the matmul ceilings: each FLOP at its format's MAMF (flops.precision_bound_ms)
precision_bound_source  text        whose MAMF that bound took (`table:<GPU>`: the GPU table's published MAMF)
energy_j_per_token    non-negative  board energy per token
"""), **PEAK_MEMORY, **TELEMETRY},
    "error": table("""
seq_len         count         the point that failed (null: no point, e.g. mamf-finder's)
error           text          `oom`, `does_not_fit` (estimated before it ran, not run), `timeout`, `exception`, `diverged` (a loss not finite; `nonfinite_loss` before), `bad_input`, `write_failed`, `environment`, ...
estimated_peak_gib  positive  `does_not_fit`: the plan's estimate of the point's peak (sweep/fit.py)
usable_gib      positive      `does_not_fit`: what the GPU's allocator could reserve, as the plan took it
message         text          what happened, in a line
exception       text          the exception's type
traceback_tail  text          the traceback's last 2000 characters
config          object        the configuration of the point
config.*        setting       a setting
phase           text          mamf-finder's phase when a shape failed
exit_code       integer       the benchmark process's exit code (run_sweep.sh)
stderr_tail     text          the benchmark's last stderr lines (run_sweep.sh)
mixer_kernels   object        the failed process's header's, where it wrote one (run_sweep.sh): what ran beside the settings
mixer_kernels.* text          where a kernel came from
low_precision   object        the failed process's header's, where it wrote one (run_sweep.sh)
low_precision.* any           a part of that
low_precision.converted_experts size  MoE experts modules converted to FP8
"""),
    "memory": table("""
stage              text          `model_built`, `engine_ready`, `forward`, `backward` or `step`
rank               size          the rank measured
allocated_gib      non-negative  allocated now
reserved_gib       non-negative  reserved now
max_allocated_gib  non-negative  max allocated so far
"""),
    "memory_snapshot": table("""
path                     text          the pickle to load at https://pytorch.org/memory_viz
note                     text          why there is none
segments                 size          segments the allocator holds
reserved_gib             non-negative  in all segments
allocated_gib            non-negative  in all segments
free_in_segments_gib     non-negative  free blocks inside segments (fragmentation)
largest_free_blocks_gib  list          the largest free blocks
largest_segments_gib     list          the largest segments: [total, allocated]
streams                  object        per CUDA stream: segments, reserved_gib, allocated_gib
"""),
    "sweep": table("""
mode            text          `sweep` or `capacity`
reuse_process   flag          all lengths ran in one process
interrupted     flag          Ctrl-C or SIGTERM stopped it
wall_s          non-negative  the sweep's wall time
points_ok       size          points with a summary
points_failed   size          points with an error
process_wall_s  non-negative  benchmark processes' wall time, summed
startup_s       number        process wall minus step time, summed
steps_s         non-negative  step time, summed
timed_steps_s   non-negative  timed-step time, summed
processes       list          per process: seq_lens, finished, status, exit_code and its times
"""),
    "capacity": table("""
max_fit_seq_len      count         the largest length that fit
min_fail_seq_len     count         the smallest that did not
complete             flag          false when interrupted: the bracket so far
peak_mem_gib_at_max  non-negative  peak reserved at max_fit_seq_len
hbm_gib              positive      the GPU's memory
seq_len_step         count         the search's resolution
runs                 size          probe processes run
limit_seq_len        count         the search's upper bound (MAX_SEQLEN_LIMIT)
probes               list          each probe: seq_len, fits, peak_mem_gib, hbm_gib, reason
config               object        the configuration searched
config.*             setting       a setting
"""),
    "node_step": table("""
step        text          `capabilities`, `mamf`, `hbm`, `comm`, `attention`, `sweep` or `decomposition`
argv        list          its command
env         object        the variables it was given
exit_code   integer       how it ended
estimate_s  non-negative  the plan's estimate
wall_s      non-negative  how long it took
output      text          its records file, in the node's folder
identity    object        what it measures, as a rerun on the folder compares it: the GPU, and the step's resolved settings
identity.*  any           a part of that
seq_lens    list          the lengths it was to measure (null: a step without lengths)
seq_lens.*  count         a length
"""),
    "attention": {**table("""
backend      text          the attention backend
status       text          `ok`, `unavailable`, `oom` or `error`
reason       text          why it is not `ok`
seq_len      count         tokens per sequence (null: the backend cannot run at any length)
pass         text          `fwd`, `bwd` or `fwd_bwd`
layer        text          the model's layer kind the shape is
batch        count         sequences
heads        count         query heads
kv_heads     count         key/value heads
head_dim     count         query/key head size
v_head_dim   count         value head size
window       size          sliding window (0: none)
sinks        flag          attention sinks
causal       flag          causal mask
dtype        text          `bf16` or `fp16`
ms           non-negative  median call time
ms_min       non-negative  fastest call
ms_max       non-negative  slowest call
tflop        non-negative  TFLOP per call (the useful work)
tflops       non-negative  TFLOPS at the median call
mfu          non-negative  share of the dense peak
ok           flag          passed the correctness check
max_abs_err  number        largest absolute error against the float64 reference
max_rel_err  number        that error scaled as the tolerance is
tol          non-negative  the tolerance of `max_rel_err`
gqa          text          how grouped K/V heads were given to the kernel
note         text          what the timing includes beyond the kernel
"""), **pick(POINT, "packed_doc_len"), **TIMING, **TELEMETRY},
    "decomposition": {**POINT, **table("""
wall_step_ms               positive      median unprofiled step
wall_step_ms_min           positive      fastest unprofiled step
wall_step_ms_max           positive      slowest unprofiled step
time_steps                 count         unprofiled steps timed
profile_steps              count         profiled steps
profiled_rank              size          the rank profiled
source                     text          `cuda kernels`, or `cpu ops (self time)` without a GPU
use_liger                  flag          Liger kernels on
buckets                    object        `attention`, `gemm`, `linear_mixer`, `other`: tflop, ms, tflops, mfu, ...
buckets.*                  part          a bucket
buckets.other.moe_routing  part          the MoE router's share of `other`
buckets.other.precision_cast  part       a low precision's amax, scale and cast kernels, part of `other`
buckets.gemm.low_precision  part         its float8 / block-scaled GEMMs, part of `gemm`, with their own TFLOPS
everything_else            part          all but attention: the guide's "rest of the step"
total                      part          the whole step
kernel_busy_share          non-negative  busy compute-kernel time over the wall step
comm_share                 share         NCCL's share of kernel time
comm_kernel_ms_per_step    non-negative  NCCL kernel time per step
attn_flop_share            share         attention's share of the model FLOPs
top_kernels                list          the longest kernels: name, bucket, ms
unclassified_top           list          the longest kernels no bucket rule matched: name, ms
"""), **PEAK_MEMORY},
    "matmul": {**table("""
m              count         rows of A
n              count         columns of B
k              count         the inner size
dtype          text          torch's name of the operands' dtype
scaling        text          float8 scales: `tensorwise` or `rowwise`
phase          text          the search's phase
tflops_mean    positive      TFLOPS at the mean iteration
tflops_median  positive      TFLOPS at the median iteration
tflops_max     positive      TFLOPS at the fastest iteration
ms_mean        non-negative  mean iteration
ms_median      non-negative  median iteration
ms_min         non-negative  fastest iteration
ms_max         non-negative  slowest iteration
"""), **TIMING, **TELEMETRY},
    "mamf": {**table("""
dtype                  text          torch's name of the operands' dtype
scaling                text          float8 scales: `tensorwise` or `rowwise`
m                      count         the best shape's rows of A
n                      count         its columns of B
k                      count         its inner size
tflops_mean            positive      the MAMF: the best shape's TFLOPS at its mean iteration
tflops_median          positive      at its median iteration
tflops_max             positive      at its fastest iteration
peak_tflops            positive      the dtype's dense peak
efficiency             non-negative  the MAMF's share of that peak
published_mamf_tflops  positive      the guide's measured MAMF of this GPU
shapes_tried           size          shapes measured
measurements           size          measurements, screening included
elapsed_s              non-negative  the run's wall time
search_s               non-negative  the search's wall time
warmup_s               non-negative  the accelerator's warm-up
mode                   text          `search` or `scan`
interrupted            flag          the best so far, when Ctrl-C or SIGTERM stopped the run
notes                  text          a published figure's provenance
"""), **pick(TIMING, "iters"),
        **pick(TELEMETRY, "sm_clock_mhz_median", "sm_clock_mhz_min", "power_w_mean", "throttle", "throttle.*")},
    "hbm": {**table("""
op                  text          `copy`, `read` or `write`
status              text          `ok`, `oom` or `error`
reason              text          why it is not `ok`
buffer_mib          count         MiB of each buffer (`copy` has two: its source and destination)
bytes_moved         count         bytes one call moves to or from device memory (`copy`: 2 x the buffer)
ms                  non-negative  median call time
ms_min              non-negative  fastest call
ms_max              non-negative  slowest call
gb_per_s            non-negative  bytes_moved at the median call, decimal GB/s (1e9 B/s, as datasheets)
datasheet_gb_per_s  positive      the GPU table's HBM bandwidth, decimal GB/s (null: not in the table)
share_of_datasheet  non-negative  gb_per_s over datasheet_gb_per_s
"""), **TIMING, **TELEMETRY},
    "comm": {**table("""
op             text          `all_reduce`, `all_gather`, `reduce_scatter` or `all_to_all`
status         text          `ok`, `oom` or `error`
reason         text          why it is not `ok`
size_mib       count         the size asked (SIZES_MIB)
size_bytes     count         bytes of one call as nccl-tests counts them: all_reduce's buffer, all_gather's output, reduce_scatter's input, all_to_all's send buffer (each rank's part rounded down to 16 bytes)
ranks          count         ranks (GPUs) in the collective
ms             non-negative  median call time, each call's the mean over ranks
ms_min         non-negative  fastest call
ms_max         non-negative  slowest call
algbw_gbps     non-negative  size_bytes at the median call, decimal GB/s (nccl-tests' algbw)
busbw_gbps     non-negative  algbw x 2(n-1)/n (all_reduce) or (n-1)/n (the others): nccl-tests' bus bandwidth
link_gbps      positive      the GPU table's link bandwidth in one direction (half the duplex figure), decimal GB/s (null: none in the table, or ranks on several hosts)
share_of_link  non-negative  busbw_gbps over link_gbps
"""), **TIMING, **TELEMETRY},
    "capability": table("""
item      text          what is asked: `matmul:bf16`, `attention:fa3`, ...
category  text          `dtype`, `attention`, `memory`, `interconnect` or `health`
status    text          `ok`, `unsupported_hardware`, `unsupported_stack`, `unavailable` or `error`
detail    text          what ran, or why not
value     any           a measured value or a version; a `health:` item's: `gpus` (its NVML fields per GPU), `faults` (what is wrong, in words) and `unreadable` (fields NVML could not answer here)
probe_s   non-negative  how long the item took
"""),
}
REQUIRED = {"summary": ("seq_len",), "decomposition": ("seq_len",), "attention": ("backend",),
            "hbm": ("op", "buffer_mib", "status"), "comm": ("op", "size_mib", "ranks", "status"),
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
