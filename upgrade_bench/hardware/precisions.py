"""Training precisions: one row each, the one home of PRECISION.

A row says what a number format needs (the GPU's compute capability, the library recipe that
implements it), what it converts and what it keeps in bf16 (and why), which GPU-table peak
and which MAMF search dtype are its ceiling. Training (the conversion), the resolver (what
may run here), check_capabilities (which format unlocks which precision), the decomposition,
the forecast and the report all read this table; nothing here imports torch.

Model FLOPs do not change with the format: MFU stays against the bf16 dense peak
("bf16-equivalent", as torchtitan and Megatron-Bridge report TFLOP/s for FP8 runs), and the
summary adds the share of model FLOPs the low-precision GEMMs ran and the time bound the
format allows (flops.precision_bound_ms).
"""
import importlib.metadata as md
from dataclasses import dataclass

from ..faults import BadInput
from .formats import NEEDS, below_floor
from .fingerprint import Device, package_version

TORCHAO = "torchao"
TORCHAO_HINT = "install torchao (./install.sh pins it on GPU nodes)"


@dataclass(frozen=True)
class Precision:
    name: str
    recipe: str | None       # the library's recipe name (torchao's Float8LinearRecipeName / MX recipe)
    library: str | None      # the distribution that implements it (None: plain bf16)
    module: str = ""         # what must import from the library for the recipe to exist there
    item: str = ""           # check_capabilities' item for its GEMM: the silicon it needs (NEEDS), the probe
    peak_dtype: str = "bf16"        # the GPU table's column of its dense peak (hardware/gpus.py)
    mamf_dtype: str = "bf16"        # the MAMF search (mamf-finder.py DTYPE) that measures its ceiling
    converts: str = ""              # what runs in the format
    keeps: str = ""                 # what stays bf16, and why
    experts: str = ""               # what MoE experts' grouped GEMMs run in ("": bf16, `keeps` says why)

    @property
    def low(self) -> bool:
        """Whether any GEMM runs below bf16."""
        return self.recipe is not None


_KEEPS = ("lm_head (the output projection: its error goes straight into the loss, and torchao's "
          "recipes leave it out); MoE routers (a weight of their own, a sliver of the FLOPs); linears "
          "with a dimension not a multiple of 16 (the FP8 GEMM needs it) or below the recipe's size "
          "thresholds (too small to gain, torchao's float8 performance tables); attention and the loss "
          "(computed in bf16)")
_KEEPS_FP8 = _KEEPS + ("; MoE experts unless FP8_EXPERTS=1 (torchao's FP8 grouped GEMM made an H200's MoE step "
                       "slower), and those stored (experts, in, out) row-major, as gpt-oss's (the FP8 grouped "
                       "GEMM needs each expert's weight column-major)")
_KEEPS_BLOCK = _KEEPS + "; MoE experts (their block-scaled grouped GEMM is not wired here)"
# torchao's one FP8 grouped GEMM: whatever the linears' recipe, experts run it (row-wise scales).
_FP8_EXPERTS = "fp8-rowwise grouped GEMM (torchao's _to_fp8_rowwise_then_scaled_grouped_mm, its only FP8 grouped recipe)"
TABLE = (
    Precision("bf16", None, None, converts="every GEMM in bf16 (the guide's runs)"),
    Precision("fp8-tensorwise", "tensorwise", TORCHAO, "torchao.float8", "matmul:fp8_e4m3:tensorwise", "fp8",
              "fp8", "nn.Linear fwd and bwd GEMMs in float8 (e4m3 forward, e5m2 gradients), one dynamic "
              "scale per tensor", _KEEPS_FP8, _FP8_EXPERTS),
    Precision("fp8-rowwise", "rowwise", TORCHAO, "torchao.float8", "matmul:fp8_e4m3:rowwise", "fp8",
              "fp8-rowwise", "nn.Linear fwd and bwd GEMMs in float8 with one scale per row (e4m3 throughout)",
              _KEEPS_FP8, _FP8_EXPERTS),
    Precision("fp8-rowwise-gw-hp", "rowwise_with_gw_hp", TORCHAO, "torchao.float8", "matmul:fp8_e4m3:rowwise",
              "fp8", "fp8-rowwise", "nn.Linear forward and input-gradient GEMMs in row-wise float8; the "
              "weight gradient in bf16", _KEEPS_FP8, _FP8_EXPERTS),
    Precision("mxfp8", "mxfp8_cublas", TORCHAO, "torchao.prototype.mx_formats.mx_linear", "matmul:mxfp8:block32",
              "fp8", "mxfp8", "nn.Linear GEMMs in MXFP8 (e4m3, one power-of-two scale per 32 elements)", _KEEPS_BLOCK),
    # torchao ships NVFP4 for inference; a training recipe is looked for by name, so a release
    # that adds one is taken without a change here.
    Precision("nvfp4", "nvfp4", TORCHAO, "torchao.prototype.mx_formats.nvfp4_training", "matmul:nvfp4:block16",
              "fp4", "nvfp4", "nn.Linear GEMMs in NVFP4 (e2m1, an fp8 scale per 16 elements and one per tensor)",
              _KEEPS_BLOCK),
)
PRECISIONS = {p.name: p for p in TABLE}
DEFAULT = "bf16"


def arch_problem(p: Precision, device: Device) -> str | None:
    """Why `p` cannot run on `device` whatever is installed, or None (the silicon's answer,
    formats.NEEDS; whether this stack runs it, the training process asks the probe)."""
    if not p.low:
        return None
    if device.capability is None:
        return None  # CPU: torchao emulates the formats (the test path), never a speed
    if device.is_hip:
        return f"{p.name} is not offered on AMD GPUs ({device.arch}): this suite has not checked torchao's ROCm path"
    why = below_floor(p.item, device)
    return f"{p.name} does not run on {device.arch}: {why}" if why else None


def library_problem(p: Precision, module_found, version_of=package_version) -> str | None:
    """Why the installed library lacks `p`, or None; `module_found(distribution, module)`
    says whether the installed distribution holds that module."""
    if not p.low:
        return None
    version = version_of(p.library)
    if version is None:
        return f"{p.name} needs {p.library}, which is not installed: {TORCHAO_HINT}"
    if not module_found(p.library, p.module):
        return f"{p.name}: {p.library} {version} has no {p.module} (no {p.recipe} training recipe there)"
    return None


def module_found(distribution: str, module: str) -> bool:
    """Whether `distribution`'s installed files hold `module`, read from its file list: finding
    a submodule by import would import its package first (torchao imports torch), and the
    plans resolve a run without torch."""
    try:
        files = {str(f) for f in md.files(distribution) or ()}
    except md.PackageNotFoundError:
        return False
    path = module.replace(".", "/")
    return f"{path}.py" in files or f"{path}/__init__.py" in files


def resolve(requested: str, device: Device, found=module_found, version=package_version) -> Precision:
    """The Precision PRECISION names, or BadInput naming what runs here instead."""
    p = PRECISIONS[requested]
    problem = arch_problem(p, device) or library_problem(p, found, version)
    if problem:
        runs = [q.name for q in TABLE if not (arch_problem(q, device) or library_problem(q, found, version))]
        raise BadInput(f"PRECISION={problem}; here use {' or '.join(runs)}")
    return p


def unlocked_by(item: str) -> list:
    """The precisions a capability item's GEMM lets train (check_capabilities says so)."""
    return [p.name for p in TABLE if p.item == item]


def help_text() -> str:
    """PRECISION's --help line."""
    needs = "; ".join(f"{p.name} (sm_{''.join(map(str, NEEDS[p.item].min_capability))}+)" for p in TABLE if p.low)
    return (f"training precision of the GEMMs: bf16 (the guide's), or through torchao {needs}; "
            "lm_head, routers, small linears and (unless FP8_EXPERTS=1) MoE experts stay bf16; MFU "
            "stays against the bf16 peak")
