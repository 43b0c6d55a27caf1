"""Isolated attention kernels for bench_flash_attn.py: discovery, inputs in each backend's
layout, and the float64 reference of the correctness check.

The backends, their adapters and layouts are backends.py's table. An SDPA kernel that
refuses `enable_gqa` gets the KV heads repeated before the call. Packed documents run
through the flash APIs' varlen entry points; SDPA math/efficient get a block-diagonal mask
instead, and still do the full s^2 work; FlexAttention gets a BlockMask and skips the blocks
no query sees; SDPA flash/cuDNN do not run packed here. A model's own layers bring sliding
windows (the flash APIs' window_size, a band mask, or a band of blocks), sinks (FA4's
learnable_sink, FlexAttention's renormalised output) and MLA's score and value head dims of
their own. Discovery is a pure
function of (requested names, device, import problems, what the inputs need), so it is
testable without a GPU.
"""
from dataclasses import dataclass, replace

from . import adapters as attn_adapters, backends as attn_backends
from ...models import flops
from ...models.layers import FULL, LINEAR
from .adapters import BHSD, BSHD, Args
from .backends import Backend
from ...hardware.fingerprint import Device

# The check runs each kernel on this many tokens before any timing: several 128-row tiles
# (so tile edges and the causal diagonal are crossed), small enough for a float64 reference.
CHECK_SEQ_LEN = 512
# Packed documents in the check: 200 + 200 + 112 tokens, boundaries that are not tile-aligned.
CHECK_DOC_LEN = 200
# A window in the check, at most this wide (Gemma 3's 1024 would cover all 512 tokens and check
# nothing): the band's edge then crosses tiles off their boundaries.
CHECK_WINDOW = 160
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
    window: int = 0   # sliding window: tokens each query sees, itself included (0 = all before it)
    sinks: bool = False  # a learned logit per head joins every softmax (gpt-oss)
    v_head_dim: int = 0  # the values' head dim when not head_dim (MLA: 192 for scores, 128 here)
    layer: str = FULL    # the model's mixer kind; LINEAR: a Gated DeltaNet chunk kernel, whose
    # heads are value heads, kv_heads key heads, head_dim and v_head_dim its state's sides

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    def flops(self, pass_: str) -> float:
        """The guide's convention: query heads count (GQA shares K/V, not work)."""
        if self.layer == LINEAR:
            return flops.linear_kernel_flops(self.batch, self.seq_len, self.heads, self.head_dim,
                                             self.v_dim, pass_)
        return flops.attention_kernel_flops(self.batch, self.seq_len, self.heads, self.head_dim,
                                            self.causal, self.doc_len, pass_, self.window,
                                            self.v_dim)

    def input_bytes(self, elem_bytes: int) -> int:
        """Bytes a backward pass holds at least: q and dq, the output and its gradient (query
        heads), k, v, dk and dv (key/value heads). Scores and workspace come on top."""
        per_token = 2 * (self.heads + self.kv_heads) * (self.head_dim + self.v_dim)
        return self.batch * self.seq_len * per_token * elem_bytes


def check_shape(shape: AttentionShape) -> AttentionShape:
    """The small shape of the correctness check: same heads, dims, mask kind and packing."""
    return replace(shape, batch=min(shape.batch, 2), seq_len=CHECK_SEQ_LEN,
                   doc_len=min(shape.doc_len, CHECK_DOC_LEN), window=min(shape.window, CHECK_WINDOW))


# --- discovery ------------------------------------------------------------------------------

def _names(keep) -> str:
    return "/".join(name for name, b in attn_backends.KERNELS.items() if keep(b))


def _runs_on(field: str, modes: dict) -> str:
    """'fa3/fa4 (varlen), sdpa-math (block-diagonal mask), ...': who takes an input, and how."""
    return ", ".join(f"{_names(lambda b: getattr(b, field) == mode)} ({how})" for mode, how in modes.items())


NO_PACKED = "takes no document mask here; packed documents run on " + _runs_on("packed", {
    "varlen": "varlen", "mask": "block-diagonal mask", "blocks": "BlockMask"})
NO_WINDOW = "takes no sliding window here; windows run on " + _runs_on("window", {
    "native": "window_size", "mask": "band mask", "blocks": "BlockMask"})
NO_SINKS = f"takes no attention sinks; sinks run on {_names(lambda b: b.sinks)}"


def import_problems(registry: dict) -> dict:
    """{name: why it cannot be imported, or None}: the only impure part of discovery."""
    return {name: attn_backends.import_problem(b) for name, b in registry.items()}


def unavailable_reason(b: Backend, device: Device, import_problem: str | None,
                       packed: bool, window: bool = False, sinks: bool = False) -> str | None:
    """Why `b` cannot run here (or not these inputs: packed, windowed, with sinks), or None."""
    reason = attn_backends.arch_problem(b, device) or import_problem
    for needed, has, why in ((packed, b.packed, NO_PACKED), (window, b.window, NO_WINDOW),
                             (sinks, b.sinks, NO_SINKS)):
        if reason is None and needed and not has:
            reason = f"{b.name} {why}"
    return reason


# BACKENDS=auto's second kernel: the SDPA kernel teams switch to when the flash package is
# missing or misbehaves, so the table shows what the default costs against it.
ALTERNATIVE = "sdpa-cudnn"
# The kernel a training backend that is no kernel of its own runs: `sdpa` torch's flash kernel
# (torch's own priority puts it first for causal bf16 inputs; on CPU it is the one fused
# kernel), `eager` the math kernel (scores materialised, softmax, values: eager's computation).
KERNEL_OF = {"sdpa": "sdpa-flash", "eager": "sdpa-math"}


def training_pick(device: Device, problems: dict, refused: dict | None = None) -> str:
    """The kernel a training run's ATTN_BACKEND=auto would use here, for a model family that
    refuses `refused` ({backend: why})."""
    installed = {name for name in attn_backends.TRAINING if problems.get(name) is None}
    pick, _ = attn_backends.resolve("auto", device, installed, refused)
    return KERNEL_OF.get(pick, pick)


def discover(requested: list, registry: dict, device: Device, problems: dict,
             packed: bool, window: bool = False, sinks: bool = False, refused: dict | None = None) -> list:
    """[(name, reason or None)]: `auto` keeps what a training run of the model (its family
    refusing `refused`) would use here and its common alternative (ALTERNATIVE) where they
    run, `all` every kernel that runs here, a named list every name (an unavailable one with
    its reason, to become a record). When nothing `auto` or `all` picks runs these inputs,
    their reasons are the records."""
    picked = {"auto": [training_pick(device, problems, refused), ALTERNATIVE], "all": list(registry)}
    named = len(requested) != 1 or requested[0] not in picked
    names = requested if named else picked[requested[0]]
    chosen = [(name, unavailable_reason(registry[name], device, problems.get(name), packed, window, sinks))
              for name in dict.fromkeys(names)]
    runnable = [(name, reason) for name, reason in chosen if reason is None]
    return chosen if named or not runnable else runnable


# --- inputs, masks and the reference ---------------------------------------------------------

def doc_offsets(batch: int, seq_len: int, doc_len: int) -> list[int]:
    """cu_seqlens of the varlen path: document starts over the flattened batch, then the end."""
    offsets = [0]
    for _ in range(batch):
        for n in flops.doc_lengths(seq_len, doc_len):
            offsets.append(offsets[-1] + n)
    return offsets


def attention_mask(seq_len: int, doc_len: int, causal: bool, dtype, device, window: int = 0):
    """Additive (s, s) mask: 0 where a query may look, -inf elsewhere. Inside each document
    (the whole sequence when not packed): the lower triangle when causal, cut to the band of
    `window` tokens (itself and the window-1 before it) when windowed; -inf across documents.

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
        if window:
            block.masked_fill_(torch.ones(n, n, dtype=torch.bool, device=device).tril_(-window),
                               float("-inf"))
        start += n
    return mask


def block_mask(seq_len: int, doc_len: int, causal: bool, window: int, device):
    """FlexAttention's BlockMask of the mask attention_mask builds (documents, the causal
    triangle, the window's band), or None when every query sees every key. Compiled on a GPU:
    uncompiled, create_block_mask materialises the whole (s, s) mask (16 GiB of bools at
    128K); compiled, inductor fuses the mask into its per-block reduction."""
    import torch
    from torch.nn.attention.flex_attention import and_masks, create_block_mask

    visible = []  # mask_mod(batch, head, q, kv) -> may q see kv
    if doc_len:
        lengths = torch.tensor(flops.doc_lengths(seq_len, doc_len), device=device)
        doc = torch.repeat_interleave(torch.arange(len(lengths), device=device), lengths)
        visible.append(lambda _b, _h, q, kv: doc[q] == doc[kv])
    if causal:
        visible.append(lambda _b, _h, q, kv: q >= kv)
    if window:
        visible.append(lambda _b, _h, q, kv: q - kv < window)
    if not visible:
        return None
    make = attn_adapters.compiled(create_block_mask, torch.device(device).type == "cuda")
    return make(and_masks(*visible), None, None, seq_len, seq_len, device=device)


def sink_logits(heads: int, device):
    """The sinks of the check and the timing: one float32 logit per head, spread over a range
    where they matter next to unit-normal scores (-1 to 2)."""
    import torch

    return torch.linspace(-1.0, 2.0, heads, dtype=torch.float32, device=device)


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
    if shape.window and backend.window == "native":
        args.window = shape.window
    masked_docs = shape.doc_len and backend.packed == "mask"
    if masked_docs or (shape.window and backend.window == "mask"):
        args.mask = attention_mask(shape.seq_len, shape.doc_len if masked_docs else 0, shape.causal,
                                   dtype, device, shape.window)
    if backend.packed == "blocks":
        args.block_mask = block_mask(shape.seq_len, shape.doc_len, shape.causal, shape.window, device)
    if shape.sinks:
        args.sink = sink_logits(shape.heads, device)
    return args


def to_layout(q, k, v, backend: Backend, mode: str) -> list:
    """(b, s, h, d) tensors -> leaves in the backend's layout (K/V repeated for repeat_kv)."""
    if mode == "repeat_kv":
        group = q.shape[2] // k.shape[2]
        k, v = k.repeat_interleave(group, dim=2), v.repeat_interleave(group, dim=2)
    tensors = (q, k, v) if backend.layout == BSHD else (t.transpose(1, 2) for t in (q, k, v))
    return [t.detach().contiguous().requires_grad_() for t in tensors]


def _qkv_dims(shape: AttentionShape, kv_heads: int) -> list:
    """(heads, head dim) of q, k, v."""
    return [(shape.heads, shape.head_dim), (kv_heads, shape.head_dim), (kv_heads, shape.v_dim)]


def random_inputs(backend: Backend, shape: AttentionShape, dtype, device, mode: str) -> list:
    """Unit-normal leaves for timing, allocated directly in the backend's layout."""
    import torch

    kv = shape.heads if mode == "repeat_kv" else shape.kv_heads
    b, s = shape.batch, shape.seq_len
    sizes = [(b, s, h, d) if backend.layout == BSHD else (b, h, s, d) for h, d in _qkv_dims(shape, kv)]
    return [torch.randn(size, dtype=dtype, device=device, requires_grad=True) for size in sizes]


def reference(q, k, v, dout, shape: AttentionShape):
    """float64 attention written out (scores, mask, sinks, softmax, values) with K/V heads
    expanded: (out, [dq, dk, dv]), all (b, s, h, d). A sink is one more logit in every row's
    softmax that weighs no value: out = sum_j e^(s_ij) v_j / (e^sink + sum_j e^(s_ij))."""
    import torch

    group = shape.heads // shape.kv_heads
    q64, k64, v64 = (t.double().transpose(1, 2).detach().requires_grad_() for t in (q, k, v))
    scores = q64 @ k64.repeat_interleave(group, 1).transpose(-1, -2) / shape.head_dim ** 0.5
    if shape.causal or shape.doc_len or shape.window:
        scores = scores + attention_mask(shape.seq_len, shape.doc_len, shape.causal, torch.float64,
                                         q.device, shape.window)
    if shape.sinks:
        sink = sink_logits(shape.heads, q.device).double().view(1, -1, 1, 1)
        scores = torch.cat([scores, sink.expand(*scores.shape[:-1], 1)], dim=-1)
    weights = scores.softmax(-1)[..., :shape.seq_len]
    out = weights @ v64.repeat_interleave(group, 1)
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
    b, s = shape.batch, shape.seq_len
    dims = _qkv_dims(shape, shape.kv_heads) + [(shape.heads, shape.v_dim)]  # dout last
    q, k, v, dout = (torch.randn(b, s, h, d, generator=gen).to(dtype).to(device) for h, d in dims)
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
        grads[1:] = [g.reshape(b, s, shape.kv_heads, group, g.shape[-1]).sum(3) for g in grads[1:]]
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
