"""What the silicon must have for each matmul number format: NVIDIA compute capability floors.

The one home of that knowledge: check_capabilities' gates (capability/verdicts.py) and the
training precisions (hardware/precisions.py) read it. Items without an entry are probed on
any GPU (the probe decides); ROCm devices are never gated here: their capability tuple is
not comparable, so the probe decides there too.
"""
from dataclasses import dataclass

from .fingerprint import Device


@dataclass(frozen=True)
class Need:
    min_capability: tuple
    why: str


NEEDS = {
    "matmul:bf16": Need((8, 0), "bf16 tensor cores need sm_80+ (Ampere)"),
    "matmul:tf32": Need((8, 0), "tf32 tensor cores need sm_80+ (Ampere)"),
    "matmul:fp8_e4m3:tensorwise": Need((8, 9), "fp8 tensor cores need sm_89+ (Ada, Hopper)"),
    "matmul:fp8_e5m2:tensorwise": Need((8, 9), "fp8 tensor cores need sm_89+ (Ada, Hopper)"),
    "matmul:fp8_e4m3:rowwise": Need((8, 9), "fp8 tensor cores need sm_89+ (Ada, Hopper)"),
    "matmul:mxfp8:block32": Need((10, 0), "MX block-scaled tensor cores need sm_100+ (Blackwell)"),
    "matmul:mxfp4:block32": Need((10, 0), "fp4 tensor cores need sm_100+ (Blackwell)"),
    "matmul:nvfp4:block16": Need((10, 0), "fp4 tensor cores need sm_100+ (Blackwell)"),
}


def below_floor(item: str, device: Device) -> str | None:
    """Why `device`'s silicon lacks `item`'s format, or None (unknown item, no GPU, ROCm, or above the floor)."""
    need = NEEDS.get(item)
    if need is None or device.capability is None or device.is_hip or tuple(device.capability) >= need.min_capability:
        return None
    return need.why
