"""NVIDIA GPUs through NVML (nvidia-ml-py), as CUDA_VISIBLE_DEVICES selects them."""
from .gpu import Gpu, ask, index_below, selected


def visible(environ, nvml=None) -> list[Gpu] | None:
    """The GPUs a CUDA process started with `environ` gets, in its order; None when no NVIDIA
    driver answers (no nvidia-ml-py, no driver)."""
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
    except Exception:
        return None
    try:
        driver = ask(lambda: _text(nvml.nvmlSystemGetDriverVersion()))
        count = nvml.nvmlDeviceGetCount()
        handles = selected(environ.get("CUDA_VISIBLE_DEVICES"), count, _resolver(nvml, count))
        return [_describe(nvml, h, driver) for h in handles]
    finally:
        nvml.nvmlShutdown()


def _resolver(nvml, count: int):
    """An entry's NVML handle: an index, or a GPU-/MIG- UUID (a UUID prefix, which CUDA also
    takes, names no device here)."""
    def resolve(entry: str):
        try:
            if index_below(entry, count) is not None:
                return nvml.nvmlDeviceGetHandleByIndex(int(entry))
            if entry.startswith(("GPU-", "MIG-")):
                return nvml.nvmlDeviceGetHandleByUUID(entry)
        except nvml.NVMLError:
            pass
        return None
    return resolve


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _describe(nvml, handle, driver: str | None) -> Gpu:
    memory = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
    power_mw = ask(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
    default_mw = ask(lambda: nvml.nvmlDeviceGetPowerManagementDefaultLimit(handle))
    return Gpu(name=_text(nvml.nvmlDeviceGetName(handle)),
               hbm_gib=round((memory.total - memory.reserved) / 2**30, 1),
               capability=tuple(nvml.nvmlDeviceGetCudaComputeCapability(handle)),
               uuid=ask(lambda: _text(nvml.nvmlDeviceGetUUID(handle))), driver=driver,
               power_limit_w=None if power_mw is None else power_mw / 1000,
               default_power_limit_w=None if default_mw is None else default_mw / 1000,
               max_sm_clock_mhz=ask(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
               max_mem_clock_mhz=ask(lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)))
