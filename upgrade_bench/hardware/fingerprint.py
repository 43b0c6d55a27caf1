"""The software and hardware stack a run used, for the header record.

The guide's caveat 2: the stack alone moves results by double-digit percent, so every
header says exactly which versions ran. Nothing here may fail a run: a probe that cannot
answer records null.
"""
import importlib.metadata as md
import importlib.util
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from . import devices
from .devices.gpu import ask

# The distributions of the stack a header lists: every attention backend's package among them
# (tests/test_layers.py checks the backend table's against this list).
STACK_DISTRIBUTIONS = ("torch", "transformers", "deepspeed", "liger-kernel", "nvidia-cutlass-dsl",
                       "triton", "numpy", "nvidia-ml-py", "flash-linear-attention", "fla-core",
                       "causal-conv1d", "mamba-ssm", "torchao", "flash-attn-3", "flash-attn-4", "flash-attn")


def package_version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def installed_file(package: str, relative: str) -> str | None:
    """The text of a file of an installed top-level package (`relative` to its folder), found
    and read without importing the package; None where the package or the file is missing."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        return (Path(spec.origin).parent / relative).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def software() -> dict:
    """Python, CUDA/HIP, cuDNN and NCCL versions, and those of STACK_DISTRIBUTIONS (None: not
    installed)."""
    import torch

    stack = {"python": platform.python_version()}
    stack.update({name: package_version(name) for name in STACK_DISTRIBUTIONS})
    stack["cuda"] = torch.version.cuda
    stack["hip"] = getattr(torch.version, "hip", None)
    try:
        stack["cudnn"] = torch.backends.cudnn.version() if torch.cuda.is_available() else None
    except Exception:
        stack["cudnn"] = None
    try:
        stack["nccl"] = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None
    except Exception:
        stack["nccl"] = None
    return stack


def hardware(device_index: int = 0) -> dict:
    """devices.hardware of GPU `device_index` as this process numbers it: torch's description
    of the GPUs, with what only NVML or amdsmi tell (driver, power limit, clocks)."""
    managed = ask(devices.visible_gpus) or []  # details only: never a reason to fail a run
    return devices.hardware(devices.with_details(devices.seen_by_torch(), managed), device_index)


def host_ram_bytes() -> int:
    """The host's RAM, or the container's limit when lower (past it the OOM killer ends a run)."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            return min(ram, int(f.read()))
    except (OSError, ValueError):  # no cgroup v2, or "max"
        return ram


def host_free_bytes(meminfo: str = "/proc/meminfo", cgroup: str = "/sys/fs/cgroup") -> int:
    """What a new allocation can take now before the host swaps or its OOM killer acts: the
    kernel's MemAvailable, or the container's room (memory.max less memory.current) when
    lower; host_ram_bytes() where neither can be read."""
    free = []
    try:
        with open(meminfo) as f:
            free += [int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"{cgroup}/memory.max") as limit, open(f"{cgroup}/memory.current") as used:
            free.append(int(limit.read()) - int(used.read()))
    except (OSError, ValueError):  # no cgroup v2, or "max"
        pass
    return max(0, min(free)) if free else host_ram_bytes()


def gpu_name() -> str | None:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


@dataclass(frozen=True)
class Device:
    """The accelerator a run uses: its compute capability as torch reports it (None without a
    GPU), and whether it is an AMD GPU under ROCm, where that capability is in gfx's numbering
    (MI300X, gfx942: (9, 4)) and never to be read as NVIDIA's sm (Hopper: (9, 0))."""
    capability: tuple | None
    is_hip: bool = False

    @property
    def arch(self) -> str:
        return devices.arch(self.capability, self.is_hip)


def device(index: int = 0) -> Device:
    """GPU `index` (as this process numbers it), or the CPU."""
    import torch

    if not torch.cuda.is_available():
        return Device(None)
    return Device(tuple(torch.cuda.get_device_capability(index)), bool(torch.version.hip))
