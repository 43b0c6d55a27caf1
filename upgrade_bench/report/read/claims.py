"""What a log claims that the hardware says cannot be: a header whose run trained in a number
format its GPU has no tensor cores for (an H200 log claiming nvfp4), and a figure above its GPU's
datasheet bound (a MAMF above the dense peak of its format, an HBM copy above the datasheet
bandwidth, a training step above the dense peak of its precision: MFU over 100%). The record is
skipped as it is read, with the reason, like a record of the wrong type (inputs.read), so no
verdict, reference or forecast is built on it: each would price a run that never happened.

What the silicon can do is the GPU table's (hardware/gpus.py: its dense peaks and HBM bandwidth,
a format without a peak there) and the formats' capability floors (hardware/formats.py), where the
header records the capability.
"""
from ...hardware import gpus, precisions
from ...hardware.fingerprint import Device
from ...hardware.formats import below_floor
from .series import normalise_dtype

IMPOSSIBLE = "impossible"


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


def _spec(header: dict | None):
    hardware = header.get("hardware") if isinstance(header, dict) and isinstance(header.get("hardware"), dict) else {}
    return gpus.lookup(hardware.get("gpu_name"))


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def figure_problem(record: dict, header: dict | None) -> str | None:
    """Why a measured figure is above what its GPU (its run's header) can give, or None: a GPU
    the table lacks has no bound here, and neither has a figure without its header."""
    spec, kind = _spec(header), record["kind"]
    if spec is None:
        return None
    if kind == "mamf":
        dtype = normalise_dtype(record.get("dtype"))
        value, peak = _number(record.get("tflops_mean")), spec.peak_tflops(dtype)
        if value and peak and value > peak:
            return (f"{IMPOSSIBLE}: MAMF {dtype} {value:.1f} TFLOPS above the {spec.name}'s {dtype} dense peak of "
                    f"{peak:g} TFLOPS ({spec.datasheet})")
    elif kind == "hbm":
        value, datasheet = _number(record.get("gb_per_s")), spec.hbm_tbps * 1e3
        if value and value > datasheet:
            return (f"{IMPOSSIBLE}: HBM {record.get('op')} {value:.1f} GB/s above the {spec.name}'s datasheet "
                    f"{datasheet:g} GB/s ({spec.datasheet})")
    elif kind == "summary":
        name = header.get("precision") or ((header.get("config") or {}).get("PRECISION")) or "bf16"
        p = precisions.PRECISIONS.get(name) if isinstance(name, str) else None
        dtype = p.peak_dtype if p else normalise_dtype(name) if normalise_dtype(name) in ("fp8", "fp4") else "bf16"
        value, peak, mfu = _number(record.get("tflops_per_gpu")), spec.peak_tflops(dtype), _number(record.get("mfu"))
        if value and peak and value > peak:
            said = f" (MFU {mfu:.1%})" if mfu else ""
            return (f"{IMPOSSIBLE}: training step {value:.1f} TFLOPS/GPU{said} above the {spec.name}'s {dtype} "
                    f"dense peak of {peak:g} TFLOPS ({spec.datasheet})")
    return None


def problem(record: dict, header: dict | None = None) -> str | None:
    """Why a checked record claims what cannot be, or None; `header`: its run's, where read."""
    return header_problem(record) if record["kind"] == "header" else figure_problem(record, header)
