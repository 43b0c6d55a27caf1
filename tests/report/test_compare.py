"""compare/: series paired into comparisons (upgrades and health checks) and the numbers of each:
speedups, the identity, cost verdicts with their ranges, what one side only has, the other tables.
Hand-computed expectations on records written by hand and the guide's published figures."""
import pytest

from report.helpers import (
    H200_PEAK, B200_PEAK, CONFIG, rec, header, summary, two_gpu_log, analysis_of, only, rows_of,
    guide_with_a_measured_h200)
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.page import details as detail_tables, markdown, verdicts as verdict_blocks


def test_speedup_table_values_and_identity():
    a = analysis_of(two_gpu_log())
    assert a.baseline == "H200 SXM"  # lower bf16 peak, although listed first anyway
    c = only(a)
    assert (c.base.label, c.other.label) == ("H200 SXM fa3", "B200 SXM fa4") and c.sources == "measured vs measured"
    rows = rows_of(c)
    assert rows[1024].speedup == pytest.approx(2.0) and rows[2048].speedup == pytest.approx(2.2)
    assert c.peak_ratio == pytest.approx(2250 / 989)
    # MFU ratio 2.2 * 989/2250 at 2K; peak ratio x MFU ratio gives the speedup back
    assert rows[2048].mfu_ratio == pytest.approx(2.2 * 989 / 2250)
    assert rows[2048].identity == pytest.approx(2.2)
    assert rows[1024].identity_ok and rows[2048].identity_ok
    assert c.mamf == (800.0, 1700.0) and c.mamf_ratio == pytest.approx(1700 / 800)


def test_identity_flags_mfu_computed_against_another_peak():
    # B200's 1K MFU against 2000 TFLOPS (a PEAK_TFLOPS override): 2250/989 * 0.4/(400/989) = 2.25
    c = only(analysis_of(two_gpu_log(b200_mfu_peak=2000.0)))
    rows = rows_of(c)
    assert rows[1024].identity == pytest.approx(2.25)
    assert rows[1024].identity_ok is False and rows[2048].identity_ok is True
    assert "**MISMATCH**" in detail_tables.details_markdown(c)
    # the verdict block names it too: a buyer reads that block, not always the details
    assert ("> **Identity MISMATCH** (1K: speedup 2.00x, peak ratio x MFU ratio 2.25x): a run's MFU was "
            "computed against another peak") in verdict_blocks.verdict_block(c, {})
    assert "MISMATCH" not in verdict_blocks.verdict_block(only(analysis_of(two_gpu_log())), {})


def test_cost_verdicts_carry_the_range_of_both_step_time_spreads():
    from upgrade_bench.report.compare import verdict

    assert verdict.usd_per_mtok(2.0, 10000.0) == pytest.approx(2.0 / 36e6 * 1e6)  # $0.0556
    a = analysis_of(two_gpu_log(), prices={"h200": 2.0, "NVIDIA B200": 4.0})
    assert a.prices == {"H200 SXM": 2.0, "B200 SXM": 4.0}
    c = only(a)
    rows = rows_of(c)
    r = rows[1024]
    assert r.base_usd_per_mtok == pytest.approx(0.0555556, rel=1e-5)
    assert r.other_usd_per_mtok == pytest.approx(4.0 / (21000 * 3600) * 1e6)
    # other over base: (4/21000) / (2/10000); its range moves with each side's step times
    ratio = 20 / 21
    low, high = ratio * (48.0 / 48.8) / (110.0 / 102.4), ratio * (50.0 / 48.8) / (100.0 / 102.4)
    # the whole range is below even, but by less than the noise floor: even, no call
    assert 1 - verdict.NOISE_FLOOR < high < 1
    assert (r.cost.word, r.cost.value, r.cost.low, r.cost.high) == (
        verdict.WITHIN, pytest.approx(ratio), pytest.approx(low), pytest.approx(high))
    assert verdict.call(r.cost.value, (low, high), floor=0).word == verdict.BELOW
    assert r.speedup_range == pytest.approx((2.0 * (100 / 102.4) / (50 / 48.8), 2.0 * (110 / 102.4) / (48 / 48.8)))
    assert r.break_even == pytest.approx(2.1)  # B200 costs the same per token at 2.1x the price
    assert r.break_even_range == pytest.approx((2.1 * (100 / 102.4) / (50 / 48.8),
                                                2.1 * (110 / 102.4) / (48 / 48.8)))
    assert verdict_blocks.cost_words(c, r) == (f"same $/token within the spread and the 4% noise floor "
                                               f"({low - 1:+.1%} to {high - 1:+.1%})")
    # 2K: the same ratio, but the spreads (200-250 ms, 100-120 ms) hold 1: the data says "same"
    r = rows[2048]
    assert r.cost.word == verdict.WITHIN and r.cost.low < 1 < r.cost.high
    assert verdict_blocks.cost_words(c, r) == (f"same $/token within the spread and the 4% noise floor "
                                               f"({r.cost.low - 1:+.1%} to {r.cost.high - 1:+.1%})")
    # 3K: H200 timed once: no range, so no call, only a point estimate
    r = rows[3072]
    assert r.cost.word == verdict.UNDECIDED and r.cost.low is None
    assert verdict_blocks.cost_words(c, r) == ("cannot decide: one timed step on H200 SXM (measured), no spread; "
                                         f"point estimate {1 - (4 / 17000) / (2 / 8000):.1%} cheaper")


def test_several_runs_of_one_point_widen_its_range():
    runs = [header("h1", "NVIDIA H200"), summary("h1", 1024, 400.0, H200_PEAK, 10000.0, 100.0, (99.0, 101.0)),
            header("h2", "NVIDIA H200"), summary("h2", 1024, 380.0, H200_PEAK, 9500.0, 105.0, (104.0, 106.0)),
            header("h3", "NVIDIA H200"), summary("h3", 1024, 390.0, H200_PEAK, 9700.0, 103.0, steps=1,
                                                 spread=(103.0, 103.0)),
            header("b", "NVIDIA B200", "fa4"), summary("b", 1024, 800.0, B200_PEAK, 20000.0, 50.0, (50.0, 50.0))]
    r = rows_of(only(analysis_of(runs)))[1024]
    assert r.base["run_id"] == "h3"  # the median TFLOPS of three runs
    # fastest step of any run (99) and slowest (106) over the 103 ms used; B200 spread 0
    assert r.speedup_range == pytest.approx((800 / 390 * 99 / 103, 800 / 390 * 106 / 103))


def test_candidate_only_points_say_why_the_baseline_has_none():
    c = only(analysis_of(two_gpu_log(), prices={"H200": 2, "B200": 4}))
    rows = rows_of(c)
    assert rows[4096].missing == "H200 SXM (measured) cannot run this (OOM)"
    assert rows[8192].missing == "H200 SXM (measured) cannot run this (max fit 6K)"
    assert rows[512].missing == "not measured on H200 SXM (measured)"  # no OOM, below the capacity
    assert rows[4096].speedup is None and rows[1024].missing is None
    assert rows[8192].other_usd_per_mtok == pytest.approx(4.0 / (12000 * 3600) * 1e6)
    # the speedup cell says which: out of memory, past the capacity ceiling, never measured
    table = verdict_blocks.points_table(c)
    assert "| 8K | H200 SXM (measured) cannot run this (max fit 6K) | - | $0.093 | **no call: one side only** | - |" \
        in table
    assert "| 4K | H200 SXM (measured) cannot run this (OOM) | - |" in table
    assert "| 512 | not measured on H200 SXM (measured) | - |" in table
    speedups = {line.split(" | ")[0][2:]: line.split(" | ")[6] for line in
                detail_tables.details_markdown(c).splitlines() if line.startswith("| ") and "K |" in line[:8]}
    assert speedups["4K"] == "H200 SXM (measured) cannot run this (OOM)"
    assert speedups["8K"] == "H200 SXM (measured) cannot run this (max fit 6K)"
    assert speedups["1K"] == "2.00x"


def test_other_tables_decomposition_attention_mamf_capabilities():
    a = analysis_of(two_gpu_log())
    (dec,) = a.decompositions
    ratios = {r["bucket"]: r["speedup"] for r in dec.rows}
    assert ratios == pytest.approx({"attention": 2.0, "gemm": 1.6, "total": 500 / 300})
    ((lines, table),) = a.attention.values()  # the unavailable fa2 record is left out
    rows = {r["seq_len"]: r for r in table}
    assert rows[1024]["ratios"]["B200 SXM", ""] == (pytest.approx(2.0), "fa4", "fa3")
    assert a.mamf == {("H200 SXM", None): 800.0, ("B200 SXM", None): 1700.0}
    text = markdown.render(a)
    assert "B200 SXM (measured): 2.12x (theoretical peak 2.28x)" in text   # MAMF ratio 1700/800
    assert "| 1K | 50.0% |" in text                           # 400 TFLOPS / 800 MAMF on H200
    caps = {line.split("|")[1].strip(): line for line in text.splitlines() if "matmul:" in line}
    assert caps["**matmul:nvfp4**"].endswith("ok only on B200 SXM |")  # highlighted: only B200 can
    assert "only" not in caps["matmul:bf16"]
    assert "## Telemetry" in text and "1980" in text


def test_one_gpu_logs_get_a_health_check_and_the_published_candidate_at_their_prices():
    a = analysis_of(guide_with_a_measured_h200(), prices={"H200": 3.5, "B200": 7.0})
    kinds = [(c.kind, c.sources) for c in a.comparisons]
    assert kinds == [(comparisons.UPGRADE, "measured vs guide's published"),
                     (comparisons.HEALTH, "guide's published vs measured"),
                     (comparisons.UPGRADE, "guide's published vs guide's published")]
    mixed, health, guide = a.comparisons
    # the health check: this node's 400 TFLOPS at 128K against the guide's 420
    r = rows_of(health)[131072]
    # 4.8% slower, but its range reaches within the 4% noise floor: as published
    assert r.speedup == pytest.approx(400 / 420) and r.speed.word == "within" and r.speed.high > 0.96
    assert health.mamf == (794.5, 812.9) and health.stack[:1] == [("torch", ["2.13.0+cu130"], ["2.11.0"])]
    block = verdict_blocks.verdict_block(health, {})
    assert block.startswith("## 2. Health check: this H200 SXM node vs the guide's published H200 SXM")
    assert "> Attention backend differs: fa3 (published) vs fa4 (this node)." in block
    assert "as published within the spread and the 4% noise floor" in block
    # what the guide's B200 row implies at these prices, against this node's measurements
    r = rows_of(mixed)[131072]
    assert r.speedup == pytest.approx(836 / 400)
    assert r.base_usd_per_mtok == pytest.approx(3.5 / (2700 * 3600) * 1e6)
    assert mixed.mamf == (812.9, 1745.0)


def test_a_mixed_source_pair_never_feeds_another_pairs_numbers():
    a = analysis_of(guide_with_a_measured_h200(), prices={"H200": 3.5, "B200": 7.0})
    guide = a.comparisons[-1]
    assert guide.sources == "guide's published vs guide's published"
    assert guide.mamf_ratio == pytest.approx(1745.0 / 794.5)      # 2.20x: guide over guide, not over 812.9
    assert guide.stack == []                                        # the measured stack is not the guide's
    assert rows_of(guide)[131072].base["tflops_per_gpu"] == 420.0  # the guide's H200, not this node's 400
    assert rows_of(guide)[8192].speedup == pytest.approx(167 / 141)
    assert "bf16 MAMF ratio of this pair: 2.20x (B200 SXM (guide's published) 1745.0 / H200 SXM " \
           "(guide's published) 794.5)" in detail_tables.details_markdown(guide)


def test_ignored_keys_and_a_world_size_difference_are_named_in_the_verdict():
    recs = guide_with_a_measured_h200(config={"world_size": 2, "WARMUP_STEPS": 1})
    a = analysis_of(recs, prices={"H200": 3.5, "B200": 7.0})
    assert [c.sources for c in a.comparisons] == ["guide's published vs guide's published"]
    (why,) = [why for s, why in a.unpaired if not s.reference]
    assert why.startswith("nearest: H200 SXM fa3: 8 GPUs, 2 warm-up (guide's published) differs in "
                          "world_size (2 GPUs vs 8 GPUs), WARMUP_STEPS (1 warm-up vs 2 warm-up); "
                          "--ignore-config world_size --ignore-config WARMUP_STEPS pairs them")
    a = analysis_of(recs, ignore=("world_size", "WARMUP_STEPS"), prices={"H200": 3.5, "B200": 7.0})
    c = a.comparisons[0]
    assert c.ignored == [("world_size", [2], [8]), ("WARMUP_STEPS", [1], [2])] and c.unlike == ["world_size"]
    block = verdict_blocks.verdict_block(c, {})
    assert block.splitlines()[0] == ("## 1. B200 SXM vs H200 SXM: measured vs guide's published - ignored: "
                                     "world_size 2 vs 8; WARMUP_STEPS 1 vs 2")
    assert "> **Not like for like** (world_size 2 vs 8): TFLOPS per GPU is not comparable" in block
    # no call and no speedup headline, anywhere in the block: the table says why per length
    assert not any(w in block for w in ("% cheaper (", "% dearer (", "cheaper per token at", "dearer per token at"))
    assert block.count("no call: not like for like") == 2  # 8K and 128K
    assert "so this pair gets no verdict: no cheaper or dearer call and no speedup headline." in block
    # nor a break-even price ratio or a speedup in its table: both would be that verdict
    rows = [line for line in block.splitlines() if line.startswith(("| 8K", "| 128K"))]
    assert len(rows) == 2 and all(line.endswith("| none: not like for like |") for line in rows)
    assert all("TFLOPS ratio, not a speedup: not like for like" in line for line in rows)
    # the details table keeps the label: its speedup column compares different work per GPU
    assert detail_tables.details_markdown(c).startswith("**Not like for like** (world_size 2 vs 8): TFLOPS per GPU")


def test_a_length_only_one_side_has_says_what_is_known_and_the_headline_names_it():
    recs = two_gpu_log() + [
        rec("error", "run-h200", error="timeout", message="no step in 600 s", seq_len=512),
        rec("capacity", "run-h200", max_fit_seq_len=6144, min_fail_seq_len=None, peak_mem_gib_at_max=130.0,
            hbm_gib=139.8, seq_len_step=1024, config=CONFIG)]
    recs = [r for r in recs if not (r["kind"] == "capacity" and r.get("min_fail_seq_len"))]
    c = only(analysis_of(recs, prices={"H200": 2, "B200": 4}))
    rows = rows_of(c)
    assert rows[512].missing == "H200 SXM (measured) failed here (timeout)"   # tried, not "not measured"
    assert rows[4096].missing == "H200 SXM (measured) cannot run this (OOM)"
    # a capacity search that never failed is no ceiling: 8K was not tried on H200
    assert rows[8192].missing == "not measured on H200 SXM (measured) (largest fit on record: 6K)"
    assert verdict_blocks.headline(c).endswith(
        " One side only: H200 SXM (measured) failed here (timeout) at 512; H200 SXM (measured) cannot run this "
        "(OOM) at 4K; not measured on H200 SXM (measured) (largest fit on record: 6K) at 8K.")
    # one speedup at every shared length: named once
    same = [header("h", "NVIDIA H200"), summary("h", 1024, 400.0, H200_PEAK, 1e4, 100.0, (99.0, 101.0)),
            header("b", "NVIDIA B200", "fa4"), summary("b", 1024, 800.0, B200_PEAK, 2e4, 50.0, (49.0, 51.0))]
    assert verdict_blocks.headline(only(analysis_of(same))) == (
        "No price for H200 SXM and B200 SXM (--price H200=USD_PER_GPU_HOUR --price B200=USD_PER_GPU_HOUR): "
        "speed only, 2.00x the baseline's TFLOPS per GPU.")


def test_logs_of_one_gpu_without_the_reference_are_told_where_it_is():
    a = analysis_of([header("h", "NVIDIA H200"), summary("h", 1024, 400.0, H200_PEAK)])
    ((_, why),) = a.unpaired
    assert why == ("no series of another GPU and no published H200 SXM series to compare with; the guide's "
                   "published H200 SXM figures are in results/reference/guide.jsonl: add that file (or its "
                   "folder) to the inputs")
    a = analysis_of([header("h", "NVIDIA A100"), summary("h", 1024, 200.0, 312.0)])
    assert a.unpaired[0][1].endswith("series to compare with")  # the guide publishes no A100
