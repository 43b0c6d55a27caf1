"""One call for every attention kernel: run(q, k, v, Args) -> out, in the kernel's layout.

The flash APIs (fa2/fa3/fa4) take (batch, seq, heads, dim) and run GQA natively; SDPA takes
(batch, heads, seq, dim) and runs GQA natively where the kernel accepts `enable_gqa`.
Packed documents run through the flash APIs' varlen entry points (cu_seqlens); SDPA gets a
block-diagonal mask. A sliding window of w tokens is the flash APIs' window_size (w-1, 0) and
an SDPA band mask; sinks are FA4's learnable_sink. Packages and torch are imported at the first call, so a missing one
is an error of that call, never of importing this module.
"""
import importlib
from dataclasses import dataclass

BSHD, BHSD = "bshd", "bhsd"


@dataclass
class Args:
    """Per-shape arguments of a call, built outside the timed region."""
    causal: bool
    cu_seqlens: object = None  # varlen: int32 document offsets over the flattened batch
    max_doc_len: int = 0
    mask: object = None        # SDPA packed: additive (s, s) mask in the compute dtype
    enable_gqa: bool = False   # SDPA: K/V with fewer heads than Q, handled by the kernel
    window: int = 0            # flash: tokens each query sees, itself included (0 = all)
    sink: object = None        # flash: float32 (heads,) logits that join every softmax


def _out(result):
    """FA3 3.x returns out; older FA3 and FA4 return (out, lse): keep out."""
    return result[0] if isinstance(result, tuple) else result


def flash(module: str):
    """The adapter of a FlashAttention package: `module`'s flash_attn_func, or its
    flash_attn_varlen_func for packed documents; (b, s, h, d)."""
    def run(q, k, v, a: Args):
        fa = importlib.import_module(module)
        extra = {}
        if a.window:
            extra["window_size"] = (a.window - 1, 0)
        if a.sink is not None:
            extra["learnable_sink"] = a.sink
        if a.cu_seqlens is None:
            return _out(fa.flash_attn_func(q, k, v, causal=a.causal, **extra))
        b, s, h, d = q.shape
        out = fa.flash_attn_varlen_func(q.reshape(b * s, h, d), k.reshape(b * s, -1, d),
                                        v.reshape(b * s, -1, v.shape[-1]), cu_seqlens_q=a.cu_seqlens,
                                        cu_seqlens_k=a.cu_seqlens, max_seqlen_q=a.max_doc_len,
                                        max_seqlen_k=a.max_doc_len, causal=a.causal, **extra)
        return _out(out).reshape(b, s, h, -1)
    return run


def sdpa(kernel: str):
    """The adapter of torch's SDPA pinned to one kernel (an SDPBackend member); (b, h, s, d)."""
    def run(q, k, v, a: Args):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        with sdpa_kernel(getattr(SDPBackend, kernel)):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=a.mask,
                                                  is_causal=a.causal and a.mask is None,
                                                  enable_gqa=a.enable_gqa)
    return run
