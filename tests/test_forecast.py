"""The forecast of a GPU one does not have: the model's formulas by hand, the split fitted
to a sweep against numpy's least squares, the backtest on the shipped published pairs (and
that it never reads a candidate's figures), and the forecast on the page and in points.csv."""
import csv
import json
import math
import re
import statistics

import numpy as np
import pytest

from upgrade_bench import faults
from upgrade_bench.report.forecast import model as forecast_model
from upgrade_bench.hardware import gpus
from upgrade_bench.report.forecast import backtest, calibration, attention as forecast_attention, series as forecasts
from upgrade_bench.report.published import guide as published, pairs as published_pairs
from upgrade_bench.report import main as plot_results

H200, B200 = gpus.lookup("NVIDIA H200"), gpus.lookup("NVIDIA B200")


def test_the_hardware_ratios_are_the_tables_figures():
    r = forecast_model.hardware_ratios(H200, B200)
    assert r["peak"].mid == pytest.approx(2250 / 989)
    assert r["hbm"].mid == pytest.approx(8.0 / 4.8)
    assert r["gemm"].mid == pytest.approx(1745 / 794.5) and r["gemm"].low == pytest.approx(8.0 / 4.8)
    assert r["comm"].mid == pytest.approx(1800 / 900)
    assert (r["host"].low, r["host"].mid, r["host"].high) == (1.0, 1.0, 1.0)
    # attention with nothing measured or published: the geometric middle of HBM and peak
    att = forecast_model.attention_ratio(r)
    assert att.mid == pytest.approx((8.0 / 4.8 * 2250 / 989) ** 0.5) and att.high == pytest.approx(2250 / 989)


def test_the_attention_ratio_off_a_table_of_kernel_ratios():
    hw = forecast_model.hardware_ratios(H200, B200)
    table = {8192: forecast_model.Ratio.exact(1.88, ""), 32768: forecast_model.Ratio.exact(1.95, "")}
    at = forecast_model.attention_ratio(hw, table, 32768, "kernels")
    assert (at.mid, at.low, at.high, at.source) == (1.95, 1.95, 1.95, "kernels")
    # 16K lies halfway between 8K and 32K in log length: halfway between their ratios
    mid = forecast_model.attention_ratio(hw, table, 16384, "kernels")
    assert (mid.mid, mid.low, mid.high) == (pytest.approx(1.915), 1.88, 1.95)
    # past the longest: its ratio, up to the peak ratio; before the shortest: down to HBM
    past = forecast_model.attention_ratio(hw, table, 262144, "kernels")
    assert (past.mid, past.low, past.high) == (1.95, 1.95, pytest.approx(2250 / 989))
    assert past.note == "past its longest length: that one's, up to the peak ratio" and at.note == ""
    before = forecast_model.attention_ratio(hw, table, 4096, "kernels")
    assert (before.mid, before.low, before.high) == (1.88, pytest.approx(8.0 / 4.8), 1.88)


def test_each_part_scales_by_its_own_ratio():
    ratios = {"attention": forecast_model.Ratio(2.0, 1.5, 2.5, ""), "dense": forecast_model.Ratio.exact(1.6, ""),
              "host": forecast_model.UNCHANGED}
    f = forecast_model.scale({"attention": 100.0, "dense": 200.0, "host": 50.0}, ratios)
    assert f.step_ms == pytest.approx(100 / 2 + 200 / 1.6 + 50)
    assert f.step_ms_fast == pytest.approx(100 / 2.5 + 200 / 1.6 + 50)
    assert f.step_ms_slow == pytest.approx(100 / 1.5 + 200 / 1.6 + 50)


def test_a_dense_part_scales_by_the_share_of_its_time_its_matmuls_need_at_mamf():
    # 369 TFLOP of matmuls in 797 ms on an H200 (MAMF 794.5): 58.3% of the time is matmul work
    share = forecast_model.gemm_share(369.0, 797.0, 794.5, checkpointed=False)
    assert share == pytest.approx(369.0 / 794.5 / 0.797)
    # checkpointed: one more forward, 8 FLOPs per parameter per token where the model counts 6
    assert forecast_model.gemm_share(369.0, 797.0, 794.5, checkpointed=True) == pytest.approx(share * 8 / 6)
    assert forecast_model.gemm_share(369.0, 300.0, 794.5, checkpointed=False) == 1.0  # at most all of it
    assert forecast_model.gemm_share(369.0, 797.0, None, checkpointed=False) is None
    hw = forecast_model.hardware_ratios(H200, B200)
    dense = forecast_model.dense_ratio(hw, share)
    # time-weighted: the matmul share at 1745/794.5, the rest at 8.0/4.8
    assert dense.mid == pytest.approx(1 / (share / (1745 / 794.5) + (1 - share) / (8.0 / 4.8)))
    assert (dense.low, dense.high) == (pytest.approx(8.0 / 4.8), pytest.approx(1745 / 794.5))
    unknown = forecast_model.dense_ratio(hw, None)
    assert unknown.mid == pytest.approx((8.0 / 4.8 * 1745 / 794.5) ** 0.5) and unknown.low == pytest.approx(8.0 / 4.8)


def test_the_sweep_split_is_numpys_least_squares():
    # an exact T = 2*A + 3*D + 100 is found again; a noisy one as numpy finds it
    points = [(a, d, 2 * a + 3 * d + 100) for a, d in ((1, 50), (16, 200), (64, 400), (256, 800))]
    assert forecast_model.fit_split(points) == pytest.approx((2.0, 3.0, 100.0))
    noisy = [(a, d, t * f) for (a, d, t), f in zip(points, (1.01, 0.98, 1.02, 0.99))]
    x = np.array([[a / t, d / t, 1 / t] for a, d, t in noisy])
    expected = np.linalg.lstsq(x, np.ones(4), rcond=None)[0]
    assert forecast_model.fit_split(noisy) == pytest.approx(tuple(expected))
    assert forecast_model.fit_split(points[:2]) is None  # two lengths cannot tell three parts apart
    assert forecast_model.fit_split([(1, 1, 10), (2, 2, 20), (3, 3, 30)]) is None  # A and D in step


def test_a_decomposition_gives_its_parts_and_its_idle_time_as_host():
    guide = next(r for r in published.guide_reference_records()
                 if r["kind"] == "decomposition" and r["run_id"] == "guide-h200-decompose")
    parts = forecast_model.bound_parts(guide)
    assert parts == pytest.approx({"attention": 52.776558133248 / 447 * 1e3, "dense": 368.868971249664 / 463 * 1e3})
    suite = {"buckets": {"attention": {"ms": 10.0}, "gemm": {"ms": 50.0}, "other": {"ms": 30.0},
                         "linear_mixer": {"ms": 5.0}, "comm": {"ms": 2.0}}, "wall_step_ms": 120.0}
    assert forecast_model.bound_parts(suite) == {"attention": 10.0, "gemm": 50.0, "other": 35.0,
                                                   "comm": 2.0, "host": 23.0}
    # bench_decompose's record: each bucket's share of the wall (gaps included) and its own
    # kernel time; the kernels are the parts and the gaps host time, which does not speed up
    measured = {"wall_step_ms": 299.0, "buckets": {
        "attention": {"ms": 29.4, "kernel_ms_per_step": 27.7}, "gemm": {"ms": 175.0, "kernel_ms_per_step": 165.0},
        "other": {"ms": 94.6, "kernel_ms_per_step": 89.2}, "linear_mixer": {"ms": 0.0, "kernel_ms_per_step": 0.0}}}
    assert forecast_model.bound_parts(measured) == pytest.approx(
        {"attention": 27.7, "gemm": 165.0, "other": 89.2, "host": 299.0 - 27.7 - 165.0 - 89.2})
    # kernels on concurrent streams summing past the wall: the wall's split it is
    measured["buckets"]["gemm"]["kernel_ms_per_step"] = 200.0
    assert forecast_model.bound_parts(measured) == pytest.approx({"attention": 29.4, "gemm": 175.0, "other": 94.6})


def test_the_backtest_of_the_guides_pairs():
    rows = [r for r in backtest.backtest(published.guide_reference_records())]
    assert [(r["metric"], r["seq_len"]) for r in rows] == (
        [("tflops_per_gpu", n) for n, _, _ in published.GUIDE_SWEEP_TFLOPS]
        + [("attention_tflops", 8192), ("everything_else_tflops", 8192), ("total_tflops", 8192)])
    by = {(r["metric"], r["seq_len"]): r for r in rows}
    # the decomposition's attention bucket: the H200's 447 TFLOPS times the published 1.88x
    assert by["attention_tflops", 8192]["forecast"] == pytest.approx(447 * 1.88)
    # the rest of the step (no checkpointing in the right-sized run): 463 of the H200's 794.5
    # MAMF is matmul time at MAMF, scaled by the MAMF ratio; the other 41.7% by the HBM ratio
    share = 463 / 794.5
    assert by["everything_else_tflops", 8192]["forecast"] == pytest.approx(
        463 / (share / (1745 / 794.5) + (1 - share) / (8.0 / 4.8)))
    # the sweep's 32K by hand from its own split: attention over the published 1.95, the fixed
    # part (host work and ZeRO-3's exposed communication) kept, the dense part by its matmul
    # share, counting the checkpoint recompute (the sweep checkpoints): 8/6 of its model FLOPs
    sweep = backtest._runs(published.guide_reference_records())["guide-h200-sweep"]["summary"]
    a, d, h = forecast_model.fit_split([(p["model_tflop_per_step"] * p["attn_flop_share"],
                                         p["model_tflop_per_step"] * (1 - p["attn_flop_share"]), p["step_ms"])
                                        for p in sweep.values()])
    p = sweep[32768]
    att_tflop = p["model_tflop_per_step"] * p["attn_flop_share"]
    dense_tflop = p["model_tflop_per_step"] - att_tflop
    fitted = p["step_ms"] / (a * att_tflop + d * dense_tflop + h)  # the split, scaled to the measured step
    att_ms, dense_ms, fixed_ms = a * att_tflop * fitted, d * dense_tflop * fitted, h * fitted
    share = dense_tflop * 8 / 6 / 794.5 / (dense_ms / 1e3)
    assert 0.8 < share < 0.84  # the long-context dense part runs at 82% of the H200's MAMF
    dense_ratio = 1 / (share / (1745 / 794.5) + (1 - share) / (8.0 / 4.8))
    assert by["tflops_per_gpu", 32768]["forecast"] == pytest.approx(
        p["model_tflop_per_step"] / (att_ms / 1.95 + dense_ms / dense_ratio + fixed_ms) * 1e3)
    # the sweep's 8K: the baseline's own split, between the baseline and the peak ratio
    h200 = {n: h for n, h, _ in published.GUIDE_SWEEP_TFLOPS}
    eight = by["tflops_per_gpu", 8192]
    assert eight["naive_peak"] == pytest.approx(141 * 2250 / 989)
    assert eight["naive_bandwidth"] == pytest.approx(141 * 8.0 / 4.8)
    assert eight["published"] == 167 and eight["error"] == pytest.approx(eight["forecast"] / 167 - 1)
    assert eight["forecast_low"] <= eight["forecast"] <= eight["forecast_high"]
    assert h200[8192] < eight["forecast"] < h200[8192] * 2250 / 989
    assert backtest.median_abs_error(rows) < backtest.median_abs_error(
        [{"e": backtest.naive_error(r, "naive_bandwidth")} for r in rows], "e")


def test_the_shipped_published_pairs_are_what_the_code_writes():
    from conftest import REPO
    from upgrade_bench.report.read import inputs

    for source, path in published_pairs.SHIPPED_PATHS.items():
        shipped = [json.loads(line) for line in (REPO / path).read_text().splitlines()]
        assert shipped == json.loads(json.dumps(published_pairs.source_records(source)))
        tally = inputs.Tally()  # and the report reads every record of it
        assert len(list(inputs.read([str(REPO / path)], tally))) == len(shipped) and tally.skipped_total() == 0
    cites = {"megatron-bridge": "github.com/NVIDIA-NeMo/Megatron-Bridge/blob/067f987",
             "nemo-framework": "github.com/NVIDIA/NeMo/blob/2fca28a"}
    for source, cited in cites.items():
        headers = [r for r in published_pairs.source_records(source) if r["kind"] == "header"]
        assert headers and all(cited in r["notes"] and r["reference"] == source for r in headers)


def test_a_pair_without_published_workload_figures_is_one_line_not_a_row():
    records = published.guide_reference_records()
    (line,) = backtest.unbacktested(records)
    assert line == ("B200 SXM -> B300 SXM (the same-generation refresh): not backtested. The guide publishes their "
                    "MAMF (1745 vs 1769 TFLOPS bf16) but no training figures on a B300 SXM, and a row needs one "
                    "to set the forecast against.")
    assert not any("B300" in r["gpus"] for r in backtest.backtest(records))
    b300 = [{"kind": "header", "run_id": "b300", "hardware": {"gpu_name": "NVIDIA B300"}},
            {"kind": "summary", "run_id": "b300", "seq_len": 8192}]
    assert backtest.unbacktested(records + b300) == []
    assert backtest.unbacktested(published_pairs.all_records()) == []  # Megatron-Bridge publishes a B300


def test_the_backtest_never_reads_the_candidates_figures():
    records = published_pairs.all_records()
    runs = backtest._runs(records)
    for base_id, cand_id in published_pairs.PAIRS:
        cand = backtest._gpu(runs[cand_id])
        without = backtest._runs([r for r in records if r.get("run_id") != cand_id])
        assert backtest.forecast_run(without[base_id], cand) == backtest.forecast_run(runs[base_id], cand)
    # and the candidate's figures alone change nothing either: doubled, the forecasts stay
    doubled = [{**r, "tflops_per_gpu": 2 * r["tflops_per_gpu"]} if r.get("run_id") == "guide-b200-sweep"
               and r["kind"] == "summary" else r for r in records]
    assert [r["forecast"] for r in backtest.backtest(doubled)] == [r["forecast"] for r in backtest.backtest(records)]


def test_plot_results_backtest_and_forecast_on_the_page(tmp_path, capsys):
    # a one-node folder: a measured one-GPU H200 sweep of four lengths, the same model the guide ran
    (tmp_path / "node").mkdir()
    log = tmp_path / "node" / "h200.jsonl"
    header = {"kind": "header", "schema": 1, "script": "benchmark.py", "run_id": "r1", "time": 1.0,
              "hardware": {"gpu_name": "NVIDIA H200", "gpu_count": 1, "hbm_gib": 141},
              "config": {"MODEL": "llama-3.1-8b", "NUM_LAYERS": 8, "ZERO_STAGE": 2, "world_size": 1},
              "attn_backend": "fa4", "num_layers": 8}
    lines = [header]
    for n, step_ms, share in ((8192, 300.0, 0.1), (16384, 650.0, 0.18), (32768, 1500.0, 0.3), (65536, 3800.0, 0.46)):
        lines.append({"kind": "summary", "schema": 1, "script": "benchmark.py", "run_id": "r1", "seq_len": n,
                      "step_ms": step_ms, "tflops_per_gpu": 25.0 * n / step_ms, "model_tflop_per_step": n / 40,
                      "attn_flop_share": share, "peak_mem_gib": 40 + n / 1024, "batch_size": 1})
    log.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = tmp_path / "report"
    assert plot_results.main([str(tmp_path / "node"), "--forecast", "b200", "--backtest", "--price", "H200=3.50",
                              "--price", "B200=7.00", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Prices per GPU-hour:")  # the answer first, the backtest after it
    assert "\nBacktest of the forecast on published pairs" in printed and "By pair class" in printed
    assert max(map(len, printed[printed.index("\nBacktest"):].splitlines())) <= 100  # a summary, not the table
    full = (out / "report.md").read_text()  # the full table is the report's
    assert "## Backtest" in full and "Median absolute error of all" in full
    assert "B200 SXM -> B300 SXM, gpt-oss-120b" in full  # the refresh, from Megatron-Bridge's figures
    # the report's first lines answer: speedup range, the per-token call with both sides' $, the
    # break-even ratio against the price ratio, memory fit and how sure, per kind of workload
    first = printed.splitlines()[:8]
    assert first[0].startswith("Prices per GPU-hour: H200 SXM $3.50, B200 SXM $7.00 (prices its forecast only: no log")
    assert any(line.startswith("  B200 SXM forecast  8K") for line in first), first
    page = (out / "report.md").read_text()
    answers = [line for line in page.splitlines() if line.startswith("- [1] B200 SXM (forecast, not measured) at ")]
    assert answers and all(re.search(r": \d\.\d\dx to \d\.\d\dx as fast \(point estimates", a) for a in answers)
    for a in answers:
        assert re.search(r"(cheaper|dearer|even) per token.* at \$3\.50 vs \$7\.00 per GPU-hour \(\$/1M tokens H200 SXM "
                         r"vs B200 SXM: \$[\d.]+ vs \$[\d.]+ at \d+K", a)
        assert re.search(r"B200 SXM pays off below \$\d+\.\d\d( to \$\d+\.\d\d)? at \d+K", a)
        assert re.search(r"; fits: the baseline.s peak, [\d.]+ GiB at most, in its 180 GB \(datasheet\)", a)
        assert re.search(r"how sure: (dense|attention)-bound, bf16: (the published figure fell inside its range "
                         r"for \d+ of \d+|no published figure of its group)", a)
    with open(out / "backtest.csv", newline="") as f:
        assert tuple(csv.DictReader(f).fieldnames) == backtest.BACKTEST_COLUMNS
    assert page.index("## The answer") < page.index("## Forecasts (not measured)") < page.index("**No comparison**")
    assert page.index("## Is this node healthy?") < page.index("## The answer")  # the node check opens the page
    assert "split fitted to its own sweep (4 lengths)" in page
    with open(out / "points.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    fc = [r for r in rows if r["source"] == "forecast"]
    assert [r["seq_len"] for r in fc] == ["8192", "16384", "32768", "65536"] and {r["gpu"] for r in fc} == {"B200 SXM"}
    assert all(r["provenance"] == "forecast" for r in fc)
    assert len(rows) - len(fc) == 4  # the measured points stay as they were


def kernel(backend, seq_len, tflops, heads=32, pass_="fwd_bwd", status="ok"):
    """An isolated-attention record of bench_flash_attn.py, the 8B's shape unless told."""
    return {"kind": "attention", "schema": 1, "script": "bench_flash_attn.py", "backend": backend,
            "pass": pass_, "seq_len": seq_len, "tflops": tflops, "status": status, "batch": 1, "heads": heads,
            "kv_heads": 8, "head_dim": 128, "causal": True, "dtype": "bf16", "packed_doc_len": 0}


def test_isolated_attention_measured_on_both_gpus_call_for_call():
    base = [kernel("fa3", 8192, 400.0), kernel("fa3", 32768, 450.0), kernel("fa3", 8192, 500.0, heads=64),
            kernel("fa3", 8192, 600.0, pass_="fwd"), kernel("fa3", 65536, 470.0)]
    cand = [kernel("fa4", 8192, 800.0), kernel("fa4", 32768, 900.0), kernel("fa4", 8192, 1100.0, heads=64),
            kernel("fa4", 8192, 1300.0, pass_="fwd"), kernel("sdpa-cudnn", 65536, 999.0),
            kernel("fa4", 65536, 0.0, status="oom")]
    table = forecast_attention.measured_attention_table(base, cand, "fa3", "fa4")
    # 8K: two shapes on both (2.0x and 2.2x): their median, ranged by both; the fwd pass, another
    # backend and a failed call pair with nothing, so 64K has no ratio
    assert set(table) == {8192, 32768}
    assert (table[8192].mid, table[8192].low, table[8192].high) == (pytest.approx(2.1), 2.0, 2.2)
    assert table[32768].mid == table[32768].low == table[32768].high == 2.0


def test_the_candidates_backend_is_the_one_it_would_train_with():
    from upgrade_bench.report.read.series import Series

    def series(backend, attn_setting):
        return Series("H200 SXM", None, backend, {"ATTN_BACKEND": attn_setting}, "", None, None, None)
    # measured in training: its own; asked for by name: that one; auto: auto's order among
    # the backends whose kernels ran on the candidate (FA3 first, but it never ran on a B200)
    assert forecast_attention.candidate_backend(series("fa3", "auto"), series("fa4", "auto"), {"fa3"}) == "fa4"
    assert forecast_attention.candidate_backend(series("fa4", "fa4"), None, {"fa3", "sdpa-cudnn"}) == "fa4"
    assert forecast_attention.candidate_backend(series("fa3", "auto"), None, {"sdpa-cudnn", "fa4"}) == "fa4"
    assert forecast_attention.candidate_backend(series("fa3", "auto"), None, {"sdpa-cudnn"}) is None


def test_the_forecast_prefers_attention_measured_on_both_gpus(tmp_path):
    def log(gpu, run_id, script, records, **header):
        head = {"kind": "header", "schema": 1, "script": script, "run_id": run_id, "time": 1.0,
                "hardware": {"gpu_name": gpu, "gpu_count": 1, "hbm_gib": 141}, **header}
        return [head] + [{**r, "run_id": run_id} for r in records]
    sweep = [{"kind": "summary", "schema": 1, "script": "benchmark.py", "seq_len": n, "step_ms": ms,
              "tflops_per_gpu": 25.0 * n / ms, "model_tflop_per_step": n / 40, "attn_flop_share": share,
              "peak_mem_gib": 40.0, "batch_size": 1}
             for n, ms, share in ((8192, 300.0, 0.1), (16384, 650.0, 0.18), (32768, 1500.0, 0.3))]
    training = log("NVIDIA H200", "t1", "benchmark.py", sweep, attn_backend="fa3",
                   config={"MODEL": "llama-3.1-8b", "ZERO_STAGE": 2, "world_size": 1, "ATTN_BACKEND": "auto"})
    h200 = log("NVIDIA H200", "k1", "bench_flash_attn.py", [kernel("fa3", 8192, 400.0), kernel("fa3", 32768, 450.0)])
    b200 = log("NVIDIA B200", "k2", "bench_flash_attn.py", [kernel("fa4", 8192, 820.0), kernel("fa4", 32768, 900.0)])

    def page(*logs):
        path = tmp_path / "in.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for one in logs for r in one))
        assert plot_results.main([str(path), "--forecast", "B200", "--out", str(tmp_path / "out")]) == 0
        return (tmp_path / "out" / "report.md").read_text()
    measured = page(training, h200, b200)
    assert "attention: isolated attention fwd+bwd measured here on both GPUs, B200 SXM fa4 over H200 SXM fa3" in measured
    # 8K at 820/400, 32K at 900/450, 16K between them in log length
    assert "attention 2.05x" in measured and "attention 2.02x" in measured and "attention 2.00x" in measured
    published_only = page(training, h200)  # no B200 kernels: the guide's published ratios
    assert "the guide's published fa4/fa3 kernel figures (1.88x at 8K, 1.95x at 32K)" in published_only
    assert "measured here on both GPUs" not in published_only
    # a baseline that trains with FA4 on its H200 is not the guide's FA3 baseline: no published ratio
    fa4 = [{**r, "attn_backend": "fa4"} if r["kind"] == "header" else r for r in training]
    other_kernel = page(fa4, h200)
    assert ("attention: attention unmeasured on both GPUs: the guide's published ratio is fa4 over fa3, this "
            "baseline trains with fa4; between the HBM and peak ratios") in other_kernel
    assert "fa4/fa3 kernel figures" not in other_kernel


def test_an_unknown_forecast_gpu_is_one_line_and_exit_2(capsys):
    code = faults.run_main(lambda: plot_results.main(["--backtest", "--forecast", "B900"]))
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--forecast 'B900'" in err and "B200 SXM" in err


def test_the_gemms_work_is_the_summarys_exact_count_where_it_has_one():
    from upgrade_bench.report.forecast import series as forecasts

    summary = {"model_tflop_per_step": 10.0, "attn_flop_share": 0.2}
    assert forecasts.gemm_tflop(summary, True) == (8.0, True)  # the dense part; the recompute estimated later
    assert forecasts.gemm_tflop({**summary, "gemm_tflop_per_step": 10.5}, True) == (10.5, False)
    assert forecast_model.gemm_share(8.0, 20.0, 1000.0, True) == pytest.approx(8.0 * 8 / 6 / 1000 * 1e3 / 20)


def test_a_baseline_training_with_fa2_carries_fa2s_published_ratio_not_the_peaks():
    a100, h100 = gpus.lookup("NVIDIA A100-SXM4-80GB"), gpus.lookup("NVIDIA H100 80GB HBM3")
    table, source = forecast_attention.published_attention("A100 SXM", "H100 SXM", "fa2")
    assert {n: r.mid for n, r in table.items()} == {16384: pytest.approx(335 / 225)} and "Dao 2023" in source
    for spelled in ("sdpa-flash", "flash_attention_2", "FlashAttention-2", "flash-attn2"):
        assert forecast_attention.published_attention("A100 SXM", "H100 SXM", spelled)[0], spelled
    assert forecast_attention.published_attention("A100 SXM", "H100 SXM", "sdpa-cudnn") == ({}, "")
    hw = forecast_model.hardware_ratios(a100, h100)
    at = forecast_model.attention_ratio(hw, table, 32768, source)
    # past the paper's longest length: its ratio (1.49x), up to the peak ratio; not the 2.3x a
    # blend of the bandwidth and peak ratios would say
    assert (at.mid, at.low, at.high) == (pytest.approx(335 / 225), pytest.approx(335 / 225), pytest.approx(989 / 312))
    assert forecast_model.attention_ratio(hw).mid == pytest.approx((3.35 / 2.0 * 989 / 312) ** 0.5)
