"""Named workloads: each row a documented set of training settings (`WORKLOAD=<name>`), so a
README, a results folder and a pipeline say `WORKLOAD=right-sized-8b` where they repeated an
80-character environment line. A row's values are the defaults of that run: a setting set
explicitly wins (WORKLOAD=right-sized-8b SEQLENS=8192 runs the row at 8K only). Keys are the
settings' own names (SEQLENS is run_sweep.sh's and run_node.sh's; a script without a setting
ignores it). Adding a workload is one row here (docs/layout.md's recipe).
"""
from dataclasses import dataclass

# The guide's configuration is one of 8 GPUs (ZeRO-3 shards the 8B's weights and gradients
# over 8); on fewer, the default (`auto`) is the right-sized cut, which decides in minutes.
GUIDE_GPUS = 8


@dataclass(frozen=True)
class Workload:
    name: str
    doc: str           # what it is, where it was measured
    settings: dict     # {setting: value as the environment spells it}


# The right-sized settings on one GPU: the whole training state on the GPU, nothing recomputed.
ONE_GPU = {"ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0"}

TABLE = (
    Workload("guide-long-context",
             "the guide's long-context sweep: the whole Llama-3.1-8B, ZeRO-3, activation checkpointing, "
             "CPU AdamW offload, Liger (auto: on with a GPU), 8K..256K, on 8 GPUs",
             {"MODEL": "llama-3.1-8b", "NUM_LAYERS": "0", "ZERO_STAGE": "3", "OFFLOAD_OPTIMIZER": "1",
              "GRAD_CHECKPOINT": "1", "SEQLENS": "8192 32768 65536 131072 196608 262144"}),
    Workload("right-sized-8b",
             "the guide's right-sized run on one GPU: 8 of Llama-3.1-8B's 32 layers, ZeRO-2, no offload, "
             "no checkpointing, Liger (auto), 8K and 32K (results/h200-moe-8, results/h100-node-10)",
             {"MODEL": "llama-3.1-8b", "NUM_LAYERS": "8", **ONE_GPU, "SEQLENS": "8192 32768"}),
    Workload("qwen3-moe-4l",
             "an MoE on one GPU: Qwen3-30B-A3B's dimensions cut to 4 layers with all 128 experts, ZeRO-2, "
             "no offload, no checkpointing, 8K (results/h200-precision-7, results/h200-moe-8)",
             {"MODEL": "qwen3-30b-a3b", "NUM_LAYERS": "4", **ONE_GPU, "SEQLENS": "8192"}),
    Workload("qwen3-next-4l",
             "a hybrid on one GPU: Qwen3-Next-80B-A3B's dimensions cut to 4 layers (3 Gated DeltaNet : 1 "
             "attention) and 64 of 512 experts, ZeRO-2, no offload, no checkpointing, 8K and 32K "
             "(results/h200-experts-9)",
             {"MODEL": "qwen3-next-80b-a3b", "NUM_LAYERS": "4", "NUM_EXPERTS": "64", **ONE_GPU,
              "SEQLENS": "8192 32768"}),
)
WORKLOADS = {w.name: w for w in TABLE}
NONE = "none"   # no workload: each setting's own default (the guide's long-context configuration)
AUTO = "auto"   # run_sweep.sh's and run_node.sh's default: auto_name of the GPUs it plans for


def presets() -> dict:
    """{WORKLOAD value: the settings it sets} as settings.Var takes them."""
    return {name: dict(w.settings) for name, w in WORKLOADS.items()}


def auto_name(gpus: int, model_set: bool = False) -> str:
    """What WORKLOAD=auto runs on `gpus` GPUs: the guide's configuration where there are as
    many as it needs, the right-sized cut on fewer; none on a host without a GPU (a CPU
    try-out names its own tiny model) or where MODEL is set (a model of the user's own runs
    with each setting's own default, not another model's cut)."""
    if gpus <= 0 or model_set:
        return NONE
    return "guide-long-context" if gpus >= GUIDE_GPUS else "right-sized-8b"


def help_text(auto: bool = False) -> str:
    rows = "; ".join(f"{w.name}: {w.doc}" for w in TABLE)
    lead = (f"auto (the default): right-sized-8b on 1-{GUIDE_GPUS - 1} GPUs, guide-long-context on "
            f"{GUIDE_GPUS} or more, none without a GPU or with MODEL set; " if auto else "")
    return (f"a named set of training settings, each the default of its run (a setting set explicitly "
            f"wins): {lead}{NONE}: each setting's own default; {rows}")
