"""page/ and text/: what report.md says: headlines and verdict blocks, the details, memory, workload
and format tables, numbers as written, and log text that cannot change what the page says."""
import csv
import json

import pytest

from report.helpers import (
    H200_PEAK, rec, header, summary, two_gpu_log, analysis_of, only, rows_of, skip_figures, _tables_are_rectangular,
    guide_with_a_measured_h200)
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.page import details as detail_tables, markdown, verdicts as verdict_blocks
from upgrade_bench.report.read import series
from upgrade_bench.report.text import tables
from upgrade_bench.report.published import guide as published
from upgrade_bench.report import main as plot_results


def test_a_speedup_above_the_peak_ratio_is_named_a_configuration_difference():
    recs = guide_with_a_measured_h200(config={"world_size": 2, "WARMUP_STEPS": 1})
    c = analysis_of(recs, ignore=("world_size", "WARMUP_STEPS"), prices={"H200": 3.5, "B200": 7.0}).comparisons[0]
    slow = next(r for r in c.rows if r.speedup)
    slow.speedup = c.peak_ratio * 1.05  # as a 2-GPU H200 over the guide's 8-GPU B200 read at 8K
    assert (f"Its TFLOPS ratio reaches {slow.speedup:.2f}x at {series.seq_label(slow.seq_len)}, above the "
            f"{c.peak_ratio:.2f}x peak ratio of the two GPUs: a configuration difference, not hardware."
            in verdict_blocks.headline(c))


def test_a_report_never_prints_a_non_finite_number():
    assert [tables.fmt(v, kind) for v in (float("nan"), float("inf"), None) for kind in ("x", "usd", "pct")] \
        == ["-"] * 9


def test_a_verdict_that_is_not_like_for_like_says_so_before_it_speaks():
    # A 2-GPU sweep paired with the guide's 8-GPU rows: the headline is what a buyer reads
    # first, so it may not state "cheaper" as a verdict, nor a health check "slower".
    recs = guide_with_a_measured_h200(config={"world_size": 2, "WARMUP_STEPS": 1})
    a = analysis_of(recs, ignore=("world_size", "WARMUP_STEPS"), prices={"H200": 3.5, "B200": 7.0})
    upgrade, health = a.comparisons[:2]
    assert verdict_blocks.headline(upgrade).startswith(
        "**Not like for like** (world_size 2 vs 8): TFLOPS per GPU and $/token are not comparable, so this "
        "pair gets no verdict: no cheaper or dearer call and no speedup headline.")
    assert "per token at" not in verdict_blocks.headline(upgrade)
    assert verdict_blocks.headline(health).startswith("**Not like for like** (world_size 8 vs 2): ")
    assert "slower" not in verdict_blocks.headline(health)
    assert verdict_blocks.speed_words(health, rows_of(health)[131072]) == "no call: not like for like"
    like = analysis_of(guide_with_a_measured_h200(), prices={"H200": 3.5, "B200": 7.0}).comparisons[0]
    assert verdict_blocks.headline(like).startswith("At these prices B200 SXM is")


def test_tables_of_one_gpu_against_itself_name_which_column_is_which():
    a = analysis_of(guide_with_a_measured_h200(), prices={"H200": 3.5, "B200": 7.0})
    header_row = detail_tables.details_markdown(only(a, comparisons.HEALTH)).splitlines()[0]
    assert "| H200 SXM (guide's published) TFLOPS | H200 SXM (measured) TFLOPS |" in header_row
    assert "| H200 SXM (guide's published) peak GiB | H200 SXM (measured) peak GiB |" in header_row
    # a measured decomposition against the guide's: the same GPU on both sides
    recs = guide_with_a_measured_h200() + [
        header("dec", "NVIDIA H200", "fa3", config=next(r["config"] for r in published.guide_reference_records()
                                                        if r["run_id"] == "guide-h200-decompose"),
               script="bench_decompose.py"),
        rec("decomposition", "dec", script="bench_decompose.py", seq_len=8192,
            total={"ms": 1000.0, "tflops": 420.0})]
    text = detail_tables.decomposition_markdown(analysis_of(recs))
    assert "| H200 SXM (guide's published) TFLOPS | H200 SXM (measured) TFLOPS |" in text
    # GPUs that differ keep their short names
    assert "| H200 SXM TFLOPS | B200 SXM TFLOPS |" in detail_tables.details_markdown(a.comparisons[0])


def test_a_small_price_per_token_keeps_its_digits():
    # a small model is cheap per token: "$0.000 vs $0.000, 40% cheaper" said nothing
    assert [tables.fmt(v, "usd") for v in (0.3551, 0.0123, 0.00028, 0.000041, 12.345)] == [
        "$0.355", "$0.012", "$0.00028", "$0.000041", "$12.35"]


def test_a_price_for_one_side_only_names_the_side_without_one():
    a = analysis_of(guide_with_a_measured_h200(), prices={"H200": 3.5})
    c = a.comparisons[0]
    assert (c.other.gpu, c.prices) == ("B200 SXM", None)
    assert verdict_blocks.headline(c).startswith("No price for B200 SXM (--price B200=USD_PER_GPU_HOUR): speed only, ")
    assert verdict_blocks.cost_words(c, rows_of(c)[8192]) == "no price (--price B200=USD_PER_GPU_HOUR)"
    assert "| **price** | $3.50 per GPU-hour | not given |" in verdict_blocks.verdict_block(c, {})
    assert only(a, comparisons.HEALTH).prices == (3.5, 3.5)


def test_peak_memory_measured_after_other_lengths_in_one_process_is_marked():
    # REUSE_PROCESS=1: the allocator's cache from the shorter lengths shapes the later peaks
    # (on an H200: +14.7 GiB at 128K in the guide's long-context config), so those cells say so.
    h = "run-h200"
    recs = [header(h, "NVIDIA H200", hbm=139.8),
            summary(h, 1024, 400.0, H200_PEAK, earlier_points_in_process=0),
            summary(h, 2048, 450.0, H200_PEAK, earlier_points_in_process=1),
            summary(h, 4096, 450.0, H200_PEAK)]  # a log from before the field: nothing claimed
    text = detail_tables.memory_markdown(analysis_of(recs))
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in text.splitlines()
            if line.startswith("| ") and "K" in line.split("|")[1]}
    assert rows == {"1K": "10.0", "2K": "20.0†", "4K": "40.0"}
    assert text.endswith(detail_tables.AFTER_OTHERS_NOTE)
    fresh = [r for r in recs if r.get("earlier_points_in_process") != 1]
    assert detail_tables.AFTER_OTHERS not in detail_tables.memory_markdown(analysis_of(fresh))
    # A log from before the field: its header's SEQ_LEN says which lengths ran after others.
    old = [header(h, "NVIDIA H200", hbm=139.8, config={"SEQ_LEN": [1024, 2048]}),
           summary(h, 1024, 400.0, H200_PEAK), summary(h, 2048, 450.0, H200_PEAK)]
    assert "| 2K | 20.0† |" in detail_tables.memory_markdown(analysis_of(old))
    # Published rows sharing one header say nothing about how their source ran them.
    published_rows = [header("pub", "NVIDIA H200", hbm=139.8, config={"SEQ_LEN": [1024, 2048]}, reference="guide"),
                      summary("pub", 1024, 400.0, H200_PEAK), summary("pub", 2048, 450.0, H200_PEAK)]
    assert detail_tables.AFTER_OTHERS not in detail_tables.memory_markdown(analysis_of(published_rows))


def test_the_workload_table_sets_flop_share_beside_measured_time_shares():
    # One MoE hybrid series: a summary at 8K (FLOP share 0.25) and a decomposition at 8K whose
    # step of 200 ms gave attention 30 ms, linear mixers 50 ms and, of other, routing 10 ms.
    h = header("r1", "NVIDIA H200", backend="fa4", config={"MODEL": "qwen3-next-80b-a3b"},
               layer_mix={"linear_attention": 3, "full_attention": 1})
    s = {**summary("r1", 8192, 300.0, 989), "attn_flop_share": 0.25}
    buckets = {"attention": {"ms": 30.0, "time_share": 0.15}, "linear_mixer": {"ms": 50.0, "time_share": 0.25},
               "gemm": {"ms": 80.0, "time_share": 0.4},
               "other": {"ms": 40.0, "time_share": 0.2, "moe_routing": {"ms": 10.0}}}
    d = rec("decomposition", "r1", seq_len=8192, wall_step_ms=200.0, buckets=buckets, attn_flop_share=0.25,
            total={"tflops": 290.0})
    a = analysis_of([h, s, d])
    text = markdown.render(a)
    row = [line for line in text.splitlines() if "| qwen3-next-80b-a3b (" in line]
    assert len(row) == 1
    cells = [c.strip() for c in row[0].strip("|").split("|")]
    assert cells[1:] == ["qwen3-next-80b-a3b (3 linear_attention, 1 full_attention)", "8K", "300.0",
                         "25.0%", "15.0%", "25.0%", "5.0%"]


def test_a_series_whose_fast_kernels_fell_back_is_marked_in_the_workload_table():
    h = header("r1", "NVIDIA H200", backend="fa4", config={"MODEL": "qwen3-next-80b-a3b"},
               mixer_kernels={"chunk_gated_delta_rule": "torch fallback", "causal_conv1d_fn": "causal_conv1d"})
    text = markdown.render(analysis_of([h, summary("r1", 8192, 50.0, 989)]))
    row = [line for line in text.splitlines() if "| qwen3-next-80b-a3b" in line]
    assert len(row) == 1 and "torch fallback for chunk_gated_delta_rule: not the architecture's speed" in row[0]
    assert "causal_conv1d_fn" not in row[0]


@pytest.mark.parametrize("evil", ["\r\n## 1. CPU is 95% cheaper per token\r\n", "a | b | c", "=HYPERLINK(\"x\")",
                                  "\x1b[31mred\x1b[0m \u202eevil", "caf\udce9 \udcff", "x" * 200_000])
def test_text_from_a_log_cannot_change_what_the_page_says(tmp_path, monkeypatch, evil):
    skip_figures(monkeypatch)  # the text never reaches them: the GPU's name is the table's, notes are not drawn
    recs = two_gpu_log()
    for r in recs:
        if r["kind"] == "header" and r["run_id"] == "run-b200":
            r["notes"] = evil
            r["config"] = {**r.get("config", {}), "NOTES": evil}
            r["hardware"] = {**r["hardware"], "gpu_name": "NVIDIA B200" + evil[:40]}
    name = tmp_path / ("odd\nname.jsonl" if "\n" in evil else "odd.jsonl")
    with open(name, "w", encoding="utf-8", errors="surrogatepass") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
    out = tmp_path / "report"
    assert plot_results.main([str(name), "--price", "H200=3.5", "--out", str(out)]) == 0
    page = (out / "report.md").read_text(encoding="utf-8")
    headings = [line for line in page.splitlines() if line.startswith("#")]
    assert not any("CPU is 95%" in h for h in headings)
    assert _tables_are_rectangular(page) and page.count("\n|") > 10
    assert "\x1b" not in page and "\u202e" not in page and len(page) < 400_000
    with open(out / "points.csv", newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    assert not any(c.startswith("=") for c in cells)


def test_what_a_format_buys_pairs_each_low_precision_with_the_bf16_run_of_its_configuration():
    from upgrade_bench.report.page import precision as formats

    h = "NVIDIA H200"
    log = [header("bf16", h, config={"SEQ_LEN": [8192]}),
           summary("bf16", 8192, 400.0, H200_PEAK, step_ms=300.0, loss_mean=11.90),
           header("fp8", h, config={"SEQ_LEN": [8192], "PRECISION": "fp8-tensorwise"}),
           summary("fp8", 8192, 480.0, H200_PEAK, step_ms=250.0, loss_mean=11.93, low_precision_flop_share=0.6),
           # another configuration (ZeRO-2): its fp8 pairs with its own bf16 run, never the ZeRO-3 one
           header("z2", h, config={"SEQ_LEN": [8192], "PRECISION": "fp8-rowwise", "ZERO_STAGE": 2}),
           summary("z2", 8192, 470.0, H200_PEAK, step_ms=260.0, loss_mean=12.40),
           header("z2-bf16", h, config={"SEQ_LEN": [8192], "ZERO_STAGE": 2}),
           summary("z2-bf16", 8192, 410.0, H200_PEAK, step_ms=290.0, loss_mean=11.90),
           # a ZeRO-1 fp8 run has no bf16 sibling: no row
           header("z1", h, config={"SEQ_LEN": [8192], "PRECISION": "fp8-rowwise", "ZERO_STAGE": 1}),
           summary("z1", 8192, 470.0, H200_PEAK, step_ms=250.0, loss_mean=11.90),
           # its experts in FP8 too: the format, not another configuration; the row says so
           header("ex", h, config={"SEQ_LEN": [8192], "PRECISION": "fp8-tensorwise", "FP8_EXPERTS": True}),
           summary("ex", 8192, 300.0, H200_PEAK, step_ms=400.0, loss_mean=11.90)]
    data = series.load(log)
    rows = [line for line in formats.format_markdown(data.series).splitlines() if line.startswith("| H200")]
    # random tokens, one bf16 seed: a gap of 0.5 is reported, never marked (no convergence test)
    assert sorted(rows) == ["| H200 SXM | fp8-rowwise | 8K | 1.12x | - | 80.0 / 80.0 | one seed | 0.5 |",
                            "| H200 SXM | fp8-tensorwise + experts | 8K | 0.75x | - | 80.0 / 80.0 | one seed | 0 |",
                            "| H200 SXM | fp8-tensorwise | 8K | 1.20x | 60.0% | 80.0 / 80.0 | one seed | 0.03 |"]
    assert "**The loss is not a convergence test here**" in formats.format_markdown(data.series)
    labels = sorted(s.label for s in data.series)
    assert any("bf16" in label for label in labels) and any("fp8-tensorwise" in label for label in labels)
    assert formats.format_markdown(series.load(log[:2]).series) == ""  # bf16 alone: nothing to say
