"""One call for every attention kernel: run(q, k, v, Args) -> out, in the kernel's layout.

The flash APIs (fa2/fa3/fa4) take (batch, seq, heads, dim) and run GQA natively; SDPA and
FlexAttention take (batch, heads, seq, dim) and run GQA natively where the kernel accepts
`enable_gqa`. Packed documents run through the flash APIs' varlen entry points (cu_seqlens);
SDPA gets a block-diagonal mask, FlexAttention a BlockMask (it skips the blocks no query
sees). A sliding window of w tokens is the flash APIs' window_size (w-1, 0), an SDPA band
mask and a band in the BlockMask; sinks are FA4's learnable_sink, and FlexAttention's output
renormalised with its log-sum-exp. Packages and torch are imported at the first call, so a
missing one is an error of that call, never of importing this module.
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
    sink: object = None        # flash, flex: float32 (heads,) logits that join every softmax
    block_mask: object = None  # flex: the BlockMask of causality, windows and documents (None: full)


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


# Every (shape, pass) FlexAttention compiles is a static graph of its own, and so is every mask
# the BlockMask builder compiles: a run of 8 lengths x 3 passes x a few layers passes dynamo's
# default of 8 recompiles, after which it would run the unfused reference for the rest.
RECOMPILE_LIMIT = 1024
_compiled_fns = {}


def compiled(fn, on_gpu: bool):
    """`fn` compiled once per process, whole (fullgraph: a graph break is an error, never a
    silent fall back to the unfused eager reference, which is orders of magnitude slower);
    off a GPU `fn` itself, FlexAttention's reference, which the CPU correctness check uses."""
    import torch

    if not on_gpu:
        return fn
    if fn not in _compiled_fns:
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, RECOMPILE_LIMIT)
        _compiled_fns[fn] = torch.compile(fn, dynamic=False, fullgraph=True)
    return _compiled_fns[fn]


def flex():
    """The adapter of torch's FlexAttention, (b, h, s, d): compiled into Triton kernels on a
    GPU, as transformers' flex_attention path runs it; on CPU its unfused reference, which
    the correctness check uses. With sinks, the output of the softmax over the visible keys is
    scaled by Z / (Z + e^sink) = sigmoid(lse - sink), Z = e^lse: the sink joins the softmax's
    denominator and weighs no value, as transformers applies gpt-oss's sinks to FlexAttention."""
    def run(q, k, v, a: Args):
        import torch
        from torch.nn.attention.flex_attention import AuxRequest, flex_attention

        fn = compiled(flex_attention, q.is_cuda)
        if a.sink is None:
            return fn(q, k, v, block_mask=a.block_mask, enable_gqa=a.enable_gqa)
        out, aux = fn(q, k, v, block_mask=a.block_mask, enable_gqa=a.enable_gqa,
                      return_aux=AuxRequest(lse=True))
        return (out * torch.sigmoid(aux.lse - a.sink.view(1, -1, 1)).unsqueeze(-1)).to(q.dtype)
    return run
