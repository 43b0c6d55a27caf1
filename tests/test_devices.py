"""The GPUs here, NVIDIA or AMD, without torch (upgrade_bench.hardware.devices), and the one `hardware`
every header describes them by; in-process, with fake NVML and amdsmi libraries."""
import types

import pytest

from conftest import REPO, SWEEP_CLEARED
from upgrade_bench.hardware import devices, fingerprint
from upgrade_bench.sweep import plan as sweep_plan
from upgrade_bench.hardware.devices import rocm
from upgrade_bench.hardware.devices.gpu import Gpu
from upgrade_bench.faults import BadInput
from upgrade_bench.report.read import inputs


class Unanswered:
    """A library that is there but finds no driver of its vendor (or is not asked at all)."""
    def nvmlInit(self):
        raise OSError("NVML Shared Library Not Found")

    def amdsmi_init(self):
        raise OSError("amdgpu driver not loaded")


class FakeNvml:
    """One H100, and everything NVML tells about it."""
    class NVMLError(Exception):
        pass

    nvmlMemory_v2, NVML_CLOCK_SM, NVML_CLOCK_MEM = 2, 1, 2

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlSystemGetDriverVersion(self):
        return "570.86.15"

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, handle):
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        return types.SimpleNamespace(total=85_520_809_984, reserved=533_725_184)

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return 9, 0

    def nvmlDeviceGetUUID(self, handle):
        return "GPU-1234"

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 700_000  # mW

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle):
        return 700_000

    def nvmlDeviceGetMaxClockInfo(self, handle, clock):
        return {1: 1980, 2: 2619}[clock]


class FakeAmdsmi:
    """Four MI300X, as amdsmi's Python API answers (its "N/A" where a GPU cannot tell)."""
    AmdSmiMemoryType = types.SimpleNamespace(VRAM=0)
    AmdSmiClkType = types.SimpleNamespace(GFX=0, MEM=1)
    serials = ["0x5C2E0AC1D9C4E3A1", "0x1111111111111111", "0x2222222222222222", "0x3333333333333333"]

    def amdsmi_init(self):
        pass

    def amdsmi_shut_down(self):
        pass

    def amdsmi_get_processor_handles(self):
        return list(range(len(self.serials)))

    def amdsmi_get_gpu_asic_info(self, h):
        return {"market_name": "AMD Instinct MI300X", "asic_serial": self.serials[h],
                "num_compute_units": 304 if h else "N/A", "target_graphics_version": "gfx942"}

    def amdsmi_get_gpu_memory_total(self, h, kind):
        return 206_141_652_992

    def amdsmi_get_power_cap_info(self, h):
        return {"power_cap": 750_000_000, "default_power_cap": 750_000_000}  # microwatts

    def amdsmi_get_clock_info(self, h, kind):
        return {"max_clk": {0: 2100, 1: 1300}[kind]}

    def amdsmi_get_gpu_driver_info(self, h):
        return {"driver_version": "6.10.5"}


def never(*args, **kwargs):
    raise AssertionError("asked although an earlier library answered")


def test_nvml_answers_first_and_neither_amdsmi_nor_torch_is_asked(monkeypatch, tmp_path):
    monkeypatch.setattr(devices, "seen_by_torch", never)
    (kfd := tmp_path / "kfd").touch()
    (h100,) = devices.visible_gpus({}, FakeNvml(), never, kfd=str(kfd))
    assert h100 == Gpu("NVIDIA H100 80GB HBM3", 79.2, (9, 0), uuid="GPU-1234", driver="570.86.15",
                       power_limit_w=700.0, default_power_limit_w=700.0, max_sm_clock_mhz=1980,
                       max_mem_clock_mhz=2619)


def test_without_nvidia_amdsmi_answers_with_rocm_numbering(monkeypatch):
    monkeypatch.setattr(devices, "seen_by_torch", never)
    first, second = devices.visible_gpus({"HIP_VISIBLE_DEVICES": "0,1"}, Unanswered(), FakeAmdsmi())
    assert first == Gpu("AMD Instinct MI300X", 192.0, (9, 4), is_hip=True, uuid="GPU-5c2e0ac1d9c4e3a1",
                        driver="6.10.5", power_limit_w=750.0, default_power_limit_w=750.0, max_sm_clock_mhz=2100,
                        max_mem_clock_mhz=1300)
    assert (first.sm_count, second.sm_count) == (None, 304)  # "N/A" is not a count
    assert devices.hardware([first])["arch"] == "gfx94"  # never read as Hopper's sm_94


def test_torch_is_asked_only_where_rocms_kernel_driver_is(monkeypatch, tmp_path):
    monkeypatch.setattr(devices, "seen_by_torch", never)
    assert devices.visible_gpus({}, Unanswered(), Unanswered(), kfd=str(tmp_path / "kfd")) == []  # a CPU
    mi300x = Gpu("AMD Instinct MI300X", 192.0, (9, 4), is_hip=True)
    monkeypatch.setattr(devices, "seen_by_torch", lambda: [mi300x])
    (tmp_path / "kfd").touch()  # ROCm without amdsmi
    assert devices.visible_gpus({}, Unanswered(), Unanswered(), kfd=str(tmp_path / "kfd")) == [mi300x]


UUIDS = [f"GPU-{s[2:].lower()}" for s in FakeAmdsmi.serials]


@pytest.mark.parametrize("environ, seen", [
    ({}, [0, 1, 2, 3]),
    ({"ROCR_VISIBLE_DEVICES": "2,3"}, [2, 3]),
    ({"ROCR_VISIBLE_DEVICES": "2,3", "HIP_VISIBLE_DEVICES": "1"}, [3]),  # HIP's indices are ROCr's survivors
    ({"HIP_VISIBLE_DEVICES": "3,0"}, [3, 0]),
    ({"CUDA_VISIBLE_DEVICES": "1"}, [1]),  # HIP reads it when HIP_VISIBLE_DEVICES is unset
    ({"CUDA_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "2"}, [2]),
    ({"ROCR_VISIBLE_DEVICES": "GPU-5C2E0AC1D9C4E3A1,1"}, [0, 1]),  # a UUID in either case
    ({"ROCR_VISIBLE_DEVICES": "0,9,1"}, [0]),  # up to the first entry that names no GPU
    ({"HIP_VISIBLE_DEVICES": ""}, []),
    ({"ROCR_VISIBLE_DEVICES": "-1"}, []),
])
def test_rocm_visible_devices_select_as_the_runtime_does(environ, seen):
    assert rocm.hip_selected(environ, UUIDS) == seen


@pytest.mark.parametrize("target, capability", [("gfx942", (9, 4)), ("gfx90a", (9, 0)), ("gfx1100", (11, 0)),
                                                ("gfx950", (9, 5)), ("N/A", None), (None, None)])
def test_a_gfx_target_is_the_capability_rocms_torch_reports(target, capability):
    assert rocm.gfx_capability(target) == capability


def test_torch_gets_the_details_of_the_same_gpu_by_uuid_else_by_position():
    a, b = (Gpu("NVIDIA H200", 139.8, (9, 0), uuid=u, sm_count=132) for u in ("GPU-a", "GPU-b"))
    managed = [Gpu("NVIDIA H200", 139.8, (9, 0), uuid=u, power_limit_w=w)
               for u, w in (("GPU-b", 600.0), ("GPU-a", 700.0))]
    assert [g.power_limit_w for g in devices.with_details([a, b], managed)] == [700.0, 600.0]
    assert devices.with_details([a, b], managed)[0].sm_count == 132  # torch's own fields stay
    hip = Gpu("AMD Instinct MI300X", 192.0, (9, 4), is_hip=True, uuid="GPU-3f2e")  # not amdsmi's serial
    (detailed,) = devices.with_details([hip], [Gpu("MI300X", 192.0, (9, 4), True, "GPU-5c2e", driver="6.10.5")])
    assert detailed.driver == "6.10.5"
    assert devices.with_details([a], []) == [a]


def test_every_header_describes_the_hardware_with_the_same_fields(monkeypatch):
    cpu, gpu = devices.hardware([]), devices.hardware([Gpu("NVIDIA H200", 139.8, (9, 0))])  # the sweep's
    assert list(cpu) == list(gpu)
    assert (cpu["arch"], cpu["gpu_count"], cpu["compute_capability"]) == ("cpu", 0, None)
    assert (gpu["arch"], gpu["compute_capability"]) == ("sm_90", "9.0")
    assert gpu["sm_count"] is None  # NVML cannot tell
    # The other scripts': torch's view of the GPUs, with NVML's details of the same ones.
    torch_view = Gpu("NVIDIA H100 80GB HBM3", 79.2, (9, 0), uuid="GPU-1234", sm_count=132)
    monkeypatch.setattr(devices, "seen_by_torch", lambda: [torch_view])
    monkeypatch.setattr(devices, "visible_gpus", lambda: devices.nvml.visible({}, FakeNvml()))
    measured = fingerprint.hardware()
    assert list(measured) == list(cpu)
    assert (measured["sm_count"], measured["power_limit_w"], measured["driver"]) == (132, 700.0, "570.86.15")


@pytest.fixture
def environ(monkeypatch):
    for name in SWEEP_CLEARED:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_sweep_on_an_amd_node_plans_for_its_gpus(environ):
    mi300x = Gpu("AMD Instinct MI300X", 192.0, (9, 4), is_hip=True, sm_count=304)
    environ.setattr(devices, "visible_gpus", lambda environ=None: [mi300x] * 8)
    environ.setenv("ATTN_BACKEND", "fa3")
    with pytest.raises(BadInput, match="AMD GPUs"):  # (9, 4) is ROCm's gfx942, not a Hopper
        sweep_plan.prepare(sweep_plan.load_settings([], "doc"))
    environ.setenv("ATTN_BACKEND", "auto")
    plan = sweep_plan.prepare(sweep_plan.load_settings([], "doc"))
    assert plan.out.startswith(str(REPO / "results" / "amd-instinct-mi300x_")) and plan.gpus == 8
    assert plan.backend == "sdpa" and plan.config["world_size"] == 8
    assert plan.resolved.peak_tflops == 1300 and plan.hardware["arch"] == "gfx94" and plan.hardware["gpu_count"] == 8


@pytest.mark.parametrize("gpus", [[], [Gpu("NVIDIA H200", 139.8, (9, 0))], [Gpu("AMD Instinct MI300X", 192.0, (9, 4), True)]])
def test_the_report_reads_the_hardware_every_header_carries(gpus):
    header = {"kind": "header", "run_id": "r", "hardware": devices.hardware(gpus)}
    assert inputs.field_problem(header) is None  # a CPU try-out's gpu_count 0 included
