"""AMD GPUs through amdsmi (AMD's management library; ROCm ships it), as the ROCm runtime
selects them: ROCR_VISIBLE_DEVICES among all GPUs, then HIP_VISIBLE_DEVICES (or, unset,
CUDA_VISIBLE_DEVICES) among those; each takes indices or GPU- UUIDs.

Indices are read in amdsmi's order, which is not always the runtime's (torch maps the two
through amdsmi_get_gpu_enumeration_info, ROCm 6.4+): where they differ, the count is still
right and each GPU may get another GPU's description, alike on a node of one model.
None of this has run on AMD hardware: it follows amdsmi's Python API as documented."""
import re

from .gpu import Gpu, ask, index_below, selected


def visible(environ, amdsmi=None) -> list[Gpu] | None:
    """The GPUs a HIP process started with `environ` gets, in its order; None when amdsmi is
    not importable or finds no amdgpu driver."""
    try:
        if amdsmi is None:
            import amdsmi
        amdsmi.amdsmi_init()
    except Exception:
        return None
    try:
        handles = amdsmi.amdsmi_get_processor_handles()
        asics = [ask(lambda h=h: amdsmi.amdsmi_get_gpu_asic_info(h)) or {} for h in handles]
        uuids = [_uuid(asic.get("asic_serial")) for asic in asics]
        return [_describe(amdsmi, handles[i], asics[i], uuids[i]) for i in hip_selected(environ, uuids)]
    finally:
        amdsmi.amdsmi_shut_down()


def hip_selected(environ, uuids: list) -> list[int]:
    """Positions among all GPUs (their UUIDs, in amdsmi's order) of those a HIP process
    started with `environ` sees, in its order."""
    everything = list(range(len(uuids)))
    rocr = selected(environ.get("ROCR_VISIBLE_DEVICES"), len(uuids), _among(everything, uuids))
    hip = environ.get("HIP_VISIBLE_DEVICES", environ.get("CUDA_VISIBLE_DEVICES"))
    return selected(hip, len(rocr), _among(rocr, uuids))


def _among(candidates: list[int], uuids: list):
    """An entry's GPU among `candidates`: the i-th of them, or the one of that UUID."""
    def resolve(entry: str):
        i = index_below(entry, len(candidates))
        if i is not None:
            return candidates[i]
        return next((c for c in candidates if uuids[c] and uuids[c].lower() == entry.lower()), None)
    return resolve


def _uuid(serial) -> str | None:
    """ROCm's UUID of a GPU (what ROCR_VISIBLE_DEVICES takes), from amdsmi's serial '0x5C2E...'."""
    text = _known(serial)
    return "GPU-" + text[2:].lower() if text and text.lower().startswith("0x") else None


def gfx_capability(target: str | None) -> tuple[int, int] | None:
    """The capability ROCm's torch reports for a gfx target: gfx942 -> (9, 4), gfx90a -> (9, 0),
    gfx1100 -> (11, 0) (the major, then one hex digit each for minor and stepping)."""
    match = re.fullmatch(r"gfx(\d+)([0-9a-f])[0-9a-f]", (target or "").lower())
    return (int(match.group(1)), int(match.group(2), 16)) if match else None


def _known(value):
    """amdsmi's value, None for its 'N/A' (or an empty one)."""
    return None if value in ("N/A", "", None) else value


def _number(value) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _describe(amdsmi, handle, asic: dict, uuid: str | None) -> Gpu:
    vram = ask(lambda: amdsmi.amdsmi_get_gpu_memory_total(handle, amdsmi.AmdSmiMemoryType.VRAM))
    cap = ask(lambda: amdsmi.amdsmi_get_power_cap_info(handle)) or {}
    power_uw, default_uw = (_number(cap.get(k)) if isinstance(cap, dict) else None
                            for k in ("power_cap", "default_power_cap"))

    def max_clock(kind: str):
        clock = ask(lambda: amdsmi.amdsmi_get_clock_info(handle, getattr(amdsmi.AmdSmiClkType, kind)))
        return _number((clock or {}).get("max_clk"))

    target = _known(asic.get("target_graphics_version"))
    return Gpu(name=_known(asic.get("market_name")) or target or "AMD GPU",
               hbm_gib=None if _number(vram) is None else round(vram / 2**30, 1),
               capability=gfx_capability(target), is_hip=True, uuid=uuid,
               sm_count=_number(asic.get("num_compute_units")),
               driver=_known(ask(lambda: amdsmi.amdsmi_get_gpu_driver_info(handle)["driver_version"])),
               power_limit_w=None if power_uw is None else power_uw / 1e6,  # microwatts on Linux
               default_power_limit_w=None if default_uw is None else default_uw / 1e6,
               max_sm_clock_mhz=max_clock("GFX"), max_mem_clock_mhz=max_clock("MEM"))
