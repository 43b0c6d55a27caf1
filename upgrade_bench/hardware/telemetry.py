"""GPU telemetry over the timed steps: clocks, power, temperature, throttle reasons, energy.

The guide names thermal throttling and power capping among the ways a comparison goes
wrong: a run whose SM clock sagged is slower for reasons that have nothing to do with the
GPU generation. A background thread samples NVML (nvidia-ml-py) every ~100 ms for one GPU;
`aggregate` turns the samples into the `summary` fields. Without NVML (CPU, other vendors,
no driver) the sampler records nothing and every field is null: telemetry never fails a run.

    sampler = Sampler(local_rank)           # the CUDA index this process uses
    sampler.start()
    ...                                     # timed (non-warm-up) steps
    fields = aggregate(sampler.stop(), tokens, sampler.energy_mj)
"""
import statistics
import threading
import time
from dataclasses import dataclass

from .devices.gpu import uuid_of

INTERVAL_S = 0.1  # fine enough to see a step's power swing, cheap enough to be free

# NVML clocks-event (formerly throttle) reason bits, as nvml.h defines them. gpu_idle and
# applications_clocks_setting are not slowdowns of a busy GPU, so they are not reported.
THROTTLE_BITS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clock_setting",
}


@dataclass(frozen=True)
class Sample:
    t_s: float  # time.monotonic()
    sm_clock_mhz: float | None
    mem_clock_mhz: float | None
    power_w: float | None
    temp_c: float | None
    throttle_mask: int | None


def throttle_names(mask: int | None) -> list[str]:
    """The slowdown reasons set in an NVML clocks-event bitmask, by name."""
    if not mask:
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


def nvml_handle(pynvml, device_index: int):
    """NVML handle of CUDA device `device_index` as this process numbers it.

    NVML counts every GPU of the node and ignores CUDA_VISIBLE_DEVICES (which the DeepSpeed
    launcher sets per rank), so the device is matched by UUID, not by index.
    """
    import torch

    return pynvml.nvmlDeviceGetHandleByUUID(uuid_of(torch.cuda.get_device_properties(device_index)))


def _read(pynvml, handle) -> Sample:
    def value(fn, *args, scale=1.0):
        try:
            return fn(handle, *args) * scale
        except Exception:  # a field this GPU/driver does not report stays null
            return None

    reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    mask = value(reasons) if reasons else None
    if mask is None:  # drivers older than the clocks-event API
        mask = value(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons)
    return Sample(t_s=time.monotonic(),
                  sm_clock_mhz=value(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
                  mem_clock_mhz=value(pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
                  power_w=value(pynvml.nvmlDeviceGetPowerUsage, scale=1e-3),  # mW -> W
                  temp_c=value(pynvml.nvmlDeviceGetTemperature, pynvml.NVML_TEMPERATURE_GPU),
                  throttle_mask=None if mask is None else int(mask))


class Sampler:
    """Samples one GPU on a background thread between start() and stop().

    `energy_mj` is the GPU's energy counter difference over the window (Volta and newer),
    None where the counter is missing; `error` says why nothing was sampled, if so.
    """

    def __init__(self, device_index: int = 0, interval_s: float = INTERVAL_S):
        self.device_index = device_index
        self.interval_s = interval_s
        self.energy_mj = None
        self.error = None
        self._samples = []
        self._stop = threading.Event()
        self._thread = None
        self._nvml = self._handle = self._energy_start = None

    def start(self) -> None:
        self._samples, self.energy_mj, self.error = [], None, None
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception as err:  # no driver, no GPU, no nvidia-ml-py: nothing to sample
            self.error = f"{type(err).__name__}: {err}"
            return
        try:
            self._nvml, self._handle = pynvml, nvml_handle(pynvml, self.device_index)
        except Exception as err:  # e.g. a device NVML cannot match (MIG slice)
            self.error = f"{type(err).__name__}: {err}"
            pynvml.nvmlShutdown()
            return
        self._energy_start = self._energy()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="gpu-telemetry", daemon=True)
        self._thread.start()

    def _energy(self):
        try:
            return self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        except Exception:
            return None

    def _run(self) -> None:
        while True:
            self._samples.append(_read(self._nvml, self._handle))
            if self._stop.wait(self.interval_s):
                return

    def stop(self) -> list[Sample]:
        if self._thread is None:
            return []
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._samples.append(_read(self._nvml, self._handle))  # the window's end
        end = self._energy()
        if self._energy_start is not None and end is not None:
            self.energy_mj = end - self._energy_start
        try:
            self._nvml.nvmlShutdown()  # reference-counted: balances this start()'s nvmlInit
        except Exception:
            pass
        return list(self._samples)


FIELDS = ("sm_clock_mhz_median", "sm_clock_mhz_min", "mem_clock_mhz_median", "power_w_mean",
          "temp_c_max", "throttle", "energy_j_per_token")


def _present(samples, field):
    return [getattr(s, field) for s in samples if getattr(s, field) is not None]


def trapezoid_energy_j(samples) -> float | None:
    """Energy from sampled power: the area under the power curve, joules."""
    points = [(s.t_s, s.power_w) for s in samples if s.power_w is not None]
    if len(points) < 2:
        return None
    return sum((p0 + p1) / 2 * (t1 - t0) for (t0, p0), (t1, p1) in zip(points, points[1:]))


def aggregate(samples, tokens: int, energy_mj: float | None = None) -> dict:
    """The summary's telemetry fields from one GPU's samples over `tokens` tokens.

    Energy per token comes from the GPU's energy counter when given (exact), else from the
    sampled power integrated over time. No samples: every field null, telemetry_samples 0.
    """
    out = dict.fromkeys(FIELDS)
    out["telemetry_samples"] = len(samples)
    sm, mem = _present(samples, "sm_clock_mhz"), _present(samples, "mem_clock_mhz")
    power, temp = _present(samples, "power_w"), _present(samples, "temp_c")
    masks = _present(samples, "throttle_mask")
    if sm:
        out["sm_clock_mhz_median"], out["sm_clock_mhz_min"] = statistics.median(sm), min(sm)
    if mem:
        out["mem_clock_mhz_median"] = statistics.median(mem)
    if power:
        out["power_w_mean"] = statistics.fmean(power)
    if temp:
        out["temp_c_max"] = max(temp)
    if masks:
        out["throttle"] = sorted({name for m in masks for name in throttle_names(m)})
    energy_j = energy_mj / 1e3 if energy_mj is not None else trapezoid_energy_j(samples)
    if energy_j is not None and tokens:
        out["energy_j_per_token"] = energy_j / tokens
    return out


def combine_ranks(per_rank: list[dict]) -> dict:
    """One summary's telemetry from every rank's `aggregate` (e.g. all_gather_object).

    The worst GPU decides what a sagging clock or a throttle looks like: minimum SM clock,
    maximum temperature, every throttle reason seen; medians, power and energy per token
    are averaged over the GPUs that reported them.
    """
    def values(key):
        return [r[key] for r in per_rank if r.get(key) is not None]

    out = dict.fromkeys(FIELDS)
    out["telemetry_samples"] = sum(r.get("telemetry_samples") or 0 for r in per_rank)
    for key in ("sm_clock_mhz_median", "mem_clock_mhz_median", "power_w_mean", "energy_j_per_token"):
        if values(key):
            out[key] = statistics.fmean(values(key))
    if values("sm_clock_mhz_min"):
        out["sm_clock_mhz_min"] = min(values("sm_clock_mhz_min"))
    if values("temp_c_max"):
        out["temp_c_max"] = max(values("temp_c_max"))
    if values("throttle"):
        out["throttle"] = sorted({name for names in values("throttle") for name in names})
    return out


class RunSampler(Sampler):
    """One NVML session for a whole kernel-benchmark run, sliced per measurement.

    A session opened and closed around every measurement left the GPU idle between
    measurements, and a short measurement after an idle gap runs on a refilled power
    budget: on the H200, mamf-finder's shapes after the first read 2-7% above the published
    mamf-finder's on the same shapes, and 0.1-0.8% on the first four with one session.
    `during(fn)` adds nothing between measurements.
    """

    def during(self, fn):
        """(fn(), clock/power/temperature/throttle fields over its run)."""
        t0 = time.monotonic()
        result = fn()
        inside = [s for s in list(self._samples) if s.t_s >= t0]
        if not inside and self._thread is not None:  # shorter than the sampling interval
            inside = [_read(self._nvml, self._handle)]
        fields = aggregate(inside, tokens=0)
        del fields["energy_j_per_token"]  # no tokens in a kernel benchmark
        return result, fields
