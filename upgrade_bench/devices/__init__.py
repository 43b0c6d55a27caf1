"""The GPUs this process sees, NVIDIA or AMD, asked of the vendor's management library.

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

from . import nvml, rocm
from .gpu import Gpu, seen_by_torch

KFD = "/dev/kfd"


def visible_gpus(environ=os.environ, nvml_module=None, amdsmi_module=None, kfd=KFD) -> list[Gpu]:
    """The GPUs a process started with `environ` gets, in its order (the libraries: the real
    ones unless given)."""
    found = nvml.visible(environ, nvml_module)
    if found is None:
        found = rocm.visible(environ, amdsmi_module)
    if found is None and os.path.exists(kfd):
        found = seen_by_torch()
    return found or []


def hardware(gpus: list[Gpu]) -> dict:
    """A header's `hardware` as far as the library tells it: the host, and the first visible GPU."""
    first = gpus[0] if gpus else None
    return {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(),
            "gpu_name": first and first.name, "gpu_count": len(gpus),
            "compute_capability": first and first.capability and "{}.{}".format(*first.capability),
            "hbm_gib": first and first.hbm_gib}
