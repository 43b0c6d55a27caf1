"""The GPU table: dense peak TFLOPS per dtype, HBM, bandwidth, TDP, GPU-to-GPU link and published MAMF.

Each row cites its sources. Peaks (dense, no sparsity), HBM, bandwidth and TDP are the
vendor's datasheet figures (`datasheet`: NVIDIA's and AMD's product datasheets, by title).
`mamf_bf16`/`mamf_fp8` are measured Maximum Achievable Matmul FLOPS (mean of 100 iterations
after 50 warm-up, the best shape found), from MAMF_SOURCE, the table the guide
(insights/when-to-upgrade-gpus) quotes. An unknown device gets no figure at all: MFU is then
null unless the user passes PEAK_TFLOPS, never a silent fallback to another card's number.
"""
import re
from dataclasses import dataclass

MAMF_SOURCE = ("Stas Bekman, Machine Learning Engineering Open Book, compute/accelerator/README.md, "
               "\"Maximum Achievable Matmul FLOPS comparison table\" (BF16 and FP8 float8_e4m3fn)")


@dataclass(frozen=True)
class GPUSpec:
    name: str
    bf16: float
    fp8: float | None
    fp4: float | None  # nvfp4 / mxfp4 dense peak where the chip has one
    hbm_gib: float
    hbm_tbps: float
    tdp_w: float | None
    mamf_bf16: float | None = None  # from MAMF_SOURCE
    mamf_fp8: float | None = None   # from MAMF_SOURCE
    datasheet: str = ""             # the vendor document the other figures come from
    link_gbps: float | None = None  # GPU-to-GPU bandwidth per GPU (NVLink, Infinity Fabric), GB/s

    def mamf_tflops(self, dtype: str) -> float | None:
        """The published MAMF of `dtype` (`bf16`, or `fp8`: float8_e4m3fn with per-tensor scales)."""
        return {"bf16": self.mamf_bf16, "fp8": self.mamf_fp8}.get(dtype)

    def peak_tflops(self, dtype: str = "bf16") -> float | None:
        # fp16 runs on the same tensor cores at the bf16 rate on every card listed here.
        return {"bf16": self.bf16, "fp16": self.bf16, "fp8": self.fp8, "fp4": self.fp4}.get(dtype)


# (pattern on the lower-cased device name, spec). Each pattern names its chip as a whole word
# start (_CHIP: no letter or digit before it), so no name matches two rows and order does not
# matter: "gh200" is not "h200", "gb300" is not "b300" (and has no row: null MFU, never the
# B300's peak), "h200 nvl" (a different, lower-clocked card) is not "h200" (the SXM).
_CHIP = r"(?<![a-z0-9])"
_TABLE = [
    # HBM is the 96 GB HBM3 version's; the MAMF was measured on the 144 GB HBM3e one at 900 W.
    (_CHIP + r"gh200", GPUSpec("GH200", 989, 1979, None, 96, 4.0, 900, 828.6, 1535.0,
                       datasheet="NVIDIA GH200 Grace Hopper Superchip datasheet", link_gbps=900)),
    # Per GPU: the NVL72 rack's figures divided by its 72 GPUs.
    (_CHIP + r"gb200", GPUSpec("GB200", 2500, 5000, 10000, 186, 8.0, None, 1822.0, 3615.6,
                       datasheet="NVIDIA GB200 NVL72 datasheet", link_gbps=1800)),
    (_CHIP + r"a100.*sxm", GPUSpec("A100 SXM", 312, None, None, 80, 2.0, 400, 271.2,
                                    datasheet="NVIDIA A100 Tensor Core GPU datasheet", link_gbps=600)),
    (_CHIP + r"h100.*pcie", GPUSpec("H100 PCIe", 756, 1513, None, 80, 2.0, 350,
                            datasheet="NVIDIA H100 Tensor Core GPU datasheet")),
    (_CHIP + r"h100(?!.*(nvl|pcie))", GPUSpec("H100 SXM", 989, 1979, None, 80, 3.35, 700, 794.5, 1402.6,
                               datasheet="NVIDIA H100 Tensor Core GPU datasheet", link_gbps=900)),
    # The bf16 MAMF was measured on H100 and is quoted for H200 (same compute die); fp8 on H200.
    (_CHIP + r"h200(?!.*nvl)", GPUSpec("H200 SXM", 989, 1979, None, 141, 4.8, 700, 794.5, 1453.4,
                               datasheet="NVIDIA H200 Tensor Core GPU datasheet", link_gbps=900)),
    # The PCIe card (600 W at most, NVLink bridge of 2 or 4 cards): the datasheet gives its
    # tensor-core figures with sparsity only (BF16 1,671, FP8 3,341 TFLOPS): halved, dense.
    # No MAMF of it is published.
    (_CHIP + r"h200.*nvl", GPUSpec("H200 NVL", 835.5, 1670.5, None, 141, 4.8, 600,
                                   datasheet="NVIDIA H200 Tensor Core GPU datasheet", link_gbps=900)),
    (_CHIP + r"b300", GPUSpec("B300 SXM", 2250, 4500, 15000, 288, 8.0, 1300, 1769.0, 3353.3,
                      datasheet="NVIDIA DGX B300 datasheet", link_gbps=1800)),
    (_CHIP + r"b200", GPUSpec("B200 SXM", 2250, 4500, 10000, 180, 8.0, 1000, 1745.0, 3432.5,
                      datasheet="NVIDIA DGX B200 datasheet", link_gbps=1800)),
    (_CHIP + r"mi355x", GPUSpec("MI355X", 2500, 5000, 10100, 288, 8.0, 1400, 1565.0,
                        datasheet="AMD Instinct MI355X GPU datasheet")),
    (_CHIP + r"mi325x", GPUSpec("MI325X", 1300, 2610, None, 256, 6.0, 1000, 784.9,
                        datasheet="AMD Instinct MI325X accelerator datasheet", link_gbps=896)),
    (_CHIP + r"mi300x", GPUSpec("MI300X", 1300, 2610, None, 192, 5.3, 750, 668.4,
                        datasheet="AMD Instinct MI300X accelerator datasheet", link_gbps=896)),
]


def lookup(device_name: str | None) -> GPUSpec | None:
    """The spec for a device name as torch/NVML report it ('NVIDIA H200'), or None."""
    if not device_name:
        return None
    name = device_name.lower()
    found = [spec for pattern, spec in _TABLE if re.search(pattern, name)]
    return found[0] if len(found) == 1 else None


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


def table_name(name: str) -> str | None:
    """The table's name of a GPU as a user types it ('B200', 'NVIDIA B200', 'B200 SXM'), or None."""
    spec = lookup(name)  # the patterns match a chip's name anywhere: 'b200' is B200 SXM as is 'NVIDIA B200'
    return spec.name if spec else None


def names() -> list:
    """The GPU table's names, for a message that lists what is known."""
    return [spec.name for _pattern, spec in _TABLE]
