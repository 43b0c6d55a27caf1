"""The GPU table: the lookup by device name, the peak for MFU, and where each figure comes from."""
import re

import pytest

from conftest import REPO
from upgrade_bench.hardware import gpus
from upgrade_bench.kernels.mamf import search as mamf


@pytest.mark.parametrize("device, name, bf16", [
    ("NVIDIA H200", "H200 SXM", 989),
    ("NVIDIA H200 NVL", "H200 NVL", 835.5),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 989),
    ("NVIDIA H100 PCIe", "H100 PCIe", 756),
    ("NVIDIA GH200 480GB", "GH200", 989),
    ("NVIDIA GB200", "GB200", 2500),
    ("NVIDIA GB300", "GB300", 2500),
    ("NVIDIA B200", "B200 SXM", 2250),
    ("NVIDIA B300 SXM6 AC", "B300 SXM", 2250),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM", 312),
    ("AMD Instinct MI300X", "MI300X", 1300),
])
def test_gpu_lookup(device, name, bf16):
    spec = gpus.lookup(device)
    assert spec.name == name and spec.peak_tflops("bf16") == bf16


@pytest.mark.parametrize("device", ["NVIDIA L4", "NVIDIA GB400", None])
def test_unknown_gpu_gets_no_peak_and_a_warning(device):
    peak, source, warning = gpus.resolve_peak(device)
    assert peak is None and source is None and "PEAK_TFLOPS" in warning


def vendor_name(spec) -> str:
    """A row's name as its driver would spell the device ('NVIDIA H200 SXM', 'AMD Instinct MI300X')."""
    return f"{'AMD Instinct' if spec.name.startswith('MI') else 'NVIDIA'} {spec.name}"


DEVICES = ["NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA GH200 480GB", "NVIDIA GB200", "NVIDIA GB300",
           "NVIDIA B300 SXM6 AC",
           "NVIDIA B200", "NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X"]


@pytest.mark.parametrize("device", DEVICES + [vendor_name(spec) for _, spec in gpus._TABLE])
def test_no_device_name_matches_two_rows(device):
    # Each name maps to its own row or to none, whatever the table's order: the names drivers
    # report (seen or published) and every row's own name, so a row added is checked at once.
    assert sum(bool(re.search(p, device.lower())) for p, _ in gpus._TABLE) <= 1


@pytest.mark.parametrize("row", [spec for _, spec in gpus._TABLE], ids=lambda s: s.name)
def test_every_row_finds_itself_by_its_own_name(row):
    assert gpus.lookup(vendor_name(row)) == row and gpus.table_name(row.name) == row.name


def test_a_new_row_is_checked_by_the_registry_not_a_list_in_a_test(monkeypatch):
    # A copy of the table with one more GPU: the row checks above take it by its own name.
    row = gpus.GPUSpec("X900", 3000, 6000, 12000, 200, 9.0, 1200, datasheet="NVIDIA X900 datasheet")
    monkeypatch.setattr(gpus, "_TABLE", gpus._TABLE + [(r"(?<![a-z0-9])x900", row)])
    test_every_row_finds_itself_by_its_own_name(row)
    test_no_device_name_matches_two_rows(vendor_name(row))
    test_every_row_cites_its_vendor_datasheet_and_the_mamf_figures_their_table()


def test_the_h200_nvl_has_its_own_datasheet_figures_not_the_sxms():
    # NVIDIA H200 datasheet, H200 NVL column: 1,671 (BF16) and 3,341 (FP8) TFLOPS with sparsity,
    # 141 GB at 4.8 TB/s, up to 600 W, a 900 GB/s NVLink bridge; no MAMF measured.
    nvl = gpus.lookup("NVIDIA H200 NVL")
    assert (nvl.peak_tflops("bf16"), nvl.peak_tflops("fp8"), nvl.peak_tflops("fp4")) == (835.5, 1670.5, None)
    assert (nvl.hbm_gib, nvl.hbm_tbps, nvl.tdp_w, nvl.link_gbps) == (141, 4.8, 600, 900)
    assert nvl.mamf_bf16 is None and mamf.published_mamf("NVIDIA H200 NVL", "bfloat16") is None
    assert gpus.resolve_peak("NVIDIA H200 NVL") == (835.5, "table:H200 NVL", None)
    assert gpus.table_name("H200 NVL") == "H200 NVL" and gpus.table_name("H200") == "H200 SXM"


def test_the_platform_fields_say_what_a_datasheet_peak_does_not():
    b200, b300, gb200, gb300 = (gpus.lookup(n) for n in ("B200", "B300", "GB200", "GB300"))
    # board power: HGX B200 1000 W, HGX B300 1100 W, GB200 1200 W and GB300 1400 W in the NVL72 rack
    assert [g.tdp_w for g in (b200, b300, gb200, gb300)] == [1000, 1100, 1200, 1400]
    assert [g.power_class for g in (b200, b300, gb200, gb300)] == ["HGX", "HGX", "NVL72", "NVL72"]
    assert [g.nvlink_domain for g in (b200, b300, gb200, gb300)] == [8, 8, 72, 72]
    # one die per pair: the rack part is the same silicon at another power
    assert b200.die == gb200.die == "blackwell" and b300.die == gb300.die == "blackwell-ultra"
    assert [g.attention_exp_factor for g in (b200, b300, gb200, gb300)] == [1.0, 2.0, 1.0, 2.0]
    # GB300: the GB200's BF16/FP8 peaks and bandwidth, 1.5x its FP4, 279 GB, no MAMF published
    assert (gb300.bf16, gb300.fp8, gb300.fp4, gb300.hbm_gib, gb300.hbm_tbps) == (2500, 5000, 15000, 279, 8.0)
    assert gb300.mamf_bf16 is None and gpus.resolve_peak("NVIDIA GB300")[0] == 2500
    # every figure not from the row's datasheet names its document
    for _, spec in gpus._TABLE:
        for field, document in spec.cited:
            assert hasattr(spec, field) and document, (spec.name, field)
    assert dict(gb300.cited)["tdp_w"].startswith("NVIDIA dgxc-benchmarking README.md")
    assert "github.com/NVIDIA/dgxc-benchmarking/blob/841f546" in gpus.DGXC_SOURCE


def test_peak_override_wins():
    assert gpus.resolve_peak("NVIDIA L4", override=121.0) == (121.0, "PEAK_TFLOPS", None)
    assert gpus.resolve_peak("NVIDIA H200", "fp8")[0] == 1979
    assert gpus.resolve_peak("NVIDIA H200", "fp4")[0] is None


def test_every_row_cites_its_vendor_datasheet_and_the_mamf_figures_their_table():
    for _, spec in gpus._TABLE:
        vendor = "AMD Instinct" if spec.name.startswith("MI") else "NVIDIA"
        assert spec.datasheet.startswith(vendor) and spec.datasheet.endswith("datasheet"), spec
    assert "Machine Learning Engineering Open Book" in gpus.MAMF_SOURCE
    assert "compute/accelerator/README.md" in gpus.MAMF_SOURCE
    assert mamf.published_mamf("NVIDIA B300 SXM6 AC", "float8_e4m3fn") == 3353.3
    assert mamf.published_mamf("AMD Instinct MI300X", "float8_e4m3fnuz") is None  # none measured


def test_no_code_cites_a_design_document_the_repository_does_not_have():
    design = "DESIGN" + ".md"
    files = [*REPO.glob("*.py"), *REPO.glob("*.sh"), *(REPO / "upgrade_bench").rglob("*.py"),
             *(REPO / "tests").glob("*.py")]
    assert [str(f) for f in files if design in f.read_text()] == []
