"""Isolated attention kernels for bench_flash_attn.py: discovery, inputs in each backend's
layout, and the float64 reference of the correctness check.

The backends, their adapters and layouts are attn_backends.py's table. An SDPA kernel that
refuses `enable_gqa` gets the KV heads repeated before the call. Packed documents run
through the flash APIs' varlen entry points; SDPA math/efficient get a block-diagonal mask
instead, and still do the full s^2 work; SDPA flash/cuDNN do not run packed here.
Discovery is a pure function of (requested names, device, import problems, packed?), so it
is testable without a GPU.
"""
from dataclasses import dataclass, replace

from . import attn_backends, flops
from .attn_adapters import BHSD, BSHD, Args
from .attn_backends import Backend
from .fingerprint import Device

# The check runs each kernel on this many tokens before any timing: several 128-row tiles
# (so tile edges and the causal diagonal are crossed), small enough for a float64 reference.
CHECK_SEQ_LEN = 512
# Packed documents in the check: 200 + 200 + 112 tokens, boundaries that are not tile-aligned.
CHECK_DOC_LEN = 200
# max |x - ref| / max(1, max |ref|) allowed, per dtype. bf16 has 8 significant bits (eps
# 2^-7 = 0.0078): rounding the output alone costs up to half an ulp of the largest value, and
# with unit-normal inputs dv reaches ~10, so an absolute 2e-2 would fail a perfect kernel. A
# kernel accumulating in fp32 lands near 1e-3 (FA4 on H200: 0.0039 abs on outputs of ~3);
# torch's CPU flash backward reaches 1.4% (dv); a wrong mask, scale or layout is off by >10%.
# fp16 has 3 more bits, hence the tighter bound (CPU flash backward: 0.23%).
TOLERANCE = {"bf16": 2e-2, "fp16": 1e-2}


@dataclass(frozen=True)
class AttentionShape:
    batch: int
    seq_len: int
    heads: int
    kv_heads: int
    head_dim: int
    causal: bool
    doc_len: int = 0  # packed documents of this length inside each sequence (0 = one document)

    def flops(self, pass_: str) -> float:
        """The guide's convention: query heads count (GQA shares K/V, not work)."""
        return flops.attention_kernel_flops(self.batch, self.seq_len, self.heads, self.head_dim,
                                            self.causal, self.doc_len, pass_)

    def input_bytes(self, elem_bytes: int) -> int:
        """Bytes a backward pass holds at least: q, the output, its gradient and dq (query
        heads), k, v, dk and dv (key/value heads). Scores and workspace come on top."""
        return self.batch * self.seq_len * self.head_dim * 4 * (self.heads + self.kv_heads) * elem_bytes


def check_shape(shape: AttentionShape) -> AttentionShape:
    """The small shape of the correctness check: same heads, dims, mask kind and packing."""
    return replace(shape, batch=min(shape.batch, 2), seq_len=CHECK_SEQ_LEN,
                   doc_len=min(shape.doc_len, CHECK_DOC_LEN))


# --- discovery ------------------------------------------------------------------------------

def _packed_by(how: str) -> str:
    return "/".join(name for name, b in attn_backends.KERNELS.items() if b.packed == how)


NO_PACKED = (f"takes no document mask here; packed documents run on {_packed_by('varlen')} (varlen) "
             f"or {_packed_by('mask')} (block-diagonal mask)")


def import_problems(registry: dict) -> dict:
    """{name: why it cannot be imported, or None}: the only impure part of discovery."""
    return {name: attn_backends.import_problem(b) for name, b in registry.items()}


def unavailable_reason(b: Backend, device: Device, import_problem: str | None,
                       packed: bool) -> str | None:
    """Why `b` cannot run here, or None."""
    reason = attn_backends.arch_problem(b, device) or import_problem
    if reason is None and packed and not b.packed:
        reason = f"{b.name} {NO_PACKED}"
    return reason


def discover(requested: list, registry: dict, device: Device, problems: dict,
             packed: bool) -> list:
    """[(name, reason or None)]: `auto` keeps what runs here, a named list keeps every name
    (an unavailable one with its reason, to become a record)."""
    auto = requested == ["auto"]
    chosen = []
    for name in (registry if auto else requested):
        reason = unavailable_reason(registry[name], device, problems.get(name), packed)
        if reason is None or not auto:
            chosen.append((name, reason))
    return chosen


# --- inputs, masks and the reference ---------------------------------------------------------

def doc_offsets(batch: int, seq_len: int, doc_len: int) -> list[int]:
    """cu_seqlens of the varlen path: document starts over the flattened batch, then the end."""
    offsets = [0]
    for _ in range(batch):
        for n in flops.doc_lengths(seq_len, doc_len):
            offsets.append(offsets[-1] + n)
    return offsets


def packed_mask(seq_len: int, doc_len: int, causal: bool, dtype, device):
    """Additive (s, s) mask: 0 inside each document (lower triangle when causal), -inf across.

    Built block by block so the peak is one (s, s) tensor in `dtype` (32 GiB in bf16 at 128K).
    """
    import torch

    mask = torch.full((seq_len, seq_len), float("-inf"), dtype=dtype, device=device)
    start = 0
    for n in flops.doc_lengths(seq_len, doc_len):
        block = mask[start:start + n, start:start + n]
        block.zero_()
        if causal:
            block.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=device).triu_(1), float("-inf"))
        start += n
    return mask


def gqa_mode(backend: Backend, shape: AttentionShape, native: bool) -> str:
    """mha (equal heads), native (the kernel shares K/V heads) or repeat_kv (copied before)."""
    if shape.heads == shape.kv_heads:
        return "mha"
    return "native" if native or backend.layout == BSHD else "repeat_kv"


def make_args(backend: Backend, shape: AttentionShape, dtype, device, mode: str) -> Args:
    import torch

    args = Args(causal=shape.causal, enable_gqa=backend.layout == BHSD and mode == "native")
    if shape.doc_len and backend.packed == "varlen":
        args.cu_seqlens = torch.tensor(doc_offsets(shape.batch, shape.seq_len, shape.doc_len),
                                       dtype=torch.int32, device=device)
        args.max_doc_len = max(flops.doc_lengths(shape.seq_len, shape.doc_len))
    elif shape.doc_len:
        args.mask = packed_mask(shape.seq_len, shape.doc_len, shape.causal, dtype, device)
    return args


def to_layout(q, k, v, backend: Backend, mode: str) -> list:
    """(b, s, h, d) tensors -> leaves in the backend's layout (K/V repeated for repeat_kv)."""
    if mode == "repeat_kv":
        group = q.shape[2] // k.shape[2]
        k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
    tensors = (q, k, v) if backend.layout == BSHD else (t.transpose(1, 2) for t in (q, k, v))
    return [t.detach().contiguous().requires_grad_() for t in tensors]


def random_inputs(backend: Backend, shape: AttentionShape, dtype, device, mode: str) -> list:
    """Unit-normal leaves for timing, allocated directly in the backend's layout."""
    import torch

    kv = shape.heads if mode == "repeat_kv" else shape.kv_heads
    b, s, d = shape.batch, shape.seq_len, shape.head_dim
    heads = (shape.heads, kv, kv)
    sizes = [(b, s, h, d) if backend.layout == BSHD else (b, h, s, d) for h in heads]
    return [torch.randn(size, dtype=dtype, device=device, requires_grad=True) for size in sizes]


def reference(q, k, v, dout, shape: AttentionShape):
    """float64 math SDPA with K/V heads expanded: (out, [dq, dk, dv]), all (b, s, h, d)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    group = shape.heads // shape.kv_heads
    q64, k64, v64 = (t.double().transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
    mask = None
    if shape.doc_len:
        mask = packed_mask(shape.seq_len, shape.doc_len, shape.causal, torch.float64, q.device)
    with sdpa_kernel(SDPBackend.MATH):
        out = F.scaled_dot_product_attention(q64, k64.repeat_interleave(group, 1),
                                             v64.repeat_interleave(group, 1), attn_mask=mask,
                                             is_causal=shape.causal and mask is None)
    grads = torch.autograd.grad(out, (q64, k64, v64), dout.double().transpose(1, 2))
    return out.transpose(1, 2), [g.transpose(1, 2) for g in grads]


@dataclass
class Check:
    errors: dict  # {"out"|"dq"|"dk"|"dv": (max abs error, max(1, max |ref|))}
    backward_error: str | None  # why the backward could not run, if it raised


def check(backend: Backend, shape: AttentionShape, dtype, device, mode: str, seed: int) -> Check:
    """Run the kernel on `shape` (a check_shape) and compare with the float64 reference.

    Inputs are rounded to `dtype` once and the reference sees the rounded values, so the
    error is the kernel's alone. Raises whatever the forward raises.
    """
    import torch

    gen = torch.Generator().manual_seed(seed)
    b, s, d = shape.batch, shape.seq_len, shape.head_dim
    q, k, v, dout = (torch.randn(b, s, h, d, generator=gen).to(dtype).to(device)
                     for h in (shape.heads, shape.kv_heads, shape.kv_heads, shape.heads))
    ref_out, ref_grads = reference(q, k, v, dout, shape)
    leaves = to_layout(q, k, v, backend, mode)
    out = backend.run(*leaves, make_args(backend, shape, dtype, device, mode))
    bshd = (lambda t: t) if backend.layout == BSHD else (lambda t: t.transpose(1, 2))
    errors = {"out": _error(bshd(out), ref_out)}
    try:
        grads = torch.autograd.grad(out, leaves, bshd(dout).contiguous())
    except Exception as err:
        return Check(errors, f"{type(err).__name__}: {err}"[:500])
    grads = [bshd(g) for g in grads]
    if mode == "repeat_kv":  # each KV head's gradient is the sum over its query-head group
        group = shape.heads // shape.kv_heads
        grads[1:] = [g.reshape(b, s, shape.kv_heads, group, d).sum(3) for g in grads[1:]]
    errors.update({name: _error(g, r) for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads)})
    return Check(errors, None)


def _error(x, ref) -> tuple[float, float]:
    return (x.double() - ref).abs().max().item(), max(1.0, ref.abs().max().item())


def judge(errors: dict, names, tol: float) -> dict:
    """max_abs_err, max_rel_err (scaled as TOLERANCE says) and ok over the named tensors.

    NaN anywhere makes ok false (NaN <= tol is false).
    """
    picked = [errors[n] for n in names]
    abs_err = max(e for e, _ in picked)
    rel_err = max(e / scale for e, scale in picked)
    if any(e != e for e, _ in picked):
        abs_err = rel_err = float("nan")
    return {"max_abs_err": abs_err, "max_rel_err": rel_err, "ok": rel_err <= tol}


class NoKernel(RuntimeError):
    """torch's SDPA has no kernel of the requested kind for these inputs."""


def _no_kernel_reason(err: RuntimeError, caught) -> str | None:
    if "No available kernel" not in str(err):
        return None
    why = "; ".join(str(w.message) for w in caught if issubclass(w.category, UserWarning))
    return (why or str(err))[:500]


def check_backend(backend: Backend, shape: AttentionShape, dtype, device, seed: int) -> tuple[str, Check]:
    """(gqa mode, Check): native GQA first; SDPA kernels that refuse it get K/V repeated.

    Raises NoKernel when the kernel refuses the inputs either way.
    """
    import warnings

    modes = ["native", "repeat_kv"] if backend.layout == BHSD and shape.heads != shape.kv_heads else [None]
    reason = None
    for native in modes:
        mode = gqa_mode(backend, shape, native == "native")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                return mode, check(backend, shape, dtype, device, mode, seed)
            except RuntimeError as err:
                reason = _no_kernel_reason(err, caught)
                if reason is None:
                    raise
    raise NoKernel(reason)
