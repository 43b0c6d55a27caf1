"""The forecast's pair classes, reciprocity, physical ceiling, stack priors and the H100/H200 case
(issue 52)."""
import itertools
import math
import re
import statistics

import pytest

import plot_results
from upgrade_bench.hardware import gpus
from upgrade_bench.report.forecast import backtest, calibration, model as forecast_model, series as forecasts, stacks
from upgrade_bench.report.published import pairs as published_pairs

SPECS = [spec for _pattern, spec in gpus._TABLE]


@pytest.fixture(scope="module")
def rows():
    return backtest.backtest(published_pairs.all_records())


def test_each_gpu_row_names_its_die_family_and_vendor_and_no_matmul_estimate_exceeds_its_peak():
    for spec in SPECS:
        assert spec.die and spec.family and spec.vendor in ("nvidia", "amd"), spec.name
        assert forecast_model.die_family(spec) == spec.family
        for dtype in ("bf16", "fp8"):
            sustained, _how = forecast_model.sustained_mamf(spec, dtype)
            if sustained:
                assert sustained <= spec.peak_tflops(dtype), (spec.name, dtype)
    assert gpus.lookup("B300").family == gpus.lookup("GB200").family == "blackwell"
    assert gpus.lookup("B300").die != gpus.lookup("B200").die
    # GB300 publishes no MAMF: its sibling's at its board power, never above its own peak
    assert forecast_model.sustained_mamf(gpus.lookup("GB300"), "bf16")[0] == pytest.approx(1822 * 1400 / 1200)


def test_power_buys_clock_only_where_the_baseline_ran_power_bound():
    b200, gb200, h100, h200 = (gpus.lookup(n) for n in ("B200", "GB200", "H100", "H200"))
    flat = forecast_model.hardware_ratios(b200, gb200)
    assert flat["gemm"].mid == pytest.approx(1822 / 1745)  # the MAMF ratio alone: no blanket power term
    # a baseline whose GEMMs ran power-bound at 80% of its maximum clock: the cube root of 1200/1000 W
    bound = forecast_model.hardware_ratios(b200, gb200, power_bound=0.8)
    gain = 1.2 ** (1 / 3)
    assert bound["gemm"].high == pytest.approx(1822 / 1745 * gain)
    assert bound["gemm"].mid == pytest.approx(1822 / 1745 * math.sqrt(gain))
    # at most back to its maximum clock: at 99% of it, 1/0.99
    assert forecast_model.hardware_ratios(b200, gb200, power_bound=0.99)["gemm"].high == pytest.approx(
        1822 / 1745 / 0.99)
    # the same watts (H100 and H200, 700 W) buy nothing, power-bound or not
    assert forecast_model.hardware_ratios(h200, h100, power_bound=0.89)["gemm"].mid == pytest.approx(1.0)
    # one die both ways: other kernels between the HBM ratio and the clock's, each direction the other's inverse
    up, down = forecast_model.hardware_ratios(h100, h200), forecast_model.hardware_ratios(h200, h100)
    assert up["other"].mid * down["other"].mid == pytest.approx(1.0)
    assert up["other"].mid == pytest.approx(math.sqrt(4.8 / 3.35))


def _like_parts(base: str, cand: str, parts: dict, dense_tflop: float) -> tuple:
    """(speedup of cand over base, cand's parts) of a step of `parts` forecast with ratios_at."""
    r = forecasts.ratios_at(base, cand, 8192, parts, dense_tflop, False, "fa4")
    f = forecast_model.scale(parts, r)
    return sum(parts.values()) / f.step_ms, {b: ms / r[b].mid for b, ms in parts.items()}


@pytest.mark.parametrize("base_parts", [
    {"attention": 30.0, "dense": 250.0, "host": 20.0},              # a right-sized 8K step
    {"attention": 900.0, "gemm": 500.0, "other": 120.0, "host": 5.0},  # a long-context decomposition
])
def test_every_pair_of_the_table_forecasts_the_same_answer_both_ways(base_parts):
    # for every GPU pair of the table, forecast(A -> B) x forecast(B -> A), the second made from a
    # like folder (the first's forecast step), is within 3% of 1 (the ratios alone: no calibration)
    for a, b in itertools.permutations([s.name for s in SPECS], 2):
        there, like = _like_parts(a, b, base_parts, 100.0)
        back, _ = _like_parts(b, a, like, 100.0)
        assert there * back == pytest.approx(1.0, abs=0.03), (a, b, there, back)


def test_a_correction_corrects_only_pairs_of_its_own_two_gpus_and_agrees_both_ways():
    def row(pair, source, base, cand, forecast, published, group="same die, dense"):
        return {"pair": pair, "source_key": source, "group": group, "pair_class": group.rsplit(", ", 1)[0],
                "base_gpu": base, "cand_gpu": cand, "model_forecast": forecast, "published": published}
    rows = [row("a", "s1", "B200 SXM", "GB200", 100, 110), row("b", "s1", "B200 SXM", "GB200", 100, 120),
            row("c", "s2", "GB200", "B200 SXM", 100, 90), row("d", "s2", "H100 SXM", "H200 SXM", 100, 101),
            row("e", "s3", "H100 SXM", "B200 SXM", 100, 150, "same vendor, another die, dense")]
    cal = calibration.fit(rows, "same die, dense")
    misses = [math.log(1.1), math.log(1.2), math.log(0.9), math.log(1.01)]
    assert cal.fallback == "" and cal.half == pytest.approx(
        sorted(map(abs, misses))[2] + (sorted(map(abs, misses))[3] - sorted(map(abs, misses))[2]) * 0.7)
    there, back = cal.for_pair("B200 SXM", "GB200"), cal.for_pair("GB200", "B200 SXM")
    # three pairs of these two GPUs (one the other way round, its miss negated): corrected, both ways agreeing
    assert there.shift == pytest.approx(statistics.median([math.log(1.1), math.log(1.2), -math.log(0.9)]))
    assert back.shift == pytest.approx(-there.shift) and there.gpus == ("B200 SXM", "GB200")
    # no correction for a pair whose GPUs the fit did not include, nor for another class's group
    assert cal.for_pair("H100 SXM", "H200 SXM").shift == 0.0
    assert "not corrected" in cal.for_pair("H100 SXM", "H200 SXM").words()
    # left out, a group of too few pairs takes its class's, then every pair, and says which
    thin = calibration.fit(rows, "same die, MoE", leave_out_source="s3")
    assert thin.fallback == "class" and {m.pair for m in thin.misses} == {"a", "b", "c", "d"}
    lone = calibration.fit(rows, "cross-vendor, dense", leave_out_source="s1")
    assert lone.fallback == "all" and "too few pairs of its class" in lone.words()


def test_the_backtest_leaves_whole_sources_out_and_states_coverage_per_class(rows):
    sources = {r["source_key"] for r in rows}
    assert {"guide", "nemo-framework", "project"} <= sources
    releases = {s for s in sources if s.startswith("megatron-bridge ")}
    assert releases >= {"megatron-bridge 25.09", "megatron-bridge 26.06"}
    # each row's range comes from the other sources alone: recomputed without its source, the same
    for r in rows[::5]:
        others = [dict(o) for o in rows if o["source_key"] != r["source_key"]]
        cal = calibration.fit(others, r["group"]).for_pair(r["base_gpu"], r["cand_gpu"])
        assert (r["forecast"], r["forecast_low"], r["forecast_high"]) == pytest.approx(
            tuple(min(x, r["ceiling"]) for x in cal.apply(r["model_forecast"])))
    # the project's H100/H200 pair, both directions, is a pair the backtest knows
    assert {r["gpus"] for r in rows if r["source_key"] == "project"} == {"H100 SXM -> H200 SXM", "H200 SXM -> H100 SXM"}
    table = backtest.class_table(rows)
    assert table.splitlines()[0].startswith("| class | pairs | figures | forecast error | inside range |")
    same_die = [r for r in rows if r["pair_class"] == calibration.SAME_DIE]
    assert sum(map(backtest.inside, same_die)) >= 0.8 * len(same_die)


def test_no_forecast_end_exceeds_what_the_candidates_hardware_can_give_the_step(rows):
    for r in rows:
        assert max(r["forecast"], r["forecast_low"], r["forecast_high"]) <= r["ceiling"] * (1 + 1e-9), r["pair"]
    # the H200 -> H100 ceiling: the same peak, less bandwidth, the same watts: no faster than the H200
    hw = forecasts.ratios_at("H200 SXM", "H100 SXM", 8192, {"attention": 30, "gemm": 170, "other": 90, "host": 10},
                             100.0, False, "fa4")
    assert forecast_model.ceiling(hw, {"attention": 30, "gemm": 170, "other": 90, "host": 10}) == pytest.approx(1.0)


def test_a_cross_vendor_forecast_says_which_stack_prior_it_used():
    h100, mi300x, b200 = (gpus.lookup(n) for n in ("H100", "MI300X", "B200"))
    assert stacks.cross_stack(h100, b200, "bf16", "dense") == (1.0, 0.0, "")  # one vendor: the buyer's stack moves
    factor, widen, words = stacks.cross_stack(h100, mi300x, "fp8", "dense")
    assert factor == 1.0 and widen == pytest.approx(stacks.widest_spread() + stacks.priors()[
        (stacks.NEMO, "fp8", "dense")].spread)
    assert "none published here for AMD ROCm" in words
    nemo = stacks.priors()[(stacks.NEMO, "fp8", "dense")]
    assert 0.2 < nemo.low <= nemo.mid <= nemo.high < 0.6 and nemo.figures >= 10
    # no MLPerf figure is a prior: its results are the forecast's independent check
    assert not any("mlperf" in str(f).lower() for f in stacks.figures())


@pytest.mark.parametrize("folder, cand, measured_speedup, word", [
    ("results/h100-node-10/node", "H200", 424.1 / 386.6, "dearer"),
    ("results/h200-precision-7/node", "H100", 386.6 / 424.1, "cheaper"),
])
def test_the_measured_h100_h200_pair_is_held_by_the_forecast_both_ways(folder, cand, measured_speedup, word,
                                                                       tmp_path, capsys):
    assert plot_results.main([folder, "--price", "H200=3.50", "--price", "H100=2.40", "--forecast", cand,
                              "--out", str(tmp_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if re.match(rf"  {cand}\d* SXM forecast +8K", x))
    low, high, call = re.search(r"(\d\.\d\d)-(\d\.\d\d)x (\w+)", line).groups()
    assert float(low) <= measured_speedup <= float(high) and call == word, line
    assert re.search(r"\$\d\.\d\d-\d\.\d\d/h", line)  # the break-even price is a range
