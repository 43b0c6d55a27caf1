"""plot_results.py: comparisons, verdicts with their ranges, the guide's tables, figures, export.

Fixtures are records of two GPUs written by hand (hand-computed expectations), the guide's
published figures, and the shipped real logs in results/. Everything runs in-process; the
report of the shipped data is made once per module.
"""
import contextlib
import csv
import dataclasses
import errno
import io
import json
import os
import struct

import pytest
from matplotlib.text import Text

from conftest import REPO, mount_tmpfs, unmount
from upgrade_bench import faults
from upgrade_bench.log import records
from upgrade_bench.report.forecast import backtest, calibration
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.page import details as detail_tables, markdown, verdicts as verdict_blocks, words
from upgrade_bench.report.figures import draw as figures, style as plotkit
from upgrade_bench.report.read import inputs, series, stacks
from upgrade_bench.report.text import tables
from upgrade_bench.report.published import guide as published, pairs as published_pairs
from upgrade_bench.report import analysis as report_analysis, main as plot_results

H200_PEAK, B200_PEAK = 989.0, 2250.0
STACK = {"python": "3.12.12", "torch": "2.13.0", "cuda": "13.0", "transformers": "5.14.1",
         "deepspeed": "0.19.2", "liger-kernel": "0.8.0", "flash-attn-3": None, "flash-attn-4": None}
CONFIG = {"MODEL": "llama-3.1-8b", "ZERO_STAGE": 3, "GRAD_CHECKPOINT": True, "OFFLOAD_OPTIMIZER": True,
          "USE_LIGER": True, "ATTN_BACKEND": "auto", "PACKED_DOC_LEN": 0, "world_size": 8,
          "SEQ_LEN": [1024], "OUTPUT": "x.jsonl", "NOTES": ""}
README_ARGS = ["results/", "--price", "H200=3.50", "--price", "B200=7.00", "--forecast", "B200", "--own", "H200=30000",
               "--own", "B200=45000"]


def rec(kind, run_id, **fields):
    return {"kind": kind, "schema": records.SCHEMA, "script": fields.pop("script", "benchmark.py"),
            "run_id": run_id, "time": 0.0, **fields}


def header(run_id, gpu, backend="fa3", software=None, config=None, script="benchmark.py", hbm=None, **extra):
    return rec("header", run_id, script=script, software={**STACK, **(software or {})},
               hardware={"gpu_name": gpu, "gpu_count": 8, "hbm_gib": hbm},
               config={**CONFIG, **(config or {})}, attn_backend=backend, **extra)


def summary(run_id, seq_len, tflops, peak, tokens_per_s=None, step_ms=None, spread=(None, None), steps=10,
            **extra):
    return rec("summary", run_id, seq_len=seq_len, batch_size=1, tflops_per_gpu=tflops, steps=steps,
               mfu=tflops / peak, tokens_per_s_per_gpu=tokens_per_s, step_ms=step_ms,
               step_ms_min=spread[0], step_ms_max=spread[1], attn_flop_share=0.1,
               peak_mem_gib=seq_len / 1024 * 10.0, **extra)


def two_gpu_log(b200_software=None, b200_mfu_peak=B200_PEAK):
    """H200 (fa3) and B200 (fa4), same config. Both: 1K (narrow spreads: decided), 2K (wide:
    the same), 3K (H200 timed once: undecided). B200 only: 512 (nothing said about H200),
    4K (H200 OOM), 8K (H200's capacity tops out at 6K). Plus the other kinds."""
    h, b = "run-h200", "run-b200"
    out = [header(h, "NVIDIA H200", hbm=139.8),
           summary(h, 1024, 400.0, H200_PEAK, 10000.0, 102.4, (100.0, 110.0),
                   sm_clock_mhz_median=1980, power_w_mean=650.0, throttle=[]),
           summary(h, 2048, 450.0, H200_PEAK, 9000.0, 227.6, (200.0, 250.0)),
           summary(h, 3072, 450.0, H200_PEAK, 8000.0, 384.0, (384.0, 384.0), steps=1),
           # run_sweep's own header (sweep settings in its config); the error carries the point's
           header("sweep-h200", "NVIDIA H200", script="run_sweep.sh", config={"GPUS": 8, "OUT": "r/"}),
           rec("error", "sweep-h200", script="run_sweep.sh", error="oom", message="exit code 3",
               seq_len=4096, config=CONFIG),
           rec("capacity", h, max_fit_seq_len=6144, min_fail_seq_len=7168, peak_mem_gib_at_max=130.0,
               hbm_gib=139.8, seq_len_step=1024, runs=5, config={**CONFIG, "SEQ_LEN": [6144]}),
           header(b, "NVIDIA B200", backend="fa4", software=b200_software, hbm=178.4),
           summary(b, 512, 700.0, B200_PEAK, 25000.0, 20.5, (20.0, 21.0)),
           summary(b, 1024, 800.0, b200_mfu_peak, 21000.0, 48.8, (48.0, 50.0)),
           summary(b, 2048, 990.0, B200_PEAK, 18900.0, 108.4, (100.0, 120.0)),
           summary(b, 3072, 990.0, B200_PEAK, 17000.0, 180.7, (180.0, 182.0)),
           summary(b, 4096, 1000.0, B200_PEAK, 15000.0, 273.1, (270.0, 275.0)),
           summary(b, 8192, 1000.0, B200_PEAK, 12000.0, 682.7, (680.0, 690.0))]
    # isolated attention, MAMF, capabilities, decomposition: one run per GPU and script
    per_gpu = (("h", "NVIDIA H200", "fa3", 500.0, 800.0, "unsupported_hardware"),
               ("b", "NVIDIA B200", "fa4", 1000.0, 1700.0, "ok"))
    for gpu, name, backend, att, mamf, fp4 in per_gpu:
        out.append(header(f"att-{gpu}", name, backend, script="bench_flash_attn.py",
                          software=b200_software if gpu == "b" else None))
        for seq_len in (1024, 2048):
            out.append(rec("attention", f"att-{gpu}", script="bench_flash_attn.py", backend=backend,
                           seq_len=seq_len, **{"pass": "fwd_bwd"}, ms=1.0, tflops=att, batch=1, heads=32,
                           kv_heads=8, head_dim=128, causal=True, dtype="bf16", packed_doc_len=0,
                           ok=True, status="ok"))
        out.append(rec("attention", f"att-{gpu}", script="bench_flash_attn.py", backend="fa2",
                       seq_len=1024, **{"pass": "fwd_bwd"}, tflops=None, status="unavailable",
                       batch=1, heads=32, kv_heads=8, head_dim=128, causal=True, dtype="bf16",
                       packed_doc_len=0))
        out.append(header(f"mamf-{gpu}", name, script="mamf-finder.py"))
        out.append(rec("mamf", f"mamf-{gpu}", script="mamf-finder.py", dtype="bfloat16", m=4096,
                       n=4096, k=4096, tflops_mean=mamf, tflops_median=mamf, tflops_max=mamf + 5))
        out.append(header(f"cap-{gpu}", name, script="check_capabilities.py"))
        out.append(rec("capability", f"cap-{gpu}", script="check_capabilities.py", item="matmul:nvfp4",
                       category="dtype", status=fp4, detail="", value=None))
        out.append(rec("capability", f"cap-{gpu}", script="check_capabilities.py", item="matmul:bf16",
                       category="dtype", status="ok", detail="", value=None))
        out.append(header(f"dec-{gpu}", name, backend, script="bench_decompose.py",
                          config={"ZERO_STAGE": 2, "GRAD_CHECKPOINT": False, "OFFLOAD_OPTIMIZER": False,
                                  "TIME_STEPS": 10, "PROFILE_STEPS": 3}))
        ms_attn, ms_rest = (100.0, 400.0) if gpu == "h" else (50.0, 250.0)
        out.append(rec("decomposition", f"dec-{gpu}", script="bench_decompose.py", seq_len=8192,
                       buckets={"attention": {"ms": ms_attn, "tflops": 10.0 / ms_attn * 1e3},
                                "gemm": {"ms": ms_rest, "tflops": 40.0 / ms_rest * 1e3}},
                       total={"ms": ms_attn + ms_rest, "tflops": 50.0 / (ms_attn + ms_rest) * 1e3}))
    return out


def write_jsonl(path, recs, extra_lines=()):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")
        for line in extra_lines:
            f.write(line + "\n")
    return str(path)


def analysis_of(recs, ignore=(), **kw):
    recs = json.loads(json.dumps(recs))  # as read from a file
    return comparisons.analyse(series.load(recs, ignore), **kw)


def only(a, kind=comparisons.UPGRADE):
    (c,) = [c for c in a.comparisons if c.kind == kind]
    return c


def rows_of(c):
    return {r.seq_len: r for r in c.rows}


def cli(capsys, *args, stdin=None, monkeypatch=None):
    """plot_results.main in-process: (exit code, stdout, stderr)."""
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    try:
        code = faults.run_main(plot_results.main, [str(a) for a in args])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def skip_figures(monkeypatch):
    """plot_results without its PNGs (most of a report's time), for a test of what the page and
    the terminal say whose figures draw what others' draw: two_gpu_log's in the tests of a
    report that fails half-way and of the command line, the shipped data's in the README test."""
    monkeypatch.setattr(figures, "write_all", lambda a, out_dir, opener=open: [])


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


# ---------------------------------------------------------------- the guide's tables (pure)

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


def test_capabilities_logged_under_old_and_new_item_names_share_a_row():
    def cap(run_id, item, status):
        return rec("capability", run_id, script="check_capabilities.py", item=item, category="attention",
                   status=status, detail="", value=None)

    recs = [header("h", "NVIDIA H200", script="check_capabilities.py"), cap("h", "attention:sdpa_cudnn", "ok"),
            header("b", "NVIDIA B200", script="check_capabilities.py"),
            cap("b", "attention:sdpa-cudnn", "unsupported_stack")]
    data = series.load(json.loads(json.dumps(recs)))
    assert {g: list(gpu.capabilities) for g, gpu in data.gpus.items()} == {
        "H200 SXM": ["attention:sdpa-cudnn"], "B200 SXM": ["attention:sdpa-cudnn"]}
    rows = [line for line in detail_tables.capability_markdown(comparisons.analyse(data)).splitlines()
            if "attention:" in line]
    assert rows == ["| **attention:sdpa-cudnn** | **ok** | unsupported_stack | ◀ ok only on H200 SXM |"]


def test_series_labels_name_only_the_settings_that_differ_in_words():
    assert [series.config_phrase(k, v) for k, v in [
        ("ZERO_STAGE", 3), ("GRAD_CHECKPOINT", True), ("OFFLOAD_OPTIMIZER", False),
        ("world_size", 1), ("world_size", 8), ("NUM_LAYERS", 0), ("NUM_LAYERS", 8),
        ("PYTORCH_CUDA_ALLOC_CONF", None), ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
        ("SOMETHING_NEW", True)]] == [
        "ZeRO-3", "ckpt", "no offload", "1 GPU", "8 GPUs", "all layers", "8 layers",
        "default allocator", "allocator expandable_segments:True", "SOMETHING_NEW=1"]
    recs = [header("a", "NVIDIA H200"), summary("a", 8192, 400.0, H200_PEAK),
            header("b", "NVIDIA H200", config={"ZERO_STAGE": 2, "GRAD_CHECKPOINT": False, "world_size": 1}),
            summary("b", 8192, 500.0, H200_PEAK)]
    labels = sorted(s.label for s in series.load(recs).series)
    # world_size is named first; MODEL and the rest, the same in both, not at all.
    assert labels == ["H200 SXM fa3: 1 GPU, ZeRO-2, no ckpt", "H200 SXM fa3: 8 GPUs, ZeRO-3, ckpt"]


def test_tick_labels_that_would_touch_are_left_out_but_never_the_last():
    # labels 20 px wide, 3 px apart at least: 50 touches 30; 110 (the last) replaces 100
    assert plotkit.spaced_labels([0, 30, 50, 100, 110], [20] * 5) == [True, True, False, False, True]
    assert plotkit.spaced_labels([0, 23], [20, 20]) == [True, True]    # exactly 3 px apart
    assert plotkit.spaced_labels([], []) == []
    # on a sweep's axis the powers of two come first: 256K stays, the 272K beside it gives way
    centres, widths = [0, 100, 200, 290, 300], [20] * 5  # 8K 32K 128K 256K 272K
    assert plotkit.spaced_labels(centres, widths, preferred=[True, True, True, True, False]) == \
        [True, True, True, True, False]
    assert plotkit.spaced_labels([0, 50, 100], [20] * 3, preferred=[False, True, False]) == [True, True, True]


def test_stack_parity_is_per_comparison():
    same = stacks.stack_of({"software": STACK})
    assert stacks.stack_differences(same, dict(same)) == []
    # one-sided attention package = the per-GPU backend choice; two versions = a mismatch
    assert stacks.stack_differences(dict(same, **{"flash-attn-3": "3.0.0"}),
                                    dict(same, **{"flash-attn-4": "4.0.0b22"})) == []
    assert stacks.stack_differences(dict(same, **{"flash-attn-4": "4.0.0b36"}),
                                    dict(same, **{"flash-attn-4": "4.0.0b22"})) == [
        ("flash-attn-4", "4.0.0b36", "4.0.0b22")]
    c = only(analysis_of(two_gpu_log(b200_software={"torch": "2.12.0", "cuda": "12.9"})))
    assert c.stack == [("torch", ["2.13.0"], ["2.12.0"]), ("cuda", ["13.0"], ["12.9"])]
    assert "**Software stacks differ** (the stack alone moves results by double-digit percent): " \
           "torch 2.13.0 vs 2.12.0; cuda 13.0 vs 12.9" in verdict_blocks.verdict_block(c, {})
    assert only(analysis_of(two_gpu_log())).stack == []


# ---------------------------------------------------------------- comparisons are the unit

def guide_with_a_measured_h200(config=None, **h200):
    """The guide's published figures plus a measured H200 sweep and MAMF of the guide's config."""
    guide = published.guide_reference_records()
    sweep_config = next(r["config"] for r in guide if r["run_id"] == "guide-h200-sweep" and r["kind"] == "header")
    software = dict(published.GUIDE_STACK, torch="2.11.0", **{"flash-attn-4": "4.0.0b36"})
    return guide + [
        header("mine", "NVIDIA H200", "fa4", software=software, config={**sweep_config, **(config or {})},
               hbm=139.8),
        summary("mine", 131072, 400.0, H200_PEAK, 2700.0, 48500.0, (48000.0, 49000.0), **h200),
        summary("mine", 8192, 130.0, H200_PEAK, 2500.0, 3243.0, (3200.0, 3300.0)),
        header("mine-mamf", "NVIDIA H200", "fa4", software=software, script="mamf-finder.py"),
        rec("mamf", "mine-mamf", script="mamf-finder.py", dtype="bf16", tflops_mean=812.9)]


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


def test_a_speedup_above_the_peak_ratio_is_named_a_configuration_difference():
    recs = guide_with_a_measured_h200(config={"world_size": 2, "WARMUP_STEPS": 1})
    c = analysis_of(recs, ignore=("world_size", "WARMUP_STEPS"), prices={"H200": 3.5, "B200": 7.0}).comparisons[0]
    slow = next(r for r in c.rows if r.speedup)
    slow.speedup = c.peak_ratio * 1.05  # as a 2-GPU H200 over the guide's 8-GPU B200 read at 8K
    assert (f"Its TFLOPS ratio reaches {slow.speedup:.2f}x at {series.seq_label(slow.seq_len)}, above the "
            f"{c.peak_ratio:.2f}x peak ratio of the two GPUs: a configuration difference, not hardware."
            in verdict_blocks.headline(c))


def test_duplicate_records_are_counted_once(tmp_path):
    log = two_gpu_log()
    first = write_jsonl(tmp_path / "a.jsonl", log)
    again = write_jsonl(tmp_path / "b.jsonl", log[:3])  # header + two summaries of run-h200
    tally = inputs.Tally()
    data = series.load(inputs.read([first, again], tally), also_in=tally.seen_again)
    (h200,) = [s for s in data.series if s.gpu == "H200 SXM" and s.is_sweep]
    assert [len(v) for v in h200.repeats.values()] == [1, 1, 1]
    assert tally.duplicates == {again: 3} and tally.seen_again == {"run-h200": {again}}
    assert words.sources_words(h200, tally.seen_again).startswith(f"{first} (run run-h200; also in {again})")


# ---------------------------------------------------------------- the published figures

def test_guide_reference_records_are_labelled_and_reproduce_the_guide():
    recs = published.guide_reference_records()
    assert all(r["reference"] == "guide" for r in recs)
    headers = [r for r in recs if r["kind"] == "header"]
    assert {r["hardware"]["gpu_name"] for r in headers} == {"NVIDIA H200", "NVIDIA B200"}
    assert all("guide's published figures" in r["notes"] for r in headers)
    # the `reference` field marks published figures; the notes' words alone do not
    unmarked = [{k: v for k, v in r.items() if k != "reference"} for r in recs]
    assert {s.reference for s in series.load(unmarked).series} == {None}
    a = analysis_of(recs, prices={"H200": 3.5, "B200": 7.0})
    c = only(a)
    assert c.other.label == "B200 SXM fa4 (guide's published)"
    rows = rows_of(c)
    assert rows[262144].speedup == pytest.approx(852 / 419)  # the guide's 2.03x
    # the range of published whole-number TFLOPS is their rounding; it holds the guide's 1.19x
    assert rows[8192].speedup_range == pytest.approx((166.5 / 141.5, 167.5 / 140.5))
    assert rows[8192].speedup_range[0] < 1.19 < rows[8192].speedup_range[1]
    assert rows[8192].attn_share == pytest.approx(0.125, abs=0.001)  # the guide: 12.5% at 8K
    # the guide's memory table, both GPUs
    assert [r.other["peak_mem_gib"] for r in c.rows] == [16.3, 25.9, 37.6, 66.7, 95.7, 124.6]
    assert [r.base["peak_mem_gib"] for r in c.rows] == [16.3, 25.8, 37.5, 66.5, 95.7, 124.5]
    # the guide's verdict at a 2x price ratio: 8K 69% dearer; 256K about even
    assert rows[8192].cost.value == pytest.approx(2 * 141 / 167)
    assert rows[262144].break_even == pytest.approx(852 / 419)
    (dec,) = a.decompositions
    assert [(r["bucket"], round(r["speedup"], 2)) for r in dec.rows] == [
        ("attention", 1.87), ("everything else", 1.67), ("total", 1.69)]  # the guide's ratios


def test_the_shipped_guide_reference_is_what_the_code_writes():
    with open(REPO / "results" / "reference" / "guide.jsonl") as f:
        shipped = [json.loads(line) for line in f]
    assert shipped == json.loads(json.dumps(published.guide_reference_records()))


# ---------------------------------------------------------------- the README's command

@pytest.fixture(scope="module")
def shipped_report(tmp_path_factory):
    """plot_results.py on the shipped results/, as the README runs it, once per module (its
    tests: xdist_group shipped_report)."""
    out = tmp_path_factory.mktemp("report")
    cwd = os.getcwd()
    os.chdir(REPO)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            code = plot_results.main(README_ARGS + ["--out", str(out)])
    finally:
        os.chdir(cwd)
    assert code == 0
    (out / "stdout.txt").write_text(printed.getvalue())
    return out


@pytest.fixture(scope="module")
def shipped_analysis():
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        tally = inputs.Tally()
        data = series.load(inputs.read(inputs.expand(["results/"]), tally), also_in=tally.seen_again)
        return comparisons.analyse(data, prices={"H200": 3.5, "B200": 7.0}), tally
    finally:
        os.chdir(cwd)


def fits_a_terminal(printed: str) -> list:
    """The printed lines, checked: plain text within 100 columns (but the last, report.md's path
    as given) and 30 lines."""
    lines = printed.splitlines()
    # a path longer than a line is printed whole on a line of its own
    assert len(lines) <= 30 and all(len(line) <= 100 or len(line.split()) == 1 for line in lines[:-1]), lines
    assert not any(line.startswith(("#", "- ", "|", "**")) for line in lines)  # no markdown
    return lines


@pytest.mark.xdist_group("shipped_report")
def test_the_readme_command_runs_on_the_shipped_data(shipped_report):
    text = (shipped_report / "report.md").read_text()
    lines = fits_a_terminal((shipped_report / "stdout.txt").read_text())
    # each workload by its kind, measured whole models first, cuts then, the guide's figures last
    kinds = [line.split(":")[0] for line in lines if line.startswith("[")]
    assert kinds == ["[1] Whole model", "[2] Whole model", "[3] Cut", "[4] Published"]
    cut = lines.index(next(line for line in lines if line.startswith("[3] Cut: llama-3.1-8b, 8 of 32 layers")))
    scaled = "  $/token scaled x3.38-3.53 to the whole model by FLOPs per token, at the cut's TFLOPS/GPU"
    assert scaled in lines[cut:cut + 3]
    # the cut's $/1M tokens are the whole model's (x3.38 the cut's $0.035), never the cut's own
    (row,) = [line for line in lines[cut:cut + 4] if line.startswith("  B200 SXM forecast  8K-32K ")]
    assert "$0.120 v $0." in row and row.endswith("84/180")
    # the guide's pair: dearer past the noise floor at 8K-64K, even beyond (0.5% to 1.6%: rounding, no call)
    assert "  B200 SXM published 8K-64K    1.18-1.84x dearer 9-70%    $0.355 v $0.599  $4.15-6.44/h   38/180" in lines
    assert any(line.startswith("  B200 SXM published 128K-256K 1.99-2.04x even ") for line in lines)
    bottom = " ".join(line.strip() for line in lines[lines.index(next(x for x in lines if "Bottom line" in x)):]
                      if not line.startswith("Training"))
    assert bottom.startswith("Bottom line [1]: B200 SXM (forecast) at $7.00/GPU-hour is ")
    assert "; it pays off below $3." in bottom
    assert "Training the whole model of [1] on 1T tokens (--tokens) at 8K, 2 GPU(s) (--gpus):" in lines
    # the owner: H200 $30,000 over 4 years, its measured 0.181 J/token at 8K x PUE 1.3 x $0.08/kWh
    h200 = 30_000 / (4 * 8766) * 1e6 / (1357.2781101171818 * 3600) + 0.18085103352864584 / 3.6 * 1.3 * 0.08
    assert f"  H200 SXM measured: ${h200:.2f} (" in lines[-3] and "(est. energy); owner " in lines[-2]
    assert lines[-1] == f"Every series, sentence, table and figure: {shipped_report / 'report.md'}"
    # the page: the same answer in sentences, every number with its length
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Is this node healthy?"  # first of all: a sick baseline skews every verdict
    node = text[text.index(sections[0]):text.index(sections[1])]
    assert node.splitlines()[2] == "**H200 SXM in results (baseline) is healthy: 4 of 4 components had a reference**."
    assert "| MAMF bf16 | 802.2 TFLOPS | 794.5 TFLOPS | published" in node
    assert lines[0] == "H200 SXM in results (baseline) is healthy: 4 of 4 components had a reference."
    sections = sections[1:]
    assert sections[:3] == ["## The answer", "## Cost to train the whole model on 1T tokens",
                            "## Forecasts (not measured)"]
    assert text[:text.index(sections[0])].endswith("Prices per GPU-hour: H200 SXM $3.50, B200 SXM $7.00.\n\n")
    assert "Owner's cost per token: H200 SXM $30,000/4y, B200 SXM $45,000/4y; $0.08/kWh, PUE 1.3" in text
    answer = text[text.index(sections[0]):text.index(sections[1])]
    assert ("- [4] B200 SXM (guide's published) at 8K to 64K: 1.18x to 1.84x as fast (point estimates 1.18x, 1.62x, "
            "1.84x); dearer per token by 8.5% to 70.0% at $3.50 vs $7.00 per GPU-hour ($/1M tokens H200 SXM vs "
            "B200 SXM: $0.355 vs $0.599 at 8K, $0.212 vs $0.263 at 32K, $0.240 vs $0.261 at 64K); B200 SXM pays "
            "off below $4.15 at 8K, $5.66 at 32K, $6.44 at 64K per GPU-hour") in answer
    assert "- [4] B200 SXM (guide's published) at 128K to 256K: 1.99x to 2.04x as fast" in answer
    assert "even per token at $3.50 vs $7.00" in answer and "cheaper per token" not in answer
    assert "|" not in answer  # words, not a table
    sections = sections[3:]
    assert sections[0] == "## 1. B200 SXM vs H200 SXM: guide's published vs guide's published"
    assert "| 8K | 1.18x (1.18x to 1.19x) | $0.355 | $0.599 | 68.9% dearer" in text
    assert ("At these prices B200 SXM is dearer per token at 8K, 32K, 64K; even within the noise at 128K, "
            "192K, 256K; 1.18x to 2.03x the baseline's TFLOPS per GPU.") in text
    assert sections[1] == "## Series not compared"
    # the README shows what the command prints: it must stay what it prints
    readme = (REPO / "README.md").read_text()
    assert "\n".join(lines[:-1]) in readme
    # the H200 capability log predates the backend table's spellings: read under today's names
    assert "| attention:sdpa-cudnn | ok |" in text and "sdpa_cudnn" not in text
    for name in ("comparison-1.png", "upgrade.png", "attention.png", "decomposition.png"):
        assert (shipped_report / name).stat().st_size > 10_000 and f"![{name}]({name})" in text
    assert png_size(shipped_report / "comparison-1.png") == (1590, 840)  # 3 x 2 panels of 5.3 x 3.9 in


def test_reading_a_folder_includes_its_reference_and_a_missing_gpu_names_it(tmp_path, capsys):
    assert inputs.expand([str(REPO / "results")])[-1] == str(REPO / "results" / "reference" / "guide.jsonl")
    code, _, err = cli(capsys, REPO / "results" / "h200x2_8b_longctx_sweep.jsonl", "--price", "B200=7",
                       "--out", tmp_path)
    assert code == 2 and err.count("\n") == 1
    assert "--price B200=7: no GPU named 'B200' in the logs (GPUs: H200 SXM); the guide's published " \
           "B200 SXM figures are in results/reference/guide.jsonl: add that file (or its folder)" in err


@pytest.mark.xdist_group("shipped_report")
def test_the_flat_table_has_one_row_per_point_and_no_double_count(shipped_report):
    with open(shipped_report / "points.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(shipped_report / "points.jsonl") as f:
        assert [json.loads(line)["run_id"] or "" for line in f] == [r["run_id"] for r in rows]
    sweep = [r for r in rows if r["run_id"] == "20261130T081436-e8dc5d"]
    assert [r["seq_len"] for r in sweep] == ["8192", "32768", "65536", "131072"]  # in two logs, once here
    (oom,) = [r for r in rows if r["status"] == "oom"]
    assert (oom["gpu"], oom["seq_len"], oom["world_size"], oom["config.WARMUP_STEPS"]) == (
        "H200 SXM", "286720", "2", "0")
    guide = [r for r in rows if r["gpu"] == "B200 SXM" and r["source"] != "forecast"]
    assert {r["provenance"] for r in guide} == {"guide's published"} and len(guide) == 6
    tokens_per_s = 8192 / (2524.823529 * 1e-3)  # the guide's 167 TFLOPS at 8K
    assert float(guide[0]["usd_per_mtok"]) == pytest.approx(7.0 / (tokens_per_s * 3600) * 1e6, rel=1e-6)
    assert rows[0]["source"].startswith("results/") and "config.MODEL" in rows[0] and "step_ms" in rows[0]


# ---------------------------------------------------------------- figures a buyer can read

def overlaps(fig) -> list:
    """Pairs of visible texts whose boxes overlap, texts outside the figure, and texts over
    bars (a bar chart's labels sit beside the bars)."""
    renderer = fig.canvas.get_renderer()
    tick_labels, drawn = set(), []
    for ax in fig.axes:  # tick labels outside the view limits exist but are not drawn
        for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                tick_labels.update({id(tick.label1), id(tick.label2)})
                drawn += [t for t in (tick.label1, tick.label2) if min(limits) <= tick.get_loc() <= max(limits)]
    texts = [t for t in fig.findobj(Text) if id(t) not in tick_labels] + drawn
    texts = [t for t in texts if t.get_visible() and t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer).expanded(0.98, 0.9)) for t in texts]
    found = [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:] if ba.overlaps(bb)]
    found += [(a, "outside the figure") for a, box in boxes
              if not fig.bbox.contains(box.x0, box.y0) or not fig.bbox.contains(box.x1, box.y1)]
    bars = [p.get_window_extent(renderer) for ax in fig.axes for p in ax.patches]
    found += [(a, "a bar") for a, box in boxes for bar in bars if box.overlaps(bar)]
    return found


def test_no_figure_text_overlaps_another_or_the_bars(shipped_analysis):
    a, _ = shipped_analysis
    drawn = [figures.draw_comparison(c, a) for c in a.comparisons]
    drawn += [figures.draw_overview(a), figures.draw_attention(a), figures.draw_decomposition(a)]
    for fig in drawn:
        fig.canvas.draw()
        assert overlaps(fig) == [], fig.texts[0].get_text() if fig.texts else fig.axes[0].get_title()
        figures.plt.close(fig)


def test_no_panel_is_drawn_empty():
    # no length measured on both: no speedup panel; no price: throughput in place of $/token
    recs = [header("h", "NVIDIA H200"), summary("h", 1024, 400.0, H200_PEAK, 10000.0, 100.0),
            header("b", "NVIDIA B200", "fa4"), summary("b", 2048, 900.0, B200_PEAK, 9000.0, 200.0)]
    a = analysis_of(recs)
    fig = figures.draw_comparison(a.comparisons[0], a)
    panels = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in panels] == ["Training throughput per GPU", "Throughput (no --price given)",
                                                 "Attention FLOP share", "Peak memory vs HBM"]
    assert all(len(ax.get_lines()) >= 2 for ax in panels)
    figures.plt.close(fig)
    # a CPU try-out records no peak memory: the overview has no empty memory panel
    for r in recs:
        r.pop("peak_mem_gib", None)
    fig = figures.draw_overview(analysis_of(recs))
    assert [ax.get_title() for ax in fig.axes] == ["Training throughput per GPU"]
    figures.plt.close(fig)


def test_each_series_has_its_own_colour_and_published_lines_are_dashed(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_overview(a)
    lines = {line.get_label(): line for ax in fig.axes[:2] for line in ax.get_lines()}  # whole models, cuts
    assert len({line.get_color() for line in lines.values()}) == len(lines) == 5
    assert {label.endswith("(guide's published)") for label, line in lines.items()
            if line.get_linestyle() == "--"} == {True}
    figures.plt.close(fig)


def test_the_speedup_panel_draws_the_break_even_at_the_price_ratio():
    # The line a buyer looks for: above it the candidate is cheaper per token at these prices.
    for a, expected in ((analysis_of(two_gpu_log(), prices={"H200": 2.0, "B200": 5.0}), [2.5, 2.5]),
                        (analysis_of(two_gpu_log()), None)):
        fig = figures.draw_comparison(only(a), a)
        (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("Speedup")]
        lines = [line for line in ax.get_lines() if "break-even" in line.get_label()]
        assert [list(line.get_ydata()) for line in lines] == ([expected] if expected else [])
        if expected:
            assert lines[0].get_label().startswith("price ratio 2.50x: break-even")
            assert "break-even: price ratio 2.50x" in [t.get_text() for t in ax.texts]
            # its right axis reads the speedup as the price the B200 pays off below: $2.00 x 2.5 = $5.00
            (right,) = [child for child in ax.child_axes]
            assert right.get_ylabel() == "B200 SXM pays off below ($/GPU-hour)"
            fig.canvas.draw()
            low, high = ax.get_ylim()
            assert right.get_ylim() == pytest.approx((2.0 * low, 2.0 * high))
        figures.plt.close(fig)


def test_a_pair_that_is_not_like_for_like_draws_no_break_even():
    recs = guide_with_a_measured_h200(config={"world_size": 2, "WARMUP_STEPS": 1})
    a = analysis_of(recs, ignore=("world_size", "WARMUP_STEPS"), prices={"H200": 3.5, "B200": 7.0})
    c = a.comparisons[0]
    assert c.unlike == ["world_size"] and c.price_ratio == 2.0
    fig = figures.draw_comparison(c, a)
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("Speedup")]
    assert not [line for line in ax.get_lines() if "break-even" in line.get_label()]
    figures.plt.close(fig)


def one_gpu_eight_layers():
    """two_gpu_log plus an H200 run of 8 layers on 1 GPU: a sweep point and a decomposition."""
    cut = {"world_size": 1, "NUM_LAYERS": 8}
    return two_gpu_log() + [
        header("cut", "NVIDIA H200", config=cut), summary("cut", 1024, 420.0, H200_PEAK, 11000.0, 95.0),
        header("cut-dec", "NVIDIA H200", script="bench_decompose.py",
               config={**cut, "ZERO_STAGE": 2, "GRAD_CHECKPOINT": False, "OFFLOAD_OPTIMIZER": False}),
        rec("decomposition", "cut-dec", script="bench_decompose.py", seq_len=8192,
            buckets={"attention": {"ms": 30.0, "tflops": 461.0}}, total={"ms": 300.0, "tflops": 386.0})]


def test_overview_figures_say_where_series_differ_in_model_cut_and_gpu_count():
    a = analysis_of(one_gpu_eight_layers())
    for fig in (figures.draw_overview(a), figures.draw_decomposition(a)):
        note = fig.legends[0].get_title().get_text().replace("\n  ", " ")
        assert note.startswith("Not like for like: these series differ in GPUs in the run (1 GPU, 8 GPUs) and "
                               "model cut (8 layers, NUM_LAYERS not recorded); each GPU does different work"), note
        figures.plt.close(fig)
    alike = analysis_of(two_gpu_log())  # the same work per GPU everywhere: nothing to say
    fig = figures.draw_overview(alike)
    assert fig.legends[0].get_title().get_text() == ""
    figures.plt.close(fig)


def test_the_decomposition_table_lists_every_decomposition_the_figure_shows():
    # decomposition.png drew the measured 1-GPU decompositions; the table listed only pairs.
    a = analysis_of(one_gpu_eight_layers())
    fig = figures.draw_decomposition(a)
    shown = [t.get_text().replace("\n", " ") for t in fig.axes[0].get_yticklabels()]
    figures.plt.close(fig)
    text = detail_tables.decomposition_markdown(a)
    assert len(shown) == 3 and all(name in text for name in shown), shown
    (cut,) = [name for name in shown if "1 GPU" in name]
    assert f"| {cut} | 8K | attention | 461.0 | 30.0 |" in text and f"| {cut} | 8K | total | 386.0 | 300.0 |" in text


def test_upgrade_png_keeps_cuts_apart_labels_hbm_in_its_unit_and_leaves_no_blank_slot(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_overview(a)
    titles = [ax.get_title() for ax in fig.axes]
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    rows_cols = fig.axes[0].get_subplotspec().get_gridspec().get_geometry()
    figures.plt.close(fig)
    assert titles[:2] == ["Training throughput per GPU: whole models", "Training throughput per GPU: cuts of a model"]
    assert rows_cols[0] * rows_cols[1] == len(fig.axes) == 4  # 2 x 2: no third column left blank
    assert "B200 SXM HBM 180 GB (datasheet)" in texts and "H200 SXM HBM 139.8 GiB (as measured)" in texts


def test_every_gpu_compared_is_named_in_the_attention_figure(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_attention(a)
    title = fig.legends[0].get_title().get_text().replace("\n  ", " ")
    figures.plt.close(fig)
    assert ("B200 SXM: no isolated-attention records in these logs; the guide publishes only its fa4 over the "
            "H200 SXM's fa3, fwd+bwd: 1.88x at 8K, 1.95x at 32K") in title


def test_the_decomposition_bars_add_up_to_the_step(shipped_analysis):
    a, _ = shipped_analysis
    fig = figures.draw_decomposition(a)
    ax = fig.axes[0]
    ends = {}
    for bar in ax.patches:  # each row's parts, left to right, as shares of its step
        y = round(bar.get_y() + bar.get_height() / 2)
        ends[y] = max(ends.get(y, 0.0), bar.get_x() + bar.get_width())
    words = [t.get_text() for t in ax.texts]
    figures.plt.close(fig)
    assert ends and all(end == pytest.approx(1.0) for end in ends.values())
    # the guide's right-sized 8K H200: attention 447 TFLOPS and the rest 463, one 915 ms step
    assert "915 ms = attention 118 (447 TFLOPS) + everything else 797 (463 TFLOPS)" in words
    segments, total = figures.step_segments({"buckets": {"attention": {"ms": 30.0, "tflops": 400.0},
                                                         "gemm": {"ms": 170.0}, "other": {"ms": 100.0}},
                                             "total": {"ms": 300.0}})
    assert total == 300.0 and sum(ms for _, ms, _ in segments) == 300.0 and len(segments) == 3


def test_forecasts_are_drawn_dotted_over_a_hatched_range_and_named_forecasts(shipped_analysis):
    made, notes = report_analysis.forecasts_of(shipped_analysis[0].data, ["B200 SXM"], {"H200": 3.5, "B200": 7.0},
                                               calibration.calibration(backtest.backtest(published_pairs.all_records())))
    a = dataclasses.replace(shipped_analysis[0], forecasts=tuple(made))
    assert a.forecasts and notes == []
    fig = figures.draw_overview(a)
    fig.canvas.draw()
    assert overlaps(fig) == []
    for ax in fig.axes[:2] + fig.axes[3:]:  # throughput of whole models and of cuts, and $/token
        lines = [line for line in ax.get_lines() if "forecast" in line.get_label()]
        assert lines and all(line.get_linestyle() == ":" and line.get_marker() == "x" and
                             line.get_label().endswith("not measured") for line in lines)
        assert {line.get_linestyle() for line in ax.get_lines() if line not in lines} <= {"-", "--"}
        assert len([col for col in ax.collections if col.get_hatch()]) >= len(lines)
    assert len([line for ax in fig.axes[:2] for line in ax.get_lines() if "forecast" in line.get_label()]) == \
        len(a.forecasts)
    figures.plt.close(fig)


# ---------------------------------------------------------------- hostile inputs: one line, exit 2

def bad(capsys, *args, **kw):
    code, out, err = cli(capsys, *args, **kw)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), (code, err)
    return err


@pytest.mark.parametrize("price, why", [
    ("H200=inf", "a price from 0.001 to 10000 dollars"), ("H200=1e400", "a price from 0.001 to 10000 dollars"),
    ("H200=nan", "a price from 0.001"), ("H200=0", "a price from 0.001"), ("H200=-3", "a price from 0.001"),
    ("H200=free", "a price from 0.001"), ("=3", "GPU=USD_PER_GPU_HOUR"),
    ("B200=1e308", "to 10000 dollars"), ("H200=1e-320", "a price from 0.001"), ("H200=0.0009", "from 0.001")])
def test_a_price_must_be_finite_and_positive(tmp_path, capsys, price, why):
    assert why in bad(capsys, "--price", price, "missing.jsonl", "--out", tmp_path)  # before reading


def test_a_gpu_priced_twice_is_an_error(tmp_path, capsys):
    err = bad(capsys, "--price", "H200=3.5", "--price", "nvidia h200=4", "x.jsonl", "--out", tmp_path)
    assert "--price 'H200=3.5' and --price 'nvidia h200=4' both price H200 SXM; give one" in err
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log())
    err = bad(capsys, log, "--price", "H200=3", "--price", "H200 SXM=3", "--out", tmp_path)
    assert "both price H200 SXM" in err


def test_bad_output_targets_get_one_line(tmp_path, capsys):
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log())
    assert f"error: --out {log!r}: {log} is a file, not a folder" in bad(capsys, log, "--out", log)
    assert "is a file, not a folder" in bad(capsys, log, "--out", os.path.join(log, "sub"))
    assert "--export" in bad(capsys, log, "--export", log, "--out", tmp_path / "o")
    assert "a folder; give a file name" in bad(capsys, "--write-guide-reference", tmp_path)
    assert "is a file, not a folder" in bad(capsys, "--write-guide-reference", os.path.join(log, "g.jsonl"))
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    if records.folder_problem(read_only) is None:  # root writes anyway: a folder the kernel refuses
        read_only = "/sys"
    assert "no file can be created in" in bad(capsys, log, "--out", read_only)
    assert "no file can be created in" in bad(capsys, "--write-guide-reference", os.path.join(read_only, "g.jsonl"))


def test_inputs_that_are_no_log_file_are_named_for_what_they_are(tmp_path, capsys):
    err = bad(capsys, "/dev/zero", "--out", tmp_path)
    assert "'/dev/zero': a character device, not a file of JSON lines" in err
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "a named pipe (FIFO), not a file of JSON lines; to read a pipe, give it on stdin as '-'" in \
        bad(capsys, fifo, "--out", tmp_path)
    (tmp_path / "empty").mkdir()
    assert "a folder with no *.jsonl file (nor in its reference/)" in bad(capsys, tmp_path / "empty")
    assert "no such file or folder, and no file matches it as a glob" in bad(capsys, tmp_path / "nothing-*.jsonl")
    newer = write_jsonl(tmp_path / "newer.jsonl", [dict(two_gpu_log()[0], schema="999")])
    assert "record schema '999' is newer than this code reads" in bad(capsys, newer, "--out", tmp_path)


def test_wrongly_typed_fields_skip_the_record_with_its_reason(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)
    log = two_gpu_log()
    broken = [dict(log[1], seq_len=5120, tflops_per_gpu="200"), dict(log[0], run_id="x", hardware="B200"),
              dict(log[0], run_id="y", config=[]), dict(log[1], run_id=["x"]),
              dict(log[1], seq_len=6144, attn_flop_share="abc"), dict(log[1], seq_len=7168, step_ms=0),
              dict(log[1], kind=["summary"])]
    path = write_jsonl(tmp_path / "bad.jsonl", log + broken, extra_lines=[
        "\ufeff" + json.dumps(header("bom", "NVIDIA H200")), json.dumps(summary("bom", 512, 1.0, H200_PEAK)),
        '{"kind": "summary", "step_ms": NaN, "tokens_per_s_per_gpu": Infinity, "tflops_per_gpu": NaN, '
        '"seq_len": 1024, "run_id": "run-b200", "schema": 1}'])
    code, out, err = cli(capsys, path, "--price", "H200=2", "--price", "B200=4", "--out", tmp_path / "o")
    assert code == 0, err
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warning.startswith(f"warning: {path}: 7 skipped (")
    for reason in ("summary record: tflops_per_gpu is text, not a number >= 0",
                   "header record: hardware is text, not an object",
                   "header record: config is a list, not an object",
                   "summary record: run_id is a list, not text",
                   "summary record: attn_flop_share is text, not a fraction from 0 to 1",
                   "summary record: step_ms is 0, not a positive number", "kind is a list, not a name"):
        assert f"1 x {reason}" in warning
    text = (tmp_path / "o" / "report.md").read_text()
    assert "H200 SXM fa3: 1 GPU" not in text and "nan" not in text.lower() and "inf" not in text.replace("info", "")
    assert "| 512 |" in text  # the BOM-prefixed header still names its run's GPU


def test_a_report_never_prints_a_non_finite_number():
    assert [tables.fmt(v, kind) for v in (float("nan"), float("inf"), None) for kind in ("x", "usd", "pct")] \
        == ["-"] * 9


# ---------------------------------------------------------------- the command line, in-process

def test_cli_report_prices_terminal_and_garbage(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log(),
                      extra_lines=["not json at all", "[1, 2]", '{"no_kind": 1}', '{"kind": "summ'])
    out = tmp_path / "out"
    # B200 listed first on purpose: the baseline is still the lower-peak H200
    code, stdout, err = cli(capsys, log, "--out", out, "--price", "B200=4.0", "--price", "H200=2.0")
    assert code == 0, err
    assert f"warning: {log}: 4 skipped (2 x not JSON; 1 x a JSON list, not a record; 1 x no kind)" in err
    text = (out / "report.md").read_text()
    block = verdict_blocks.verdict_block(only(analysis_of(two_gpu_log(), prices={"H200": 2, "B200": 4})), {})
    # the terminal prints the node check (its MAMF against the published one), then the answer in
    # plain text; the page has it in sentences, then the block
    lines = fits_a_terminal(stdout)
    head = lines[:next(i for i, line in enumerate(lines) if line.startswith("Prices"))]
    node = " ".join(line.strip() for line in head)  # the node's line, wrapped whatever the path's length
    assert node.startswith(f"H200 SXM in {tmp_path} (baseline) is healthy: 1 of 3 components had a reference.")
    lines = lines[lines.index(next(line for line in lines if line.startswith("Prices"))):]
    assert lines[:5] == [
        "Prices per GPU-hour: B200 SXM $4.00, H200 SXM $2.00. Cheaper/dearer: beyond range + 4% noise.",
        "  vs H200 SXM        lengths   speedup    per token       $/1M tok at 1st  pays off below GiB/HBM",
        "[1] Whole model: llama-3.1-8b: 8 GPUs",
        "  B200 SXM measured  1K-2K     1.75-2.62x even            $0.056 v $0.053  $4.00-4.40/h   20/178",
        "  B200 SXM measured  3K        2.20x      undecided       $0.069 v $0.065  $4.40/h        30/178"]
    assert ("- [1] B200 SXM (measured) at 1K to 2K: 1.75x to 2.62x as fast (point estimates 2.00x, 2.20x); even per token "
            "at $2.00 vs $4.00 per GPU-hour ($/1M tokens H200 SXM vs B200 SXM: $0.056 vs $0.053 at 1K, $0.062 vs "
            "$0.059 at 2K); B200 SXM pays off below $4.00 at 1K, $4.40 at 2K per GPU-hour; fits: 20.0 GiB at most, "
            "in its 178.4 GiB") in text
    assert ("- [1] B200 SXM (measured): One side only: not measured on H200 SXM (measured) at 512; H200 SXM (measured) "
            "cannot run this (OOM) at 4K") in text
    assert text[text.index("## 1."):].startswith(block.replace(str(tmp_path / "two.jsonl"), log)[:200])
    assert [line for line in text.splitlines() if line.startswith("## ")][:3] == \
        ["## Is this node healthy?", "## The answer", "## Cost to train the whole model on 1T tokens"]
    assert "| 1K | 10.0% | 400.0 | 800.0 | 40.4% | 35.6% | 2.00x | 2.28x | 0.88x | 2.00x | ok | 10.0 | 10.0 |" \
        in text
    assert "Skipped 4 malformed line(s) or record(s)" in text and "WARNING" not in text


def test_cli_strict_stack_refuses_measured_stacks_that_differ(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)  # a stack difference on a figure: test_dollar_signs_in_figures_are_text_never_tex
    log = write_jsonl(tmp_path / "mixed.jsonl", two_gpu_log(b200_software={"torch": "2.12.0"}))
    code, out, _ = cli(capsys, log, "--out", tmp_path / "out")
    assert code == 0 and "torch 2.13.0 vs 2.12.0" in (tmp_path / "out" / "report.md").read_text()
    err = bad(capsys, log, "--out", tmp_path / "strict", "--strict-stack")
    assert "--strict-stack: software stacks differ (B200 SXM fa4 vs H200 SXM fa3: torch 2.13.0 vs 2.12.0)" in err
    assert not (tmp_path / "strict" / "report.md").exists()


def test_cli_stdin_folder_and_baseline_flag(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)  # what is read and said; the figures of two_gpu_log are drawn elsewhere
    recs = two_gpu_log()
    folder = tmp_path / "logs"
    folder.mkdir()
    is_h200 = lambda r: r["run_id"].endswith(("h200", "-h"))  # noqa: E731
    write_jsonl(folder / "h200.jsonl", [r for r in recs if is_h200(r)])
    b200 = "".join(json.dumps(r) + "\n" for r in recs if not is_h200(r))
    code, out, err = cli(capsys, folder, "-", "--baseline", "b200", "--out", tmp_path / "out", "--export",
                         tmp_path / "table", stdin=b200, monkeypatch=monkeypatch)
    assert code == 0, err
    out = (tmp_path / "out" / "report.md").read_text()
    assert out[out.index("## 1."):].startswith("## 1. H200 SXM vs B200 SXM: measured vs measured")
    assert "| 1K | 0.50x (0.46x to 0.52x) |" in out and "&lt;stdin> (run run-b200)" in out  # no tag (text.html_safe)
    assert (tmp_path / "table" / "points.csv").exists()


def test_cli_on_real_logs_of_the_suite(tmp_path, capsys, monkeypatch):
    """A shipped 8-layer H200 sweep (two runs of one config) against itself renamed B200, 2x faster."""
    skip_figures(monkeypatch)
    real = []
    for name in ("h200x1_8L_rightsized_fa4_liger_emptycache.jsonl",
                 "h200x1_8L_rightsized_fa4_liger_emptycache_perpoint.jsonl"):
        path = REPO / "results" / "experiments" / name
        real += records.read_lines(path.read_text().splitlines(), name)[0]
    fake = json.loads(json.dumps(real))
    for r in fake:
        r["run_id"] += "-b200"
        if r["kind"] == "header":
            r["hardware"]["gpu_name"] = "NVIDIA B200"
        if r["kind"] == "summary":
            r["tflops_per_gpu"] *= 2
            r["tokens_per_s_per_gpu"] *= 2
            for k in ("step_ms", "step_ms_min", "step_ms_max"):
                r[k] /= 2
    code, out, err = cli(capsys, write_jsonl(tmp_path / "two.jsonl", real + fake), "--out", tmp_path / "out",
                         "--price", "H200=1", "--price", "B200=2")
    assert code == 0, err
    out = (tmp_path / "out" / "report.md").read_text()
    assert out[out.index("## 1."):].startswith("## 1. B200 SXM vs H200 SXM: measured vs measured")
    # 2x faster at 2x the price: the same $/token, within the steps' and two runs' spread
    assert out.count("| same $/token within the spread and the 4% noise floor (") == 2 and "| 8K | 2.00x (" in out


def test_thousands_of_one_run_files_compare_stacks_per_comparison(tmp_path):
    paths = []
    for i in range(1500):
        gpu, peak = ("NVIDIA H200", H200_PEAK) if i % 2 else ("NVIDIA B200", B200_PEAK)
        paths.append(write_jsonl(tmp_path / f"{i}.jsonl", [
            header(f"r{i}", gpu),
            summary(f"r{i}", 1024 * (1 + i % 4), 400.0 + i % 7, peak, 1024 * (1 + i % 4) / 0.1, 100.0, (99.0, 101.0))]
            + [rec("step", f"r{i}", seq_len=1024, step=k, step_ms=100.0) for k in range(20)]))
    tally = inputs.Tally()
    a = comparisons.analyse(series.load(inputs.read(paths, tally)))
    (c,) = a.comparisons
    assert len(c.base.stacks) == len(c.other.stacks) == 1 and c.stack == []
    assert sum(len(v) for v in c.base.repeats.values()) == 750 and len(c.base.runs) == 750
    assert words.sources_words(c.base, {}).endswith("and 747 more runs in 747 files")


def test_dollar_signs_in_figures_are_text_never_tex(tmp_path):
    # One price gives a title with two '$': matplotlib read "$/1M tokens at $" as TeX and
    # printed "/1Mtokensat3.50"; a log string with "$\x$" ended in a ParseFatalException.
    recs = guide_with_a_measured_h200()
    for r in recs:
        if r["kind"] == "header" and r["run_id"] == "mine":
            r["software"]["torch"] = "2.11$\\x$"
            r["config"]["NOTES"] = "cost $1$"
    a = analysis_of(recs, prices={"H200": 3.5})
    health = only(a, comparisons.HEALTH)
    for fig in (figures.draw_comparison(health, a), figures.draw_overview(a)):
        fig.savefig(io.BytesIO(), format="png")  # no TeX parse error
        texts = [t for t in fig.findobj(Text) if "$" in t.get_text()]
        assert texts and not [t.get_text() for t in texts if t.get_parse_math()]
        figures.plt.close(fig)
    fig = figures.draw_comparison(health, a)
    (money,) = [ax for ax in fig.axes if ax.get_title().startswith("$/1M tokens")]
    assert money.get_title() == "$/1M tokens at H200 SXM $3.50 per GPU-hour"
    figures.plt.close(fig)


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


def test_panels_of_amounts_start_at_zero(shipped_analysis):
    # An axis from 0.2 drew the guide's 69% dearer 8K $/token as a 4x gap; amounts
    # (TFLOPS, $/token, share, GiB) start at zero, only the speedup's ratio axis may not.
    a, _ = shipped_analysis
    figs = [figures.draw_comparison(a.comparisons[0], a), figures.draw_overview(a), figures.draw_attention(a)]
    panels = [ax for fig in figs for ax in fig.axes if ax.axison and not ax.get_title().startswith("Speedup")]
    assert len(panels) == 4 + 4 + 2 and [ax.get_title() for ax in panels if ax.get_ylim()[0] != 0] == []
    # nor does the highest point sit on the frame (the axis keeps its margin above)
    for ax in figs[2].axes:
        assert ax.get_ylim()[1] >= 1.04 * max(max(line.get_ydata()) for line in ax.get_lines())
    for fig in figs:
        figures.plt.close(fig)


def test_labels_never_state_a_setting_the_log_does_not_hold_and_keep_ignored_ones():
    # A setting missing from a log is "not recorded", not "no offload" or "ZeRO-None".
    assert [series.config_phrase(k, None) for k in ("OFFLOAD_OPTIMIZER", "ZERO_STAGE", "world_size",
                                                    "PYTORCH_CUDA_ALLOC_CONF")] == [
        "OFFLOAD_OPTIMIZER not recorded", "ZERO_STAGE not recorded", "world_size not recorded", "default allocator"]
    recs = [header("a", "NVIDIA H200"), summary("a", 8192, 400.0, H200_PEAK),
            header("b", "NVIDIA H200", config={"OFFLOAD_OPTIMIZER": None}), summary("b", 8192, 500.0, H200_PEAK)]
    recs[2]["config"].pop("OFFLOAD_OPTIMIZER")
    assert sorted(s.label for s in series.load(recs).series) == [
        "H200 SXM fa3: OFFLOAD_OPTIMIZER not recorded", "H200 SXM fa3: offload"]
    # --ignore-config world_size pairs a 2-GPU run with an 8-GPU one: the figures' labels
    # still say which is which
    recs = guide_with_a_measured_h200(config={"world_size": 2})
    labels = {s.label for s in analysis_of(recs, ignore=("world_size",)).data.series if s.is_sweep}
    assert labels == {"H200 SXM fa4: 2 GPUs", "H200 SXM fa3: 8 GPUs (guide's published)",
                      "B200 SXM fa4: 8 GPUs (guide's published)"}


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


def test_a_page_without_summaries_or_with_skipped_lines_says_so_first(tmp_path, capsys, monkeypatch):
    log = write_jsonl(tmp_path / "headers.jsonl", [header("h", "NVIDIA H200")])
    code, out, _ = cli(capsys, log, "--out", tmp_path / "o")
    text = (tmp_path / "o" / "report.md").read_text()
    assert code == 0 and "no training summaries" in out and "no training summaries" in text
    assert "## Series" not in text and "listed below" not in text
    skip_figures(monkeypatch)
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log(), extra_lines=['{"kind": "error", "seq_l'])
    code, out, _ = cli(capsys, log, "--out", tmp_path / "p")
    lines = (tmp_path / "p" / "report.md").read_text().splitlines()
    assert lines[2] == ("**Skipped 1 malformed line(s) or record(s)** while reading (see Inputs): what they "
                        "held is missing from the verdicts below.")


def test_a_speedup_without_a_range_is_marked_on_the_figure():
    # 3K: H200 timed once, no range: without a mark its dot looked as exact as the others
    a = analysis_of(two_gpu_log())
    fig = figures.draw_comparison(only(a), a)
    (ax,) = [ax for ax in fig.axes if ax.get_title().startswith("Speedup")]
    (ring,) = [line for line in ax.get_lines() if line.get_label().startswith("no range")]
    assert list(ring.get_xdata()) == [3072] and list(ring.get_ydata()) == [pytest.approx(2.2)]
    figures.plt.close(fig)


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


def test_the_position_field_is_read_from_a_log_file_whatever_its_value(tmp_path):
    # 0 is what every fresh process writes: a reader that refused it would drop every point.
    log = tmp_path / "h200.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in [
        header("r", "NVIDIA H200"), summary("r", 1024, 400.0, H200_PEAK, earlier_points_in_process=0),
        summary("r", 2048, 450.0, H200_PEAK, earlier_points_in_process=1),
        summary("r", 4096, 450.0, H200_PEAK, earlier_points_in_process=-1)]))
    tally = inputs.Tally()
    got = [r for r in inputs.read([str(log)], tally) if r["kind"] == "summary"]
    assert [r["seq_len"] for r in got] == [1024, 2048] and tally.skipped_total() == 1


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


def test_an_ignore_config_key_no_run_records_is_exit_2_naming_the_keys(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)
    log = write_jsonl(tmp_path / "a.jsonl", two_gpu_log())
    code, out, err = cli(capsys, log, "--ignore-config", "worldsize", "--out", tmp_path / "rep")
    assert code == 2 and out == "" and not (tmp_path / "rep").exists()
    assert err.startswith("error: --ignore-config 'worldsize': no run of the inputs records that key; "
                          "keys they record: ") and "ZERO_STAGE" in err and len(err.splitlines()) == 1
    assert cli(capsys, log, "--ignore-config", "ZERO_STAGE", "--out", tmp_path / "rep2")[0] == 0


@pytest.mark.parametrize("bad", [{"wall_step_ms": "200"}, {"attn_flop_share": "x"},
                                 {"buckets": {"other": {"ms": 1.0, "moe_routing": {"ms": "10"}}}}])
def test_a_decomposition_with_mistyped_fields_is_skipped_not_a_traceback(tmp_path, capsys, bad):
    h = header("r1", "NVIDIA H200", backend="fa4", script="bench_decompose.py")
    d = rec("decomposition", "r1", seq_len=8192, wall_step_ms=200.0, attn_flop_share=0.2,
            buckets={"attention": {"ms": 30.0, "time_share": 0.15}}, script="bench_decompose.py")
    code, _, err = cli(capsys, write_jsonl(tmp_path / "a.jsonl", [h, {**d, **bad}]), "--out", tmp_path / "rep")
    assert code == 0 and "skipped" in err.lower()


def _folder_bytes(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_report_that_fails_half_way_leaves_the_earlier_one_whole(tmp_path, monkeypatch, capsys):
    # the disk fills while the second figure is written: points.csv and the first figure are
    # already written by then, under temporary names; the earlier report stays as it was
    log = write_jsonl(tmp_path / "a.jsonl", two_gpu_log())
    out = tmp_path / "report"
    assert plot_results.main([str(log), "--price", "H200=3.5", "--price", "B200=7", "--out", str(out)]) == 0
    before = _folder_bytes(out)
    assert {"report.md", "points.csv"} <= set(before)
    from upgrade_bench.report.figures import draw as figures

    real_save, saved = figures.save, []

    def save(fig, path, opener=open):
        if saved:
            figures.plt.close(fig)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        saved.append(path)
        return real_save(fig, path, opener)

    monkeypatch.setattr(figures, "save", save)
    code = faults.run_main(lambda: plot_results.main([str(log), "--price", "H200=9", "--price", "B200=7",
                                                      "--out", str(out)]))
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device; the files already there are untouched" in err
    assert _folder_bytes(out) == before  # no half file, no temporary name left behind


def test_a_full_tmpfs_leaves_the_earlier_report_whole(tmp_path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    if not mount_tmpfs(disk, "size=400k"):
        pytest.skip("no tmpfs can be mounted here")
    try:
        small = write_jsonl(tmp_path / "small.jsonl", two_gpu_log()[:4])
        out = disk / "report"
        assert plot_results.main([str(small), "--out", str(out)]) == 0
        before = _folder_bytes(out)
        big = write_jsonl(tmp_path / "big.jsonl", two_gpu_log())
        with open(disk / "filler", "wb") as f:  # what is left: less than the bigger report needs
            f.write(b"\0" * (400 * 1024 - sum(len(b) for b in before.values()) - 40 * 1024))
        code = faults.run_main(lambda: plot_results.main([str(big), "--out", str(out)]))
        assert code == 2 and "No space left on device" in capsys.readouterr().err
        assert _folder_bytes(out) == before
    finally:
        unmount(disk)


def _tables_are_rectangular(page: str) -> bool:
    """Every markdown table's rows have its header's number of cells (an escaped | is text)."""
    widths, blocks = [], []
    for line in page.splitlines():
        if line.startswith("|"):
            widths.append(line.replace("\\|", "").count("|"))
        elif widths:
            blocks.append(widths)
            widths = []
    return all(len(set(b)) == 1 for b in blocks + ([widths] if widths else []))


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


@pytest.mark.parametrize("argv, needle", [(["x.jsonl", "--out", ""], "--out ''"),
                                          (["x.jsonl", "--baseline", " "], "--baseline ''"),
                                          (["x.jsonl", "--export", ""], "--export ''")])
def test_an_empty_flag_value_is_refused(argv, needle, capsys):
    assert faults.run_main(lambda: plot_results.main(argv)) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_provenance_comes_from_the_reference_field_never_from_words():
    recs = two_gpu_log()
    for r in recs:
        if r["kind"] == "header" and r["run_id"] == "run-b200":
            r["notes"] = "set up like the guide's published run"
    a = analysis_of(recs, prices={"H200": 3.5, "B200": 7.0})
    assert [c.sources for c in a.comparisons] == ["measured vs measured"]


def test_records_join_the_header_of_their_own_file(tmp_path):
    # b.jsonl: B200 records before their B200 header; a.jsonl: an H200 header of the same run id
    h200 = header("shared", "NVIDIA H200")
    b200 = header("shared", "NVIDIA B200", backend="fa4")
    points = [summary("shared", 1024, 900.0, B200_PEAK, 1024 / 0.0488, 48.8, (48.0, 50.0)),
              summary("shared", 2048, 950.0, B200_PEAK, 19000.0, 108.4, (100.0, 110.0))]
    a_path = write_jsonl(tmp_path / "a.jsonl", [h200, summary("shared", 1024, 400.0, H200_PEAK, 10000.0, 102.4,
                                                              (100.0, 105.0))])
    b_path = write_jsonl(tmp_path / "b.jsonl", points + [b200])
    tally = inputs.Tally()
    data = series.load(inputs.read([a_path, b_path], tally))
    by_gpu = {s.gpu: sorted(s.points) for s in data.series}
    assert by_gpu == {"H200 SXM": [1024], "B200 SXM": [1024, 2048]}
    assert data.conflicts == {"shared": ["NVIDIA B200", "NVIDIA H200"]}
    a = comparisons.analyse(data, None, {})
    assert "Run id shared has headers of different GPUs (NVIDIA B200, NVIDIA H200)" in markdown.inputs_markdown(
        a, [a_path, b_path], tally)


def test_an_ascii_terminal_and_a_non_ascii_gpu_name_print_without_a_traceback(tmp_path):
    log = tmp_path / "a.jsonl"
    log.write_text(json.dumps(header("r", "Acme \u2603 GPU")) + "\n"  # no table row: the raw name is shown
                   + json.dumps(summary("r", 1024, 400.0, H200_PEAK, 10000.0, 102.4, (100.0, 105.0))) + "\n",
                   encoding="utf-8")
    import subprocess
    import sys as _sys

    proc = subprocess.run([_sys.executable, str(REPO / "plot_results.py"), str(log), "--out", str(tmp_path / "r")],
                          env={**os.environ, "PYTHONIOENCODING": "ascii"}, capture_output=True, text=True,
                          encoding="ascii", errors="strict", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "\\u2603" in proc.stdout and "Traceback" not in proc.stderr


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


def test_runs_on_the_fast_kernels_and_on_the_fallback_are_two_series_labelled_apart():
    # The same settings, one run with causal-conv1d's kernel, one on transformers' torch conv
    # (an H200's Qwen3-Next runs: 169.9 and 184.2 ms): never one series, never one number.
    fast = header("r1", "NVIDIA H200", backend="fa4", config={"MODEL": "qwen3-next-80b-a3b"},
                  mixer_kernels={"chunk_gated_delta_rule": "fla", "causal_conv1d_fn": "causal_conv1d"})
    slow = header("r2", "NVIDIA H200", backend="fa4", config={"MODEL": "qwen3-next-80b-a3b"},
                  mixer_kernels={"chunk_gated_delta_rule": "fla", "causal_conv1d_fn": "torch fallback"})
    a = analysis_of([fast, summary("r1", 8192, 180.0, 55), slow, summary("r2", 8192, 166.0, 57)])
    labels = sorted(s.label for s in a.data.series)
    assert labels == ["H200 SXM fa4", "H200 SXM fa4: torch fallback: causal_conv1d_fn"]


def test_a_log_from_before_fp8_experts_whose_experts_converted_reads_as_fp8_experts_on():
    # Its header's low_precision says 4 experts modules ran in FP8: not the default run's
    # workload (experts in bf16), so not one series with a run of today's default.
    config = {"MODEL": "qwen3-30b-a3b", "PRECISION": "fp8-tensorwise"}
    old = header("r1", "NVIDIA H200", backend="fa4", config=config, low_precision={"converted_experts": 4})
    new = header("r2", "NVIDIA H200", backend="fa4", config=config, low_precision={"converted_experts": 0})
    a = analysis_of([old, summary("r1", 8192, 122.8, 86), new, summary("r2", 8192, 170.0, 70)])
    assert sorted(s.label for s in a.data.series) == ["H200 SXM fa4", "H200 SXM fa4: experts in FP8"]
    # FP8_EXPERTS=1 where no expert converts (gpt-oss's are stored transposed): the run did what
    # the default does, and reads so; a value of another type is named as recorded, never alike
    on = header("r3", "NVIDIA H200", backend="fa4", config={**config, "FP8_EXPERTS": True},
                low_precision={"converted_experts": 0})
    odd = header("r4", "NVIDIA H200", backend="fa4", config={**config, "FP8_EXPERTS": "1"})
    a = analysis_of([new, summary("r2", 8192, 170.0, 70), on, summary("r3", 8192, 171.0, 70),
                     odd, summary("r4", 8192, 172.0, 70)])
    assert sorted(s.label for s in a.data.series) == ["H200 SXM fa4", "H200 SXM fa4: FP8_EXPERTS='1'"]


def test_a_failed_point_the_sweep_records_joins_its_processs_series():
    # run_sweep writes a timed-out point's error under its own header, which says nothing of the
    # kernels; the error carries what the process's header said ran, so it joins that series
    config = {"MODEL": "qwen3-next-80b-a3b"}
    slow = {"causal_conv1d_fn": "torch fallback"}
    bench = header("r1", "NVIDIA H200", backend="fa4", config=config, mixer_kernels=slow)
    sweep = header("s1", "NVIDIA H200", backend="fa4", config=config, script="run_sweep.sh")
    timeout = rec("error", "s1", seq_len=32768, error="timeout", message="no summary", script="run_sweep.sh",
                  mixer_kernels=slow)
    a = analysis_of([bench, summary("r1", 8192, 166.0, 57), sweep, timeout])
    assert [(s.label, sorted(s.points), sorted(s.errors)) for s in a.data.series] == [("H200 SXM fa4", [8192], [32768])]
