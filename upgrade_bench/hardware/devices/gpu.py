"""A GPU as a header describes it, whichever library told, and the rules every source shares:
what a *_VISIBLE_DEVICES value selects, the name of an architecture, torch's view."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One GPU; a field its source cannot tell is None."""
    name: str
    hbm_gib: float | None  # as torch reports total_memory (NVML: its total less the driver's reserve)
    capability: tuple[int, int] | None  # ROCm: gfx digits (gfx942: (9, 4)), never NVIDIA's sm
    is_hip: bool = False
    uuid: str | None = None
    sm_count: int | None = None  # SMs, or an AMD GPU's compute units; NVML cannot tell
    driver: str | None = None
    power_limit_w: float | None = None
    default_power_limit_w: float | None = None  # the board's own (a limit below it was set by hand)
    max_sm_clock_mhz: float | None = None
    max_mem_clock_mhz: float | None = None


def arch(capability: tuple | None, is_hip: bool) -> str:
    """'sm_90' (NVIDIA), 'gfx94' (ROCm: the digits begin the gfx name: gfx942; gfx90a is
    'gfx90', gfx1100 'gfx110') or 'cpu' (no GPU)."""
    if capability is None:
        return "cpu"
    major, minor = capability
    return f"gfx{major}{minor}" if is_hip else f"sm_{major}{minor}"


def ask(question):
    """question(), or None when the library or this GPU cannot answer it."""
    try:
        return question()
    except Exception:
        return None


def index_below(entry: str, count: int) -> int | None:
    return int(entry) if entry.isdigit() and int(entry) < count else None


def selected(visible: str | None, count: int, resolve) -> list:
    """The devices a *_VISIBLE_DEVICES value selects, in its order, as the runtimes read it:
    entries up to the first that names no device ("" or "-1": none); unset, all `count`.
    resolve(entry): the device an entry names (by index or UUID), or None."""
    entries = [str(i) for i in range(count)] if visible is None else [e.strip() for e in visible.split(",")]
    found = []
    for entry in entries:
        device = resolve(entry)
        if device is None:
            break
        found.append(device)
    return found


def uuid_of(props) -> str | None:
    """NVML's spelling (GPU-..., MIG-...) of the UUID torch's device properties hold."""
    uuid = str(getattr(props, "uuid", "") or "")
    return uuid if not uuid or uuid.startswith(("GPU-", "MIG-")) else "GPU-" + uuid


def from_props(props, is_hip: bool) -> Gpu:
    """A GPU as torch.cuda.get_device_properties describes it."""
    return Gpu(name=props.name, hbm_gib=round(props.total_memory / 2**30, 1),
               capability=(props.major, props.minor), is_hip=is_hip, uuid=uuid_of(props),
               sm_count=props.multi_processor_count)


def seen_by_torch() -> list[Gpu]:
    """The GPUs torch sees, in its order (it reads the *_VISIBLE_DEVICES variables itself)."""
    import torch

    if not torch.cuda.is_available():
        return []
    return [from_props(torch.cuda.get_device_properties(i), bool(torch.version.hip))
            for i in range(torch.cuda.device_count())]
