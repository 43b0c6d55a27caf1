"""What a log claims that the hardware says cannot be: a header whose run trained in a number
format its GPU has no tensor cores for (an H200 log claiming nvfp4). The record is skipped as
it is read, with the reason, like a record of the wrong type (inputs.read): a forecast or a
verdict built on it would price a run that never happened.

What the silicon can do is the GPU table's (hardware/gpus.py: a format without a peak there) and
the formats' capability floors (hardware/formats.py), where the header records the capability.
"""
from ...hardware import gpus, precisions
from ...hardware.fingerprint import Device
from ...hardware.formats import below_floor


def recorded_capability(hardware: dict) -> tuple | None:
    """An NVIDIA GPU's compute capability as its header records it ('9.0' -> (9, 0)), or None."""
    text, arch = hardware.get("compute_capability"), hardware.get("arch")
    if not isinstance(text, str) or not isinstance(arch, str) or not arch.startswith("sm_"):
        return None
    major, _, minor = text.partition(".")
    return (int(major), int(minor or 0)) if major.isdigit() and (minor or "0").isdigit() else None


def header_problem(header: dict) -> str | None:
    """Why a header's run cannot have run as it says, or None."""
    config = header.get("config") if isinstance(header.get("config"), dict) else {}
    name = header.get("precision") if isinstance(header.get("precision"), str) else config.get("PRECISION")
    p = precisions.PRECISIONS.get(name) if isinstance(name, str) else None
    if p is None or not p.low:
        return None
    hardware = header.get("hardware") if isinstance(header.get("hardware"), dict) else {}
    spec = gpus.lookup(hardware.get("gpu_name"))
    if spec is not None and spec.peak_tflops(p.peak_dtype) is None:
        return (f"precision {name} on the {spec.name}, which has no {p.peak_dtype} tensor cores "
                f"({spec.datasheet} lists no {p.peak_dtype} peak): it cannot have run there")
    capability = recorded_capability(hardware)
    why = below_floor(p.item, Device(capability)) if capability else None
    return f"precision {name} on compute capability {hardware['compute_capability']}: {why}" if why else None


def problem(record: dict) -> str | None:
    """Why a checked record claims what cannot be, or None."""
    return header_problem(record) if record["kind"] == "header" else None
