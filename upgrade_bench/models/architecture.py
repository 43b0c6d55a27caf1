"""What a model is, read from its HF config: the one home of every model family.

A `ModelSpec` is the model as the FLOP count, the layer cut, Liger, the attention kernel
benchmark and the report need it: one `Layer` per decoder layer, each a token mixer (full
causal attention, sliding-window attention, linear attention or a Mamba-2 SSM) and an MLP
(dense, or a mixture of experts of which each token uses its top-k and the shared experts).

`FAMILIES` maps a config's `model_type` to the function that reads it. Adding a family is a
row there and, where its layers are new, a reader below; every consumer takes the spec. A
model type with no row is refused by `describe`, in one line naming the counted families.

Readers take a transformers config or a plain mapping (a config.json), so the report can
describe a model without transformers. A config's attribute aliases (transformers'
`attribute_map`: Qwen3-MoE's `num_experts` is stored as `num_local_experts`) are read through
the config itself; `to_dict()` would hide them and count an MoE as dense. Parameter counts are of matmul weights only: the
embedding lookup is a gather, norms, biases and the attention sinks are not matmuls.
"""
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from ..faults import BadInput

FULL, SLIDING, LINEAR = "full_attention", "sliding_attention", "linear_attention"
MAMBA2 = "mamba2"  # a Mamba-2 (SSD) layer: transformers files it under linear_attention too
QUADRATIC = (FULL, SLIDING)  # the mixers whose cost grows with s^2 (a window caps it)
LINEAR_MIXERS = (LINEAR, MAMBA2)  # a fixed-size state per head: their cost grows with s


@dataclass(frozen=True)
class Mixer:
    kind: str                # FULL | SLIDING | LINEAR | MAMBA2
    params: int              # matmul weights of its projections (q/k/v/o, MLA's ranks, GDN's, Mamba's in/out)
    heads: int = 0           # attention: query heads; linear, Mamba-2: value heads (one state each)
    kv_heads: int = 0        # attention: key/value heads (GQA); linear: key heads; Mamba-2: B/C groups
    qk_head_dim: int = 0     # per head, for the score matmul (MLA: nope + rope); Mamba-2: d_state
    v_head_dim: int = 0      # per head, for the value matmul; Mamba-2: its head dim
    window: int = 0          # SLIDING: tokens each query sees, itself included
    conv_channels: int = 0   # LINEAR, MAMBA2: channels of the short causal convolution (q, k, v; x, B, C)
    conv_kernel: int = 0     # LINEAR, MAMBA2: its width
    sinks: bool = False      # attention: a learned per-head logit in every softmax (gpt-oss)

    @property
    def kernel_shape(self) -> tuple:
        """What an attention kernel sees of this mixer (its weights aside)."""
        return (self.kind, self.heads, self.kv_heads, self.qk_head_dim, self.v_head_dim,
                self.window, self.sinks)


@dataclass(frozen=True)
class Mlp:
    active_params: int       # matmul weights one token goes through (routed top-k + shared + router)
    total_params: int        # all of them (every expert)
    experts: int = 0         # routed experts (0: a dense MLP)
    top_k: int = 0


@dataclass(frozen=True)
class Layer:
    mixer: Mixer
    mlp: Mlp


def mix_text(mix: dict) -> str:
    """{mixer kind: layers} as `36 linear_attention, 12 full_attention`, for warnings and the
    report (which reads the header's layer_mix)."""
    return ", ".join(f"{n} {kind}" for kind, n in mix.items())


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


# --- reading a config ----------------------------------------------------------------------

class Cfg:
    """One way to read a transformers config object or a mapping: `get(name)`, None if absent."""

    def __init__(self, source):
        self.source = source

    def get(self, name: str, default=None):
        if isinstance(self.source, dict):
            value = self.source.get(name)
        else:
            value = getattr(self.source, name, None)
        return default if value is None else value


def _int(cfg: Cfg, name: str, default=None, minimum: int = 1) -> int:
    value = cfg.get(name)
    value = default if value is None else value
    if value is None:
        raise BadInput(f"no {name} in the config")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BadInput(f"{name}={value!r}: expected an integer >= {minimum}")
    return value


def gated_mlp(hidden: int, intermediate: int) -> int:
    """gate, up and down projections of a SwiGLU/GeGLU MLP."""
    return 3 * hidden * intermediate


def dense_mlp(hidden: int, intermediate: int) -> Mlp:
    p = gated_mlp(hidden, intermediate)
    return Mlp(p, p)


def moe_mlp(hidden: int, expert_intermediate: int, experts: int, top_k: int,
            shared_intermediate: int = 0, shared_gate: bool = False) -> Mlp:
    """Routed experts (each token through top_k of them), shared experts every token goes
    through, the router (hidden x experts) and, in Qwen3-Next, a 1-wide shared-expert gate."""
    if top_k > experts:
        raise BadInput(f"num_experts_per_tok={top_k} is more than the {experts} experts")
    expert = gated_mlp(hidden, expert_intermediate)
    always = gated_mlp(hidden, shared_intermediate) + hidden * experts + (hidden if shared_gate else 0)
    return Mlp(top_k * expert + always, experts * expert + always, experts, top_k)


def gqa_attention(cfg: Cfg, kind: str, window: int = 0, gated_output: bool = False,
                  sinks: bool = False) -> Mixer:
    """q/k/v/o of grouped-query attention; Qwen3-Next's q projection also yields an output gate."""
    heads = _int(cfg, "num_attention_heads")
    hidden = _int(cfg, "hidden_size")
    kv_heads = _int(cfg, "num_key_value_heads", heads)
    if heads % kv_heads:
        raise BadInput(f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}")
    d = _int(cfg, "head_dim", hidden // heads)
    q = heads * d * (2 if gated_output else 1)
    params = hidden * (q + 2 * kv_heads * d + heads * d)
    return Mixer(kind, params, heads, kv_heads, d, d, window if kind == SLIDING else 0, sinks=sinks)


def mla_attention(cfg: Cfg) -> Mixer:
    """DeepSeek's multi-head latent attention: q through a rank (or directly), k/v from one
    latent of kv_lora_rank plus a shared rope key, scores over nope+rope dims, values v_head_dim."""
    hidden, heads = _int(cfg, "hidden_size"), _int(cfg, "num_attention_heads")
    nope, rope = _int(cfg, "qk_nope_head_dim"), _int(cfg, "qk_rope_head_dim")
    v, kv_rank = _int(cfg, "v_head_dim"), _int(cfg, "kv_lora_rank")
    q_rank = cfg.get("q_lora_rank")
    qk = nope + rope
    q = hidden * heads * qk if not q_rank else hidden * q_rank + q_rank * heads * qk
    kv = hidden * (kv_rank + rope) + kv_rank * heads * (nope + v)
    return Mixer(FULL, q + kv + heads * v * hidden, heads, heads, qk, v)


def gated_deltanet(cfg: Cfg) -> Mixer:
    """Qwen3-Next's Gated DeltaNet: in_proj_qkvz (q, k, v and the output gate z), in_proj_ba
    (per value head beta and alpha), a depthwise causal conv over q, k, v, out_proj."""
    hidden = _int(cfg, "hidden_size")
    k_heads, v_heads = _int(cfg, "linear_num_key_heads"), _int(cfg, "linear_num_value_heads")
    dk, dv = _int(cfg, "linear_key_head_dim"), _int(cfg, "linear_value_head_dim")
    key_dim, value_dim = k_heads * dk, v_heads * dv
    params = hidden * (2 * key_dim + 2 * value_dim) + hidden * 2 * v_heads + value_dim * hidden
    return Mixer(LINEAR, params, v_heads, k_heads, dk, dv, conv_channels=2 * key_dim + value_dim,
                 conv_kernel=_int(cfg, "linear_conv_kernel_dim"))


def mamba2(cfg: Cfg) -> Mixer:
    """A Mamba-2 mixer as transformers' GraniteMoeHybridMambaLayer builds it: in_proj yields
    the gate z (d_inner), x, B and C (d_inner + 2*groups*d_state channels, which the depthwise
    causal conv runs over) and one dt per head; out_proj maps d_inner back to hidden. d_inner
    = mamba_expand * hidden = heads * head_dim. A, D, dt_bias and the gated norm's weight are
    vectors, not matmuls. Defaults as transformers' GraniteMoeHybridConfig."""
    hidden, heads = _int(cfg, "hidden_size"), _int(cfg, "mamba_n_heads", 128)
    groups, state = _int(cfg, "mamba_n_groups", 1), _int(cfg, "mamba_d_state", 256)
    inner = _int(cfg, "mamba_expand", 2) * hidden
    head_dim = cfg.get("mamba_d_head", "auto")
    head_dim = inner // heads if head_dim == "auto" else _int(cfg, "mamba_d_head")
    if heads * head_dim != inner or heads % groups:
        raise BadInput(f"mamba_n_heads={heads}, mamba_d_head={head_dim}, mamba_n_groups={groups}: "
                       f"expected heads x head dim = mamba_expand x hidden_size = {inner}, in whole groups")
    conv = inner + 2 * groups * state
    return Mixer(MAMBA2, hidden * (inner + conv + heads) + inner * hidden, heads, groups, state, head_dim,
                 conv_channels=conv, conv_kernel=_int(cfg, "mamba_d_conv", 4))


def layer_types(cfg: Cfg, n: int, default: Callable[[int], str], names: dict | None = None) -> list:
    """The config's `layer_types`, else the family's pattern, as mixer kinds (`names`: the
    family's own words for them, where they differ); one entry per layer."""
    names = names or {kind: kind for kind in (FULL, SLIDING, LINEAR)}
    types = cfg.get("layer_types") or [default(i) for i in range(n)]
    if len(types) < n or any(t not in names for t in types[:n]):
        raise BadInput(f"layer_types={types!r}: expected {n} of {', '.join(names)}")
    return [names[t] for t in types[:n]]


def _window(cfg: Cfg, types: list) -> int:
    return _int(cfg, "sliding_window") if SLIDING in types else 0


def qwen_window(cfg: Cfg, i: int) -> str:
    """Qwen's rule where a config lists no layer_types: windows only with use_sliding_window,
    and then on the layers from max_window_layers on (a config.json sets sliding_window even
    when it is off, as Qwen2.5's 131072 with use_sliding_window false)."""
    on = cfg.get("use_sliding_window") and cfg.get("sliding_window")
    return SLIDING if on and i >= (cfg.get("max_window_layers") or 0) else FULL


def read_dense(cfg: Cfg) -> list:
    """Llama-like decoders: GQA + gated MLP. Mistral windows every layer when it sets a
    sliding_window; Qwen2/3 by Qwen's rule (qwen_window)."""
    n, hidden = _int(cfg, "num_hidden_layers"), _int(cfg, "hidden_size")
    if cfg.get("model_type") in ("qwen2", "qwen3"):
        types = layer_types(cfg, n, lambda i: qwen_window(cfg, i))
    else:
        types = layer_types(cfg, n, lambda i: SLIDING if cfg.get("sliding_window") else FULL)
    mlp = dense_mlp(hidden, _int(cfg, "intermediate_size"))
    return [Layer(gqa_attention(cfg, t, _window(cfg, types)), mlp) for t in types]


def read_gemma3(cfg: Cfg) -> list:
    """Gemma 3: every sliding_window_pattern-th layer global, the others local windows."""
    n, hidden = _int(cfg, "num_hidden_layers"), _int(cfg, "hidden_size")
    period = _int(cfg, "sliding_window_pattern", 6)
    types = layer_types(cfg, n, lambda i: FULL if (i + 1) % period == 0 else SLIDING)
    mlp = dense_mlp(hidden, _int(cfg, "intermediate_size"))
    return [Layer(gqa_attention(cfg, t, _window(cfg, types)), mlp) for t in types]


def _qwen_moe_layer(cfg: Cfg, i: int, shared_gate: bool) -> Mlp:
    """Qwen's rule: an MoE block unless the layer is in mlp_only_layers or off decoder_sparse_step."""
    hidden = _int(cfg, "hidden_size")
    experts = _int(cfg, "num_experts", cfg.get("num_local_experts"), minimum=0)  # 0: all dense
    step = _int(cfg, "decoder_sparse_step", 1)
    if experts and i not in (cfg.get("mlp_only_layers") or []) and (i + 1) % step == 0:
        return moe_mlp(hidden, _int(cfg, "moe_intermediate_size"), experts,
                       _int(cfg, "num_experts_per_tok"),
                       _int(cfg, "shared_expert_intermediate_size", 0, minimum=0), shared_gate)
    return dense_mlp(hidden, _int(cfg, "intermediate_size"))


def read_qwen3_moe(cfg: Cfg) -> list:
    n = _int(cfg, "num_hidden_layers")
    types = layer_types(cfg, n, lambda i: qwen_window(cfg, i))
    return [Layer(gqa_attention(cfg, t, _window(cfg, types)), _qwen_moe_layer(cfg, i, False))
            for i, t in enumerate(types)]


def read_qwen3_next(cfg: Cfg) -> list:
    """Qwen3-Next: every full_attention_interval-th layer gated full attention, the rest Gated
    DeltaNet; MoE with one gated shared expert."""
    n = _int(cfg, "num_hidden_layers")
    period = _int(cfg, "full_attention_interval", 4)
    types = layer_types(cfg, n, lambda i: FULL if (i + 1) % period == 0 else LINEAR)
    return [Layer(gated_deltanet(cfg) if t == LINEAR else gqa_attention(cfg, t, gated_output=True),
                  _qwen_moe_layer(cfg, i, True)) for i, t in enumerate(types)]


def read_gpt_oss(cfg: Cfg) -> list:
    """gpt-oss: alternating 128-token windows and full attention, both with sinks (learned
    per-head logits: no matmul), every layer an MoE without shared experts."""
    n, hidden = _int(cfg, "num_hidden_layers"), _int(cfg, "hidden_size")
    types = layer_types(cfg, n, lambda i: SLIDING if i % 2 == 0 else FULL)
    mlp = moe_mlp(hidden, _int(cfg, "intermediate_size"), _int(cfg, "num_local_experts", cfg.get("num_experts")),
                  _int(cfg, "num_experts_per_tok"))
    return [Layer(gqa_attention(cfg, t, _window(cfg, types), sinks=True), mlp) for t in types]


def read_deepseek_v3(cfg: Cfg) -> list:
    """DeepSeek-V3: MLA in every layer, dense MLPs before first_k_dense_replace, then MoE with
    n_shared_experts shared experts of moe_intermediate_size each (MTP is not in the HF model)."""
    n, hidden = _int(cfg, "num_hidden_layers"), _int(cfg, "hidden_size")
    first_moe = _int(cfg, "first_k_dense_replace", 0, minimum=0)
    moe_i = _int(cfg, "moe_intermediate_size")
    moe = moe_mlp(hidden, moe_i, _int(cfg, "n_routed_experts", cfg.get("num_local_experts")), _int(cfg, "num_experts_per_tok"),
                  moe_i * _int(cfg, "n_shared_experts", 0, minimum=0))
    dense = dense_mlp(hidden, _int(cfg, "intermediate_size"))
    attention = mla_attention(cfg)
    return [Layer(attention, dense if i < first_moe else moe) for i in range(n)]


# Granite's layer_types: "mamba" / "attention" in a config.json, transformers' words once read.
GRANITE_LAYERS = {"mamba": MAMBA2, "attention": FULL, LINEAR: MAMBA2, FULL: FULL}


def read_granitemoehybrid(cfg: Cfg) -> list:
    """IBM Granite 4.0-H: Mamba-2 layers with a few full-attention layers among them (every
    layer Mamba-2 when the config lists none, as in transformers); every layer a shared SwiGLU
    MLP, plus top-k routed experts of intermediate_size when num_local_experts > 0."""
    n, hidden = _int(cfg, "num_hidden_layers"), _int(cfg, "hidden_size")
    types = layer_types(cfg, n, lambda i: "mamba", GRANITE_LAYERS)
    shared = _int(cfg, "shared_intermediate_size", 1024)
    experts = _int(cfg, "num_local_experts", 8, minimum=0)  # 0: the shared MLP alone (H-Micro)
    mlp = moe_mlp(hidden, _int(cfg, "intermediate_size"), experts, _int(cfg, "num_experts_per_tok", 2),
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


FAMILIES = {
    "llama": Family(read_dense, "dense, GQA"),
    "mistral": Family(read_dense, "dense, GQA, sliding window on every layer when set"),
    "qwen2": Family(read_dense, "dense, GQA, layer_types"),
    "qwen3": Family(read_dense, "dense, GQA, layer_types"),
    "gemma": Family(read_dense, "dense, GeGLU"),
    "gemma3_text": Family(read_gemma3, "dense, 5 sliding-window : 1 global layers"),
    "qwen3_moe": Family(read_qwen3_moe, "MoE (top-k routed experts)"),
    "qwen3_next": Family(read_qwen3_next, "hybrid: 3 Gated DeltaNet : 1 gated full attention, MoE + shared expert",
                         refuses={"flex": "transformers has no FlexAttention path for it"},
                         fast_kernels=("transformers.models.qwen3_next.modeling_qwen3_next.Qwen3NextGatedDeltaNet",
                                       {"chunk_gated_delta_rule": "fla.ops.gated_delta_rule:chunk_gated_delta_rule",
                                        "causal_conv1d_fn": "causal_conv1d:causal_conv1d_fn"})),
    "gpt_oss": Family(read_gpt_oss, "MoE, alternating 128-token windows and full attention, sinks",
                      refuses={"sdpa": "transformers has no SDPA path for its sinks", **dict.fromkeys(  # FA2/3 have none
                          ("fa3", "fa2"), "transformers would swap in the hub kernel kernels-community/vllm-flash-attn3 "
                          "for its sinks")}),
    "deepseek_v3": Family(read_deepseek_v3, "MLA, dense then MoE layers, shared experts"),
    "granitemoehybrid": Family(
        read_granitemoehybrid, "hybrid: Mamba-2 layers and a few full attention, MoE + shared MLP",
        fast_kernels=("transformers.models.granitemoehybrid.modeling_granitemoehybrid.GraniteMoeHybridMambaLayer",
                      {"mamba_chunk_scan_combined": "mamba_ssm.ops.triton.ssd_combined:mamba_chunk_scan_combined",
                       "causal_conv1d_fn": "causal_conv1d:causal_conv1d_fn"}),
        fast_path_flag="is_fast_path_available"),
}


def refusals(model_type: str | None) -> dict:
    """{attention backend: why, naming the model type} for attn_backends.resolve; {} for a type not counted."""
    refuses = FAMILIES[model_type].refuses if model_type in FAMILIES else {}
    return {name: f"{why} (model type {model_type!r})" for name, why in refuses.items()}


def describe(cfg) -> ModelSpec:
    """The ModelSpec of a transformers config or a config mapping; BadInput for an uncounted family or a bad size."""
    cfg = Cfg(cfg)
    model_type = cfg.get("model_type")
    family = FAMILIES.get(model_type)
    if family is None:
        raise BadInput(f"model type {model_type!r} is not one the FLOP count covers: "
                       f"{', '.join(FAMILIES)}")
    layers = tuple(family.read(cfg))
    return ModelSpec(model_type, _int(cfg, "hidden_size"), _int(cfg, "vocab_size"), layers,
                     bool(cfg.get("tie_word_embeddings", False)))


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
