"""The GPUs this process sees, asked of NVML rather than torch, as CUDA_VISIBLE_DEVICES selects them.

Planning a sweep needs only how many GPUs there are and what they are; importing torch to
ask takes seconds, NVML milliseconds. Without NVML (no driver: a CPU machine) no GPU is seen.
"""
import os
import socket
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    name: str
    hbm_gib: float  # what torch reports as total_memory: NVML's total less the driver's reserve
    capability: tuple[int, int]


def visible_gpus(environ=os.environ, nvml=None) -> list[Gpu]:
    """The GPUs a CUDA process started with `environ` gets, in its order; [] without NVML."""
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
    except Exception:  # no nvidia-ml-py, no driver
        return []
    try:
        return [_describe(nvml, h) for h in _handles(nvml, environ.get("CUDA_VISIBLE_DEVICES"))]
    finally:
        nvml.nvmlShutdown()


def _handles(nvml, visible: str | None) -> list:
    """NVML handles of the devices CUDA_VISIBLE_DEVICES names (all when unset).

    As CUDA reads it: indices or GPU-/MIG- UUIDs, up to the first entry that names no device
    ("" or "-1": none). A UUID prefix, which CUDA also takes, counts as no device here.
    """
    count = nvml.nvmlDeviceGetCount()
    if visible is None:
        return [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    handles = []
    for entry in (e.strip() for e in visible.split(",")):
        try:
            if entry.isdigit() and int(entry) < count:
                handles.append(nvml.nvmlDeviceGetHandleByIndex(int(entry)))
            elif entry.startswith(("GPU-", "MIG-")):
                handles.append(nvml.nvmlDeviceGetHandleByUUID(entry))
            else:
                break
        except nvml.NVMLError:
            break
    return handles


def _describe(nvml, handle) -> Gpu:
    name = nvml.nvmlDeviceGetName(handle)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    return Gpu(name=name.decode() if isinstance(name, bytes) else name,
               hbm_gib=round((memory.total - memory.reserved) / 2**30, 1),
               capability=tuple(nvml.nvmlDeviceGetCudaComputeCapability(handle)))


def hardware(gpus: list[Gpu]) -> dict:
    """A header's `hardware` as far as NVML tells it: the host, and the first visible GPU."""
    first = gpus[0] if gpus else None
    return {"hostname": socket.gethostname(), "cpu_count": os.cpu_count(),
            "gpu_name": first and first.name, "gpu_count": len(gpus),
            "compute_capability": first and "{}.{}".format(*first.capability),
            "hbm_gib": first and first.hbm_gib}
