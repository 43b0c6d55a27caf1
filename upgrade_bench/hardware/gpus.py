"""The GPU table: dense peak TFLOPS per dtype, HBM, bandwidth, TDP, GPU-to-GPU link, published
MAMF, and the platform a GPU comes in.

Each row cites its sources. Peaks (dense, no sparsity), HBM, bandwidth and TDP are the
vendor's datasheet figures (`datasheet`: NVIDIA's and AMD's product datasheets, by title);
where another document gives a figure, `cited` names it per field.

The platform fields are what a datasheet peak does not say and published runs show (forecast
model, report/forecast/model.py): `die` (parts with one compute die, whose sustained GEMM rate
at the power cap moves with the board power), `family` (dies whose tensor cores are alike: a
field of its own, never parsed from `die`), `vendor` (whose software stack trains on it:
report/forecast/stacks.py), `power_class` (the board: an 8-GPU HGX baseboard,
a GPU of an NVL72 rack, a PCIe card), `nvlink_domain` (GPUs one NVLink fabric joins: the
tensor and expert parallelism that stays on NVLink), `attention_exp_factor` (the
exponent/SFU throughput of softmax over the part's predecessor: Blackwell Ultra doubles it) and
`host_cpu` (the Grace CPU a superchip or NVL72 part carries, where the others run on the server's
host: what drives the GPU's kernels changes with it).
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
    die: str = ""                   # compute die: parts of one die differ by board power and memory
    family: str = ""                # die family: dies whose tensor cores are alike (Blackwell and Blackwell Ultra)
    vendor: str = ""                # "nvidia" or "amd": whose software stack trains on it
    power_class: str = ""           # "HGX" (8-GPU baseboard), "NVL72" (rack part), "PCIe", "superchip", "OAM"
    nvlink_domain: int | None = None  # GPUs in one NVLink (or Infinity Fabric) domain
    attention_exp_factor: float = 1.0  # softmax exponent (SFU) throughput over the die's first part
    host_cpu: str = ""              # a CPU on the GPU's own module (NVIDIA Grace); "": the server's host CPU
    cited: tuple = ()               # (field, document) for figures not from `datasheet`

    def mamf_tflops(self, dtype: str) -> float | None:
        """The published MAMF of `dtype` (`bf16`, or `fp8`: float8_e4m3fn with per-tensor scales)."""
        return {"bf16": self.mamf_bf16, "fp8": self.mamf_fp8}.get(dtype)

    def peak_tflops(self, dtype: str = "bf16") -> float | None:
        # fp16 runs on the same tensor cores at the bf16 rate on every card listed here.
        return {"bf16": self.bf16, "fp16": self.bf16, "fp8": self.fp8, "fp4": self.fp4}.get(dtype)


DGXC_SOURCE = ("NVIDIA dgxc-benchmarking README.md, Reference Infrastructure, https://github.com/NVIDIA/"
               "dgxc-benchmarking/blob/841f5466cd86b66abd48049e839c563776f6d716/README.md")
ULTRA_ATTENTION_SOURCE = ("NVIDIA HGX B300 datasheet (\"Attention performance 2X\" over HGX B200) and NVIDIA's "
                          "Blackwell Ultra technical blog: twice the SFU throughput for softmax's exponentials")

# (pattern on the lower-cased device name, spec). Each pattern names its chip as a whole word
# start (_CHIP: no letter or digit before it), so no name matches two rows and order does not
# matter: "gh200" is not "h200", "gb300" is not "b300" (the rack part, its own row), "h200 nvl"
# (a different, lower-clocked card) is not "h200" (the SXM).
_CHIP = r"(?<![a-z0-9])"
_TABLE = [
    # HBM is the 96 GB HBM3 version's; the MAMF was measured on the 144 GB HBM3e one at 900 W.
    (_CHIP + r"gh200", GPUSpec("GH200", 989, 1979, None, 96, 4.0, 900, 828.6, 1535.0,
                       datasheet="NVIDIA GH200 Grace Hopper Superchip datasheet", link_gbps=900, die="hopper", family="hopper", vendor="nvidia",
                       power_class="superchip", nvlink_domain=1, host_cpu="Grace")),
    # Per GPU: the NVL72 rack's figures divided by its 72 GPUs. The datasheet gives no power per
    # GPU; 1200 W is the B200 die's rating in the NVL72 rack (GB300's 1400 W is its "200 W more").
    (_CHIP + r"gb200", GPUSpec("GB200", 2500, 5000, 10000, 186, 8.0, 1200, 1822.0, 3615.6,
                       datasheet="NVIDIA GB200 NVL72 datasheet", link_gbps=1800, die="blackwell", family="blackwell", vendor="nvidia",
                       power_class="NVL72", nvlink_domain=72, host_cpu="Grace",
                       cited=(("hbm_gib", DGXC_SOURCE + ": 186 GB HBM3e per GPU"),
                              ("tdp_w", "NVIDIA GB200 NVL72: Blackwell GPU rated 1200 W in the rack (public "
                                        "coverage of the NVL72 design; not on the datasheet)")))),
    # Blackwell Ultra in the NVL72 rack: per GPU, the GB300 NVL72 rack's figures over 72 GPUs
    # (BF16/FP8 as GB200's, FP4 1.5x). No MAMF is published for it.
    (_CHIP + r"gb300", GPUSpec("GB300", 2500, 5000, 15000, 279, 8.0, 1400, None, None,
                       datasheet="NVIDIA GB300 NVL72 datasheet", link_gbps=1800, die="blackwell-ultra", family="blackwell", vendor="nvidia",
                       power_class="NVL72", nvlink_domain=72, attention_exp_factor=2.0, host_cpu="Grace",
                       cited=(("hbm_gib", DGXC_SOURCE + ": 279 GB HBM3e per GPU"),
                              ("tdp_w", DGXC_SOURCE + ": TDP configurable up to 1,400 W"),
                              ("attention_exp_factor", ULTRA_ATTENTION_SOURCE)))),
    (_CHIP + r"a100.*sxm", GPUSpec("A100 SXM", 312, None, None, 80, 2.0, 400, 271.2,
                                    datasheet="NVIDIA A100 Tensor Core GPU datasheet", link_gbps=600, die="ampere", family="ampere", vendor="nvidia",
                                    power_class="HGX", nvlink_domain=8)),
    (_CHIP + r"h100.*pcie", GPUSpec("H100 PCIe", 756, 1513, None, 80, 2.0, 350,
                            datasheet="NVIDIA H100 Tensor Core GPU datasheet", die="hopper", family="hopper", vendor="nvidia", power_class="PCIe")),
    (_CHIP + r"h100(?!.*(nvl|pcie))", GPUSpec("H100 SXM", 989, 1979, None, 80, 3.35, 700, 794.5, 1402.6,
                               datasheet="NVIDIA H100 Tensor Core GPU datasheet", link_gbps=900, die="hopper", family="hopper", vendor="nvidia",
                               power_class="HGX", nvlink_domain=8)),
    # The bf16 MAMF was measured on H100 and is quoted for H200 (same compute die); fp8 on H200.
    (_CHIP + r"h200(?!.*nvl)", GPUSpec("H200 SXM", 989, 1979, None, 141, 4.8, 700, 794.5, 1453.4,
                               datasheet="NVIDIA H200 Tensor Core GPU datasheet", link_gbps=900, die="hopper", family="hopper", vendor="nvidia",
                               power_class="HGX", nvlink_domain=8)),
    # The PCIe card (600 W at most, NVLink bridge of 2 or 4 cards): the datasheet gives its
    # tensor-core figures with sparsity only (BF16 1,671, FP8 3,341 TFLOPS): halved, dense.
    # No MAMF of it is published.
    (_CHIP + r"h200.*nvl", GPUSpec("H200 NVL", 835.5, 1670.5, None, 141, 4.8, 600,
                                   datasheet="NVIDIA H200 Tensor Core GPU datasheet", link_gbps=900, die="hopper", family="hopper", vendor="nvidia",
                                   power_class="PCIe", nvlink_domain=4)),
    # The guide quotes 1300 W for the B300; the reference HGX B300 systems of NVIDIA's
    # benchmarking recipes run at 1100 W, the figure here (the board power its published runs had).
    (_CHIP + r"b300", GPUSpec("B300 SXM", 2250, 4500, 15000, 288, 8.0, 1100, 1769.0, 3353.3,
                      datasheet="NVIDIA DGX B300 datasheet", link_gbps=1800, die="blackwell-ultra", family="blackwell", vendor="nvidia",
                      power_class="HGX", nvlink_domain=8, attention_exp_factor=2.0,
                      cited=(("tdp_w", DGXC_SOURCE + ": B300 reference system, TDP 1100 W"),
                             ("attention_exp_factor", ULTRA_ATTENTION_SOURCE)))),
    (_CHIP + r"b200", GPUSpec("B200 SXM", 2250, 4500, 10000, 180, 8.0, 1000, 1745.0, 3432.5,
                      datasheet="NVIDIA DGX B200 datasheet", link_gbps=1800, die="blackwell", family="blackwell", vendor="nvidia", power_class="HGX",
                      nvlink_domain=8, cited=(("tdp_w", DGXC_SOURCE + ": B200 reference system, TDP 1000 W"),))),
    (_CHIP + r"mi355x", GPUSpec("MI355X", 2500, 5000, 10100, 288, 8.0, 1400, 1565.0,
                        datasheet="AMD Instinct MI355X GPU datasheet", die="cdna4", family="cdna4", vendor="amd", power_class="OAM",
                        nvlink_domain=8)),
    (_CHIP + r"mi325x", GPUSpec("MI325X", 1300, 2610, None, 256, 6.0, 1000, 784.9,
                        datasheet="AMD Instinct MI325X accelerator datasheet", link_gbps=896, die="cdna3", family="cdna3", vendor="amd",
                        power_class="OAM", nvlink_domain=8)),
    (_CHIP + r"mi300x", GPUSpec("MI300X", 1300, 2610, None, 192, 5.3, 750, 668.4,
                        datasheet="AMD Instinct MI300X accelerator datasheet", link_gbps=896, die="cdna3", family="cdna3", vendor="amd",
                        power_class="OAM", nvlink_domain=8)),
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


# A die's compute capability (ROCm: gfx digits), for a plan made for a GPU of the table on a machine
# without it (run_sweep.sh's PLAN_GPU): which kernels and formats the plan may pick.
DIE_CAPABILITY = {"ampere": ((8, 0), False), "hopper": ((9, 0), False), "blackwell": ((10, 0), False),
                  "cdna3": ((9, 4), True), "cdna4": ((9, 5), True)}


def table_name(name: str) -> str | None:
    """The table's name of a GPU as a user types it ('B200', 'NVIDIA B200', 'B200 SXM'), or None."""
    spec = lookup(name)  # the patterns match a chip's name anywhere: 'b200' is B200 SXM as is 'NVIDIA B200'
    return spec.name if spec else None


def specs() -> list:
    """The GPU table's rows, in its order."""
    return [spec for _pattern, spec in _TABLE]


def names() -> list:
    """The GPU table's names, for a message that lists what is known."""
    return [spec.name for spec in specs()]
