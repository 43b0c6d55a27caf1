"""FLOP accounting, the guide's convention, per layer type.

Model FLOPs (for MFU): every weight matmul a token goes through, `6 * N_active * tokens`
(an MoE counts its top-k routed and its shared experts, never all of them), plus causal
attention `6 * s^2 * d * H` per full-attention layer (FlashAttention computes the lower
triangle; non-causal would be 12), the causal band for a sliding window, and the conv and
state of linear-attention and Mamba-2 layers. Activation-checkpoint recompute is excluded
from model FLOPs and added only in HFU. Packed documents attend within themselves, so `s^2`
becomes `sum(len_i^2)`. The model's layers come from architecture.describe.
"""
from dataclasses import dataclass

from .architecture import ModelSpec
from .layers import LINEAR, LINEAR_MIXERS, MAMBA2, QUADRATIC, Mixer


def doc_lengths(seq_len: int, doc_len: int) -> list[int]:
    """Document lengths inside one packed sequence: full documents, then the remainder."""
    if doc_len <= 0 or doc_len >= seq_len:
        return [seq_len]
    full, rest = divmod(seq_len, doc_len)
    return [doc_len] * full + ([rest] if rest else [])


def sum_sq_len(batch: int, seq_len: int, doc_len: int = 0) -> int:
    """sum(len_i^2) over every attention block in the batch (b*s^2 when unpacked)."""
    return batch * sum(n * n for n in doc_lengths(seq_len, doc_len))


def causal_pairs(length: int, window: int = 0) -> float:
    """(query, key) pairs one causal sequence of `length` tokens scores.

    Full attention: length^2 / 2, the guide's convention (FlashAttention computes the lower
    triangle; the diagonal's half is within rounding). A window of w tokens (each query sees
    itself and the w-1 before it) scores the causal band, counted the same way: the triangle
    less the part beyond the window, length^2/2 - (length-w)^2/2 = length*w - w^2/2. (The exact
    count sum_i min(i+1, w) is w/2 more; so is the exact triangle's s/2 over s^2/2.) The band
    meets the full count at w = length and never exceeds it.
    """
    if not window or window >= length:
        return length * length / 2
    return length * window - window * window / 2


def attention_pairs(batch: int, seq_len: int, doc_len: int = 0, window: int = 0) -> float:
    """causal_pairs summed over every document of every sequence (packing masks across them)."""
    return batch * sum(causal_pairs(n, window) for n in doc_lengths(seq_len, doc_len))


def attention_layer_flops(m: Mixer, pairs: float) -> float:
    """fwd+bwd of one quadratic attention layer's score (QK^T) and value (PV) matmuls.

    Forward per head: 2*pairs*qk_dim for the scores, 2*pairs*v_dim for the values; backward
    twice the forward. With qk_dim = v_dim = d and pairs = s^2/2 this is the guide's
    6*s^2*d*H per layer. MLA scores over nope+rope dims and weighs values of v_head_dim.
    """
    return 6.0 * pairs * (m.qk_head_dim + m.v_head_dim) * m.heads


# Forward FLOPs per token per element of one head's state (d_k x d_v for Gated DeltaNet,
# d_state x head_dim for Mamba-2): Megatron-LM's counts (megatron/training/training.py,
# num_floating_point_operations: gdn_layer_flops, mamba_layer_flops), so an MFU of a hybrid
# here lines up with Megatron's. Gated DeltaNet: four products of the state's size per value
# head, 2 FLOPs each (K K^T, V K^T, the decayed update S (a (I - b K K^T)), the read S Q): the
# delta rule reads the state (S k) before it writes it, beyond a plain linear attention's
# write and read. Mamba-2 (the SSD layer of Dao & Gu, "Transformers are SSMs", ICML 2024,
# h_t = a_t h_{t-1} + B_t x_t^T, y_t = C_t^T h_t): Megatron's scan term, 7*d_inner*d_state.
STATE_FLOPS_PER_ELEMENT = {LINEAR: 8, MAMBA2: 7}


def linear_mixer_flops(m: Mixer, tokens: int) -> float:
    """fwd+bwd of a Gated DeltaNet or Mamba-2 layer beyond its projections (those count as
    dense): a depthwise causal conv and a fixed-size state per head; linear in s.

    The conv: 2*kernel FLOPs per channel per token forward (q, k, v; Mamba-2's x, B, C). The
    state: STATE_FLOPS_PER_ELEMENT per element of each head's state per token forward
    (Megatron-LM's counts, above). Backward twice forward (the guide's 2 + 4 per multiply-add).
    Megatron counts the conv for Gated DeltaNet and not for Mamba-2; both layers run one, so
    both count it here. Not counted, as elementwise (as a softmax is not): the decays, the D
    skip, the gates; nor, as the kernel's way of computing the same outputs (as FlashAttention's
    recomputed scores are not), the chunked kernels' work inside each chunk.
    """
    state_fwd = STATE_FLOPS_PER_ELEMENT[m.kind] * m.heads * m.qk_head_dim * m.v_head_dim
    return 3.0 * (2.0 * m.conv_kernel * m.conv_channels + state_fwd) * tokens


def dense_flops(spec: ModelSpec, tokens: int) -> float:
    """fwd (2) + bwd (4) FLOPs per active matmul parameter per token (MoE: top-k + shared)."""
    return 6.0 * spec.active_params * tokens


@dataclass(frozen=True)
class StepFlops:
    dense: float      # every weight matmul a token goes through
    attention: float  # quadratic attention: full and windowed
    linear: float     # linear-attention and Mamba-2 mixers' conv and state
    recompute: float  # extra forward of checkpointed layers: in HFU only
    dense_recompute: float = 0.0  # the weight matmuls' part of it

    @property
    def gemm_hardware(self) -> float:
        """What the weight matmuls execute: their model FLOPs and their checkpoint recompute."""
        return self.dense + self.dense_recompute

    @property
    def model(self) -> float:
        return self.dense + self.attention + self.linear

    @property
    def hardware(self) -> float:
        return self.model + self.recompute

    @property
    def attn_share(self) -> float:
        """The quadratic-attention share of model FLOPs: the part that grows with s^2."""
        return self.attention / self.model


def step_flops(spec: ModelSpec, batch: int, seq_len: int, doc_len: int = 0,
               grad_checkpoint: bool = False) -> StepFlops:
    """FLOPs of one fwd+bwd step on one GPU's micro-batch."""
    tokens = batch * seq_len
    dense = dense_flops(spec, tokens)
    attn = linear = 0.0
    for layer in spec.layers:
        m = layer.mixer
        if m.kind in QUADRATIC:
            attn += attention_layer_flops(m, attention_pairs(batch, seq_len, doc_len, m.window))
        elif m.kind in LINEAR_MIXERS:
            linear += linear_mixer_flops(m, tokens)
    dense_recompute = mixer_recompute = 0.0
    if grad_checkpoint:
        # Checkpointing re-runs each decoder layer's forward (not lm_head): 2 FLOPs per active
        # layer parameter per token plus the mixers' forward, a third of their fwd+bwd.
        dense_recompute = 2.0 * (spec.active_params - spec.lm_head_params) * tokens
        mixer_recompute = (attn + linear) / 3.0
    return StepFlops(dense, attn, linear, dense_recompute + mixer_recompute, dense_recompute)


def tflops(flops: float, ms: float) -> float:
    """Throughput in TFLOPS of `flops` done in `ms` milliseconds."""
    return flops / (ms * 1e-3) / 1e12


def peak_share(tflops_achieved: float, peak_tflops: float | None) -> float | None:
    """Fraction of the peak; None when no peak is known (never another card's figure). MFU
    when given model TFLOPS, HFU when given the TFLOPS the hardware ran (recompute included)."""
    return None if not peak_tflops else tflops_achieved / peak_tflops


def matmul_flops(m: int, n: int, k: int) -> float:
    """A (m x k) @ B (k x n): one multiply and one add per (m, n, k) triple (mamf-finder)."""
    return 2.0 * m * n * k


def attention_kernel_flops(batch: int, seq_len: int, heads: int, head_dim: int,
                           causal: bool = True, doc_len: int = 0, pass_: str = "fwd",
                           window: int = 0, v_head_dim: int = 0) -> float:
    """FLOPs of an isolated attention kernel call (bench_flash_attn).

    Forward: the scores (2*pairs*qk_dim per head) and the values (2*pairs*v_dim), with pairs
    s^2 non-causal, s^2/2 causal, the causal band under a window (causal_pairs): 4*b*s^2*H*d
    when unmasked and qk_dim = v_dim = d. Backward: five matmuls, the scores recomputed, dQ and
    dK over qk_dim, dP and dV over v_dim: 2*pairs*(3*qk_dim + 2*v_dim) per head, 2.5x the
    forward at equal dims; fwd+bwd is their sum. Sinks add one logit per row: nothing to count.
    """
    v_head_dim = v_head_dim or head_dim
    if causal:
        pairs = attention_pairs(batch, seq_len, doc_len, window)
    else:
        pairs = float(sum_sq_len(batch, seq_len, doc_len))
    fwd = 2.0 * pairs * heads * (head_dim + v_head_dim)
    bwd = 2.0 * pairs * heads * (3 * head_dim + 2 * v_head_dim)
    return {"fwd": fwd, "bwd": bwd, "fwd_bwd": fwd + bwd}[pass_]


def linear_kernel_flops(batch: int, seq_len: int, heads: int, key_dim: int, value_dim: int,
                        pass_: str = "fwd") -> float:
    """FLOPs of an isolated Gated DeltaNet chunk kernel call, counted as the model counts
    them (linear_mixer_flops, its state part): 8 FLOPs per element of each value head's dk x dv
    state per token forward (Megatron-LM's count), twice that backward. The chunked algorithm's
    extra intra-chunk work is the kernel's way of doing it, not counted (as FlashAttention's
    recomputed scores are counted once)."""
    fwd = STATE_FLOPS_PER_ELEMENT[LINEAR] * batch * seq_len * heads * key_dim * value_dim
    return fwd * {"fwd": 1.0, "bwd": 2.0, "fwd_bwd": 3.0}[pass_]


def linear_flops(params: int, tokens: int) -> float:
    """fwd+bwd model FLOPs of linears holding `params` weights: 6 per weight per token (the
    forward, and the input and weight gradients, 2 each)."""
    return 6.0 * params * tokens


def low_precision_share(converted_params: int, tokens: int, model_flops: float) -> float:
    """Share of a step's model FLOPs that ran in the low-precision GEMMs (the converted linears')."""
    return min(1.0, linear_flops(converted_params, tokens) / model_flops) if model_flops else 0.0


def precision_bound_ms(model_flops: float, low_share: float, mamf_low: float, mamf_bf16: float) -> float:
    """The step's time at the matmul ceilings, every FLOP at the MAMF of the format it ran in:
    share / MAMF_low + (1 - share) / MAMF_bf16 seconds per TFLOP (the bound the format allows;
    attention and the rest run at bf16's ceiling at best)."""
    return model_flops / 1e12 * (low_share / mamf_low + (1 - low_share) / mamf_bf16) * 1e3
