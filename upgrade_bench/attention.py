"""Attention backends for the training step: what is installed, and which one `auto` picks.

The guide lets HF pick per GPU: Hopper -> FA3, Blackwell -> FA4. Here `auto` is a pure
function of (compute capability, installed backends), so it is testable without a GPU.
An explicitly requested backend that is missing fails at start with the install hint: never
a silent fallback, and never transformers' late download of a hub kernel.
"""
import importlib

from . import fingerprint
from .faults import BadInput

# Our name -> transformers' attn_implementation.
HF_IMPLEMENTATION = {"fa3": "flash_attention_3", "fa4": "flash_attention_4",
                     "fa2": "flash_attention_2", "sdpa": "sdpa", "eager": "eager"}

INSTALL_HINT = {
    "fa3": "install flash-attn-3 (Hopper): ./install.sh --force fa3",
    "fa4": "install flash-attn-4 (Hopper SM90 / Blackwell SM100): ./install.sh --force fa4",
    "fa2": "install flash-attn 2.x: pip install flash-attn --no-build-isolation",
}

# Which backends need a CUDA GPU at all.
_NEEDS_GPU = {"fa3", "fa4", "fa2"}


# Our name -> (distribution, module, version prefix it must have). FA2 and FA4 both install
# the `flash_attn` module: the distribution tells them apart.
PACKAGES = {"fa3": ("flash-attn-3", "flash_attn_interface", ""),
            "fa4": ("flash-attn-4", "flash_attn.cute", ""),
            "fa2": ("flash-attn", "flash_attn", "2.")}


def package_problem(name: str) -> str | None:
    """Why the package of flash backend `name` cannot be used here, or None if it imports."""
    dist, module, prefix = PACKAGES[name]
    version = fingerprint.package_version(dist)
    if version is None:
        return f"{dist} is not installed: {INSTALL_HINT[name]}"
    if not version.startswith(prefix):
        return f"{dist} {version} is not {prefix}x: {INSTALL_HINT[name]}"
    try:
        importlib.import_module(module).flash_attn_varlen_func
    except Exception as err:  # ImportError, or a CUDA/ABI error raised while importing
        return f"import {module} failed: {type(err).__name__}: {err}"
    return None


def installed_backends(requested: str = "auto") -> set:
    """sdpa and eager, plus the flash backends `requested` can resolve to whose package is
    installed and imports (GPU-ness is checked separately): every one for auto, else only
    the one asked for. Importing the others (FA4 loads the CuTe DSL) would only slow the
    start of every process."""
    names = PACKAGES if requested == "auto" else [requested] if requested in PACKAGES else []
    return {"sdpa", "eager"} | {name for name in names if package_problem(name) is None}


def resolve(requested: str, capability: tuple | None, installed: set) -> tuple[str, str]:
    """(backend, why) for a request; raises BadInput with the install hint.

    capability: (major, minor) of the GPU, None without one.
    """
    if requested != "auto":
        if requested in _NEEDS_GPU and capability is None:
            raise BadInput(f"ATTN_BACKEND={requested} needs a CUDA GPU; on CPU use sdpa or eager")
        if requested not in installed:
            raise BadInput(f"ATTN_BACKEND={requested} is not installed: {INSTALL_HINT[requested]}")
        if requested == "fa3" and capability[0] != 9:
            raise BadInput(f"ATTN_BACKEND=fa3 runs on Hopper (sm_90) only, this GPU is "
                                     f"sm_{capability[0]}{capability[1]}")
        return requested, "requested"
    if capability is None:
        return "sdpa", "auto: no GPU"
    major = capability[0]
    if major == 9:
        for backend in ("fa3", "fa4"):
            if backend in installed:
                return backend, f"auto: Hopper, {backend} installed"
        return "sdpa", "auto: Hopper, neither fa3 nor fa4 installed"
    if major >= 10:
        if "fa4" in installed:
            return "fa4", "auto: Blackwell, fa4 installed"
        return "sdpa", "auto: Blackwell, fa4 not installed"
    return "sdpa", f"auto: sm_{major}{capability[1]} has no FA3/FA4 path"


def versions() -> dict:
    return {name: fingerprint.package_version(dist) for name, (dist, _, _) in PACKAGES.items()}
