"""Low-precision GEMMs for training, through torchao: which linears convert, the conversion,
and compiling what was converted.

Conversion happens after the model is built and before the engine wraps it, and swaps
modules (torchao's Float8Linear; an MX linear's class), never a parameter's data: DeepSpeed
ZeRO-1/2 re-points every parameter's data into its flat buffers and ZeRO-3 partitions it, so a
quantizing tensor subclass put there would be dropped. (Under FSDP2 a tensorwise recipe does put
one there, on purpose: torchao's float8 all-gather, which fully_shard shards as it is.) Only the converted modules' forward is
compiled (torch.compile fuses each one's amax, scale and cast into a few kernels; eager, they
are a dozen small launches that cost more than FP8 saves): never the attention or the loss
(compiling the whole HF model made the bf16 step slower on an H200, not faster), and never a
module's hooks (ZeRO-3 hangs its gather and release hooks there; traced, each module
compiles anew). On CPU the formats are emulated (the tests' path) and nothing is compiled.
"""
import dataclasses

from ..hardware import precisions
from ..hardware.precisions import Precision
from . import fp8_experts

# What a run's first step spends on it (the start line, run_node's estimate): compiling the
# converted linears of 8 layers of Llama-3.1-8B, three shapes, took 17-18 s of each process's
# first step on an H200 (torch 2.11, torchao 0.17: results/h200-precision-7/fp8_tensorwise.log).
FIRST_STEP = "torch.compile builds the converted linears' kernels (17-18 s on an H200)"
FIRST_STEP_S = 18.0
# torchao's float8 performance tables (torchao/float8/README.md, "Performance", H100): below
# these sizes a converted linear ran slower than bf16, the casts costing more than the GEMM
# saves. (out features N, in features K) as torchao's own auto filter reads them.
TENSORWISE_SKIP = "K <= 4096 and N <= 1024"
ROWWISE_SKIP = "N <= 2048, K <= 1024, or N <= 4096 and K <= 2048"


def too_small(recipe: str, out_features: int, in_features: int) -> bool:
    """Whether a linear of these sizes is below the recipe's threshold (torchao's tables)."""
    n, k = out_features, in_features
    if recipe == "tensorwise":
        return k <= 4096 and n <= 1024
    if recipe.startswith("rowwise"):
        return n <= 2048 or k <= 1024 or (n <= 4096 and k <= 2048)
    return n < 1024 or k < 1024  # MX / NVFP4: no published table; their 32- and 16-blocks need size too


def block(recipe: str) -> int:
    """What each dimension of a converted linear must be a multiple of: 16 for the FP8 GEMM, an
    MX format's 32-element scale block."""
    return 32 if recipe.startswith("mx") else 16


def keep_reason(name: str, out_features: int, in_features: int, recipe: str, thresholds: bool) -> str | None:
    """Why the linear `name` stays bf16, or None when it converts."""
    if name.split(".")[-1] == "lm_head":
        return "lm_head"
    if out_features % block(recipe) or in_features % block(recipe):
        return f"a dimension not a multiple of {block(recipe)}"
    if thresholds and too_small(recipe, out_features, in_features):
        return "below the recipe's size threshold"
    return None


def rule_text(p: Precision, thresholds: bool) -> str:
    skip = {"tensorwise": TENSORWISE_SKIP}.get(p.recipe, ROWWISE_SKIP if p.recipe.startswith("rowwise")
                                               else "N or K below 1024")
    sizes = (f"linears with {skip} kept (torchao's float8 performance tables)" if thresholds
             else "no size threshold (emulated on CPU: every linear that can converts)")
    return f"every nn.Linear but lm_head, with both dimensions multiples of {block(p.recipe)}; {sizes}"


def linears(net):
    import torch

    return [(name, m) for name, m in net.named_modules() if type(m) is torch.nn.Linear]


# FP8_EXPERTS=0's reason, in the header: results/h200-experts-9 (torchao 0.17, torch 2.11).
EXPERTS_OFF = ("FP8_EXPERTS=0, the default: torchao's FP8 grouped GEMM made an H200's MoE step slower, "
               "not faster (its casts run eager)")


def experts_none_because(p: Precision, wanted: bool, found=precisions.module_found) -> str | None:
    """Why no MoE experts convert to `p` (FP8_EXPERTS: `wanted`), or None where they may (each
    then by its layout)."""
    if not p.experts:
        return f"{p.name}: experts' grouped GEMMs are not converted here"
    if not wanted:
        return EXPERTS_OFF
    if not found(p.library, fp8_experts.TORCHAO_MODULE):
        return f"the installed {p.library} has no FP8 grouped GEMM ({fp8_experts.TORCHAO_MODULE})"
    return None


def plan(net, p: Precision, thresholds: bool, experts: bool, found=precisions.module_found) -> dict:
    """What converting `net` (built for real or on the meta device) to `p` does: the header's
    `low_precision`, with the weights a token passes through in converted GEMMs (its FLOPs
    share: every converted linear's, its top-k experts' of each converted experts module)."""
    converted, kept, params = 0, {}, 0
    for name, m in linears(net):
        why = keep_reason(name, m.out_features, m.in_features, p.recipe, thresholds)
        if why:
            kept[why] = kept.get(why, 0) + 1
        else:
            converted += 1
            params += m.out_features * m.in_features
    experts = fp8_experts.plan(net, getattr(net.config, "num_experts_per_tok", 0) or 0,
                               experts_none_because(p, experts, found))
    return {"recipe": p.recipe, "library": p.library, "converted_linears": converted, "kept_linears": kept,
            "converted_experts": experts["converted_experts"], "kept_experts": experts["kept_experts"],
            "experts": p.experts if experts["converted_experts"] else "bf16",
            "converted_params": params + experts["converted_params"], "rule": rule_text(p, thresholds),
            "keeps": p.keeps,
            "compiled": "each converted linear's forward" if thresholds else "nothing (CPU emulation)"}


def plan_on_meta(config, p: Precision, thresholds: bool, experts: bool) -> dict:
    """plan() of the model `config` builds, built on the meta device (no memory, no weights):
    the header is written before the real model exists."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        net = AutoModelForCausalLM.from_config(config)
    return plan(net, p, thresholds, experts)


def convert(net, p: Precision, emulate: bool, experts: bool, float8_all_gather: bool = False,
            compile_linears: bool = True) -> tuple[int, int]:
    """Swap `net`'s linears that plan() converts for torchao's low-precision ones and compile
    each (not on CPU; not with `compile_linears` off, where the blocks around them are compiled
    whole), and run its experts that plan() converts in FP8 (FP8_EXPERTS: `experts`); with
    `float8_all_gather` (FSDP2, a tensorwise recipe) their weights are all-gathered in float8.
    Returns how many (linears, experts modules) were converted."""
    thresholds = not emulate
    chosen = {name for name, m in linears(net)
              if keep_reason(name, m.out_features, m.in_features, p.recipe, thresholds) is None}
    if p.recipe.startswith(("tensorwise", "rowwise")):
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training

        config = Float8LinearConfig.from_recipe_name(p.recipe)
        config = dataclasses.replace(config, emulate=emulate or config.emulate,
                                     enable_fsdp_float8_all_gather=float8_all_gather)
        convert_to_float8_training(net, config=config, module_filter_fn=lambda m, fqn: fqn in chosen)
    elif p.recipe == "mxfp8_cublas":
        for name, m in linears(net):
            if name in chosen:
                m.__class__ = mx_linear_class(emulate)  # its parameters, hooks and state stay as they are
    else:
        raise NotImplementedError(f"no conversion for {p.name}")  # precisions.resolve refused it already
    if compile_linears and not emulate:
        compile_converted(net, chosen)
    converted_experts = fp8_experts.convert(net, emulate) if experts_none_because(p, experts) is None else 0
    return len(chosen), converted_experts


def compile_converted(net, names: set) -> None:
    """Compile each converted module's forward alone, not its hooks (module docstring)."""
    import torch

    # A model's converted linears come in a few shapes, and each length of a sweep is one more:
    # past dynamo's default limit of 8 graphs a module would fall back to eager silently.
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
    for name, m in net.named_modules():
        if name in names:
            m.forward = torch.compile(m.forward)


def mx_linear_class(emulate: bool):
    """An nn.Linear whose GEMMs (forward and both of the backward) run in MXFP8 through torchao
    (its private `_to_mxfp8_then_scaled_mm`: the version is pinned)."""
    import torch
    from torchao.prototype.mx_formats.config import ScaleCalculationMode
    from torchao.prototype.mx_formats.mx_linear import _to_mxfp8_then_scaled_mm
    from torchao.quantization.quantize_.common import KernelPreference

    preference = KernelPreference.EMULATED if emulate else KernelPreference.AUTO

    class MXFP8Linear(torch.nn.Linear):
        def forward(self, x):
            out = _to_mxfp8_then_scaled_mm(x, self.weight, preference, ScaleCalculationMode.RCEIL)
            return out if self.bias is None else out + self.bias

    return MXFP8Linear
