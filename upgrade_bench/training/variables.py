"""The variables of the scripts that run a training step (benchmark.py, bench_decompose.py;
run_sweep.sh passes them through): their defaults are the guide's long-context config.
Here, not in settings.py, because their choices come from the domain tables (the model
presets and families, the attention backends)."""
from ..hardware import precisions
from ..kernels.attention.backends import TRAINING, auto_help
from ..models.architecture import FAMILIES
from ..models.layers import MAX_INT
from ..models.model import PRESETS
from ..settings import OUTPUT, SEED_MAX, Var
from . import workloads
from .engines import ENGINES, help_text as engines_help

# The largest sequence length and batch a setting takes: attention kernels index a sequence's
# tokens in 32 bits (FlashAttention's cu_seqlens), and BATCH_SIZE x SEQ_LEN then stays within
# torch's 64-bit sizes, so a typo is one line here, not an exception after the start-up.
MAX_TOKENS = MAX_INT

# Variables shared by the scripts that run a training step (benchmark.py, bench_decompose.py).
# Defaults are the guide's long-context config: ZeRO-3, checkpointing, CPU AdamW offload, Liger.
TRAINING_VARS = [
    Var("WORKLOAD", "choice", workloads.NONE, workloads.help_text(),
        choices=(workloads.NONE, *workloads.WORKLOADS), presets=workloads.presets()),
    Var("MODEL", "str", "llama-3.1-8b",
        f"model: a preset of configs/ ({' | '.join(PRESETS)}; tiny* run on CPU in seconds), or a "
        f"local path / hub id of a config of type {', '.join(FAMILIES)} (the families the FLOP "
        "count covers); a hub id not in the HF cache is fetched "
        "only if the hub answers a quick probe and HF_HUB_OFFLINE is unset"),
    Var("WEIGHTS", "choice", "auto", "auto: real weights when staged locally, else random init "
        "(same FLOPs and memory)", choices=("auto", "pretrained", "random")),
    Var("NUM_LAYERS", "int", 0, "cut the model to this many layers (0 = all)", min=0),
    Var("NUM_EXPERTS", "int", 0, "cut each MoE layer to this many routed experts, its routing (top-k, "
        "shared experts, dense layers) kept: the FLOPs per token stay the full model's, each expert "
        "gets more tokens, the memory shrinks (0 = all)", min=0),
    Var("PRECISION", "choice", precisions.DEFAULT, precisions.help_text(), choices=tuple(precisions.PRECISIONS)),
    Var("FP8_EXPERTS", "bool", False, "with an fp8-* PRECISION, run the MoE experts' grouped GEMMs in FP8 "
        "too (torchao's row-wise grouped GEMM); off, they stay bf16: on an H200 with torchao 0.17 that "
        "path made Qwen3-30B-A3B's step 1.35x slower, its casts running eager"),
    Var("SEQ_LEN", "int_list", [8192], "sequence length(s); several run one after another in one "
        "process, sharing model and engine start-up (the peak memory of each after the first "
        "then depends on those before it: summary field earlier_points_in_process)", min=1, max=MAX_TOKENS),
    Var("BATCH_SIZE", "int", 1, "micro-batch size per GPU", min=1, max=MAX_TOKENS),
    # A night holds thousands of steps, not 10**30: a typo must not run until killed.
    Var("STEPS", "int", 10, "timed steps per sequence length (after warm-up)", min=1, max=10_000),
    Var("WARMUP_STEPS", "int", 2, "warm-up steps, excluded from the summary", min=0, max=10_000),
    Var("DECOMPOSE", "int", 0, "after each point's timed steps, profile this many more and write the "
        "point's step decomposition (bench_decompose.py's record; the report's forecast reads it; "
        "0 = off)", min=0, max=100),
    Var("ENGINE", "choice", "deepspeed", engines_help(), choices=tuple(ENGINES)),
    Var("ZERO_STAGE", "int", 3, "DeepSpeed ZeRO stage (ENGINE=fsdp2: 3 reshards each block's weights "
        "after its forward, 2 keeps them gathered until its backward; 0 and 1 are refused)", min=0, max=3),
    Var("OFFLOAD_OPTIMIZER", "bool", True, "AdamW states and step on the CPU (DeepSpeed CPU Adam; "
        "refused under ENGINE=fsdp2)"),
    Var("COMPILE", "bool", False, "ENGINE=fsdp2: torch.compile each decoder block (as torchtitan "
        "does), its converted low-precision linears inside it; off, only those linears are compiled"),
    Var("ZERO3_LEAF_MOE", "bool", True, "under ZeRO-3, gather each MoE block's experts at once "
        "(DeepSpeed's set_z3_leaf_modules), not expert by expert"),
    Var("GRAD_CHECKPOINT", "bool", True, "activation checkpointing of every decoder layer"),
    Var("USE_LIGER", "choice", "auto", "Liger kernels (fused RMSNorm/RoPE/SwiGLU/linear-CE); "
        "auto = on with a GPU, off on CPU and under ENGINE=fsdp2 COMPILE=1 (inductor fuses the same)",
        choices=("auto", "0", "1")),
    Var("ATTN_BACKEND", "choice", "auto", f"attention backend; {auto_help()}",
        choices=("auto", *TRAINING)),
    Var("PACKED_DOC_LEN", "int", 0, "document-masked packing: documents of this many tokens "
        "inside each sequence (0 = one dense sequence; else at least 2)", min=0),
    # At least 1 TFLOPS: no accelerator peaks lower, and a near-zero peak makes MFU any number at all.
    Var("PEAK_TFLOPS", "float", 0.0, "peak dense TFLOPS per GPU for MFU (0 = from the GPU table)",
        min=1, max=1e6, zero_means_unset=True),
    Var("MEM_DEBUG", "bool", False, "staged memory probes and a torch.cuda.memory snapshot on rank 0"),
    Var("SEED", "int", 0, "random seed for weights and tokens", min=0, max=SEED_MAX),
    Var("DATA", "str", "", "a file of token ids to train on, a fresh window each step (the same "
        "windows whatever SEED): nanoGPT's train.bin (flat uint16) or a Megatron-LM dataset's .bin "
        "(its dtype read from the .idx beside it); empty = random tokens, one batch repeated, which "
        "times a step but makes the loss no convergence test"),
    OUTPUT,
    Var("NOTES", "str", "", "free text copied into the header"),
]
