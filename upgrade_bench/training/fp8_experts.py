"""MoE experts' grouped GEMMs in FP8 (row-wise scales), through torchao's scaled grouped matmul.

The expert weights stay plain bf16 parameters. torchao's own MoE conversion wraps them in a
quantizing tensor subclass, which DeepSpeed undoes: ZeRO-1/2 re-point each parameter's data into
their flat buffers (the wrapper keeps the stale tensor and the experts stop training, silently)
and ZeRO-3 partitions it (the wrapper holds the empty placeholder). Instead transformers' own
grouped-GEMM experts forward runs (routing, sorting, gating and weighting untouched), and each
grouped GEMM it makes goes to torchao's `_to_fp8_rowwise_then_scaled_grouped_mm`: e4m3 operands
with one power-of-two scale per row, in the forward and both backward GEMMs. That kernel needs
each expert's group of tokens to start at a multiple of 16 rows: the groups are padded on the
device, with no host sync (`padded_rows`).

On CPU torchao has no FP8 grouped GEMM: the tests' path rounds both operands through e4m3
(row-wise scales, the gradients passed straight through) and runs the bf16 grouped GEMM.
"""
import contextvars
import functools

# The FP8 grouped GEMM's weight gradient contracts over tokens, and its operands' rows must start
# 16-byte aligned for the TMA loads (torchao asserts group sizes divisible by 16). An empty group
# is padded to 16 rows too: zero rows cost nothing to the result and no kernel sees a 0-row group.
ALIGN_ROWS = 16
IMPLEMENTATION = "upgrade_bench_fp8_rowwise"  # the name registered with transformers' experts interface
TORCHAO_MODULE = "torchao.prototype.moe_training.fp8_grouped_mm"
TRANSPOSED = "weights stored (experts, in, out), row-major: the FP8 grouped GEMM needs them column-major"
NOT_16 = "a dimension not a multiple of 16"

_GEMM = contextvars.ContextVar("fp8 grouped GEMM of the experts forward running now", default=None)


def experts_modules(net) -> list:
    """(name, module) of each experts module built through transformers' experts interface
    (`use_experts_implementation` gives them `has_gate`): Qwen3-MoE's, Qwen3-Next's,
    DeepSeek-V3's, gpt-oss's, Granite 4.0-H's."""
    return [(name, m) for name, m in net.named_modules() if hasattr(m, "has_gate") and hasattr(m, "down_proj")]


def stored_shapes(m) -> list:
    """The shapes of `m`'s two expert weights as built: (experts, out, in), or (experts, in, out)
    where `m.is_transposed`. Under ZeRO-3 the model is built partitioned, each parameter an empty
    placeholder that keeps its shape in `ds_shape`."""
    first = m.gate_up_proj if m.has_gate else m.up_proj
    return [tuple(getattr(w, "ds_shape", w.shape)) for w in (first, m.down_proj)]


def keep_reason(m) -> str | None:
    """Why the experts module `m` stays bf16, or None when both its grouped GEMMs convert: each
    weight's dimensions multiples of 16, and stored (experts, out, in), so that the transposed
    view transformers passes is column-major as the FP8 grouped GEMM needs."""
    shapes = stored_shapes(m)
    if any(len(s) != 3 or s[1] % 16 or s[2] % 16 for s in shapes):
        return NOT_16
    return TRANSPOSED if m.is_transposed else None


def active_params(m, top_k: int) -> int:
    """Expert weights one token multiplies in `m`: its top_k experts' (the FLOP count's)."""
    return top_k * sum(s[1] * s[2] for s in stored_shapes(m))


def plan(net, top_k: int, none_because: str | None) -> dict:
    """What converting `net`'s experts does: converted and kept modules, and the parameters a
    token passes through in the converted ones; every one kept where `none_because` says why."""
    converted, kept, params = 0, {}, 0
    for _, m in experts_modules(net):
        why = none_because or keep_reason(m)
        if why:
            kept[why] = kept.get(why, 0) + 1
        else:
            converted += 1
            params += active_params(m, top_k)
    return {"converted_experts": converted, "kept_experts": kept, "converted_params": params}


def padded_rows(offs, num_rows: int, num_groups: int):
    """(destination row of each input row, padded group ends, buffer rows) for a buffer whose
    groups start at multiples of ALIGN_ROWS and hold at least ALIGN_ROWS rows. `offs` are the
    groups' end rows (int32, on the device); rows past the last end (none, where every token is
    routed to an expert here) go to a spare row past every group. The buffer is whole 16-row
    tiles. Computed on the device: no sync."""
    import torch

    ends = offs.to(torch.int64)
    sizes = torch.diff(ends, prepend=ends.new_zeros(1))
    padded = torch.clamp_min((sizes + ALIGN_ROWS - 1) // ALIGN_ROWS * ALIGN_ROWS, ALIGN_ROWS)
    padded_ends = torch.cumsum(padded, 0)
    spare = num_rows + ALIGN_ROWS * num_groups  # padded_ends[-1] is never beyond it
    rows = torch.arange(num_rows, device=offs.device)
    group = torch.searchsorted(ends, rows, right=True)
    g = group.clamp(max=num_groups - 1)
    dest = (padded_ends - padded)[g] + rows - (ends - sizes)[g]
    dest = torch.where(group < num_groups, dest, torch.full_like(dest, spare))
    return dest, padded_ends.to(torch.int32), (spare + ALIGN_ROWS) // ALIGN_ROWS * ALIGN_ROWS


def padded_grouped_mm(gemm, input, weight_t, offs):
    """gemm(padded input, weight_t, padded offsets), back in the input's row order."""
    dest, padded_offs, rows = padded_rows(offs, input.size(0), weight_t.size(0))
    a = input.new_zeros(rows, input.size(1), dtype=weight_t.dtype).index_copy(0, dest, input.to(weight_t.dtype))
    return gemm(a, weight_t, padded_offs).index_select(0, dest)


@functools.lru_cache(maxsize=1)
def torchao_grouped_mm():
    """torchao's `_to_fp8_rowwise_then_scaled_grouped_mm`. torchao 0.17's moe_training package
    imports its MXFP8 CuTe-DSL kernels first, and those need `cutlass.base_dsl._mlir_helpers`,
    which the nvidia-cutlass-dsl that flash-attn-4 installs (4.8.1) has not: seen on an H200. The
    FP8 module needs none of them, so where the package fails to import, its module is loaded
    under an unexecuted package (its kernels and utils import on their own)."""
    import importlib
    import importlib.util
    import sys

    try:
        return importlib.import_module(TORCHAO_MODULE)._to_fp8_rowwise_then_scaled_grouped_mm
    except ImportError:
        package = TORCHAO_MODULE.rsplit(".", 1)[0]
        sys.modules[package] = importlib.util.module_from_spec(importlib.util.find_spec(package))
        return importlib.import_module(TORCHAO_MODULE)._to_fp8_rowwise_then_scaled_grouped_mm


def torchao_gemm(a, weight_t, offs):
    return torchao_grouped_mm()(a, weight_t, offs, out_dtype=a.dtype, pad_token_groups_for_grouped_mm=False)


def through_e4m3(x, dim: int):
    """`x` rounded to e4m3 with one scale per slice along `dim` and back; its gradient passes
    straight through (the CPU stand-in's casts)."""
    import torch

    e4m3_max = torch.finfo(torch.float8_e4m3fn).max
    scale = e4m3_max / x.detach().abs().amax(dim=dim, keepdim=True).float().clamp(min=1e-12)
    rounded = ((x.detach().float() * scale).clamp(-e4m3_max, e4m3_max).to(torch.float8_e4m3fn).float()
               / scale).to(x.dtype)
    return x + (rounded - x).detach()


def emulated_gemm(a, weight_t, offs):
    """CPU stand-in: rows of `a` and columns of each expert's weight through e4m3, then the bf16
    grouped GEMM."""
    return _theirs(through_e4m3(a, -1), through_e4m3(weight_t, -2), offs)


_theirs = None  # transformers' own `_grouped_mm`, once install() put ours in its place


def _grouped_mm(input, weight, offs):
    """transformers' `_grouped_mm`: in FP8 inside a converted module's experts forward (both its
    GEMMs passed keep_reason), else theirs."""
    gemm = _GEMM.get()
    if gemm is not None:
        return padded_grouped_mm(gemm, input, weight, offs)
    return _theirs(input, weight, offs)


def _experts_forward(self, *args, **kwargs):
    """transformers' grouped-GEMM experts forward, its GEMMs in FP8 where this module converted."""
    from transformers.integrations import moe

    token = _GEMM.set(getattr(self, "fp8_gemm", None))
    try:
        return moe.grouped_mm_experts_forward(self, *args, **kwargs)
    finally:
        _GEMM.reset(token)


def install() -> None:
    """Route transformers' grouped GEMMs through `_grouped_mm` (its `_grouped_linear` looks the
    name up at each call) and register the experts forward; once per process."""
    global _theirs
    from transformers.integrations import moe

    if _theirs is None:
        _theirs = moe._grouped_mm
        moe._grouped_mm = _grouped_mm
        moe.ALL_EXPERTS_FUNCTIONS.register(IMPLEMENTATION, _experts_forward)


def convert(net, emulate: bool) -> int:
    """Run the experts of `net` that plan() converts in FP8; returns how many."""
    chosen = [m for _, m in experts_modules(net) if keep_reason(m) is None]
    if chosen:
        install()
        for m in chosen:
            m.fp8_gemm = emulated_gemm if emulate else torchao_gemm
        net.set_experts_implementation(IMPLEMENTATION)
    return len(chosen)
