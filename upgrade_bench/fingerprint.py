"""The software and hardware stack a run used, for the header record.

The guide's caveat 2: the stack alone moves results by double-digit percent, so every
header says exactly which versions ran. Nothing here may fail a run: a probe that cannot
answer records null.
"""
import importlib.metadata as md
import os
import platform
import socket
from dataclasses import dataclass

from . import telemetry

# The distributions of the stack a header lists, besides the attention packages (which the
# backend table names: see header.software).
STACK_DISTRIBUTIONS = ("torch", "transformers", "deepspeed", "liger-kernel", "nvidia-cutlass-dsl",
                       "triton", "numpy", "nvidia-ml-py")


def package_version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def software(more_distributions=()) -> dict:
    """Python, CUDA/HIP, cuDNN and NCCL versions, and those of STACK_DISTRIBUTIONS and
    `more_distributions` (None: not installed)."""
    import torch

    stack = {"python": platform.python_version()}
    stack.update({name: package_version(name) for name in STACK_DISTRIBUTIONS + tuple(more_distributions)})
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


def _nvml_info(device_index: int) -> dict:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return {}
    info = {}
    try:
        info["driver"] = pynvml.nvmlSystemGetDriverVersion()
        # The same GPU as the CUDA properties beside it: NVML's own index ignores
        # CUDA_VISIBLE_DEVICES.
        handle = telemetry.nvml_handle(pynvml, device_index)
        info["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000
        info["max_sm_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
        info["max_mem_clock_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)
    except Exception:
        pass
    try:
        pynvml.nvmlShutdown()
    except Exception:
        pass
    return info


def hardware(device_index: int = 0) -> dict:
    """The host and CUDA device `device_index` (as this process numbers it); gpu_count: all visible."""
    import torch

    hw = {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(),
          "gpu_name": None, "gpu_count": 0, "compute_capability": None, "hbm_gib": None,
          "driver": None, "power_limit_w": None, "max_sm_clock_mhz": None}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(device_index)
        hw.update(gpu_name=props.name, gpu_count=torch.cuda.device_count(),
                  compute_capability=f"{props.major}.{props.minor}",
                  hbm_gib=round(props.total_memory / 2**30, 1),
                  sm_count=props.multi_processor_count)
        hw.update(_nvml_info(device_index))
    return hw


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
        if self.capability is None:
            return "cpu"
        major, minor = self.capability
        # On ROCm the digits begin the gfx name: gfx94 (gfx942), gfx90 (gfx90a), gfx110 (gfx1100).
        return f"gfx{major}{minor}" if self.is_hip else f"sm_{major}{minor}"


def device(index: int = 0) -> Device:
    """GPU `index` (as this process numbers it), or the CPU."""
    import torch

    if not torch.cuda.is_available():
        return Device(None)
    return Device(tuple(torch.cuda.get_device_capability(index)), bool(torch.version.hip))
