"""Linear-attention kernels for bench_flash_attn.py: the Gated DeltaNet chunk kernel of
flash-linear-attention (FLA), Qwen3-Next's fast path, timed like an attention backend.

Inputs as transformers' Qwen3-Next layer hands them to the kernel: q and k (after the
causal conv) repeated from the key heads to the value heads when there are fewer, v per
value head, the log decay g (negative, float32, per value head and token) and the write
strength beta in (0, 1); the kernel L2-normalises q and k itself. The correctness check
compares with transformers' own torch version of the same chunked recurrence
(torch_chunk_gated_delta_rule) on float32 copies of the same rounded inputs.
"""
from .adapters import BSHD, Args
from .backends import Backend, Package
from .kernels import CHECK_SEQ_LEN, AttentionShape, Check, _error


def _fla_run(q, k, v, g, beta, a: Args):
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    out, _state = chunk_gated_delta_rule(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
    return out


# Triton kernels: NVIDIA from Ampere on (FLA's own requirement), and ROCm.
FLA = Backend("fla", package=Package("flash-linear-attention", "fla.ops.gated_delta_rule", "",
                                     "install flash-linear-attention: pip install "
                                     "flash-linear-attention", api="chunk_gated_delta_rule"),
              nvidia_majors=(8, None), rocm=True, arch_note="FLA's Triton kernels need sm_80 or newer",
              run=_fla_run, layout=BSHD)
KERNELS = {FLA.name: FLA}
# A Mamba-2 layer's one record: (backend, why it is unavailable). No SSD kernel is timed here.
MAMBA2_UNTIMED = ("mamba-ssm", "no Mamba-2 kernel is timed here (mamba-ssm's mamba_chunk_scan_combined "
                  "is not benchmarked in isolation): the Mamba layers' time is bench_decompose.py's "
                  "linear_mixer bucket")


def random_inputs(shape: AttentionShape, dtype, device, generator=None) -> list:
    """[q, k, v, g, beta] leaves, (b, s, value heads, dim) for q/k/v, (b, s, value heads) else."""
    import torch
    import torch.nn.functional as F

    b, s, h = shape.batch, shape.seq_len, shape.heads

    def randn(*size, dt=dtype):
        return torch.randn(*size, generator=generator).to(dt).to(device) if generator else \
            torch.randn(*size, dtype=dt, device=device)

    q, k = randn(b, s, h, shape.head_dim), randn(b, s, h, shape.head_dim)
    v = randn(b, s, h, shape.v_dim)
    g = F.logsigmoid(randn(b, s, h, dt=torch.float32))  # a decay in (0, 1) per token: log < 0
    beta = randn(b, s, h).sigmoid()
    return [t.detach().requires_grad_() for t in (q, k, v, g, beta)]


def reference(leaves: list):
    """transformers' torch chunked Gated DeltaNet on float32 copies: (out, [dq, dk, dv]) as
    functions of dout."""
    import torch
    from transformers.models.qwen3_next.modeling_qwen3_next import torch_chunk_gated_delta_rule

    copies = [t.detach().float().requires_grad_() for t in leaves]
    out, _state = torch_chunk_gated_delta_rule(*copies[:3], g=copies[3], beta=copies[4],
                                               use_qk_l2norm_in_kernel=True)
    return out, copies[:3]


def check(backend: Backend, shape: AttentionShape, dtype, device, seed: int) -> tuple[str, Check]:
    """('gva' or 'mha', Check) of the kernel against the reference on CHECK_SEQ_LEN tokens."""
    import torch
    from dataclasses import replace

    small = replace(shape, batch=min(shape.batch, 2), seq_len=CHECK_SEQ_LEN)
    gen = torch.Generator().manual_seed(seed)
    leaves = random_inputs(small, dtype, device, gen)
    dout = torch.randn(*leaves[2].shape, generator=gen).to(dtype).to(device)
    ref_out, ref_leaves = reference(leaves)
    ref_grads = torch.autograd.grad(ref_out, ref_leaves, dout.float())
    out = backend.run(*leaves, Args(causal=True))
    errors = {"out": _error(out, ref_out)}
    mode = "gva" if shape.kv_heads != shape.heads else "mha"
    try:
        grads = torch.autograd.grad(out, leaves[:3], dout)
    except Exception as err:
        return mode, Check(errors, f"{type(err).__name__}: {err}"[:500])
    errors.update({name: _error(g, r) for name, g, r in zip(("dq", "dk", "dv"), grads, ref_grads)})
    return mode, Check(errors, None)
