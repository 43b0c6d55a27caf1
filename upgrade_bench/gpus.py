"""The GPU table: dense peak TFLOPS per dtype, HBM, bandwidth, TDP and published MAMF.

Figures are the vendors' datasheet dense (no sparsity) peaks (NVIDIA and AMD datasheets), with
HBM as the Machine Learning Engineering Open Book's compute/accelerator table gives it;
`mamf_bf16`/`mamf_fp8` are the measured Maximum Achievable Matmul FLOPS (mean) that its
insights/when-to-upgrade-gpus guide quotes. An unknown
device gets no figure at all: MFU is then null unless the user passes PEAK_TFLOPS, never a
silent fallback to another card's number.
"""
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class GPUSpec:
    name: str
    bf16: float
    fp8: float | None
    fp4: float | None  # nvfp4 / mxfp4 dense peak where the chip has one
    hbm_gib: float
    hbm_tbps: float
    tdp_w: float | None
    mamf_bf16: float | None = None
    mamf_fp8: float | None = None

    def peak_tflops(self, dtype: str = "bf16") -> float | None:
        # fp16 runs on the same tensor cores at the bf16 rate on every card listed here.
        return {"bf16": self.bf16, "fp16": self.bf16, "fp8": self.fp8, "fp4": self.fp4}.get(dtype)


# (pattern on the lower-cased device name, spec). Order matters: the first match wins, so
# "gh200" precedes "h200" and "h200 nvl" (a different, lower-clocked card) matches nothing.
_TABLE = [
    (r"gh200", GPUSpec("GH200", 989, 1979, None, 96, 4.0, 900, 828.6)),
    (r"gb200", GPUSpec("GB200", 2500, 5000, 10000, 186, 8.0, None, 1822.0)),
    (r"a100.*sxm|a100-sxm", GPUSpec("A100 SXM", 312, None, None, 80, 2.0, 400, 271.2)),
    (r"h100.*pcie", GPUSpec("H100 PCIe", 756, 1513, None, 80, 2.0, 350)),
    (r"h100(?!.*nvl)", GPUSpec("H100 SXM", 989, 1979, None, 80, 3.35, 700, 794.5)),
    # The guide measured MAMF on H100 and quotes it for H200 (same compute die).
    (r"h200(?!.*nvl)", GPUSpec("H200 SXM", 989, 1979, None, 141, 4.8, 700, 794.5, 1453.4)),
    (r"b300", GPUSpec("B300 SXM", 2250, 4500, 15000, 288, 8.0, 1300, 1769.0)),
    (r"b200", GPUSpec("B200 SXM", 2250, 4500, 10000, 180, 8.0, 1000, 1745.0, 3432.5)),
    (r"mi355x", GPUSpec("MI355X", 2500, 5000, 10100, 288, 8.0, 1400, 1565.0)),
    (r"mi325x", GPUSpec("MI325X", 1300, 2610, None, 256, 6.0, 1000, 784.9)),
    (r"mi300x", GPUSpec("MI300X", 1300, 2610, None, 192, 5.3, 750, 668.4)),
]


def lookup(device_name: str | None) -> GPUSpec | None:
    """The spec for a device name as torch/NVML report it ('NVIDIA H200'), or None."""
    if not device_name:
        return None
    name = device_name.lower()
    for pattern, spec in _TABLE:
        if re.search(pattern, name):
            return spec
    return None


def resolve_peak(device_name: str | None, dtype: str = "bf16", override: float = 0.0):
    """(peak TFLOPS or None, where it came from, warning or None) for MFU."""
    if override:
        return override, "PEAK_TFLOPS", None
    spec = lookup(device_name)
    peak = spec.peak_tflops(dtype) if spec else None
    if peak is None:
        what = f"{device_name!r}" if device_name else "this device (no GPU)"
        return None, None, (f"no {dtype} peak known for {what}: mfu is null; "
                            f"set PEAK_TFLOPS to the dense {dtype} peak to get it")
    return peak, f"table:{spec.name}", None
