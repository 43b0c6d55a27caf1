"""A GPU, whichever library told, and the rules every source shares: what a
*_VISIBLE_DEVICES value selects, torch's view."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    """One GPU; a field its source cannot tell is None."""
    name: str
    hbm_gib: float | None  # as torch reports total_memory (NVML: its total less the driver's reserve)
    capability: tuple[int, int] | None  # ROCm: gfx digits (gfx942: (9, 4)), never NVIDIA's sm
    is_hip: bool = False


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


def from_props(props, is_hip: bool) -> Gpu:
    """A GPU as torch.cuda.get_device_properties describes it."""
    return Gpu(name=props.name, hbm_gib=round(props.total_memory / 2**30, 1),
               capability=(props.major, props.minor), is_hip=is_hip)


def seen_by_torch() -> list[Gpu]:
    """The GPUs torch sees, in its order (it reads the *_VISIBLE_DEVICES variables itself)."""
    import torch

    if not torch.cuda.is_available():
        return []
    return [from_props(torch.cuda.get_device_properties(i), bool(torch.version.hip))
            for i in range(torch.cuda.device_count())]

