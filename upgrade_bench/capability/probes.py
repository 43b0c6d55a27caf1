"""Tiny real operations that answer "does it run here?" (check_capabilities.py).

Each probe runs one small operation on `device`, checks its result against a float64 (or
fp32) reference computed from the same inputs, and returns `verdicts.Passed`, or
raises: the exception is the answer (verdicts.classify turns it into a verdict).
Inputs are chosen to be exactly representable in the tested format and scales are not 1,
so a kernel that ignores its scales or packs nibbles the wrong way fails the check.
Every probe also runs on CPU where torch has a CPU kernel, which is how the tests check
the probes themselves.
"""
import math
import shutil
import subprocess
import time

import torch

from ..kernels.attention import backends as attn_backends, kernels as attn_kernels
from ..kernels.attention.adapters import BSHD
from .verdicts import NVML_LEVEL_CODE, NotEngaged, Passed, WrongResult, check_close, parse_topo_matrix, summarize_topology
from ..faults import is_oom

MATMUL_SIZE = 256      # dense probes: m = n = k
SCALED_SIZE = 128      # scaled probes: one 128-row block of the blocked scale layout
BF16_RTOL = 1e-2       # bf16 output rounds to 2^-9 relative; 1e-2 leaves room, catches garbage
# TF32 keeps 10 mantissa bits: a K=1024 fp32 matmul with TF32 lands ~1e-4..1e-3 (relative to
# the largest output) from float64, true fp32 ~1e-7. Above this, TF32 did run.
TF32_MIN_ERR = 1e-5


def _rand_ints(shape, low: int, high: int, device, seed: int):
    """Small integers as float32: exact in every fp8 format, products exact in fp32."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, shape, generator=g).float().to(device)


def matmul_dense(dtype_name: str, device) -> Passed:
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    g = torch.Generator().manual_seed(1)
    a = torch.randn(MATMUL_SIZE, MATMUL_SIZE, generator=g).to(device, dtype)
    b = torch.randn(MATMUL_SIZE, MATMUL_SIZE, generator=g).to(device, dtype)
    out = a @ b
    err = check_close(out, a.double() @ b.double(), BF16_RTOL, f"{dtype_name} matmul")
    return Passed(f"{MATMUL_SIZE}^3 {dtype_name} matmul, max rel err {err:.1e}",
                  {"max_rel_err": err})


def matmul_tf32(device) -> Passed:
    """fp32 matmul with allow_tf32: ok only if TF32 actually ran (error well above fp32's)."""
    g = torch.Generator().manual_seed(2)
    a = torch.randn(256, 1024, generator=g).to(device)
    b = torch.randn(1024, 256, generator=g).to(device)
    expected = a.double() @ b.double()
    flags = torch.backends.cuda.matmul
    before = flags.allow_tf32
    try:
        flags.allow_tf32 = False
        fp32_err = check_close(a @ b, expected, 1e-3, "fp32 matmul")
        flags.allow_tf32 = True
        tf32_err = check_close(a @ b, expected, BF16_RTOL, "tf32 matmul")
    finally:
        flags.allow_tf32 = before
    value = {"max_rel_err": tf32_err, "fp32_max_rel_err": fp32_err}
    if tf32_err < TF32_MIN_ERR:
        raise NotEngaged(f"allow_tf32=True but the fp32 matmul ran at fp32 precision (max rel err "
                         f"{tf32_err:.1e}, fp32 {fp32_err:.1e}): TF32 not engaged")
    return Passed(f"fp32 matmul with allow_tf32 ran TF32 (max rel err {tf32_err:.1e} vs fp32 "
                  f"{fp32_err:.1e})", value)


def matmul_fp8(a_format: str, scaling: str, device) -> Passed:
    """torch._scaled_mm, out bf16. a_format e4m3|e5m2 (B is always e4m3: cuBLASLt has no
    e5m2 x e5m2); scaling tensorwise (one fp32 scale each) or rowwise ((m,1) and (1,n))."""
    fp8 = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
    n = SCALED_SIZE
    a_ref = _rand_ints((n, n), -4, 5, device, seed=3)
    b_ref = _rand_ints((n, n), -4, 5, device, seed=4)  # (n, k): B is passed as b.t(), column-major
    if scaling == "tensorwise":
        scale_a = torch.tensor(2.0, device=device)
        scale_b = torch.tensor(4.0, device=device)
    else:
        scale_a = 2.0 ** _rand_ints((n, 1), -1, 2, device, seed=5)
        scale_b = 2.0 ** _rand_ints((1, n), -1, 2, device, seed=6)
    out = torch._scaled_mm(a_ref.to(fp8[a_format]), b_ref.to(fp8["e4m3"]).t(), scale_a, scale_b,
                           out_dtype=torch.bfloat16)
    expected = (scale_a * a_ref) @ (b_ref.t() * scale_b)
    err = check_close(out, expected, BF16_RTOL, f"fp8 {a_format} {scaling}")
    return Passed(f"torch._scaled_mm {a_format} x e4m3, {scaling} fp32 scales, "
                  f"{n}^3 -> bf16, max rel err {err:.1e}", {"max_rel_err": err})


# Block-scaled recipes: element format, scale dtype name, elements per scale.
BLOCK_RECIPES = {"mxfp8": ("e4m3", "float8_e8m0fnu", 32),
                 "mxfp4": ("e2m1", "float8_e8m0fnu", 32),
                 "nvfp4": ("e2m1", "float8_e4m3fn", 16)}

# fp4 e2m1 code (one nibble) -> value: sign bit, 2 exponent bits, 1 mantissa bit.
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
               -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def pack_e2m1(codes):
    """(rows, k) uint8 nibble codes -> (rows, k/2) bytes; element 2j in the low nibble
    (torch's float4_e2m1fn_x2 layout)."""
    return codes[:, 0::2] | (codes[:, 1::2] << 4)


def blocked_scale_numel(rows: int, k: int, block: int) -> int:
    """Elements of a swizzled scale tensor: rows padded to 128, scale columns to 4 (cuBLAS's
    block-scaling layout; torch checks exactly this count)."""
    scale_cols = -(-k // block)
    return -(-rows // 128) * 128 * (-(-scale_cols // 4) * 4)


def block_scaled_operands(recipe: str, device):
    """(a, b, a_ref, b_ref, scale_a, scale_b, scale) for a SCALED_SIZE^3 block-scaled matmul:
    a and b are (rows, K) in the recipe's element format (fp4 packed two per byte).

    Scales are uniform (2.0 everywhere), so the swizzle of the blocked layout does not
    change the product and the reference is simply scale^2 * a_ref @ b_ref.t().
    """
    element, scale_dtype, block = BLOCK_RECIPES[recipe]
    n = SCALED_SIZE
    if element == "e4m3":
        a_ref = _rand_ints((n, n), -4, 5, device, seed=7)
        b_ref = _rand_ints((n, n), -4, 5, device, seed=8)
        a, b = a_ref.to(torch.float8_e4m3fn), b_ref.to(torch.float8_e4m3fn)
    else:
        table = torch.tensor(E2M1_VALUES, device=device)
        codes_a = _rand_ints((n, n), 0, 16, device, seed=9).to(torch.uint8)
        codes_b = _rand_ints((n, n), 0, 16, device, seed=10).to(torch.uint8)
        a_ref, b_ref = table[codes_a.long()], table[codes_b.long()]
        fp4 = torch.float4_e2m1fn_x2  # AttributeError on a torch without fp4: the stack's answer
        a, b = pack_e2m1(codes_a).view(fp4), pack_e2m1(codes_b).view(fp4)
    scale = 2.0
    numel = blocked_scale_numel(n, n, block)
    dtype = getattr(torch, scale_dtype)
    scale_a = torch.full((numel,), scale, dtype=dtype, device=device)
    scale_b = torch.full((numel,), scale, dtype=dtype, device=device)
    return a, b, a_ref, b_ref, scale_a, scale_b, scale


def matmul_block_scaled(recipe: str, device) -> Passed:
    a, b, a_ref, b_ref, scale_a, scale_b, scale = block_scaled_operands(recipe, device)
    out = torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=torch.bfloat16)
    err = check_close(out, scale * scale * (a_ref @ b_ref.t()), BF16_RTOL, recipe)
    element, scale_dtype, block = BLOCK_RECIPES[recipe]
    return Passed(f"torch._scaled_mm {recipe}: {element} data, {scale_dtype} scales per {block} "
                  f"elements, {SCALED_SIZE}^3 -> bf16, max rel err {err:.1e}", {"max_rel_err": err})


# Each matmul item of check_capabilities and its probe; a training run asks the one its
# PRECISION needs (hardware/precisions.py) before building the model.
MATMULS = {
    "matmul:bf16": lambda dev: matmul_dense("bf16", dev),
    "matmul:fp16": lambda dev: matmul_dense("fp16", dev),
    "matmul:tf32": matmul_tf32,
    "matmul:fp8_e4m3:tensorwise": lambda dev: matmul_fp8("e4m3", "tensorwise", dev),
    "matmul:fp8_e5m2:tensorwise": lambda dev: matmul_fp8("e5m2", "tensorwise", dev),
    "matmul:fp8_e4m3:rowwise": lambda dev: matmul_fp8("e4m3", "rowwise", dev),
    "matmul:mxfp8:block32": lambda dev: matmul_block_scaled("mxfp8", dev),
    "matmul:mxfp4:block32": lambda dev: matmul_block_scaled("mxfp4", dev),
    "matmul:nvfp4:block16": lambda dev: matmul_block_scaled("nvfp4", dev),
}


# ---- attention --------------------------------------------------------------------------

# Causal, GQA like Llama (2 query heads per KV head), head_dim 128, bf16, fwd + bwd.
ATTN_SHAPE = {"batch": 1, "seq": 256, "heads": 4, "kv_heads": 2, "head_dim": 128}
ATTN_OUT_ATOL = 3e-2   # bf16 attention output vs fp32 reference (typical error ~4e-3)
ATTN_GRAD_RTOL = 0.1   # bf16 backward vs fp32 reference, relative to the largest gradient


def reference_attention(q, k, v):
    """Causal softmax attention, (batch, seq, heads, dim) layout, GQA by repeating k/v."""
    rep = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(q.shape[-1])
    seq = q.shape[1]
    future = torch.ones(seq, seq, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v)


def attention_function(name: str):
    """Backend `name`'s kernel as the probe calls it: (b, s, h, d) in and out, causal, with the
    arguments the kernel benchmark gives it (attn_kernels.make_args: FlexAttention's causal
    BlockMask, say). The (b, h, s, d) kernels get K/V repeated to the query heads (not every
    one takes enable_gqa). Its package is imported at the call: an import error is the
    stack's answer."""
    backend = attn_backends.KERNELS[name]

    def run(q, k, v):
        b, s, h, d = q.shape
        args = lambda kv_heads, mode: attn_kernels.make_args(  # noqa: E731
            backend, attn_kernels.AttentionShape(b, s, h, kv_heads, d, causal=True), q.dtype, q.device, mode)
        if backend.layout == BSHD:
            return backend.run(q, k, v, args(k.shape[2], "native"))
        k, v = k.repeat_interleave(h // k.shape[2], dim=2), v.repeat_interleave(h // k.shape[2], dim=2)
        out = backend.run(*(t.transpose(1, 2) for t in (q, k, v)), args(h, "mha"))
        return out.transpose(1, 2)

    return run


def attention(backend: str, device, version: str | None) -> Passed:
    fn = attention_function(backend)
    s = ATTN_SHAPE
    g = torch.Generator().manual_seed(11)
    q = torch.randn(s["batch"], s["seq"], s["heads"], s["head_dim"], generator=g)
    k = torch.randn(s["batch"], s["seq"], s["kv_heads"], s["head_dim"], generator=g)
    v = torch.randn(s["batch"], s["seq"], s["kv_heads"], s["head_dim"], generator=g)
    grad_out = torch.randn(q.shape, generator=g).to(device)
    inputs = [t.to(device, torch.bfloat16).requires_grad_() for t in (q, k, v)]
    out = fn(*inputs)
    grads = torch.autograd.grad(out, inputs, grad_out.to(torch.bfloat16))
    ref_inputs = [t.detach().float().requires_grad_() for t in inputs]
    ref = reference_attention(*ref_inputs)
    ref_grads = torch.autograd.grad(ref, ref_inputs, grad_out)
    out_err = float((out.detach().float() - ref.detach()).abs().max())
    if not math.isfinite(out_err) or out_err > ATTN_OUT_ATOL:
        raise WrongResult(f"forward max abs error {out_err:.3g} vs fp32 reference "
                          f"(tolerance {ATTN_OUT_ATOL})")
    grad_err = max(check_close(gr, rg, ATTN_GRAD_RTOL, f"{name} gradient")
                   for gr, rg, name in zip(grads, ref_grads, "qkv"))
    return Passed(f"causal GQA {s['heads']}/{s['kv_heads']} heads, head_dim {s['head_dim']}, seq "
                  f"{s['seq']}, bf16 fwd+bwd: out max abs err {out_err:.1e}, grad max rel err "
                  f"{grad_err:.1e}", {"version": version, "out_max_abs_err": out_err,
                                      "grad_max_rel_err": grad_err})


# ---- memory -----------------------------------------------------------------------------

def hbm(device) -> Passed:
    free, total = torch.cuda.mem_get_info(device)
    total_gib, free_gib = total / 2**30, free / 2**30
    return Passed(f"{total_gib:.1f} GiB total, {free_gib:.1f} GiB free at start",
                  round(total_gib, 1))


def usable_memory(device, time_limit_s: float) -> Passed:
    """Largest single allocation that succeeds, by bisection in 1 GiB steps; freed after."""
    torch.cuda.empty_cache()
    _, total = torch.cuda.mem_get_info(device)
    lo, hi = 0, math.ceil(total / 2**30) + 1  # lo always fits (0 bytes), hi never does
    tries, start = 0, time.perf_counter()
    while hi - lo > 1 and time.perf_counter() - start < time_limit_s:
        mid = (lo + hi) // 2
        tries += 1
        try:
            torch.empty(mid * 2**30, dtype=torch.uint8, device=device)  # allocated, then freed
            lo = mid
        except Exception as err:
            if not is_oom(err):
                raise
            hi = mid
        torch.cuda.empty_cache()
    elapsed = time.perf_counter() - start
    bounded = "" if hi - lo == 1 else f"; stopped at the {time_limit_s:g} s bound, fails at {hi} GiB"
    return Passed(f"largest single allocation {lo} GiB of {total / 2**30:.1f} GiB (1 GiB bisection, "
                  f"{tries} tries, {elapsed:.1f} s{bounded})", lo)


# ---- interconnect -----------------------------------------------------------------------

def _nvml_topology():
    """(active NVLink links per GPU, {pair: link}) for every GPU of the node, from NVML; a
    pair's link is NVLINK or, without one, the PCIe level of its common ancestor."""
    import pynvml

    pynvml.nvmlInit()
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        links = []
        for h in handles:
            active = 0
            for link in range(pynvml.NVML_NVLINK_MAX_LINKS):
                try:
                    active += pynvml.nvmlDeviceGetNvLinkState(h, link) == pynvml.NVML_FEATURE_ENABLED
                except pynvml.NVMLError:
                    pass  # no such link, or NVLink not supported on this GPU
            links.append(active)
        pairs = {}
        for i in range(len(handles)):
            for j in range(i + 1, len(handles)):
                nvlink = pynvml.nvmlDeviceGetP2PStatus(handles[i], handles[j],
                                                       pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
                level = pynvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
                pairs[f"{i}-{j}"] = ("NVLINK" if nvlink == pynvml.NVML_P2P_STATUS_OK
                                     else NVML_LEVEL_CODE.get(level, str(level)))
        return links, pairs
    finally:
        pynvml.nvmlShutdown()


def topo_matrix_text() -> str | None:
    """`nvidia-smi topo -m` output, or None where it cannot run."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        done = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def topology() -> Passed:
    """The node's GPUs (all of them, whatever CUDA_VISIBLE_DEVICES shows torch): NVLink
    links per GPU (NVML) and each GPU pair's link in `nvidia-smi topo -m`'s names (NV18,
    SYS, ...) where it runs, else NVML's (NVLINK or the PCIe level)."""
    sources, notes = [], []
    links, pairs, count = [], {}, 0
    try:
        links, pairs = _nvml_topology()
        count = len(links)
        sources.append("nvml")
    except Exception as err:  # pynvml missing or NVML refusing: nvidia-smi alone
        notes.append(f"NVML: {type(err).__name__}: {err}")
    text = topo_matrix_text()
    smi_count, smi_pairs = parse_topo_matrix(text) if text else (0, {})
    if smi_count:
        count, pairs = smi_count, smi_pairs
        sources.append("nvidia-smi topo -m")
    if not sources:
        raise RuntimeError("neither NVML nor `nvidia-smi topo -m` answered (" + "; ".join(notes) + ")")
    source = " + ".join(sources)
    unanswered = "".join(f"; {note}" for note in notes)
    return Passed(f"{summarize_topology(count, pairs, links)} (source: {source}{unanswered})",
                  {"node_gpu_count": count, "nvlink_links_active": links, "pairs": pairs,
                   "source": source})


def nccl_version() -> Passed:
    version = torch.cuda.nccl.version()
    text = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    return Passed(f"NCCL {text} (as loaded by torch {torch.__version__})", text)


def cuda_ok(device) -> bool:
    """False once the CUDA context is broken (a sticky error poisons every later call)."""
    try:
        (torch.ones(1, device=device) + 1).item()
        torch.cuda.synchronize(device)
        return True
    except Exception:
        return False
