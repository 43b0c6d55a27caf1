"""The layers a model is made of, and reading their sizes from a config: each token mixer
(full causal attention, a sliding window, Gated DeltaNet's linear attention, a Mamba-2 SSM)
and MLP (dense, or a mixture of experts), built from a transformers config or a plain
config.json mapping (models/architecture.py reads whole families with these).

Parameter counts are of matmul weights only: the embedding lookup is a gather; norms, biases
and the attention sinks are not matmuls. A config's attribute aliases (transformers'
`attribute_map`: Qwen3-MoE's `num_experts` is stored as `num_local_experts`) are read through
the config itself; `to_dict()` would hide them and count an MoE as dense.
"""
from dataclasses import dataclass
from typing import Callable

from ..faults import BadInput

# Where a header's mixer_kernels says a hybrid's fast kernel ran as transformers' torch code.
TORCH_FALLBACK = "torch fallback"

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


# Bounds no real config reaches, so a hostile one is refused in a line rather than counted (a
# million layers) or planned for 10^19 hours (a hidden size of 10^200): the largest models
# published have about 100 layers and 2e12 parameters; a JSON integer has no limit of its own.
MAX_LAYERS = 4096
MAX_PARAMS = 1e14
MAX_INT = 2**31 - 1


def config_int(cfg: Cfg, name: str, default=None, minimum: int = 1) -> int:
    value = cfg.get(name)
    value = default if value is None else value
    if value is None:
        raise BadInput(f"no {name} in the config")
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INT:
        raise BadInput(f"{name}={value!r}: expected an integer from {minimum} to {MAX_INT}")
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
    heads = config_int(cfg, "num_attention_heads")
    hidden = config_int(cfg, "hidden_size")
    kv_heads = config_int(cfg, "num_key_value_heads", heads)
    if heads % kv_heads:
        raise BadInput(f"num_attention_heads={heads} is not a multiple of num_key_value_heads={kv_heads}")
    d = config_int(cfg, "head_dim", hidden // heads)
    q = heads * d * (2 if gated_output else 1)
    params = hidden * (q + 2 * kv_heads * d + heads * d)
    return Mixer(kind, params, heads, kv_heads, d, d, window if kind == SLIDING else 0, sinks=sinks)


def mla_attention(cfg: Cfg) -> Mixer:
    """DeepSeek's multi-head latent attention: q through a rank (or directly), k/v from one
    latent of kv_lora_rank plus a shared rope key, scores over nope+rope dims, values v_head_dim."""
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    nope, rope = config_int(cfg, "qk_nope_head_dim"), config_int(cfg, "qk_rope_head_dim")
    v, kv_rank = config_int(cfg, "v_head_dim"), config_int(cfg, "kv_lora_rank")
    q_rank = cfg.get("q_lora_rank")
    qk = nope + rope
    q = hidden * heads * qk if not q_rank else hidden * q_rank + q_rank * heads * qk
    kv = hidden * (kv_rank + rope) + kv_rank * heads * (nope + v)
    return Mixer(FULL, q + kv + heads * v * hidden, heads, heads, qk, v)


def gated_deltanet(cfg: Cfg) -> Mixer:
    """Qwen3-Next's Gated DeltaNet: in_proj_qkvz (q, k, v and the output gate z), in_proj_ba
    (per value head beta and alpha), a depthwise causal conv over q, k, v, out_proj."""
    hidden = config_int(cfg, "hidden_size")
    k_heads, v_heads = config_int(cfg, "linear_num_key_heads"), config_int(cfg, "linear_num_value_heads")
    dk, dv = config_int(cfg, "linear_key_head_dim"), config_int(cfg, "linear_value_head_dim")
    key_dim, value_dim = k_heads * dk, v_heads * dv
    params = hidden * (2 * key_dim + 2 * value_dim) + hidden * 2 * v_heads + value_dim * hidden
    return Mixer(LINEAR, params, v_heads, k_heads, dk, dv, conv_channels=2 * key_dim + value_dim,
                 conv_kernel=config_int(cfg, "linear_conv_kernel_dim"))


def mamba2(cfg: Cfg) -> Mixer:
    """A Mamba-2 mixer as transformers' GraniteMoeHybridMambaLayer builds it: in_proj yields
    the gate z (d_inner), x, B and C (d_inner + 2*groups*d_state channels, which the depthwise
    causal conv runs over) and one dt per head; out_proj maps d_inner back to hidden. d_inner
    = mamba_expand * hidden = heads * head_dim. A, D, dt_bias and the gated norm's weight are
    vectors, not matmuls. Defaults as transformers' GraniteMoeHybridConfig."""
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "mamba_n_heads", 128)
    groups, state = config_int(cfg, "mamba_n_groups", 1), config_int(cfg, "mamba_d_state", 256)
    inner = config_int(cfg, "mamba_expand", 2) * hidden
    head_dim = cfg.get("mamba_d_head", "auto")
    head_dim = inner // heads if head_dim == "auto" else config_int(cfg, "mamba_d_head")
    if heads * head_dim != inner or heads % groups:
        raise BadInput(f"mamba_n_heads={heads}, mamba_d_head={head_dim}, mamba_n_groups={groups}: "
                       f"expected heads x head dim = mamba_expand x hidden_size = {inner}, in whole groups")
    conv = inner + 2 * groups * state
    return Mixer(MAMBA2, hidden * (inner + conv + heads) + inner * hidden, heads, groups, state, head_dim,
                 conv_channels=conv, conv_kernel=config_int(cfg, "mamba_d_conv", 4))


def layer_types(cfg: Cfg, n: int, default: Callable[[int], str], names: dict | None = None) -> list:
    """The config's `layer_types`, else the family's pattern, as mixer kinds (`names`: the
    family's own words for them, where they differ); one entry per layer."""
    names = names or {kind: kind for kind in (FULL, SLIDING, LINEAR)}
    types = cfg.get("layer_types") or [default(i) for i in range(n)]
    if len(types) < n or any(t not in names for t in types[:n]):
        raise BadInput(f"layer_types={types!r}: expected {n} of {', '.join(names)}")
    return [names[t] for t in types[:n]]


def attention_mixers(cfg: Cfg, types: list, sinks: bool = False) -> dict:
    """{kind: its GQA Mixer} for the kinds in `types`, each built once (a config may list
    thousands of layers: one pass over them, never one per layer)."""
    kinds = set(types)
    window = config_int(cfg, "sliding_window") if SLIDING in kinds else 0
    return {t: gqa_attention(cfg, t, window, sinks=sinks) for t in kinds}
