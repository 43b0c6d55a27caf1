"""The forecast's pair classes, reciprocity, physical ceiling, stack priors and the H100/H200 case
(issue 52)."""
import dataclasses
import itertools
import json
import math
import re

import pytest

import plot_results
from upgrade_bench.hardware import gpus
from upgrade_bench.paths import REPO
from upgrade_bench.report.forecast import attention as forecast_attention, backtest, calibration, \
    model as forecast_model, series as forecasts, stacks
from upgrade_bench.report.published import pairs as published_pairs

SPECS = gpus.specs()


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


# the fp8 MAMF's share of the fp8 peak over the bf16 one's, on each part publishing both (the Open Book's table)
FP8_OVER_BF16 = sorted((fp8 / fp8_peak) / (bf16 / bf16_peak) for fp8, fp8_peak, bf16, bf16_peak in (
    (1402.6, 1979, 794.5, 989), (1453.4, 1979, 794.5, 989), (1535.0, 1979, 828.6, 989),  # H100, H200, GH200
    (3615.6, 5000, 1822.0, 2500), (3353.3, 4500, 1769.0, 2250), (3432.5, 4500, 1745.0, 2250)))  # GB200, B300, B200


def test_a_part_without_an_fp8_mamf_keeps_its_bf16_share_of_peak_as_the_parts_publishing_both_do():
    median = (FP8_OVER_BF16[2] + FP8_OVER_BF16[3]) / 2
    assert forecast_model.cross_precision_share("bf16", "fp8") == pytest.approx(median)
    # the MI325X: 784.9 of its 1300 bf16 peak, so about 56.6% of its 2610 fp8 peak; no sibling has one
    mamf, how = forecast_model.sustained_mamf(gpus.lookup("MI325X"), "fp8")
    assert mamf == pytest.approx(2610 * 784.9 / 1300 * median) and "its bf16 MAMF's 60.4% of peak" in how
    # a published figure or a sibling's comes first: the H100's own, the GB300's from the GB200
    assert forecast_model.sustained_mamf(gpus.lookup("H100"), "fp8") == (1402.6, "")
    assert forecast_model.sustained_mamf(gpus.lookup("GB300"), "fp8")[0] == pytest.approx(3615.6 * 1400 / 1200)
    assert forecast_model.sustained_mamf(gpus.lookup("A100 SXM"), "fp8") == (None, "")  # no fp8 at all


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


def _records(folder: str, name: str) -> list:
    return [json.loads(line) for line in (REPO / folder / name).read_text().splitlines()]


H100_FOLDER, H200_FOLDER = "results/h100-node-10/node", "results/h200-precision-7/node"


def test_attention_on_one_die_moves_with_the_sustained_clock_as_the_gemms_do():
    h100, h200, b200, gb200 = (gpus.lookup(n) for n in ("H100", "H200", "B200", "GB200"))
    # H100 <-> H200: one die, the same MAMF, the same watts: 1.0x both ways (not 1.2x between HBM and peak)
    for base, cand in ((h100, h200), (h200, h100)):
        att = forecast_model.attention_ratio(forecast_model.hardware_ratios(base, cand))
        assert (att.mid, att.low, att.high) == pytest.approx((1.0, 1.0, 1.0)) and "one die" in att.source
    # B200 -> GB200: the MAMF ratio; where the baseline ran power-bound, times the clock its watts buy
    assert forecast_model.attention_ratio(forecast_model.hardware_ratios(b200, gb200)).mid == pytest.approx(
        1822 / 1745)
    bound = forecast_model.attention_ratio(forecast_model.hardware_ratios(b200, gb200, power_bound=0.8))
    assert bound.mid == pytest.approx(1822 / 1745 * math.sqrt(1.2 ** (1 / 3)))
    assert bound.high == pytest.approx(1822 / 1745 * 1.2 ** (1 / 3)) and bound.high <= 1.2  # at most the power ratio
    # another die keeps the HBM-to-peak span (H200 -> B200: published kernels aside)
    across = forecast_model.attention_ratio(forecast_model.hardware_ratios(h200, b200))
    assert across.mid == pytest.approx((8.0 / 4.8 * 2250 / 989) ** 0.5)
    # what both folders measured (bench_flash_attn.py, fwd+bwd, one stack): the H200 ran fa4 and cuDNN
    # attention at 0.99-1.03x the H100 at 8K and 32K, where the HBM ratio is 1.43x
    h100_recs, h200_recs = _records(H100_FOLDER, "attention.jsonl"), _records(H200_FOLDER, "attention.jsonl")
    for backend in ("fa4", "sdpa-cudnn"):
        table = forecast_attention.measured_attention_table(h100_recs, h200_recs, backend, backend)
        assert set(table) == {8192, 32768}
        assert all(0.99 <= r.mid <= 1.03 for r in table.values()), (backend, table)


def test_a_decompositions_gemm_kernels_below_mamf_move_as_the_other_kernels():
    h100, h200 = gpus.lookup("H100"), gpus.lookup("H200")
    up = forecast_model.hardware_ratios(h100, h200)
    other = math.sqrt(4.8 / 3.35)  # one die: between the HBM ratio and the clock's (1.0)
    # 80% of the GEMM kernels' time is what their FLOPs need at MAMF: that at 1.0x, the rest as other kernels
    mixed = forecast_model.gemm_kernels_ratio(up, 0.8)
    assert mixed.mid == pytest.approx(1 / (0.8 / 1.0 + 0.2 / other)) and mixed.high == pytest.approx(mixed.mid)
    assert forecast_model.gemm_kernels_ratio(up, 1.0) is up["gemm"] and forecast_model.gemm_kernels_ratio(
        up, None) is up["gemm"]
    # both folders' 8K decompositions, by hand: the H100's GEMM kernels took 172.2 ms for 111.58 TFLOP, 81%
    # of it what MAMF (794.5) needs; the H200's took 166.2 (1.036x); the rule says 1.031x, and about the inverse back
    decs = {f: next(r for r in _records(f, "decompose.jsonl") if r.get("kind") == "decomposition" and
                    r["seq_len"] == 8192)["buckets"]["gemm"] for f in (H100_FOLDER, H200_FOLDER)}
    h100_gemm, h200_gemm = decs[H100_FOLDER], decs[H200_FOLDER]
    share = forecast_model.gemm_share(h100_gemm["tflop"], h100_gemm["kernel_ms_per_step"], 794.5, False)
    forecast = forecast_model.gemm_kernels_ratio(up, share).mid
    measured = h100_gemm["kernel_ms_per_step"] / h200_gemm["kernel_ms_per_step"]
    assert forecast == pytest.approx(measured, rel=0.01) and forecast == pytest.approx(1.031, abs=0.002)
    down = forecast_model.hardware_ratios(h200, h100)
    back = forecast_model.gemm_kernels_ratio(down, forecast_model.gemm_share(
        h200_gemm["tflop"], h200_gemm["kernel_ms_per_step"], 794.5, False)).mid
    assert back == pytest.approx(1 / measured, rel=0.01)


def test_the_backtest_scores_everything_else_as_the_sum_of_its_parts(rows):
    # "everything else" of the project's H100 8K decomposition holds its GEMM and other kernels: forecast as
    # the step forecasts them (each at its own ratio), not by one dense ratio
    run = backtest._runs(published_pairs.all_records())["project-h100-node-10"]
    dec = run["decomposition"][8192]
    parts = forecast_model.bound_parts(dec)
    r = forecasts.ratios_at("H100 SXM", "H200 SXM", 8192, parts, dec["everything_else"]["tflop"], False, "fa4")
    rest = parts["gemm"] + parts["other"]
    by_hand = dec["everything_else"]["tflops"] * rest / (parts["gemm"] / r["gemm"].mid + parts["other"] / r["other"].mid)
    row = next(x for x in rows if x["pair"] == "project-h100-node-10 -> project-h200-precision-7"
               and x["metric"] == "everything_else_tflops")
    assert row["model_forecast"] == pytest.approx(by_hand)
    assert row["model_error"] == pytest.approx(0.018, abs=0.005)  # 417.6 forecast, 410.2 measured


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


@pytest.mark.parametrize("config", [{}, {"PRECISION": "fp8-tensorwise"}])
def test_every_cross_vendor_pair_with_its_stack_priors_forecasts_the_same_answer_both_ways(config):
    # a page's baseline on each vendor's part (its own stack: this project's on NVIDIA, ROCm's on AMD), the
    # candidate on its vendor's stack: the stack factors too give A -> B x B -> A within 3% of 1
    parts, precision = {"attention": 30.0, "dense": 250.0, "host": 20.0}, calibration.precision_of(config)
    kind = calibration.workload_kind(0.1, precision)

    def speedup(base: str, cand: str, base_parts: dict) -> tuple:
        r = forecasts.ratios_at(base, cand, 8192, base_parts, 100.0, False, "fa4", precision=precision)
        model = sum(base_parts.values()) / forecast_model.scale(base_parts, r).step_ms
        _cal, factor, _allowance = forecasts.group_and_stack(base, cand, config, {}, kind, model)
        return model * factor, {b: ms / (r[b].mid * factor) for b, ms in base_parts.items()}
    applied = 0
    for a, b in itertools.permutations([s for s in SPECS if s.peak_tflops(precision)], 2):
        if a.vendor == b.vendor:
            continue
        there, like = speedup(a.name, b.name, parts)
        back, _ = speedup(b.name, a.name, like)
        assert there * back == pytest.approx(1.0, abs=0.03), (a.name, b.name, there, back)
        applied += "applied" in forecasts.group_and_stack(a.name, b.name, config, {}, kind, 1.0)[0].stack
    assert applied > 0 or precision == "bf16"  # fp8: both vendors' priors published, the factors at work


def _row(pair, source, forecast, published, group="same-generation refresh, dense", **more):
    return {"pair": pair, "source_key": source, "group": group, "pair_class": group.rsplit(", ", 1)[0],
            "base_gpu": "B200 SXM", "cand_gpu": "B300 SXM", "model_forecast": forecast, "published": published,
            **more}


def test_a_range_is_a_split_conformal_interval_of_the_other_sources_signed_misses():
    other = "same-generation refresh, dense"
    # ten pairs of one group, misses -5% .. +40%: ranks ceil(11 x 0.9) = 10 from either end
    pubs = [95, 99, 100, 101, 103, 105, 108, 110, 120, 140]
    rows = [_row(f"p{i}", f"s{i % 3}", 100, p) for i, p in enumerate(pubs)]
    cal = calibration.fit(rows, other)
    assert cal.fallback == "" and len(cal.misses) == 10
    assert (cal.low, cal.high) == pytest.approx((math.log(0.95), math.log(1.40)))  # asymmetric, no correction
    assert cal.apply(200.0) == pytest.approx((200.0, 190.0, 280.0))
    assert cal.step_ms(100.0) == pytest.approx((100.0, 100 / 1.4, 100 / 0.95))
    # eleven pairs: rank ceil(12 x 0.9) = 11 of 11 still; 19 pairs: rank 18, one in from each end
    many = [_row(f"q{i}", "s", 100, 100 + i) for i in range(19)]
    wide = calibration.fit(many, other)
    assert wide.high == pytest.approx(math.log(1.17)) and wide.low == pytest.approx(-calibration.MIN_HALF_WIDTH)
    # left out, a group of too few pairs takes its class's, then every pair, and says which
    thin = calibration.fit(rows + [_row("m", "s9", 100, 90, "same-generation refresh, MoE")],
                           "same-generation refresh, MoE")
    assert thin.fallback == "class" and len(thin.misses) == 11
    lone = calibration.fit(rows, "cross-vendor, dense")
    assert lone.fallback == "all" and "too few pairs of its class" in lone.words()
    # a pair of two sources (a cross-vendor pair) leaves with either: its baseline's source too
    two = rows + [_row("x", "s5", 100, 300, base_source_key="s6")]
    assert [m.pair for m in calibration.pair_misses(two, "s6") if m.pair == "x"] == []
    assert calibration.fit(two, other, leave_out_source="s6").high == pytest.approx(math.log(1.40))


def test_a_next_generation_range_takes_the_moves_pairs_whose_recipe_changed_but_an_moe_steps():
    nxt, changed = "next generation, dense", "configuration changed, dense"
    move = {"move": calibration.NEXT_GENERATION}
    # two like-for-like next-generation pairs, eight whose dense recipe changed with the move, one MoE step's,
    # two refresh pairs: the group is the ten of the move that are not the MoE step's
    rows = ([_row(f"n{i}", "s1", 100, p, nxt, step="dense", **move) for i, p in enumerate((96, 101))]
            + [_row(f"c{i}", "s2", 100, p, changed, step="dense", **move)
               for i, p in enumerate((84, 88, 93, 97, 100, 102, 104, 108))]
            + [_row("moe", "s2", 100, 50, "configuration changed, MoE", step="MoE", **move)]
            + [_row(f"r{i}", "s3", 100, 130, step="dense", move=calibration.REFRESH) for i in range(2)])
    cal = calibration.fit(rows, nxt)
    assert cal.fallback == "" and sorted(m.pair for m in cal.misses) == sorted(
        [f"n{i}" for i in range(2)] + [f"c{i}" for i in range(8)])
    # ten pairs: rank ceil(11 x 0.9) = 10, the extremes; said with how many changed their recipe
    assert (cal.low, cal.high) == pytest.approx((math.log(0.84), math.log(1.08)))
    assert "8 of those pairs with the publisher's recipe changed" in cal.words()
    # the configuration-changed pairs keep their own class's range: the next generation's rule is its own
    own = calibration.fit(rows, changed)
    assert own.fallback == "class" and {m.pair for m in own.misses} == {f"c{i}" for i in range(8)} | {"moe"}


def test_a_pair_s_class_is_read_off_the_gpu_table_s_die_and_die_family():
    cls = {f"{a} -> {b}": calibration.pair_class(gpus.lookup(a), gpus.lookup(b)) for a, b in (
        ("H100", "H200"), ("B200", "GB200"), ("MI300X", "MI325X"), ("B200", "B300"), ("GB200", "GB300"),
        ("H100", "B200"), ("H200", "GB300"), ("MI300X", "MI355X"), ("H100", "MI300X"))}
    assert cls == {"H100 -> H200": calibration.SAME_DIE, "B200 -> GB200": calibration.SAME_DIE,
                   "MI300X -> MI325X": calibration.SAME_DIE, "B200 -> B300": calibration.REFRESH,
                   "GB200 -> GB300": calibration.REFRESH, "H100 -> B200": calibration.NEXT_GENERATION,
                   "H200 -> GB300": calibration.NEXT_GENERATION, "MI300X -> MI355X": calibration.NEXT_GENERATION,
                   "H100 -> MI300X": calibration.CROSS_VENDOR}
    assert calibration.pair_class(gpus.lookup("H100"), gpus.lookup("H200"), True) == calibration.CONFIG_CHANGED


def test_a_same_die_pair_read_both_ways_is_one_pair():
    same = "same die, dense"
    # a -> b missed +4%, its mirror b -> a -2%: one pair of miss +3% (the mirror's negated, the mean)
    rows = [_row("a -> b", "s", 100, 104, same), _row("b -> a", "s", 100, 98, same),
            _row("c -> d", "s", 100, 101, same)]
    cal = calibration.fit(rows, same)
    assert len(cal.misses) == 2
    assert sorted(m.value for m in cal.misses) == pytest.approx(sorted(
        [(math.log(1.04) - math.log(0.98)) / 2, math.log(1.01)]))


def test_a_same_die_range_is_symmetric_and_honest_with_few_pairs():
    same = "same die, dense"
    # four pairs, misses +2%, -3%, +5%, -1%: |miss| of rank ceil(5 x 0.8) = 4: the largest, either way
    four = [_row(f"d{i}", "s", 100, p, same) for i, p in enumerate((102, 97, 105, 99))]
    cal = calibration.fit(four, same)
    assert (cal.low, cal.high) == pytest.approx((-math.log(1.05), math.log(1.05)))
    assert "rank 4 of 4" in cal.words()
    # two pairs: no conformal rank (ceil(3 x 0.8) = 3 > 2): Student-t, 2 degrees of freedom, x RMS
    two = four[:2]
    rms = math.sqrt((math.log(1.02) ** 2 + math.log(0.97) ** 2) / 2)
    assert calibration.fit(two, same).high == pytest.approx(1.886 * rms)
    assert "Student-t" in calibration.fit(two, same).words()
    # one stack on both sides: a pair across releases does not range it
    assert calibration.fit(two + [_row("r", "s", 100, 150, same, software_differs=True)], same).high == (
        pytest.approx(1.886 * rms))


def test_a_pair_across_releases_is_widened_by_what_a_release_moves(rows):
    runs = backtest._runs(published_pairs.all_records())
    moves = backtest.release_pairs(runs)
    # one GPU, configuration and model in two Megatron-Bridge releases: the H100's Llama 3 8B, 725 -> 744
    assert {s for s, _ in moves} == {"megatron-bridge"}
    assert any(m == pytest.approx(math.log(744 / 725)) for _, m in moves)
    assert backtest.release_half(runs, "megatron-bridge") == (0.0, "")
    half, words = backtest.release_half(runs, "nemo-framework")
    assert half == calibration.symmetric_half_width([m for _, m in moves])[0] and "release change" in words
    # NeMo's B200 (25.02) -> GB200 (25.04): the range and the ceiling carry that reach
    moved = next(r for r in rows if r["pair"] == "nemo-2502-llama3-8b-b200 -> nemo-2504-llama3-8b-gb200")
    assert moved["pair_class"] == calibration.SAME_DIE and "release change" in moved["calibrated_on"]
    assert backtest.inside(moved)
    # of every class: NeMo's H100 (24.07) -> B200 (25.02) Llama 3 70B changed its configuration too
    changed = next(r for r in rows if r["pair"] == "nemo-2407-llama3-70b-h100 -> nemo-2502-llama3-70b-b200")
    assert changed["pair_class"] == calibration.CONFIG_CHANGED and "release change" in changed["calibrated_on"]
    # one release on both sides, or two vendors' stacks (the stack priors' spreads range those): not widened
    assert not any("release change" in r["calibrated_on"] for r in rows
                   if not r["software_differs"] or r["move"] == calibration.CROSS_VENDOR)


def test_the_backtest_leaves_whole_sources_out_and_states_coverage_per_class(rows):
    sources = {r["source_key"] for r in rows}
    # one source per publisher or framework: a release's siblings never range it
    assert sources == {"guide", "megatron-bridge", "nemo-framework", "project", "amd-primus"}
    assert {"megatron-bridge 25.09", "megatron-bridge 26.06"} <= {r["release"] for r in rows}
    # each row's range comes from the other sources alone: recomputed without its source, the same;
    # a reconfigured pair's ends are not clipped by the like-for-like ceiling, only by the datasheet peak
    for r in rows[::5]:
        if r["pair_class"] == calibration.SAME_DIE and r["software_differs"]:
            continue  # widened by the release change as well (its own test)
        others = [dict(o) for o in rows if r["source_key"] not in (o["source_key"], o["base_source_key"])]
        cal = dataclasses.replace(calibration.fit(others, r["group"]), stack_half=r["stack_half"])
        top = r["datasheet_peak"] if r["pair_class"] == calibration.CONFIG_CHANGED else r["ceiling"]
        assert (r["forecast"], r["forecast_low"], r["forecast_high"]) == pytest.approx(
            tuple(min(x, top) for x in cal.apply(r["model_forecast"])))
    # the project's H100/H200 pair, both directions, is a pair the backtest knows
    assert {r["gpus"] for r in rows if r["source_key"] == "project"} == {"H100 SXM -> H200 SXM", "H200 SXM -> H100 SXM"}
    table = backtest.class_table(rows)
    assert table.splitlines()[0].startswith("| class | pairs | figures | forecast error | inside range |")


# Each class's coverage on left-out sources, as the backtest measures it today (docs/forecast.md
# says why a class falls short of 80%); a change that lowers one fails here.
COVERAGE_AT_LEAST = {calibration.SAME_DIE: 24 / 26, calibration.REFRESH: 1.0, calibration.NEXT_GENERATION: 1.0,
                     calibration.CONFIG_CHANGED: 0.9, calibration.CROSS_VENDOR: 1.0}


def test_each_class_covers_its_left_out_figures(rows):
    for klass, floor in COVERAGE_AT_LEAST.items():
        mine = [r for r in rows if r["pair_class"] == klass]
        assert mine and sum(map(backtest.inside, mine)) / len(mine) >= floor - 1e-9, klass
    assert sum(map(backtest.inside, rows)) / len(rows) >= 0.9
    assert backtest.median_abs_error(rows) <= 0.10
    # a same-die pair of one stack: half-width at most 8% (issue 52), each source left out in turn
    same = [r for r in rows if r["pair_class"] == calibration.SAME_DIE and not r["software_differs"]]
    assert same and max(r["half_width"] for r in same) <= 0.08


def test_cross_vendor_pairs_are_amds_published_figures_beside_nvidias_both_ways(rows):
    cross = [r for r in rows if {r["base_gpu"], r["cand_gpu"]} & {"MI325X"}]
    assert {r["gpus"] for r in cross} == {"B200 SXM -> MI325X", "MI325X -> B200 SXM", "H100 SXM -> MI325X",
                                          "MI325X -> H100 SXM"}
    like = [r for r in cross if r["pair_class"] == calibration.CROSS_VENDOR]
    assert {r["gpus"] for r in like} == {"B200 SXM -> MI325X", "MI325X -> B200 SXM"}
    # AMD publishes tokens/s/GPU: its TFLOP/s/GPU at NVIDIA's count of the same shapes (1576 / 30624 per token)
    mi325x = next(r for r in like if r["cand_gpu"] == "MI325X")
    assert mi325x["published"] == pytest.approx(16224 * 1576 / 30624)
    # forecast without AMD's own figures: no ROCm prior, the widest spread, and still inside
    assert "none published here for AMD ROCm" in mi325x["calibrated_on"] and backtest.inside(mi325x)


def test_the_terminal_summary_fits_100_columns_and_says_its_sources_whole(rows):
    text = backtest.backtest_summary(rows)
    assert max(map(len, text.splitlines())) <= 100
    flat = " ".join(text.split())
    assert "Sources: " in flat and flat.rstrip().endswith("one configuration).")
    for klass in (calibration.SAME_DIE, calibration.REFRESH, calibration.NEXT_GENERATION,
                  calibration.CONFIG_CHANGED):
        assert re.search(rf"^{klass} +\d+ +\d+ +\d+\.\d% +\d+/\d+ \d+% +\d+\.\d%$", text, re.M), klass


def test_a_pair_whose_expert_group_moves_onto_nvlink_is_not_like_for_like(rows):
    b200, gb200 = gpus.lookup("B200"), gpus.lookup("GB200")
    assert backtest.fabric_change({"EP": 64}, b200, gb200) == ["EP 64 over NVLink domain 8 vs 72"]
    assert backtest.fabric_change({"EP": 8}, b200, gb200) == []
    moved = next(r for r in rows if r["pair"] == "mb-2602-gpt-oss-120b-b200 -> mb-2602-gpt-oss-120b-gb200")
    assert moved["pair_class"] == calibration.CONFIG_CHANGED and "NVLink domain" in moved["differs"]


def test_no_forecast_end_exceeds_what_the_candidates_hardware_can_give_the_step(rows):
    for r in rows:
        if r["pair_class"] != calibration.CONFIG_CHANGED:  # another step than the baseline's: not bounded by it
            assert max(r["forecast"], r["forecast_low"], r["forecast_high"]) <= r["ceiling"] * (1 + 1e-9), r["pair"]
        # no step of any configuration outruns the candidate's datasheet peak (the H100 -> MI325X pair's high end
        # read 3244 TFLOPS against the MI325X's 2610 before)
        peak = gpus.lookup(r["cand_gpu"]).peak_tflops(calibration.precision_of({"PRECISION": r["kind"].split()[-1]}))
        assert max(r["forecast"], r["forecast_low"], r["forecast_high"]) <= peak, r["pair"]
    # honest, not tight: one die at more watts, the clock at most in proportion (B200 1000 W -> GB200 1200 W);
    # another die (GB200 -> GB300), the candidate's peak over the baseline's sustained matmuls
    b200, gb200, gb300 = (gpus.lookup(n) for n in ("B200", "GB200", "GB300"))
    assert forecast_model.hardware_ratios(b200, gb200, "fp8")["compute_top"].mid == pytest.approx(1.2)
    assert forecast_model.hardware_ratios(gb200, gb300, "fp8")["compute_top"].mid == pytest.approx(5000 / 3615.6)
    # GB200 -> GB300 on one recipe gained up to 1.24x (Megatron-Bridge 26.02, Llama 3 70B FP8): inside it
    llama = next(r for r in rows if r["pair"] == "mb-2602-llama3-70b-gb200 -> mb-2602-llama3-70b-gb300")
    assert llama["forecast_high"] >= llama["published"] and llama["ceiling"] > llama["published"]
    # the H200 -> H100 ceiling: the same peak, less bandwidth, the same watts: no faster than the H200
    hw = forecasts.ratios_at("H200 SXM", "H100 SXM", 8192, {"attention": 30, "gemm": 170, "other": 90, "host": 10},
                             100.0, False, "fa4")
    parts = {"attention": 30, "gemm": 170, "other": 90, "host": 10}
    assert forecast_model.ceiling(hw, parts) == pytest.approx(1.0)
    # a baseline node short of its reference (MAMF at 94%): a candidate at its own reference gives the clock-bound
    # parts that back; bandwidth-bound and host parts gain nothing from it
    assert forecast_model.ceiling(hw, parts, 0.94) == pytest.approx(1 / 0.94)
    assert forecast_model.ceiling(hw, {"other": 90, "host": 10}, 0.94) == pytest.approx(1.0)
    assert forecast_model.ceiling(hw, parts, 1.02) == pytest.approx(1.0)  # a node above its reference: no credit
    # the credit lifts compute bounds, never a bandwidth bound: H100 -> H200 attention, bounded by the HBM ratio
    up = forecasts.ratios_at("H100 SXM", "H200 SXM", 8192, {"attention": 1.0}, 0.0, False, "fa4")
    assert forecast_model.ceiling(up, {"attention": 1.0}, 0.958) == pytest.approx(4.8 / 3.35)


def test_the_backtest_credits_the_baseline_nodes_shortfall_in_its_ceiling(rows):
    # the H200 node ran its MAMF at 748.4 of the published 794.5 TFLOPS (power-capped), the first H100 at 780.9:
    # from the H200, the H100's attention kernels ran 460.4 TFLOPS against the H200's 442.1, past a ceiling of
    # like nodes (the same die and watts: 1.0x) and inside one that credits the H200's shortfall
    h200 = backtest.node_health("project-h200-precision-7")
    assert h200.share == pytest.approx(748.43 / 794.5, abs=1e-4)
    assert backtest.node_health("mb-2602-llama3-70b-gb200") is None  # a published run: no node check
    row = next(x for x in rows if x["pair"] == "project-h200-precision-7 -> project-h100-node-10"
               and x["metric"] == "attention_tflops")
    assert row["ceiling"] == pytest.approx(442.09 / h200.share, rel=1e-3)
    assert row["published"] == pytest.approx(460.42, abs=0.01) and backtest.inside(row)


def test_a_cross_vendor_forecast_says_which_stack_prior_it_used():
    h100, mi300x, b200 = (gpus.lookup(n) for n in ("H100", "MI300X", "B200"))
    # one vendor: the buyer's stack moves
    assert stacks.cross_stack(h100, b200, "bf16", "dense", model_speedup=2.0) == stacks.SAME_STACK
    nemo, rocm = (stacks.priors()[(stack, "fp8", "dense")] for stack in (stacks.NEMO, stacks.ROCM))
    assert 0.2 < nemo.low <= nemo.mid <= nemo.high < 0.6 and nemo.figures >= 10
    # AMD's MI325X Llama 3.1 runs at NVIDIA's FLOP count: 8B 1 and 8 nodes, 70B; MFU over its 2610 fp8 peak,
    # the median the 8B's on 8 nodes; over the MI325X's fp8 MAMF (its bf16 share carried), about 56%
    assert rocm.figures == 3 and rocm.mid == pytest.approx(16186 * 1576 / 30624 / 2610)
    mi325x_fp8 = forecast_model.sustained_mamf(gpus.lookup("MI325X"), "fp8")[0]
    assert rocm.mamf_share == pytest.approx(16186 * 1576 / 30624 / mi325x_fp8)
    # the step at the MAMF ratio times the stacks' shares of MAMF: the model's own 1.3x does not count
    mi300x_fp8 = forecast_model.sustained_mamf(mi300x, "fp8")[0]
    speedup = mi300x_fp8 / 1402.6 * rocm.mamf_share / nemo.mamf_share
    there = stacks.cross_stack(h100, mi300x, "fp8", "dense", model_speedup=1.3)
    assert there.factor == pytest.approx(speedup / 1.3) and there.log_half_width == pytest.approx(nemo.spread + rocm.spread)
    assert "stack prior applied" in there.words and "the step at the MAMF ratio 0.90" in there.words
    # what the stacks add to the hardware's ceiling is their spreads and shares' ratio, not the factor on the
    # model: with a model speedup of 0.5 the factor (about 1.76) passes the shares' ratio (about 1.09)
    assert there.share_ratio == pytest.approx(rocm.mamf_share / nemo.mamf_share)
    slow_model = stacks.cross_stack(h100, mi300x, "fp8", "dense", model_speedup=0.5)
    assert slow_model.factor > slow_model.share_ratio > 1.0
    allowance = math.exp(nemo.spread + rocm.spread) * rocm.mamf_share / nemo.mamf_share
    assert slow_model.allowance == pytest.approx(allowance)
    _cal, _factor, page_allowance = forecasts.group_and_stack("H100 SXM", "MI300X", {"PRECISION": "fp8-tensorwise"},
                                                              {}, "dense-bound, fp8", 0.5)
    nvidia = stacks.prior_for(stacks.PROJECT, "fp8", "dense")
    assert page_allowance == pytest.approx(math.exp(nvidia.spread + rocm.spread) * rocm.mamf_share / nvidia.mamf_share)
    # the other way, with the same two priors, the inverse: A -> B and B -> A agree
    back = stacks.cross_stack(mi300x, h100, "fp8", "dense", base_stack=stacks.ROCM, model_speedup=1.0)
    assert back.factor * speedup == pytest.approx(1.0)
    # without AMD's own figures (the backtest predicting them): none, the widest spread instead
    left_out = stacks.cross_stack(h100, mi300x, "fp8", "dense", leave_out_source="amd-primus", model_speedup=1.3)
    assert left_out.factor == 1.0 and "none published here for AMD ROCm" in left_out.words
    assert left_out.log_half_width == pytest.approx(stacks.widest_spread() + stacks.priors("amd-primus")[(stacks.NEMO, "fp8",
                                                                                               "dense")].spread)
    # no MLPerf figure is a prior: its results are the forecast's independent check
    assert not any("mlperf" in str(f).lower() for f in stacks.figures())


def test_a_stack_prior_missing_its_kind_takes_its_vendors_stacks_and_one_figure_is_never_exact():
    h100, mi300x, mi355x = (gpus.lookup(n) for n in ("H100", "MI300X", "MI355X"))
    # NeMo publishes no bf16 dense step: NVIDIA's stacks together (torchtitan's 33-58%, this project's 39-55%)
    pooled = stacks.prior_for(stacks.NEMO, "bf16", "dense")
    by_hand = sorted([0.33, 0.39, 0.563, 0.582] + [t / 989 for t in (386.6, 424.1, 504.2, 546.1)])
    assert pooled.figures == 8 and pooled.mid == pytest.approx((by_hand[3] + by_hand[4]) / 2)
    assert "NVIDIA's published stacks together" in pooled.stand_in
    # ROCm's bf16 dense prior is one figure: its spread is the table's widest, not zero, and it moves no middle
    rocm = stacks.prior_for(stacks.ROCM, "bf16", "dense")
    assert rocm.figures == 1 and rocm.spread == 0.0 and stacks.spread_of(rocm, "dense") == stacks.widest_spread()
    few = stacks.cross_stack(mi300x, h100, "bf16", "dense", model_speedup=1.2)
    assert few.log_half_width == pytest.approx(stacks.widest_spread() + pooled.spread) and "under 3 figures" in few.words
    assert few.factor == 1.0 and "not applied" in few.words and "MFU 40% (1 figure)" in few.words
    # a fine-tuning step where ROCm publishes none: its dense steps' (NVIDIA's SFT/LoRA sit at their dense MFU),
    # the middle moved, the range as wide as the table's widest spread allows: a borrowed spread is no spread
    rocm_fp8 = stacks.prior_for(stacks.ROCM, "fp8", "fine-tuning")
    assert rocm_fp8.mid == stacks.priors()[(stacks.ROCM, "fp8", "dense")].mid
    assert rocm_fp8.stand_in == f"{stacks.ROCM}: its dense steps' for a fine-tuning step"
    nemo_ft = stacks.priors()[(stacks.NEMO, "fp8", "fine-tuning")]
    borrowed = stacks.cross_stack(h100, mi300x, "fp8", "fine-tuning", model_speedup=1.0)
    mamf_ratio = forecast_model.sustained_mamf(mi300x, "fp8")[0] / 1402.6
    assert borrowed.factor == pytest.approx(mamf_ratio * rocm_fp8.mamf_share / nemo_ft.mamf_share)
    assert borrowed.log_half_width == pytest.approx(nemo_ft.spread + stacks.widest_spread())
    # both sides borrowing the same way say it once, each with its stack
    words = stacks.cross_stack(mi300x, h100, "bf16", "fine-tuning", model_speedup=1.0).words
    assert words.count("its dense steps' for a fine-tuning step") == 2 and stacks.ROCM + ": its dense" in words
    # a page's baseline is this suite's logs: its own stack's prior, not NeMo's (fp8: NVIDIA's stacks together)
    cal, factor, _allowance = forecasts.group_and_stack("H100 SXM", "MI355X", {}, {}, "dense-bound, bf16", 1.5)
    assert "over this project (torch + DeepSpeed) bf16 dense" in cal.stack and factor == 1.0
    cal, factor, _allowance = forecasts.group_and_stack("H100 SXM", "MI355X", {"PRECISION": "fp8-tensorwise"}, {},
                                                        "dense-bound, fp8", 1.5)
    nvidia_fp8 = stacks.prior_for(stacks.PROJECT, "fp8", "dense")
    assert "over NVIDIA's published stacks fp8 dense" in cal.stack and nvidia_fp8.figures >= 30
    mamf_ratio = forecast_model.sustained_mamf(gpus.lookup("MI355X"), "fp8")[0] / 1402.6
    assert factor == pytest.approx(mamf_ratio * stacks.priors()[(stacks.ROCM, "fp8", "dense")].mamf_share
                                   / nvidia_fp8.mamf_share / 1.5)
    # this project's figures are of NVIDIA parts: an AMD baseline's logs take ROCm's prior, not them
    cal, _factor, _allowance = forecasts.group_and_stack("MI300X", "H100 SXM", {}, {}, "dense-bound, bf16", 1.0)
    assert "this project" not in cal.stack and f"over {stacks.ROCM} bf16 dense" in cal.stack


def test_a_page_forecast_across_vendors_is_the_mamf_ratio_times_the_stacks_shares(tmp_path):
    # this project's fp8 logs on an H100 (results/h100-node-10) to an MI300X: the H100's fp8 MAMF 1402.6, the
    # MI300X's its bf16 share carried; ROCm's fp8 dense share of MAMF over NVIDIA's stacks' together
    folder = tmp_path / "h100-fp8"
    folder.mkdir()
    (folder / "fp8_tensorwise.jsonl").write_text((REPO / "results/h100-node-10/fp8_tensorwise.jsonl").read_text())
    assert plot_results.main([str(folder), "--forecast", "MI300X", "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "report.md").read_text()
    point = float(re.search(r"MI300X \(forecast, not measured\) at 8K: [\d.]+x to [\d.]+x as fast \(point "
                            r"estimates ([\d.]+)x\)", page).group(1))
    rocm, nvidia = stacks.priors()[(stacks.ROCM, "fp8", "dense")], stacks.prior_for(stacks.PROJECT, "fp8", "dense")
    mamf_ratio = forecast_model.sustained_mamf(gpus.lookup("MI300X"), "fp8")[0] / 1402.6
    by_hand = mamf_ratio * rocm.mamf_share / nvidia.mamf_share
    assert point == pytest.approx(by_hand, abs=0.005) and "every kernel is the other vendor's" in page
    # by hand: 1257.1 / 1402.6 x 0.5643 / 0.5183
    assert point == 0.98


def test_a_stack_prior_over_mamf_is_its_own_gpus_share_of_their_mamf(monkeypatch):
    # ROCm's bf16 figure ran on an MI325X (MAMF 784.9 of its 1300 peak), not on the MI300X forecast (668.4)
    one = stacks.prior_of("rocm", "bf16", "dense", [(0.397, "MI325X")])
    assert one.mamf_share == pytest.approx(0.397 * 1300 / 784.9)
    mi325x_fp8 = forecast_model.sustained_mamf(gpus.lookup("MI325X"), "fp8")[0]  # its bf16 share carried
    assert stacks.prior_of("rocm", "fp8", "dense", [(0.3, "MI325X")]).mamf_share == pytest.approx(
        0.3 * 2610 / mi325x_fp8)
    # with three ROCm bf16 figures (two made up here) the step is the MAMF ratio times the two stacks' shares
    # of their own GPUs' MAMF: the MI300X's lower MAMF is the rate's, not the prior's
    published = stacks.priors()[(stacks.ROCM, "bf16", "dense")].mid  # AMD's 70B BF16 run: 39.7%
    extra = [(stacks.ROCM, "MI325X", "bf16", "dense", mfu, "made up", "made-up") for mfu in (0.35, 0.45)]
    real = stacks.figures()
    monkeypatch.setattr(stacks, "figures", lambda: real + extra)
    made = stacks.cross_stack(gpus.lookup("H100"), gpus.lookup("MI300X"), "bf16", "dense", base_stack=stacks.PROJECT,
                              model_speedup=0.9)
    project = sorted(t / 794.5 for t in (386.6, 424.1, 504.2, 546.1))
    rocm = published * 1300 / 784.9  # the median of 0.35, 0.397 and 0.45, each over 784.9 / 1300
    speedup = 668.4 / 794.5 * rocm / ((project[1] + project[2]) / 2)
    assert made.factor == pytest.approx(speedup / 0.9) and "the step at the MAMF ratio 0.84" in made.words
    # a GPU added to the table without a MAMF or a sibling with one (the H100 here, made so): no prior has a
    # MAMF share either, so the peak ratio and the stacks' MFUs
    real_mamf = forecast_model.sustained_mamf
    monkeypatch.setattr(forecast_model, "sustained_mamf", lambda spec, dtype: (
        (None, "") if spec.name == "H100 SXM" else real_mamf(spec, dtype)))
    assert stacks.prior_of("x", "bf16", "dense", [(0.3, "H100")]).mamf_share is None
    on_peak = stacks.cross_stack(gpus.lookup("H100"), gpus.lookup("MI300X"), "bf16", "dense",
                                 base_stack=stacks.PROJECT, model_speedup=1.0)
    project_mfu = sorted(t / 989 for t in (386.6, 424.1, 504.2, 546.1))
    assert on_peak.factor == pytest.approx(1300 / 989 * published / ((project_mfu[1] + project_mfu[2]) / 2))
    assert "the step at the bf16 peak ratio 1.31" in on_peak.words


@pytest.mark.parametrize("folder, cand, measured_speedup, word", [
    ("results/h100-node-10/node", "H200", 424.1 / 386.6, "dearer"),
    ("results/h200-precision-7/node", "H100", 386.6 / 424.1, "cheaper"),
    ("results/h100-node-13/node", "H200", 424.1 / 385.8, "dearer"),  # a second H100 machine
])
def test_the_measured_h100_h200_pair_is_held_by_the_forecast_both_ways(folder, cand, measured_speedup, word,
                                                                       tmp_path, capsys):
    assert plot_results.main([folder, "--price", "H200=3.50", "--price", "H100=2.40", "--forecast", cand,
                              "--out", str(tmp_path)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if re.match(rf"  {cand}\d* SXM forecast +8K", x))
    low, high, call = re.search(r"(\d\.\d\d)-(\d\.\d\d)x (\w+)", line).groups()
    assert float(low) <= measured_speedup <= float(high) and call == word, line
    if cand == "H100":  # one die, the same watts: like nodes cap it at 1.00x; the H200 node's 94% MAMF lifts that
        assert float(high) > 1.0, line
    assert re.search(r"\$\d\.\d\d-\d\.\d\d/h", line)  # the break-even price is a range
