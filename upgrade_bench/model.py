"""Model configs, presets, weights and building.

Llama-3.1-8B's weights are gated, so its config ships in `configs/` and `WEIGHTS=auto`
loads real weights only when they are staged on local disk (install.sh stages them);
otherwise it initialises random weights from the config, which has the same FLOPs and
memory. The model is never materialised on a rank's CPU: it is built directly on the GPU,
or partitioned at construction under ZeRO-3 (`HfDeepSpeedConfig` makes transformers build
it inside `deepspeed.zero.Init`).
"""
import os
from pathlib import Path

from .flops import ModelDims

REPO = Path(__file__).resolve().parent.parent
PRESETS = {"llama-3.1-8b": REPO / "configs" / "llama-3.1-8b.json",
           "tiny": REPO / "configs" / "tiny.json"}
# Where install.sh stages real weights of a preset (MODEL_DIR overrides).
STAGED = {"llama-3.1-8b": "meta-llama/Llama-3.1-8B"}


def model_dir() -> Path:
    return Path(os.environ.get("MODEL_DIR", REPO / "models"))


class LayerCountError(ValueError):
    pass


def load_config(model: str, num_layers: int = 0):
    """A transformers config from a preset name, a local path or a hub id."""
    from transformers import AutoConfig

    source = PRESETS.get(model, model)
    config = AutoConfig.from_pretrained(str(source))
    if num_layers:
        if num_layers > config.num_hidden_layers:
            raise LayerCountError(f"NUM_LAYERS={num_layers}: the model has only {config.num_hidden_layers} layers")
        config.num_hidden_layers = num_layers
        if getattr(config, "layer_types", None):
            config.layer_types = config.layer_types[:num_layers]
    return config


def dims(config) -> ModelDims:
    heads = config.num_attention_heads
    return ModelDims(hidden=config.hidden_size, intermediate=config.intermediate_size,
                     layers=config.num_hidden_layers, heads=heads,
                     kv_heads=getattr(config, "num_key_value_heads", None) or heads,
                     head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
                     vocab=config.vocab_size)


def _has_weights(path: Path) -> bool:
    return path.is_dir() and any(path.glob("*.safetensors"))


def weights_path(model: str) -> Path | None:
    """Local folder holding real weights for `model`, or None."""
    if model in STAGED:
        staged = model_dir() / Path(STAGED[model]).name
        return staged if _has_weights(staged) else None
    if _has_weights(Path(model)):
        return Path(model)
    try:  # a hub id already in the local HF cache; never downloads
        from huggingface_hub import snapshot_download

        cached = Path(snapshot_download(model, local_files_only=True, allow_patterns=["*.json", "*.safetensors"]))
        return cached if _has_weights(cached) else None
    except Exception:
        return None


def resolve_weights(requested: str, model: str) -> tuple[str, Path | None]:
    """('pretrained', path) or ('random', None); WEIGHTS=pretrained without weights raises."""
    path = weights_path(model) if requested != "random" else None
    if requested == "pretrained" and path is None:
        where = model_dir() / Path(STAGED[model]).name if model in STAGED else model
        raise FileNotFoundError(f"WEIGHTS=pretrained: no *.safetensors at {where}; stage them with "
                                f"./install.sh (HF cache) or use WEIGHTS=random")
    return ("pretrained", path) if path else ("random", None)


def apply_liger(model_type: str) -> None:
    """Patch transformers' classes with Liger kernels before the model is built."""
    from liger_kernel.transformers.monkey_patch import MODEL_TYPE_TO_APPLY_LIGER_FN

    if model_type not in MODEL_TYPE_TO_APPLY_LIGER_FN:
        raise ValueError(f"USE_LIGER=1: liger-kernel has no kernels for model type {model_type!r}")
    # Defaults: RoPE, RMSNorm, SwiGLU and fused linear cross-entropy (train mode with labels).
    MODEL_TYPE_TO_APPLY_LIGER_FN[model_type]()


def build(config, attn_implementation: str, weights: str, path: Path | None, device, dtype):
    """The causal LM on `device` (or partitioned, when a ZeRO-3 HfDeepSpeedConfig is alive)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.integrations import is_deepspeed_zero3_enabled

    zero3 = is_deepspeed_zero3_enabled()
    if weights == "pretrained":
        kwargs = {} if zero3 else {"device_map": {"": device}}
        model = AutoModelForCausalLM.from_pretrained(
            str(path), config=config, dtype=dtype, attn_implementation=attn_implementation, **kwargs)
    elif zero3:
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    else:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    model.config.use_cache = False  # packed documents need it: see engine.make_batch
    return model
