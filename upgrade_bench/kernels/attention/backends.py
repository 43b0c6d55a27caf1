"""Attention backends: one row each, and the questions every script asks of them.

Every consumer reads this table: the training step (ATTN_BACKEND, its `auto` rule,
transformers' attn_implementation), the kernel benchmark (BACKENDS, adapters, packed
documents), check_capabilities (one attention item per kernel), the header (package
versions) and install.sh (which package a GPU gets). Adding a backend: docs/layout.md.

`auto` is a pure function of (device, installed backends, the model family's refusals), so
it is testable without a GPU: the first row marked `auto` that runs on this device, is
installed and the family takes; past them FAMILY_FALLBACK's first that runs here. An
explicitly requested backend that cannot run here, or that the family refuses, fails at start
with the reason or the install hint: never a silent fallback, and never transformers' late
download or quiet swap of a hub kernel.

Architectures are vendor-aware: under ROCm torch reports a capability in gfx's numbering
(MI300X, gfx942: (9, 4)), which is no Hopper; a row says which NVIDIA majors it runs on
and, apart from that, whether it runs on ROCm at all.
"""
import importlib
from dataclasses import dataclass
from typing import Callable

from . import adapters as attn_adapters
from ...hardware import fingerprint
from .adapters import BHSD, BSHD
from ...faults import BadInput
from ...hardware.fingerprint import Device


@dataclass(frozen=True)
class Package:
    """A backend installed apart from torch."""
    distribution: str    # what pip installs; FA2 and FA4 both install the module `flash_attn`
    module: str          # what is imported (its `api` is what we call)
    version_prefix: str  # the releases that are this backend ("" = any)
    install_hint: str
    api: str = "flash_attn_varlen_func"  # what must import from `module` for the backend to count

    @property
    def label(self) -> str:
        return f"{self.distribution} {self.version_prefix}x" if self.version_prefix else self.distribution


@dataclass(frozen=True)
class Backend:
    name: str                         # our one spelling: settings, records, capability items
    hf_name: str | None = None        # transformers' attn_implementation: training can use it
    package: Package | None = None    # None: part of torch
    sdpa_kernel: str = ""             # the torch SDPBackend member it pins, for an SDPA kernel
    nvidia_majors: tuple = (0, None)  # NVIDIA compute-capability majors it runs on (None: no top)
    rocm: bool = False                # also runs on AMD GPUs under ROCm
    cpu: bool = False                 # also runs without a GPU
    arch_note: str = ""               # why those limits, said when a GPU is outside them
    auto: bool = False                # a candidate of ATTN_BACKEND=auto, in table order
    # packed documents in the kernel benchmark: varlen, mask (block-diagonal, full s^2 work),
    # blocks (a BlockMask: blocks no query sees are skipped), "" (no)
    packed: str = ""
    window: str = ""                  # sliding windows there: native (window_size), mask (a band), blocks, "" (no)
    sinks: bool = False               # takes attention sinks (a learned logit per head, gpt-oss)
    run: Callable | None = None       # the kernel benchmark's adapter: run(q, k, v, Args) -> out
    layout: str = ""                  # the adapter's layout: BSHD or BHSD
    first_step: str = ""              # what a training run's first step at a length spends on it
    first_step_s: float = 0.0         # that, in seconds, for run_node's estimate (0: nothing to speak of)


def _flash(name: str, hf_name: str, package: Package, nvidia_majors: tuple, arch_note: str,
           rocm: bool = False, auto: bool = False, sinks: bool = False, first_step: str = "") -> Backend:
    """A FlashAttention package: its flash_attn_func API, varlen for packed documents,
    window_size for sliding windows."""
    return Backend(name, hf_name, package, nvidia_majors=nvidia_majors, rocm=rocm, arch_note=arch_note,
                   auto=auto, packed="varlen", window="native", sinks=sinks,
                   run=attn_adapters.flash(package.module), layout=BSHD, first_step=first_step)


def _sdpa(name: str, kernel: str, nvidia_majors: tuple, arch_note: str, rocm: bool = True,
          cpu: bool = False, packed: str = "") -> Backend:
    """One kernel of torch's scaled_dot_product_attention, pinned; the kernels that take a
    mask take packed documents and windows as one (and still do the full s^2 work)."""
    return Backend(name, sdpa_kernel=kernel, nvidia_majors=nvidia_majors, rocm=rocm, cpu=cpu,
                   arch_note=arch_note, packed=packed, window=packed, run=attn_adapters.sdpa(kernel),
                   layout=BHSD)


# In the order `auto` tries them (the guide: FA3 on Hopper, FA4 on Blackwell, else SDPA) and
# the kernel benchmark and check_capabilities run them.
TABLE = (
    _flash("fa3", "flash_attention_3",
           Package("flash-attn-3", "flash_attn_interface", "",
                   "install flash-attn-3 (Hopper): ./install.sh --force fa3"),
           (9, 9), "FA3 runs on Hopper (sm_90) only", auto=True),
    _flash("fa4", "flash_attention_4",
           Package("flash-attn-4", "flash_attn.cute", "",
                   "install flash-attn-4 (Hopper SM90 / Blackwell SM100): ./install.sh --force fa4"),
           (9, 11), "FA4 has SM90 (Hopper) and SM100 (Blackwell) paths", auto=True,
           sinks=True,  # flash_attn.cute's learnable_sink
           first_step="FA4 compiles each kernel configuration (seconds)"),
    _flash("fa2", "flash_attention_2",
           Package("flash-attn", "flash_attn", "2.",
                   "install flash-attn 2.x: pip install flash-attn --no-build-isolation"),
           (8, None), "FA2 needs Ampere (sm_80) or newer; its ROCm build runs on MI200/MI300",
           rocm=True),
    Backend("sdpa", hf_name="sdpa", rocm=True, cpu=True, auto=True),  # torch picks the kernel
    Backend("eager", hf_name="eager", rocm=True, cpu=True),
    _sdpa("sdpa-cudnn", "CUDNN_ATTENTION", (8, None), "cuDNN attention is NVIDIA's, sm_80 or newer",
          rocm=False),
    _sdpa("sdpa-flash", "FLASH_ATTENTION", (8, None), "torch's flash kernel needs sm_80 or newer",
          cpu=True),
    _sdpa("sdpa-efficient", "EFFICIENT_ATTENTION", (5, None), "needs sm_50 or newer", packed="mask"),
    _sdpa("sdpa-math", "MATH", (0, None), "", cpu=True, packed="mask"),
    # torch's FlexAttention, compiled into Triton kernels: any mask as a BlockMask, so documents
    # and windows skip the blocks no query sees; transformers compiles it per shape, in a
    # step's first call. Not on CPU: there it is an unfused reference, not a kernel.
    Backend("flex", hf_name="flex_attention", nvidia_majors=(8, None),
            arch_note="FlexAttention's Triton kernels need NVIDIA sm_80 or newer here (this suite has "
                      "not checked its ROCm path, so does not offer it there)", packed="blocks",
            window="blocks", sinks=True, run=attn_adapters.flex(), layout=BHSD,
            # gpt-oss-20b cut to 2 layers, 8K, H200: first steps of 13.5 s and, on a fresh machine
            # where everything compiled cold (start-up 48 s against 4 s), 77.6 s (results/h200-flex-5/)
            first_step="FlexAttention compiles its kernels and masks (13.5 s to 77.6 s seen on an H200)",
            first_step_s=80.0),
)
BACKENDS = {b.name: b for b in TABLE}
DISTRIBUTIONS = tuple(b.package.distribution for b in TABLE if b.package)
TRAINING = {b.name: b for b in TABLE if b.hf_name}  # ATTN_BACKEND's choices
KERNELS = {b.name: b for b in TABLE if b.run}       # the kernel benchmark's and the probes'


def arch_problem(backend: Backend, device: Device) -> str | None:
    """Why `backend` cannot run on `device` whatever is installed, or None."""
    if device.capability is None:
        return None if backend.cpu else f"{backend.name} needs a CUDA GPU"
    if device.is_hip:
        return None if backend.rocm else (f"{backend.name} does not run on AMD GPUs ({device.arch}, "
                                          f"ROCm): {backend.arch_note}")
    low, high = backend.nvidia_majors
    major = device.capability[0]
    if major < low or (high is not None and major > high):
        return f"{backend.name} does not run on {device.arch}: {backend.arch_note}"
    return None


def package_problem(package: Package) -> str | None:
    """Why `package` cannot be used here, or None if it imports."""
    version = fingerprint.package_version(package.distribution)
    if version is None:
        return f"{package.distribution} is not installed: {package.install_hint}"
    if not version.startswith(package.version_prefix):
        return f"{package.distribution} {version} is not {package.version_prefix}x: {package.install_hint}"
    try:
        getattr(importlib.import_module(package.module), package.api)
    except Exception as err:  # ImportError, or a CUDA/ABI error raised while importing
        return f"import {package.module} failed: {type(err).__name__}: {err}"
    return None


def import_problem(backend: Backend) -> str | None:
    """Why `backend` cannot be imported here, or None (whether it runs on this GPU aside)."""
    if backend.package:
        return package_problem(backend.package)
    if backend.sdpa_kernel:
        from torch.nn.attention import SDPBackend

        return None if hasattr(SDPBackend, backend.sdpa_kernel) else \
            f"this torch has no SDPBackend.{backend.sdpa_kernel}"
    return None


# What `auto` takes when a model family refuses every candidate that runs here (gpt-oss: FA3
# and SDPA, with no FA4): FlexAttention, a fused kernel for any mask, where it runs; else eager,
# which materialises the s x s scores (memory grows with s^2).
FAMILY_FALLBACK = ("flex", "eager")


def installed(requested: str = "auto") -> set:
    """The training backends `requested` can resolve to that import here: every `auto`
    candidate and family fallback for auto, else the one asked for. Importing the others (FA4
    loads the CuTe DSL) would only slow the start of every process."""
    names = [b.name for b in TABLE if b.auto] + list(FAMILY_FALLBACK) if requested == "auto" else [requested]
    return {name for name in names if import_problem(BACKENDS[name]) is None}


def resolve(requested: str, device: Device, installed_names: set, refused: dict | None = None) -> tuple[str, str]:
    """(training backend, why) for ATTN_BACKEND=`requested`. `refused` is the model family's
    {backend: why transformers cannot train it with that one}. BadInput with the reason or the
    install hint when an explicit backend cannot run here or is refused; `auto` passes refused
    candidates over, and past the last takes the first of FAMILY_FALLBACK that runs here."""
    refused = refused or {}
    if requested != "auto":
        backend = BACKENDS[requested]
        runs_here = [b.name for b in TRAINING.values() if b.name not in refused and not arch_problem(b, device)]
        if requested in refused:
            raise BadInput(f"ATTN_BACKEND={requested}: {refused[requested]}; here use {_either(runs_here)}")
        problem = arch_problem(backend, device)
        if problem:
            hint = f"; on CPU use {_either(runs_here)}" if device.capability is None else ""
            raise BadInput(f"ATTN_BACKEND={problem}{hint}")
        if requested not in installed_names:
            raise BadInput(f"ATTN_BACKEND={requested} is not installed: {backend.package.install_hint}")
        return requested, "requested"
    passed_over = []
    candidates = [b for b in TABLE if b.auto] + ([BACKENDS[n] for n in FAMILY_FALLBACK] if refused else [])
    for backend in candidates:
        problem = (f"{backend.name} is refused: {refused[backend.name]}" if backend.name in refused else None) or \
            arch_problem(backend, device) or (
                None if backend.name in installed_names else f"{backend.name} is not installed")
        if problem is None:
            why = f" ({'; '.join(passed_over)})" if passed_over else ""
            return backend.name, f"auto on {device.arch}: {backend.name}{why}"
        passed_over.append(problem)
    raise AssertionError("eager runs everywhere: auto always finds a backend")


def _either(names: list) -> str:
    """'a, b or c'; eager trains everything everywhere, so the list is never empty."""
    return " or ".join(filter(None, [", ".join(names[:-1]), names[-1]]))


def auto_help() -> str:
    """The auto rule in a line, for ATTN_BACKEND's --help."""
    candidates = [b for b in TABLE if b.auto]
    notes = "; ".join(b.arch_note for b in candidates if b.arch_note)
    return (f"auto = the first of {' > '.join(b.name for b in candidates)} that is installed, "
            f"runs on this GPU and the model family takes ({notes}); past them {' > '.join(FAMILY_FALLBACK)}")


def install_choice(compute_capability: str) -> str:
    """The attention package install.sh installs on an NVIDIA GPU of `compute_capability`
    ('9.0', as nvidia-smi prints it): the backend auto picks there with every package
    installed, or 'none' when that one ships with torch. Standard library only: install.sh
    asks before the venv exists."""
    major, minor = (int(x) for x in compute_capability.split("."))
    name, _ = resolve("auto", Device((major, minor)), set(BACKENDS))
    return name if BACKENDS[name].package else "none"


def versions() -> dict:
    """{backend: installed version of its package, or None}, for the header."""
    return {b.name: fingerprint.package_version(b.package.distribution) for b in TABLE if b.package}
