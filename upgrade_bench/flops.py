"""FLOP accounting, the guide's convention.

Model FLOPs (for MFU): dense matmuls `6 * N_dense * tokens` plus causal attention
`6 * s^2 * d * H * L` per sequence (FlashAttention computes the lower triangle; non-causal
would be 12). Activation-checkpoint recompute is excluded from model FLOPs and added only in
HFU. Packed documents attend within themselves, so `s^2` becomes `sum(len_i^2)`.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelDims:
    hidden: int        # h
    intermediate: int  # i (SwiGLU MLP width)
    layers: int        # L
    heads: int         # H (query heads)
    kv_heads: int      # H_kv
    head_dim: int      # d
    vocab: int         # V


# The model types whose every layer is exactly what dense_params and attention_flops count:
# causal q/k/v/o attention over all earlier tokens and a gated MLP (gate, up, down), no
# experts (tests check each against torch's FLOP counter). Any other model is refused, not
# given a formula that is not its own.
COUNTED_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma")


def dense_params(m: ModelDims) -> int:
    """Parameters that take part in matmuls: MLP, q/k/v/o projections and lm_head.

    The embedding lookup is a gather, not a matmul, so it is not counted; norms are
    negligible. q and o are H*d wide, k and v are H_kv*d wide (GQA).
    """
    q = o = m.heads * m.head_dim
    k = v = m.kv_heads * m.head_dim
    per_layer = 3 * m.hidden * m.intermediate + m.hidden * (q + k + v + o)
    return m.layers * per_layer + m.vocab * m.hidden


def doc_lengths(seq_len: int, doc_len: int) -> list[int]:
    """Document lengths inside one packed sequence: full documents, then the remainder."""
    if doc_len <= 0 or doc_len >= seq_len:
        return [seq_len]
    full, rest = divmod(seq_len, doc_len)
    return [doc_len] * full + ([rest] if rest else [])


def sum_sq_len(batch: int, seq_len: int, doc_len: int = 0) -> int:
    """sum(len_i^2) over every attention block in the batch (b*s^2 when unpacked)."""
    return batch * sum(n * n for n in doc_lengths(seq_len, doc_len))


def dense_flops(m: ModelDims, tokens: int) -> float:
    """fwd (2) + bwd (4) FLOPs per parameter per token."""
    return 6.0 * dense_params(m) * tokens


def attention_flops(m: ModelDims, sum_sq: int, causal: bool = True) -> float:
    """fwd+bwd attention score and value matmuls over all layers.

    Per layer and head, fwd is 2 matmuls of 2*s^2*d = 4*s^2*d, bwd is twice fwd: 12*s^2*d,
    halved to 6 when causal.
    """
    coeff = 6.0 if causal else 12.0
    return coeff * sum_sq * m.head_dim * m.heads * m.layers


@dataclass(frozen=True)
class StepFlops:
    dense: float
    attention: float
    recompute: float  # extra forward of checkpointed layers: in HFU only

    @property
    def model(self) -> float:
        return self.dense + self.attention

    @property
    def hardware(self) -> float:
        return self.model + self.recompute

    @property
    def attn_share(self) -> float:
        return self.attention / self.model


def step_flops(m: ModelDims, batch: int, seq_len: int, doc_len: int = 0,
               grad_checkpoint: bool = False) -> StepFlops:
    """FLOPs of one fwd+bwd step on one GPU's micro-batch."""
    tokens = batch * seq_len
    dense = dense_flops(m, tokens)
    attn = attention_flops(m, sum_sq_len(batch, seq_len, doc_len))
    recompute = 0.0
    if grad_checkpoint:
        # Checkpointing re-runs each decoder layer's forward (not lm_head): 2 FLOPs per layer
        # parameter per token plus the attention forward, which is a third of fwd+bwd.
        layer_params = dense_params(m) - m.vocab * m.hidden
        recompute = 2.0 * layer_params * tokens + attn / 3.0
    return StepFlops(dense, attn, recompute)


def tflops(flops: float, ms: float) -> float:
    """Throughput in TFLOPS of `flops` done in `ms` milliseconds."""
    return flops / (ms * 1e-3) / 1e12


def mfu(tflops_achieved: float, peak_tflops: float | None) -> float | None:
    """Fraction of the peak; None when no peak is known (never another card's figure)."""
    return None if not peak_tflops else tflops_achieved / peak_tflops


def matmul_flops(m: int, n: int, k: int) -> float:
    """A (m x k) @ B (k x n): one multiply and one add per (m, n, k) triple (mamf-finder)."""
    return 2.0 * m * n * k


def attention_kernel_flops(batch: int, seq_len: int, heads: int, head_dim: int,
                           causal: bool = True, doc_len: int = 0, pass_: str = "fwd") -> float:
    """FLOPs of an isolated attention kernel call (bench_flash_attn).

    Forward is 4*b*s^2*H*d (two matmuls), halved when causal; backward does 2.5x the
    forward's work (five matmuls, one of them recomputing scores), fwd+bwd 3.5x.
    """
    fwd = 4.0 * sum_sq_len(batch, seq_len, doc_len) * heads * head_dim
    if causal:
        fwd /= 2
    return fwd * {"fwd": 1.0, "bwd": 2.5, "fwd_bwd": 3.5}[pass_]
