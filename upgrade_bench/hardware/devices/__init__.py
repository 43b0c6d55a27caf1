"""The GPUs this process sees, NVIDIA or AMD, and the `hardware` a header describes them by.

Planning a sweep needs only how many GPUs there are and what they are; importing torch to
ask takes seconds, a vendor's management library milliseconds. The first that answers says:

  NVML (nvidia-ml-py)  an NVIDIA driver answered (nvml.py)
  amdsmi               AMD's library found the amdgpu driver (rocm.py)
  torch                ROCm's kernel driver is here (KFD) but amdsmi is not importable: torch
                       counts the GPUs (seconds, on such AMD nodes only)
  nothing              a CPU machine: no GPU

The torch fallback is decided by KFD, the device node every ROCm process opens, rather than
/opt/rocm or HIP_VISIBLE_DEVICES: an image can hold ROCm, and a shell can set the variables,
where no AMD GPU is. So NVIDIA and CPU machines never import torch here.
"""
import os
import socket
from dataclasses import replace

from . import nvml, rocm
from .gpu import Gpu, arch, seen_by_torch

KFD = "/dev/kfd"

# What only NVML or amdsmi tell: torch's description of a GPU lacks them.
DETAILS = ("driver", "power_limit_w", "default_power_limit_w", "max_sm_clock_mhz", "max_mem_clock_mhz")


def visible_gpus(environ=os.environ, nvml_module=None, amdsmi_module=None, kfd=KFD) -> list[Gpu]:
    """The GPUs a process started with `environ` gets, in its order (the libraries: the real
    ones unless given)."""
    found = nvml.visible(environ, nvml_module)
    if found is None:
        found = rocm.visible(environ, amdsmi_module)
    if found is None and os.path.exists(kfd):
        found = seen_by_torch()
    return found or []


def with_details(gpus: list[Gpu], managed: list[Gpu]) -> list[Gpu]:
    """torch's `gpus` with the DETAILS of the same GPUs among `managed` (NVML's or amdsmi's):
    matched by UUID where the two spell them alike (NVIDIA), else by position (amdsmi's
    serial is not HIP's UUID)."""
    by_uuid = {g.uuid: g for g in managed if g.uuid}
    if any(g.uuid in by_uuid for g in gpus):
        same = [by_uuid.get(g.uuid) for g in gpus]
    else:
        same = [managed[i] if i < len(managed) else None for i in range(len(gpus))]
    return [replace(g, **{f: getattr(m, f) for f in DETAILS}) if m else g for g, m in zip(gpus, same)]


def hardware(gpus: list[Gpu], index: int = 0) -> dict:
    """A header's `hardware`, the same fields on every machine (null: not known there): the
    host, how many GPUs the process sees and GPU `index` of them."""
    gpu = gpus[index] if index < len(gpus) else None
    return {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(),
            "gpu_name": gpu and gpu.name, "gpu_count": len(gpus),
            "arch": arch(gpu and gpu.capability, bool(gpu and gpu.is_hip)),
            "compute_capability": gpu and gpu.capability and "{}.{}".format(*gpu.capability),
            "hbm_gib": gpu and gpu.hbm_gib, "sm_count": gpu and gpu.sm_count,
            **{f: getattr(gpu, f, None) for f in DETAILS}}
