"""run_node.sh's estimate: what each step of the node costs in wall time, and what it rests on.

Rough by design: per-step constants measured on the node command's runs, and for the training
steps the FLOP count at an assumed MFU. Nothing here reads a folder or starts a process.
"""
from ... import settings
from ...kernels import timing
from ...kernels.attention import backends as attn_backends, bench as attn_bench
from ...models import flops, layers
from ...training import low_precision as low_precision_step
from .. import plan as sweep_plan

# Rough costs behind the estimate, from the node command's runs on one H200 and two H100 machines
# (results/h200-families-3, h200-precision-7, h200-moe-8, h100-node-10 and h100-stacks-11: each
# step's estimate and wall time; tests/test_run_node.py holds every step within 10% of the mean of
# the two H100 runs and of the H200-moe-8 run):
# check_capabilities.py's probes: 23 s, 31 s, 38 s (H200), 28 s and 36 s (H100): the middle of what
# is within 10% of both the H100s' mean (32 s) and H200-moe-8's 38 s
CAPABILITIES_S = 34.8
MAMF_S = 41.0               # mamf-finder.py's default search: 42 s, 41 s, 38 s, 39 s (H200), 41 s, 41 s (H100)
# bench_flash_attn.py up to its first point (imports, each backend's check): its two-length run took
# 31.6 s and 32.1 s (H200) and 30.5 s and 37.1 s (H100), of which the points at ATTENTION_MFU are about 10 s.
ATTENTION_START_S = 23.0
ATTENTION_BACKENDS = 2      # its default: the kernel training picks here, and cuDNN SDPA
ATTENTION_MFU = 0.5         # isolated attention ran 500-650 TFLOPS from 8K on the H200's 989 peak
# A training process before its first step: imports, model build, DeepSpeed init. It grows with
# the model where the optimizer lives on the host (DeepSpeed's CPU Adam pins its state: an 8B on
# 2 GPUs, ZeRO-3 and offload, took 70-120 s a point) and barely without (the 8-layer cut of the
# 8B, 2.8B weights, ZeRO-2 on the GPU: 24 s a process, results/h200-precision-7/node/sweep.log).
START_S = 20.0
START_S_PER_BPARAM = 1.5
START_S_PER_BPARAM_OFFLOAD = 10.0
# DeepSpeed's Adam op, JIT-built by the first training process of a node where no earlier run
# built it (install.sh builds none): fused Adam took 34 s on the H200's 16 cores
# (results/h200-precision-7/progress.log, "prebuild"); inside the H100's first start-up, 29 s
# (34 s where the next process took 5 s: results/h100-node-10/node/sweep.log and decomposition.log).
ADAM_BUILD_S = 30.0
# Liger's fused MoE (resolver.Resolved.liger_moe) autotunes its Triton kernels (seven, over 16 to
# 40 configurations each) in each process's first step. On the H200 (results/h200-moe-8/, Triton's
# own timings): 194 s with nothing compiled (Qwen3-30B-A3B, 128 experts), 31 s with the kernels
# compiled by the run before (32 experts): about 0.13 s a configuration, whatever the experts. So a
# compile once per node (Triton's cache keeps it) and the tuning in every process.
LIGER_MOE_COMPILE_S = 160.0
LIGER_MOE_TUNE_S = 31.0
# A hybrid's linear mixers (FLA's Gated DeltaNet, mamba-ssm's Mamba-2) are Triton kernels that
# compile and autotune in a process's first step: 132 s for 4 layers of Qwen3-Next and 82 s for
# Granite 4.0-H's on a fresh H200 (results/h200-experts-9/). Triton's cache keeps the compiled
# kernels, the tuning only with TRITON_CACHE_AUTOTUNING=1 (the next Qwen3-Next process then ran
# both lengths in 33 s). A later process's tuning without it was not measured: counted whole.
MIXER_FIRST_STEP_S = 130.0
# COMPILE=1: FSDP2 compiles each decoder block in each process's first step
# (training/engine.BLOCKS_FIRST_STEP). One H100 at 8K, the 8-layer cut of Llama-3.1-8B, FA4 and
# Liger (results/h100-stacks-11/fsdp2_compile.log, each run's "step 1/12" line, against the eager
# run's "step 1/7" in stacks-8k-suite/suite_fsdp2_bf16.log): bf16's first step took 19.6 s compiled
# against 6.9 s eager, 12.6 s for 8 blocks; fp8-tensorwise's 24.9 s, 18.0 s for 8 blocks, whose
# compile takes in the converted linears' (low_precision.FIRST_STEP_S, then not counted apart).
# Their whole run_sweep.sh points took 54 s and 62 s (results/h100-stacks-11/progress.log).
# Counted per block, as each block is compiled apart (engines/fsdp2.py); only 8 blocks were timed,
# so how it scales with the count (a graph cache shared by like blocks) is not measured.
COMPILE_BLOCK_S = 1.6
COMPILE_BLOCK_LOW_PRECISION_S = 2.25
FIRST_STEP_S = 10.0         # a process's first step: Liger's kernels (and the backend's: first_step_s)
ASSUMED_MFU = 0.35          # a training step's MFU for the step-time estimate (a profiled one too)
HBM_S = 16.5                # bench_hbm.py's defaults: 20 s, 17 s, 16 s, 17 s (H200), 16 s, 17 s (H100)
# bench_comm.py's defaults, not yet timed on a node: 28 points of 1.5 s windows (42 s), and the
# launcher, torch and NCCL's first connections before them (a training process's start, ~20 s).
COMM_S = 60.0


def compile_s(spec, low_precision: bool, compile_blocks: bool) -> float:
    """What a process's first step spends compiling beside the attention backend: each decoder
    block (COMPILE=1, a low precision's converted linears in it), or else a low precision's
    converted linears alone."""
    if compile_blocks:
        return len(spec.layers) * (COMPILE_BLOCK_LOW_PRECISION_S if low_precision else COMPILE_BLOCK_S)
    return low_precision_step.FIRST_STEP_S if low_precision else 0.0


def start_s(spec, backend: str, offload: bool = False, low_precision: bool = False,
            liger_moe: bool = False, mixers: bool = False, compile_blocks: bool = False) -> float:
    """A training process's start-up and first step, by the model's size (all its weights),
    where its optimizer lives, and what the attention backend (FlexAttention: over a minute
    cold), the compiled blocks (COMPILE=1) or a low precision's compiled linears, Liger's fused
    MoE and (`mixers`) a hybrid's linear mixers compile or tune there."""
    first_step = (max(FIRST_STEP_S, attn_backends.BACKENDS[backend].first_step_s)
                  + compile_s(spec, low_precision, compile_blocks)
                  + (LIGER_MOE_TUNE_S if liger_moe else 0.0)
                  + (MIXER_FIRST_STEP_S if mixers else 0.0))
    per_bparam = START_S_PER_BPARAM_OFFLOAD if offload else START_S_PER_BPARAM
    return START_S + per_bparam * spec.total_params / 1e9 + first_step


def attention_s(spec, lengths: list, peak_tflops: float | None) -> float | None:
    """bench_flash_attn.py with its default backends and timing over the model's quadratic
    layers at `lengths`, each point its floors and calls at ATTENTION_MFU of the peak (the
    linear mixers' FLA kernels are not in it); None without a peak (a CPU) or a model."""
    if not peak_tflops or spec is None:
        return None
    work = [flops.attention_kernel_flops(1, n, m.heads, m.qk_head_dim, pass_=p, window=m.window,
                                         v_head_dim=m.v_head_dim)
            for m in spec.distinct_mixers() if m.kind in layers.QUADRATIC
            for n in lengths for p in attn_bench.PASSES] * ATTENTION_BACKENDS
    floor_s, calls = attn_bench.floor_and_calls(settings.parse(timing.window_vars(attn_bench.TIMING_DEFAULTS, ""), {}))
    return ATTENTION_START_S + attn_bench.points_s(work, floor_s, calls, ATTENTION_MFU * peak_tflops)


def training_step_s(spec, seq_len: int, peak_tflops: float | None, grad_checkpoint: bool) -> float | None:
    """One fwd+bwd+step at ASSUMED_MFU of the peak; None without a peak (a CPU)."""
    if not peak_tflops:
        return None
    work = flops.step_flops(spec, 1, seq_len, grad_checkpoint=grad_checkpoint).hardware
    return work / (peak_tflops * 1e12 * ASSUMED_MFU)


def mixer_tuning(spec, environ) -> str:
    """How often a hybrid's linear mixers compile and tune on this node: 'once' where
    TRITON_CACHE_AUTOTUNING keeps the tuning for later processes (as Triton reads it: 'false' is
    off), else 'each' process; '' for a model without linear mixers (or not at hand)."""
    if spec is None or not any(kind in layers.LINEAR_MIXERS for kind in spec.mix()):
        return ""
    return "once" if settings.triton_flag(environ, "TRITON_CACHE_AUTOTUNING") else "each"


def points_s(plan: sweep_plan.Plan, lengths: list, mixers_each: bool = False) -> float | None:
    """A sweep of `plan` over `lengths`: each process's start-up (with its linear mixers' tuning
    where `mixers_each`), then every point's warm-up, timed and (DECOMPOSE) profiled steps; None
    without a peak or a model."""
    s, r = plan.s, plan.resolved
    if r.cut is None or not r.peak_tflops:
        return None
    steps = s.WARMUP_STEPS + s.STEPS + s.DECOMPOSE
    starts = len(sweep_plan.process_plan(lengths, s.REUSE_PROCESS))
    return starts * start_s(r.cut.counted, r.backend, s.OFFLOAD_OPTIMIZER, r.precision.low, r.liger_moe,
                            mixers_each, r.train.COMPILE) + sum(
        steps * training_step_s(r.cut.counted, n, r.peak_tflops, s.GRAD_CHECKPOINT) for n in lengths)
