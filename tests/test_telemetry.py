"""NVML telemetry (upgrade_bench.hardware.telemetry): aggregation by hand, no NVML, the worst rank."""
import pytest

from upgrade_bench.hardware import telemetry


def sample(t, sm, mem, power, temp, mask):
    return telemetry.Sample(t, sm, mem, power, temp, mask)


def test_telemetry_aggregate_by_hand():
    samples = [sample(0.0, 1980, 2619, 600, 60, 0),
               sample(0.1, 1900, 2619, 700, 62, 0x4),          # sw_power_cap
               sample(0.2, 1700, 2619, 700, 65, 0x40 | 0x1),   # hw_thermal (+ gpu_idle, ignored)
               sample(0.3, 1980, 2619, 600, 63, 0x2)]          # applications clocks: ignored
    got = telemetry.aggregate(samples, tokens=1000)
    assert got["sm_clock_mhz_median"] == 1940 and got["sm_clock_mhz_min"] == 1700
    assert got["mem_clock_mhz_median"] == 2619 and got["power_w_mean"] == 650
    assert got["temp_c_max"] == 65 and got["throttle"] == ["hw_thermal", "sw_power_cap"]
    # trapezoid: (600+700)/2*0.1 + (700+700)/2*0.1 + (700+600)/2*0.1 = 200 J over 1000 tokens
    assert got["energy_j_per_token"] == pytest.approx(0.2)
    assert got["telemetry_samples"] == 4
    # The GPU's energy counter wins over sampled power when there is one.
    assert telemetry.aggregate(samples, 1000, energy_mj=150_000)["energy_j_per_token"] == pytest.approx(0.15)


def test_telemetry_without_nvml_is_all_null():
    got = telemetry.aggregate([], tokens=1000)
    assert got["telemetry_samples"] == 0
    assert all(got[k] is None for k in telemetry.FIELDS)
    sparse = telemetry.aggregate([sample(0.0, None, None, None, None, None)], 10)
    assert all(sparse[k] is None for k in telemetry.FIELDS)
    sampler = telemetry.Sampler(0)
    sampler.start()  # no GPU here: nothing to sample, nothing raised
    assert sampler.stop() == [] and sampler.energy_mj is None and sampler.error


def test_telemetry_worst_rank_decides():
    a = telemetry.aggregate([sample(0, 1980, 2619, 600, 60, 0), sample(1, 1980, 2619, 600, 61, 0)], 100)
    b = telemetry.aggregate([sample(0, 1500, 2619, 700, 80, 0x20), sample(1, 1600, 2619, 700, 82, 0)], 100)
    got = telemetry.combine_ranks([a, b, telemetry.aggregate([], 100)])
    assert got["sm_clock_mhz_min"] == 1500 and got["temp_c_max"] == 82
    assert got["throttle"] == ["sw_thermal"] and got["sm_clock_mhz_median"] == (1980 + 1550) / 2
    assert got["power_w_mean"] == 650 and got["telemetry_samples"] == 4
    assert got["energy_j_per_token"] == pytest.approx((6.0 + 7.0) / 2)
