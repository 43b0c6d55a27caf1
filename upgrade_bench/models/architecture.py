"""What a model is, read from its HF config: the one home of every model family.

A `ModelSpec` is the model as the FLOP count, the layer cut, Liger, the attention kernel
benchmark and the report need it: one `Layer` per decoder layer, each a token mixer (full
causal attention, sliding-window attention, linear attention or a Mamba-2 SSM) and an MLP
(dense, or a mixture of experts of which each token uses its top-k and the shared experts).

`FAMILIES` maps a config's `model_type` to the function that reads it (adding a family:
docs/layout.md); every consumer takes the spec. A model type with no row is refused by
`describe`, in one line naming the counted families.

Readers take a transformers config or a plain mapping (a config.json), so the report can
describe a model without transformers; the layers they build, and how sizes are read, are
models/layers.py's.
"""
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..faults import BadInput
from . import config_file
from .layers import (FULL, LINEAR, LINEAR_MIXERS, MAMBA2, MAX_LAYERS, MAX_PARAMS, QUADRATIC, SLIDING, Cfg,
                     Layer, Mlp, attention_mixers, config_int, dense_mlp, gated_deltanet, gqa_attention,
                     layer_types, mamba2, mix_text, mla_attention, moe_mlp)

@dataclass(frozen=True)
class ModelSpec:
    family: str
    hidden: int
    vocab: int
    layers: tuple
    tied_embeddings: bool = False  # lm_head is the embedding matrix: held once

    @property
    def lm_head_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def active_params(self) -> int:
        """Matmul weights one token goes through: the dense FLOPs are 6 of these per token."""
        return sum(ly.mixer.params + ly.mlp.active_params for ly in self.layers) + self.lm_head_params

    @property
    def total_params(self) -> int:
        """Every matmul weight, all experts, plus the embedding: what memory holds."""
        return (sum(ly.mixer.params + ly.mlp.total_params for ly in self.layers)
                + (1 if self.tied_embeddings else 2) * self.lm_head_params)

    def mix(self) -> dict:
        """{mixer kind: layers}, in the order the kinds first appear."""
        return dict(Counter(ly.mixer.kind for ly in self.layers))

    def mix_text(self) -> str:
        return mix_text(self.mix())

    def distinct_mixers(self) -> list:
        """One Mixer per distinct kernel shape, in layer order: what an isolated-kernel
        benchmark times (a Gemma 3 has two: its local window and its global layers)."""
        seen = {}
        for ly in self.layers:
            seen.setdefault(ly.mixer.kernel_shape, ly.mixer)
        return list(seen.values())

    @property
    def moe(self) -> bool:
        return any(ly.mlp.experts for ly in self.layers)


def qwen_window(cfg: Cfg, i: int) -> str:
    """Qwen's rule where a config lists no layer_types: windows only with use_sliding_window,
    and then on the layers from max_window_layers on (a config.json sets sliding_window even
    when it is off, as Qwen2.5's 131072 with use_sliding_window false)."""
    on = cfg.get("use_sliding_window") and cfg.get("sliding_window")
    return SLIDING if on and i >= (cfg.get("max_window_layers") or 0) else FULL


def read_dense(cfg: Cfg) -> list:
    """Llama-like decoders: GQA + gated MLP. Mistral windows every layer when it sets a
    sliding_window; Qwen2/3 by Qwen's rule (qwen_window)."""
    n, hidden = config_int(cfg, "num_hidden_layers"), config_int(cfg, "hidden_size")
    if cfg.get("model_type") in ("qwen2", "qwen3"):
        types = layer_types(cfg, n, lambda i: qwen_window(cfg, i))
    else:
        types = layer_types(cfg, n, lambda i: SLIDING if cfg.get("sliding_window") else FULL)
    mlp = dense_mlp(hidden, config_int(cfg, "intermediate_size"))
    mixers = attention_mixers(cfg, types)
    return [Layer(mixers[t], mlp) for t in types]


def read_gemma3(cfg: Cfg) -> list:
    """Gemma 3: every sliding_window_pattern-th layer global, the others local windows."""
    n, hidden = config_int(cfg, "num_hidden_layers"), config_int(cfg, "hidden_size")
    period = config_int(cfg, "sliding_window_pattern", 6)
    types = layer_types(cfg, n, lambda i: FULL if (i + 1) % period == 0 else SLIDING)
    mlp = dense_mlp(hidden, config_int(cfg, "intermediate_size"))
    mixers = attention_mixers(cfg, types)
    return [Layer(mixers[t], mlp) for t in types]


def _qwen_moe_layer(cfg: Cfg, i: int, shared_gate: bool) -> Mlp:
    """Qwen's rule: an MoE block unless the layer is in mlp_only_layers or off decoder_sparse_step."""
    hidden = config_int(cfg, "hidden_size")
    experts = config_int(cfg, "num_experts", cfg.get("num_local_experts"), minimum=0)  # 0: all dense
    step = config_int(cfg, "decoder_sparse_step", 1)
    if experts and i not in (cfg.get("mlp_only_layers") or []) and (i + 1) % step == 0:
        return moe_mlp(hidden, config_int(cfg, "moe_intermediate_size"), experts,
                       config_int(cfg, "num_experts_per_tok"),
                       config_int(cfg, "shared_expert_intermediate_size", 0, minimum=0), shared_gate)
    return dense_mlp(hidden, config_int(cfg, "intermediate_size"))


def read_qwen3_moe(cfg: Cfg) -> list:
    n = config_int(cfg, "num_hidden_layers")
    types = layer_types(cfg, n, lambda i: qwen_window(cfg, i))
    mixers = attention_mixers(cfg, types)
    return [Layer(mixers[t], _qwen_moe_layer(cfg, i, False)) for i, t in enumerate(types)]


def read_qwen3_next(cfg: Cfg) -> list:
    """Qwen3-Next: every full_attention_interval-th layer gated full attention, the rest Gated
    DeltaNet; MoE with one gated shared expert."""
    n = config_int(cfg, "num_hidden_layers")
    period = config_int(cfg, "full_attention_interval", 4)
    types = layer_types(cfg, n, lambda i: FULL if (i + 1) % period == 0 else LINEAR)
    return [Layer(gated_deltanet(cfg) if t == LINEAR else gqa_attention(cfg, t, gated_output=True),
                  _qwen_moe_layer(cfg, i, True)) for i, t in enumerate(types)]


def read_gpt_oss(cfg: Cfg) -> list:
    """gpt-oss: alternating 128-token windows and full attention, both with sinks (learned
    per-head logits: no matmul), every layer an MoE without shared experts."""
    n, hidden = config_int(cfg, "num_hidden_layers"), config_int(cfg, "hidden_size")
    types = layer_types(cfg, n, lambda i: SLIDING if i % 2 == 0 else FULL)
    mlp = moe_mlp(hidden, config_int(cfg, "intermediate_size"), config_int(cfg, "num_local_experts", cfg.get("num_experts")),
                  config_int(cfg, "num_experts_per_tok"))
    mixers = attention_mixers(cfg, types, sinks=True)
    return [Layer(mixers[t], mlp) for t in types]


def read_deepseek_v3(cfg: Cfg) -> list:
    """DeepSeek-V3: MLA in every layer, dense MLPs before first_k_dense_replace, then MoE with
    n_shared_experts shared experts of moe_intermediate_size each (MTP is not in the HF model)."""
    n, hidden = config_int(cfg, "num_hidden_layers"), config_int(cfg, "hidden_size")
    first_moe = config_int(cfg, "first_k_dense_replace", 0, minimum=0)
    moe_i = config_int(cfg, "moe_intermediate_size")
    moe = moe_mlp(hidden, moe_i, config_int(cfg, "n_routed_experts", cfg.get("num_local_experts")), config_int(cfg, "num_experts_per_tok"),
                  moe_i * config_int(cfg, "n_shared_experts", 0, minimum=0))
    dense = dense_mlp(hidden, config_int(cfg, "intermediate_size"))
    attention = mla_attention(cfg)
    return [Layer(attention, dense if i < first_moe else moe) for i in range(n)]


# Granite's layer_types: "mamba" / "attention" in a config.json, transformers' words once read.
GRANITE_LAYERS = {"mamba": MAMBA2, "attention": FULL, LINEAR: MAMBA2, FULL: FULL}


def read_granitemoehybrid(cfg: Cfg) -> list:
    """IBM Granite 4.0-H: Mamba-2 layers with a few full-attention layers among them (every
    layer Mamba-2 when the config lists none, as in transformers); every layer a shared SwiGLU
    MLP, plus top-k routed experts of intermediate_size when num_local_experts > 0."""
    n, hidden = config_int(cfg, "num_hidden_layers"), config_int(cfg, "hidden_size")
    types = layer_types(cfg, n, lambda i: "mamba", GRANITE_LAYERS)
    shared = config_int(cfg, "shared_intermediate_size", 1024)
    experts = config_int(cfg, "num_local_experts", 8, minimum=0)  # 0: the shared MLP alone (H-Micro)
    mlp = moe_mlp(hidden, config_int(cfg, "intermediate_size"), experts, config_int(cfg, "num_experts_per_tok", 2),
                  shared) if experts else dense_mlp(hidden, shared)
    return [Layer(mamba2(cfg) if t == MAMBA2 else gqa_attention(cfg, t), mlp) for t in types]


@dataclass(frozen=True)
class Family:
    read: Callable[[Cfg], list]
    note: str  # what sets it apart, for --help and the README
    refuses: dict = field(default_factory=dict)  # {attention backend: why transformers cannot train it with it}
    # (the transformers class of its linear-mixer layer, {attribute of that layer holding a
    # kernel: "package.module:function" of the fast kernel}); model.mixer_kernels reads what
    # transformers put there and binds the installed fast kernel where it put its torch code.
    fast_kernels: tuple = ()
    # where the layer holds no kernel attributes but its constructor sets module globals of
    # those names and this flag (Granite's Mamba layer): false, every kernel runs as torch code
    fast_path_flag: str = ""
    experts_field: str = ""  # the config field of the routed experts' count, which NUM_EXPERTS cuts


FAMILIES = {
    "llama": Family(read_dense, "dense, GQA"),
    "mistral": Family(read_dense, "dense, GQA, sliding window on every layer when set"),
    "qwen2": Family(read_dense, "dense, GQA, layer_types"),
    "qwen3": Family(read_dense, "dense, GQA, layer_types"),
    "gemma": Family(read_dense, "dense, GeGLU"),
    "gemma3_text": Family(read_gemma3, "dense, 5 sliding-window : 1 global layers"),
    "qwen3_moe": Family(read_qwen3_moe, "MoE (top-k routed experts)", experts_field="num_experts"),
    "qwen3_next": Family(read_qwen3_next, "hybrid: 3 Gated DeltaNet : 1 gated full attention, MoE + shared expert",
                         refuses={"flex": "transformers has no FlexAttention path for it"},
                         fast_kernels=("transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextGatedDeltaNet",
                                       {"chunk_gated_delta_rule": "fla.ops.gated_delta_rule:chunk_gated_delta_rule",
                                        "causal_conv1d_fn": "causal_conv1d:causal_conv1d_fn"}),
                         experts_field="num_experts"),
    "gpt_oss": Family(read_gpt_oss, "MoE, alternating 128-token windows and full attention, sinks",
                      refuses={"sdpa": "transformers has no SDPA path for its sinks", **dict.fromkeys(  # FA2/3 have none
                          ("fa3", "fa2"), "transformers would swap in the hub kernel kernels-community/vllm-flash-attn3 "
                          "for its sinks")}, experts_field="num_local_experts"),
    "deepseek_v3": Family(read_deepseek_v3, "MLA, dense then MoE layers, shared experts",
                          experts_field="n_routed_experts"),
    "granitemoehybrid": Family(
        read_granitemoehybrid, "hybrid: Mamba-2 layers and a few full attention, MoE + shared MLP",
        fast_kernels=("transformers.models.granitemoehybrid.modeling_granitemoehybrid.GraniteMoeHybridMambaLayer",
                      {"mamba_chunk_scan_combined": "mamba_ssm.ops.triton.ssd_combined:mamba_chunk_scan_combined",
                       "causal_conv1d_fn": "causal_conv1d:causal_conv1d_fn"}),
        fast_path_flag="is_fast_path_available", experts_field="num_local_experts"),
}


def refusals(model_type: str | None) -> dict:
    """{attention backend: why, naming the model type} for attn_backends.resolve; {} for a type not counted."""
    refuses = FAMILIES[model_type].refuses if model_type in FAMILIES else {}
    return {name: f"{why} (model type {model_type!r})" for name, why in refuses.items()}


def describe(cfg) -> ModelSpec:
    """The ModelSpec of a transformers config or a config mapping; BadInput for a field of the wrong
    type (config_file.check), an uncounted family or a bad size."""
    config_file.check(cfg)
    cfg = Cfg(cfg)
    model_type = cfg.get("model_type")
    family = FAMILIES.get(model_type)
    if family is None:
        raise BadInput(f"model type {model_type!r} is not one the FLOP count covers: "
                       f"{', '.join(FAMILIES)}")
    layers = config_int(cfg, "num_hidden_layers")
    if layers > MAX_LAYERS:
        raise BadInput(f"num_hidden_layers={layers}: no model has more than {MAX_LAYERS} layers")
    spec = ModelSpec(model_type, config_int(cfg, "hidden_size"), config_int(cfg, "vocab_size"), tuple(family.read(cfg)),
                     bool(cfg.get("tie_word_embeddings", False)))
    if spec.total_params > MAX_PARAMS:
        raise BadInput(f"{spec.total_params:.3g} parameters: sizes no model has (at most {MAX_PARAMS:.0e})")
    return spec


def cut_note(full: ModelSpec, cut: ModelSpec) -> str | None:
    """Why a cut model's FLOP mix is not the full model's, or None: a kind of layer or the
    MoE the full model has and the cut lacks."""
    missing = [kind for kind in full.mix() if kind not in cut.mix()]
    if full.moe and not cut.moe:
        missing.append("MoE layers")
    if not missing:
        return None
    return (f"the first {len(cut.layers)} layers ({cut.mix_text()}) have no {', '.join(missing)}, "
            f"which the full model has ({full.mix_text()}): cut to a whole period of its pattern")
