"""Health probes of the node's GPUs through NVML (check_capabilities.py's `health:` items): what
makes a node of a healthy kind run short, read where the driver keeps it.

  health:power_limit  the power limit against the board's default (`nvidia-smi -pl` lowers it)
  health:pcie         the PCIe link's generation and width, read while the GPU works (an idle
                      link trains down to save power), against the most both ends support
  health:ecc          uncorrected ECC errors since boot (volatile) and over the GPU's life
  health:memory_rows  rows remapped (Ampere and newer) or pages retired (older): a remap
                      pending a reset, or one that failed
  health:clocks       the clocks-event reasons now, and application clocks against their default

Every GPU of the node is read (as `interconnect:topology`, whatever CUDA_VISIBLE_DEVICES shows
torch). A field NVML cannot answer on this GPU or driver is listed as unreadable, never
guessed; without NVML the item is the stack's answer with NVML's error. The fault rules are
pure functions of the readings (tests), the report's node check (report/node/health.py) reads
`value["faults"]`.
"""
from ..hardware.telemetry import throttle_names
from .verdicts import Passed

# A busy GPU's reasons that are a fault, not the power budget at work (telemetry's names).
SLOWDOWNS = ("hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")


def _reader(handle, unreadable: list):
    def read(field, fn, *args):
        try:
            return fn(handle, *args)
        except Exception:  # NVMLError_NotSupported, a symbol an old driver lacks, ...
            if field not in unreadable:
                unreadable.append(field)
            return None
    return read


def readings(nvml, busy=None, busy_uuid: str | None = None) -> tuple[list, list]:
    """([per GPU: {field: value or None}], [fields NVML could not answer on some GPU]). The GPU
    of UUID `busy_uuid` reads its PCIe link while `busy()` keeps it working (busy returns the
    wait); the others' generation is read idle and not judged (`pcie_busy`)."""
    nvml.nvmlInit()
    try:
        unreadable, gpus = [], []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            read = _reader(handle, unreadable)
            uuid = read("uuid", nvml.nvmlDeviceGetUUID)
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            wait = busy() if busy and busy_uuid and uuid == busy_uuid else None
            gpu = {"pcie_busy": wait is not None,
                   "pcie_gen": read("pcie_gen", nvml.nvmlDeviceGetCurrPcieLinkGeneration),
                   "pcie_width": read("pcie_width", nvml.nvmlDeviceGetCurrPcieLinkWidth)}
            if wait:
                wait()
            gpu.update({
                "pcie_gen_max": read("pcie_gen_max", nvml.nvmlDeviceGetMaxPcieLinkGeneration),
                "pcie_width_max": read("pcie_width_max", nvml.nvmlDeviceGetMaxPcieLinkWidth),
                "power_limit_w": _watts(read("power_limit_w", nvml.nvmlDeviceGetPowerManagementLimit)),
                "default_power_limit_w": _watts(read("default_power_limit_w",
                                                     nvml.nvmlDeviceGetPowerManagementDefaultLimit)),
                "ecc_uncorrected_volatile": read("ecc_uncorrected_volatile", nvml.nvmlDeviceGetTotalEccErrors,
                                                 nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
                "ecc_uncorrected_aggregate": read("ecc_uncorrected_aggregate", nvml.nvmlDeviceGetTotalEccErrors,
                                                  nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_AGGREGATE_ECC),
                "remapped_rows": read("remapped_rows", nvml.nvmlDeviceGetRemappedRows),
                "retired_pages_pending": read("retired_pages_pending", nvml.nvmlDeviceGetRetiredPagesPendingStatus),
                "throttle": throttle_names(read("throttle", nvml.nvmlDeviceGetCurrentClocksEventReasons)),
                "app_sm_clock_mhz": read("app_sm_clock_mhz", nvml.nvmlDeviceGetApplicationsClock, nvml.NVML_CLOCK_SM),
                "default_app_sm_clock_mhz": read("default_app_sm_clock_mhz",
                                                 nvml.nvmlDeviceGetDefaultApplicationsClock, nvml.NVML_CLOCK_SM),
            })
            gpus.append(gpu)
        return gpus, unreadable
    finally:
        nvml.nvmlShutdown()


def _watts(milliwatts):
    return None if milliwatts is None else milliwatts / 1000


# ---- the fault rules (pure) -----------------------------------------------------------------

def power_limit_faults(gpus: list) -> list:
    return [f"GPU {i}: power limit {g['power_limit_w']:.0f} W, below its default {g['default_power_limit_w']:.0f} W"
            for i, g in enumerate(gpus) if g.get("power_limit_w") and g.get("default_power_limit_w")
            and g["power_limit_w"] < g["default_power_limit_w"] * 0.99]


def pcie_faults(gpus: list) -> list:
    out = []
    for i, g in enumerate(gpus):
        gen, width, top_gen, top_width = (g.get(k) for k in ("pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max"))
        if not (gen and width and top_gen and top_width):
            continue
        if width < top_width or (g.get("pcie_busy") and gen < top_gen):  # idle links train down
            out.append(f"GPU {i}: PCIe link at Gen{gen} x{width}{' under load' if g.get('pcie_busy') else ''}, "
                       f"of Gen{top_gen} x{top_width}")
    return out


def ecc_faults(gpus: list) -> list:
    return [f"GPU {i}: {g['ecc_uncorrected_volatile']} uncorrected ECC errors since boot"
            for i, g in enumerate(gpus) if g.get("ecc_uncorrected_volatile")]


def memory_row_faults(gpus: list) -> list:
    out = []
    for i, g in enumerate(gpus):
        rows = g.get("remapped_rows")
        if isinstance(rows, (list, tuple)) and len(rows) == 4:
            _, uncorrected, pending, failed = rows
            if failed:
                out.append(f"GPU {i}: a row remap failed (the GPU needs service)")
            elif pending:
                out.append(f"GPU {i}: a row remap pending ({uncorrected} uncorrectable rows): reset the GPU")
        elif g.get("retired_pages_pending"):
            out.append(f"GPU {i}: retired pages pending: reset the GPU")
    return out


def clock_faults(gpus: list) -> list:
    out = []
    for i, g in enumerate(gpus):
        slow = [r for r in g.get("throttle") or [] if r in SLOWDOWNS]
        if slow:
            out.append(f"GPU {i}: {', '.join(slow)} now")
        app, default = g.get("app_sm_clock_mhz"), g.get("default_app_sm_clock_mhz")
        if app and default and app < default:
            out.append(f"GPU {i}: application SM clock {app} MHz, below its default {default} MHz")
    return out


FAULTS = {"health:power_limit": power_limit_faults, "health:pcie": pcie_faults, "health:ecc": ecc_faults,
          "health:memory_rows": memory_row_faults, "health:clocks": clock_faults}
FIELDS = {"health:power_limit": ("power_limit_w", "default_power_limit_w"),
          "health:pcie": ("pcie_busy", "pcie_gen", "pcie_width", "pcie_gen_max", "pcie_width_max"),
          "health:ecc": ("ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"),
          "health:memory_rows": ("remapped_rows", "retired_pages_pending"),
          "health:clocks": ("throttle", "app_sm_clock_mhz", "default_app_sm_clock_mhz")}


def verdict_of(item: str, gpus: list, unreadable: list) -> Passed:
    """One item's answer: its fields per GPU, its faults, what NVML could not answer."""
    faults = FAULTS[item](gpus)
    fields = FIELDS[item]
    shown = [{k: g.get(k) for k in fields} for g in gpus]
    missing = [u for u in unreadable if u in fields]
    said = "; ".join(faults) if faults else f"{len(gpus)} GPU(s), nothing wrong"
    skipped = f" (not readable here: {', '.join(missing)})" if missing else ""
    return Passed(said + skipped, {"gpus": shown, "faults": faults, "unreadable": missing})


def probes(read_once) -> dict:
    """{item: probe} over one reading of the node (`read_once()`: readings' result, cached by
    the caller), for check_capabilities to run inside its gate."""
    return {item: (lambda item=item: verdict_of(item, *read_once())) for item in FAULTS}


BUSY_SIZE, BUSY_CALLS = 8192, 100  # ~0.1 s of bf16 matmuls on an H200: the link trains up meanwhile


def busy_on(dev):
    """Enqueue ~0.1 s of matmuls on `dev` (torch); returns the wait for them."""
    import torch

    a = torch.ones(BUSY_SIZE, BUSY_SIZE, dtype=torch.bfloat16, device=dev)
    for _ in range(BUSY_CALLS):
        a @ a
    return lambda: torch.cuda.synchronize(dev)


def plan_items(device, dev, evaluate) -> list:
    """check_capabilities' (item, category, uses CUDA, make_verdict) of the health items: one
    NVML reading of the node for all of them, torch's GPU `dev` read while busy."""
    from .verdicts import Verdict

    cache = {}

    def read_once():
        if "readings" not in cache:
            import pynvml
            import torch

            from ..hardware.devices.gpu import uuid_of

            cache["readings"] = readings(pynvml, lambda: busy_on(dev), uuid_of(torch.cuda.get_device_properties(dev)))
        return cache["readings"]

    def make(item, run):
        if device.is_hip and device.capability:
            return lambda: Verdict("unavailable", "NVML is NVIDIA's: not read on ROCm")
        return lambda: evaluate(item, device, run)
    return [(item, "health", True, make(item, run)) for item, run in probes(read_once).items()]
