"""The reconfigured forecast: which plans the candidate's memory holds, their memory estimate by
hand, what each changes in the step, and the label the page shows; on the guide's H200 sweep
(B200) and on a B200 series forecast for a B300 and a GB200."""
import numpy as np
import pytest

from upgrade_bench.hardware import gpus
from upgrade_bench.report.forecast import backtest, calibration, model as forecast_model, series as forecasts, reconfig as forecast_reconfig
from upgrade_bench.report.page import forecast as forecast_page
from upgrade_bench.report.forecast import reconfig as forecast_reconfig
from upgrade_bench.report.published import guide as published
from upgrade_bench.report.read.series import Series

GIB = 2**30


def guide_sweep() -> Series:
    run = backtest._runs(published.guide_reference_records())["guide-h200-sweep"]
    return Series("H200 SXM", "NVIDIA H200", "fa3", run["header"]["config"], "", None, 989.0, 141.0,
                  points=run["summary"], label="H200 SXM fa3 (the guide's)")


def test_activations_come_from_the_series_own_peaks_and_the_models_shapes():
    s = guide_sweep()
    tokens = [n for n in sorted(s.points)]
    slope = np.polyfit(tokens, [s.points[n]["peak_mem_gib"] for n in tokens], 1)[0]
    assert forecast_reconfig.activation_slope_gib(s.points) == pytest.approx(slope)
    assert slope == pytest.approx(0.00043, rel=0.01)  # the guide's own line: 12.6 GiB + 0.00043 GiB/token
    # without checkpointing, per layer of Llama-3.1-8B and token: 5 x 4096 (norms' and
    # projections' inputs, attention output) + 6144 (q, k, v) + 3 x 14336 (gate, up, product), bf16
    per_token = 32 * (5 * 4096 + 6144 + 3 * 14336) * 2 / GIB
    spec = forecast_reconfig.model_spec(s.config)
    assert forecast_reconfig.no_checkpoint_gib_per_token(spec) == pytest.approx(per_token)
    cut = forecast_reconfig.model_spec({**s.config, "NUM_LAYERS": 8})
    assert forecast_reconfig.no_checkpoint_gib_per_token(cut) == pytest.approx(per_token / 4)
    assert forecast_reconfig.model_spec({"MODEL": "some/hub-model"}) is None
    # a MODEL a log spells as a path is no preset's name: nothing outside configs/ is read
    assert forecast_reconfig.model_spec({"MODEL": "../configs/llama-3.1-8b"}) is None
    assert forecast_reconfig.model_spec({"MODEL": {"x": 1}, "NUM_LAYERS": "8"}) is None


def test_a_plan_scales_the_work_and_keeps_what_a_step_pays_once():
    parts = {"attention": 90.0, "dense": 400.0, "fixed": 200.0}
    plan = forecast_reconfig.Plan(("ckpt off", "batch 2"), 100.0, 2, True)
    assert forecast_reconfig.planned_parts(parts, plan) == pytest.approx(
        {"attention": 90 * 3.5 / 4.5 * 2, "dense": 400 * 6 / 8 * 2, "fixed": 200.0})
    assert plan.label == "reconfigured: ckpt off, batch 2"


def test_the_guides_h200_sweep_reconfigured_for_the_b200():
    s = guide_sweep()
    cal = calibration.calibration(backtest.backtest(published.guide_reference_records()))
    fc = forecast_reconfig.forecast_reconfigured(s, "B200 SXM", {}, cal)
    by = {r.seq_len: r for r in fc.reconfigured}
    slope = forecast_reconfig.activation_slope_gib(s.points)
    no_ckpt = forecast_reconfig.no_checkpoint_gib_per_token(forecast_reconfig.model_spec(s.config))
    # 8K: the B200's memory drops recomputation and takes a micro-batch of 4: 16.3 GiB less the
    # checkpointed activations, plus four times every layer's; 90% of the H200's 141 GiB does not hold it
    eight = by[8192]
    assert eight.plan.label == "reconfigured: ckpt off, batch 4"
    assert eight.plan.peak_gib == pytest.approx(16.3 - slope * 8192 + 4 * no_ckpt * 8192)
    assert 0.9 * 141 < eight.plan.peak_gib <= 0.9 * 180 and not eight.fits_baseline
    like = {r.seq_len: r for r in fc.rows}
    assert eight.speedup[0] > 2 * like[8192].speedup[0]  # the CPU-offloaded step's fixed time, amortised
    # 256K: no plan fits (a micro-batch of 2 needs 124.5 + 112.6 GiB): the like-for-like forecast stands
    assert 262144 not in by
    # a plan the H200 holds too says so
    assert all(r.fits_baseline == (r.plan.peak_gib <= 0.9 * 141) for r in fc.reconfigured)
    page = forecast_page.forecast_markdown(fc)
    assert "**Reconfigured forecast from H200 SXM fa3 (the guide's), not measured**" in page
    assert "| 8K | reconfigured: ckpt off, batch 4 | 148.8 | no |" in page


def b200_series() -> Series:
    """A measured B200 sweep, 8 GPUs, no checkpointing: its step a fixed 200 ms plus 3 ms per
    attention TFLOP and 1 per dense TFLOP, its peak 150 GiB plus 5 GiB per 4096 tokens."""
    points = {}
    for n in (4096, 8192, 16384):
        tflop, share = n / 10, n / (n + 65536)
        step_ms = 3 * tflop * share + tflop * (1 - share) + 200
        points[n] = {"seq_len": n, "step_ms": step_ms, "tflops_per_gpu": tflop / step_ms * 1e3,
                     "model_tflop_per_step": tflop, "attn_flop_share": share, "peak_mem_gib": 150 + 5 * n / 4096,
                     "batch_size": 1}
    config = {"MODEL": "llama-3.1-8b", "GRAD_CHECKPOINT": False, "ZERO_STAGE": 3, "world_size": 8}
    return Series("B200 SXM", "NVIDIA B200", "fa4", config, "", None, 2250.0, 180.0, points=points, label="B200 fa4")


@pytest.mark.parametrize("cand, plans", [
    # B300 (288 GB, 90% of it 259 GiB): a micro-batch of 4 at every length (170, 190 and 230 GiB)
    ("B300 SXM", {4096: ("reconfigured: batch 4", 170.0), 8192: ("reconfigured: batch 4", 190.0),
                  16384: ("reconfigured: batch 4", 230.0)}),
    # GB200 (186 GB, 167.4 GiB): only 4K's micro-batch of 2 (160 GiB), which the B200's 162 GiB holds too
    ("GB200", {4096: ("reconfigured: batch 2", 160.0)}),
])
def test_a_b200_series_reconfigured_for_a_b300_and_a_gb200(cand, plans):
    s = b200_series()
    fc = forecast_reconfig.forecast_reconfigured(s, cand, {}, {})
    assert {r.seq_len: (r.plan.label, r.plan.peak_gib) for r in fc.reconfigured} == pytest.approx(plans)
    assert all(r.fits_baseline == (r.plan.peak_gib <= 0.9 * 180) for r in fc.reconfigured)
    like = {r.seq_len: r for r in fc.rows}
    for r in fc.reconfigured:  # more tokens a second than the like-for-like forecast, from amortising the 200 ms
        assert r.speedup[0] > like[r.seq_len].speedup[0]
        assert r.tflops[0] == pytest.approx(s.points[r.seq_len]["tflops_per_gpu"] * r.speedup[0])
    # the platform the forecast used: the B200's HGX board against the candidate's
    page = forecast_page.forecast_markdown(fc)
    spec = gpus.lookup(cand)
    assert f"Platform: B200 SXM HGX, 1000 W, NVLink domain 8 -> {forecast_model.platform_words(spec)}" in page
    # the GB200 carries its own Grace CPU where the B200's board runs on the server's: the page says so
    moved = "the host CPU changes here: the server's host CPU -> the GB200's Grace CPU"
    assert (moved in page) == (cand == "GB200") and ("Grace CPU" in page) == (cand == "GB200")


def h200_series(label: str, config: dict, step_ms: dict, peak_gib: dict) -> Series:
    """A measured 8-GPU H200 series of Llama-3.1-8B: its steps and peaks per length."""
    points = {n: {"seq_len": n, "step_ms": ms, "tflops_per_gpu": n / 10 / ms * 1e3, "model_tflop_per_step": n / 10,
                  "attn_flop_share": n / (n + 65536), "peak_mem_gib": peak_gib[n], "batch_size": 1}
              for n, ms in step_ms.items()}
    config = {"MODEL": "llama-3.1-8b", "NUM_LAYERS": 0, "world_size": 8, **config}
    return Series("H200 SXM", "NVIDIA H200", "fa3", config, "", None, 989.0, 141.0, points=points, label=label)


def test_a_configuration_the_baseline_measured_is_a_reconfiguration_forecast_from_its_own_run():
    long = h200_series("long", {"ZERO_STAGE": 3, "OFFLOAD_OPTIMIZER": True, "GRAD_CHECKPOINT": True},
                       {8192: 2990.0, 32768: 7160.0, 65536: 16186.0}, {8192: 16.3, 32768: 25.8, 65536: 37.5})
    right = h200_series("right-sized", {"ZERO_STAGE": 2, "OFFLOAD_OPTIMIZER": False, "GRAD_CHECKPOINT": False},
                        {8192: 914.0, 16384: 2000.0, 32768: 4300.0}, {8192: 80.0, 16384: 100.0, 32768: 130.0})
    other_model = h200_series("cut", {"ZERO_STAGE": 2, "NUM_LAYERS": 8}, {8192: 300.0}, {8192: 20.0})
    alternatives = forecast_reconfig.alternatives_of(long, [long, right, other_model])
    assert alternatives == [(right, ("ckpt off", "offload off", "ZeRO-2"))]  # another cut is another workload
    fc = forecast_reconfig.forecast_reconfigured(long, "B200 SXM", {}, {}, alternatives=alternatives)
    by = {r.seq_len: r for r in fc.reconfigured}
    # 8K: the right-sized run, forecast from its own split, counted in the long run's tokens a second
    own = {r.seq_len: r for r in forecast_reconfig.forecast_reconfigured(right, "B200 SXM", {}, {}).rows}
    eight = by[8192]
    assert eight.plan.label == "reconfigured: ckpt off, offload off, ZeRO-2 (measured as right-sized)"
    assert eight.plan.peak_gib == 80.0 and eight.fits_baseline
    assert eight.speedup == pytest.approx(tuple(2990.0 / 914.0 * x for x in own[8192].speedup))
    assert eight.memory_how.startswith("measured: the peak of right-sized at this length")
    # a candidate with less memory than the measured peak takes none of it: an H100's 80 GB
    small = forecast_reconfig.forecast_reconfigured(long, "H100 SXM", {}, {}, alternatives=alternatives)
    assert not any(r.plan.measured for r in small.reconfigured)
