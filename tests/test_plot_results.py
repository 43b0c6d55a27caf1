"""plot_results.py: tables, identity check, $/token, capability gaps, stack parity, inputs,
figures. Fixtures are records of two GPUs written by hand (hand-computed expectations), plus
one real CPU log of benchmark.py with its GPU renamed."""
import json
import os
import struct
import subprocess
import sys

import pytest

from conftest import TINY_FAST, run_script
from upgrade_bench import records
from upgrade_bench.report import comparisons, figures, markdown, published, series, stacks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "plot_results.py")
H200_PEAK, B200_PEAK = 989.0, 2250.0
STACK = {"python": "3.12.12", "torch": "2.13.0", "cuda": "13.0", "transformers": "5.14.1",
         "deepspeed": "0.19.2", "liger-kernel": "0.8.0", "flash-attn-3": None, "flash-attn-4": None}
CONFIG = {"MODEL": "llama-3.1-8b", "ZERO_STAGE": 3, "GRAD_CHECKPOINT": True, "OFFLOAD_OPTIMIZER": True,
          "USE_LIGER": True, "ATTN_BACKEND": "auto", "PACKED_DOC_LEN": 0, "world_size": 8,
          "SEQ_LEN": [1024], "OUTPUT": "x.jsonl", "NOTES": ""}


def rec(kind, run_id, **fields):
    return {"kind": kind, "schema": records.SCHEMA, "script": fields.pop("script", "benchmark.py"),
            "run_id": run_id, "time": 0.0, **fields}


def header(run_id, gpu, backend="fa3", software=None, config=None, script="benchmark.py", hbm=None):
    return rec("header", run_id, script=script, software={**STACK, **(software or {})},
               hardware={"gpu_name": gpu, "gpu_count": 8, "hbm_gib": hbm},
               config={**CONFIG, **(config or {})}, attn_backend=backend)


def summary(run_id, seq_len, tflops, peak, tokens_per_s=None, step_ms=None, **extra):
    return rec("summary", run_id, seq_len=seq_len, batch_size=1, tflops_per_gpu=tflops,
               mfu=tflops / peak, tokens_per_s_per_gpu=tokens_per_s, step_ms=step_ms,
               attn_flop_share=0.1, peak_mem_gib=seq_len / 1024 * 10.0, **extra)


def two_gpu_log(b200_software=None, b200_mfu_peak=B200_PEAK):
    """H200 (fa3) and B200 (fa4), same config: 1K and 2K on both, 4K only on B200 (H200 OOM),
    8K only on B200 (H200's capacity record tops out at 4K... below it); plus the other kinds."""
    h, b = "run-h200", "run-b200"
    out = [header(h, "NVIDIA H200", hbm=139.8),
           summary(h, 1024, 400.0, H200_PEAK, tokens_per_s=10000.0, step_ms=102.4,
                   sm_clock_mhz_median=1980, power_w_mean=650.0, throttle=[]),
           summary(h, 2048, 450.0, H200_PEAK, tokens_per_s=9000.0, step_ms=227.6),
           # run_sweep's own header (sweep settings in its config); the error carries the point's
           header("sweep-h200", "NVIDIA H200", script="run_sweep.sh", config={"GPUS": 8, "OUT": "r/"}),
           rec("error", "sweep-h200", script="run_sweep.sh", error="oom", message="exit code 3",
               seq_len=4096, config=CONFIG),
           rec("capacity", h, max_fit_seq_len=6144, min_fail_seq_len=7168, peak_mem_gib_at_max=130.0,
               hbm_gib=139.8, seq_len_step=1024, runs=5, config={**CONFIG, "SEQ_LEN": [6144]}),
           header(b, "NVIDIA B200", backend="fa4", software=b200_software, hbm=178.4),
           summary(b, 1024, 800.0, b200_mfu_peak, tokens_per_s=21000.0, step_ms=48.8),
           summary(b, 2048, 990.0, B200_PEAK, tokens_per_s=18900.0, step_ms=108.4),
           summary(b, 4096, 1000.0, B200_PEAK, tokens_per_s=15000.0, step_ms=273.1),
           summary(b, 8192, 1000.0, B200_PEAK, tokens_per_s=12000.0, step_ms=682.7)]
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
                          config={"ZERO_STAGE": 2, "GRAD_CHECKPOINT": False, "OFFLOAD_OPTIMIZER": False}))
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


def run_cli(*args, stdin=None):
    env = dict(os.environ, PYTHONPATH=REPO, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True,
                          input=stdin, env=env, cwd=REPO, timeout=120)


def analysis_of(recs, **kw):
    return comparisons.analyse(series.load(recs, kw.pop("ignore", ())), **kw)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


# ---------------------------------------------------------------- tables (pure functions)

def test_speedup_table_values_and_identity():
    a = analysis_of(two_gpu_log())
    assert a.baseline == "H200 SXM"  # lower bf16 peak, although listed first anyway
    (c,) = [c for c in a.comparisons if c["base"].points]
    rows = {r["seq_len"]: r for r in c["speedup"]}
    assert rows[1024]["speedup"] == pytest.approx(2.0)
    assert rows[2048]["speedup"] == pytest.approx(2.2)
    assert rows[1024]["peak_ratio"] == pytest.approx(2250 / 989)
    # MFU ratio 2.2 * 989/2250 at 2K; peak ratio x MFU ratio gives the speedup back
    assert rows[2048]["mfu_ratio"] == pytest.approx(2.2 * 989 / 2250)
    assert rows[2048]["identity"] == pytest.approx(2.2)
    assert rows[1024]["identity_ok"] and rows[2048]["identity_ok"]
    assert c["base"].label == "H200 SXM fa3" and c["other"].label == "B200 SXM fa4"


def test_identity_flags_mfu_computed_against_another_peak():
    # B200's 1K MFU against 2000 TFLOPS (a PEAK_TFLOPS override): 2250/989 * 0.4/(400/989) = 2.25
    a = analysis_of(two_gpu_log(b200_mfu_peak=2000.0))
    (c,) = [c for c in a.comparisons if c["base"].points]
    rows = {r["seq_len"]: r for r in c["speedup"]}
    assert rows[1024]["identity"] == pytest.approx(2.25)
    assert rows[1024]["identity_ok"] is False and rows[2048]["identity_ok"] is True
    assert "**MISMATCH**" in markdown.speedup_markdown(c)


def test_cost_per_token_and_verdicts():
    assert comparisons.usd_per_mtok(2.0, 10000.0) == pytest.approx(2.0 / 36e6 * 1e6)  # $0.0556
    a = analysis_of(two_gpu_log(), price_specs=["h200=2.0", "NVIDIA B200=4.0"])
    assert a.prices == {"H200 SXM": 2.0, "B200 SXM": 4.0}
    (c,) = [c for c in a.comparisons if c["base"].points]
    rows = {r["seq_len"]: r for r in c["cost"]}
    r = rows[1024]
    assert r["base_usd_per_mtok"] == pytest.approx(0.0555556, rel=1e-5)
    assert r["other_usd_per_mtok"] == pytest.approx(4.0 / (21000 * 3600) * 1e6)
    assert r["cost_ratio"] == pytest.approx(20 / 21)  # (4/21000) / (2/10000)
    assert r["verdict"] == "B200 SXM: 4.8% cheaper per token, 2.10x faster per step"  # 102.4/48.8
    # 2K: (4/18900)/(2/9000) = 0.952 too; 2.0/9000 vs 4.0/18900
    assert rows[2048]["cost_ratio"] == pytest.approx((4 / 18900) / (2 / 9000))
    assert comparisons.verdict("B200", 1.02, 1.5) == "B200: same $/token (within 3%), 1.50x faster per step"
    assert comparisons.verdict("B200", 1.25, 0.5) == "B200: 25.0% dearer per token, 2.00x slower per step"
    assert comparisons.verdict("B200", None, 2.0) == "no price"


def test_capability_gap_from_oom_and_capacity():
    a = analysis_of(two_gpu_log(), price_specs=["H200=2", "B200=4"])
    (c,) = [c for c in a.comparisons if c["base"].points]
    rows = {r["seq_len"]: r for r in c["speedup"]}
    assert rows[4096]["gap"] == "H200 SXM cannot run this (OOM)"
    assert rows[8192]["gap"] == "H200 SXM cannot run this (max fit 6K)"
    assert rows[4096]["speedup"] is None and rows[1024]["gap"] is None
    cost = {r["seq_len"]: r for r in c["cost"]}
    assert cost[8192]["verdict"] == "capability gap: H200 SXM cannot run this (max fit 6K)"
    assert cost[8192]["other_usd_per_mtok"] == pytest.approx(4.0 / (12000 * 3600) * 1e6)
    assert "**capability gap: H200 SXM cannot run this (OOM)**" in markdown.speedup_markdown(c)


def test_other_tables_decomposition_attention_mamf_capabilities():
    a = analysis_of(two_gpu_log())
    (dec,) = [c for c in a.comparisons if c["decomposition"]]
    ratios = {r["bucket"]: r["speedup"] for r in dec["decomposition"]}
    assert ratios == pytest.approx({"attention": 2.0, "gemm": 1.6, "total": 500 / 300})
    ((group, lines),) = a.attention.items()  # the unavailable fa2 record is left out
    rows = {r["seq_len"]: r for r in comparisons.attention_rows(lines, a.baseline)}
    assert rows[1024]["ratios"]["B200 SXM"] == (pytest.approx(2.0), "fa4", "fa3")
    assert a.mamf["B200 SXM"] == 1700.0 and a.mamf["H200 SXM"] == 800.0
    text = markdown.render(a)
    assert "B200 SXM: 2.12x" in text                          # MAMF ratio 1700/800
    assert "| 1K | 50.0% |" in text                           # 400 TFLOPS / 800 MAMF on H200
    caps = {line.split("|")[1].strip(): line for line in text.splitlines() if "matmul:" in line}
    assert caps["**matmul:nvfp4**"].endswith("ok only on B200 SXM |")  # highlighted: only B200 can
    assert "only" not in caps["matmul:bf16"]
    assert text.index("| item | H200 SXM | B200 SXM |") < text.index("## Speedup")
    assert "## Telemetry" in text and "1980" in text


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


def test_close_lengths_share_one_tick_label():
    # 272K and 280K (a capacity bracket) sit within 1.25x of 256K on the log axis.
    assert figures.spaced_labels([8192, 32768, 196608, 262144, 278528, 286720, 524288]) == \
        ["8K", "32K", "192K", "256K", "", "", "512K"]
    # Measured from the last labelled length: 10K is 1.25x 8K, 12K only 1.2x 10K.
    assert figures.spaced_labels([8192, 9216, 10240, 12288]) == ["8K", "", "10K", ""]


def test_stack_parity_rules():
    same = stacks.stack_of({"software": STACK})
    assert stacks.stack_differences(same, dict(same)) == []
    # one-sided attention package = the per-GPU backend choice; two versions = a mismatch
    assert stacks.stack_differences(dict(same, **{"flash-attn-3": "3.0.0"}),
                                    dict(same, **{"flash-attn-4": "4.0.0b22"})) == []
    assert stacks.stack_differences(dict(same, **{"flash-attn-4": "4.0.0b36"}),
                                    dict(same, **{"flash-attn-4": "4.0.0b22"})) == [
        ("flash-attn-4", "4.0.0b36", "4.0.0b22")]
    a = analysis_of(two_gpu_log(b200_software={"torch": "2.12.0", "cuda": "12.9"}))
    assert any(line.startswith("torch 2.13.0 on H200 SXM vs 2.12.0 on B200 SXM [benchmark.py")
               for line in a.stack)
    assert any(line.startswith("cuda 13.0 on H200 SXM vs 12.9 on B200 SXM") for line in a.stack)
    assert analysis_of(two_gpu_log()).stack == []


def test_config_pairing_and_ignore_config():
    recs = [header("h", "NVIDIA H200", config={"world_size": 2}), summary("h", 1024, 400.0, H200_PEAK),
            header("b", "NVIDIA B200", "fa4"), summary("b", 1024, 800.0, B200_PEAK)]
    a = analysis_of(recs)
    assert a.comparisons == []
    assert "differs in world_size (--ignore-config world_size pairs them)" in a.hints[0]
    a = analysis_of(recs, ignore=("world_size",))
    assert [r["speedup"] for r in a.comparisons[0]["speedup"]] == [pytest.approx(2.0)]


def test_guide_reference_records_are_labelled_and_reproduce_the_guide():
    recs = published.guide_reference_records()
    assert all(r["reference"] == "guide" for r in recs)
    headers = [r for r in recs if r["kind"] == "header"]
    assert {r["hardware"]["gpu_name"] for r in headers} == {"NVIDIA H200", "NVIDIA B200"}
    assert all("guide's published figures" in r["notes"] for r in headers)
    # the header's note alone marks a run as published figures
    unmarked = [{k: v for k, v in r.items() if k != "reference"} for r in recs]
    assert {s.reference for s in series.load(unmarked).series} == {"guide"}
    a = analysis_of(json.loads(json.dumps(recs)))
    (c,) = [c for c in a.comparisons if c["base"].points]
    assert c["other"].label == "B200 SXM fa4 (guide's published)"
    rows = {r["seq_len"]: r for r in c["speedup"]}
    assert rows[262144]["speedup"] == pytest.approx(852 / 419)  # the guide's 2.03x
    assert rows[8192]["attn_share"] == pytest.approx(0.125, abs=0.001)  # DESIGN.md: 12.5% at 8K
    (dec,) = [c for c in a.comparisons if c["decomposition"]]
    assert [(r["bucket"], round(r["speedup"], 2)) for r in dec["decomposition"]] == [
        ("attention", 1.87), ("everything else", 1.67), ("total", 1.69)]  # the guide's ratios
    assert "guide's published" in markdown.render(a)


# ---------------------------------------------------------------- the script, run for real

def test_cli_report_figures_prices_and_garbage(tmp_path):
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log(),
                      extra_lines=["not json at all", "[1, 2]", '{"no_kind": 1}', '{"kind": "summ'])
    out = tmp_path / "out"
    # B200 listed first on purpose: the baseline is still the lower-peak H200
    res = run_cli(log, "--out", out, "--price", "B200=4.0", "--price", "H200=2.0")
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("warning: skipped 4 malformed line(s)") == 1
    text = (out / "report.md").read_text()
    assert "baseline GPU: **H200 SXM**" in text and "Skipped 4 malformed line(s)" in text
    assert "| 1K | 10.0% | 400.0 | 800.0 | 40.4% | 35.6% | 2.00x | 2.28x | 0.88x | 2.00x | ok |" in text
    assert "B200 SXM: 4.8% cheaper per token, 2.10x faster per step" in text
    assert "capability gap: H200 SXM cannot run this (OOM)" in text
    assert "WARNING" not in text
    assert png_size(out / "upgrade.png") == (1400, 1000)
    assert png_size(out / "attention.png") == (550, 500)       # one pass/shape panel
    assert png_size(out / "decomposition.png") == (550, 500)   # one seq_len panel
    for name in ("upgrade.png", "attention.png", "decomposition.png"):
        assert (out / name).stat().st_size > 10_000
        assert f"![{name}]({name})" in text


def test_cli_stack_mismatch_is_loud_and_strict_exits_2(tmp_path):
    log = write_jsonl(tmp_path / "mixed.jsonl", two_gpu_log(b200_software={"torch": "2.12.0"}))
    res = run_cli(log, "--out", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert "WARNING: SOFTWARE STACKS DIFFER" in res.stderr
    assert "torch 2.13.0 on H200 SXM vs 2.12.0 on B200 SXM" in res.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    assert text.splitlines()[2].startswith("> **WARNING: software stacks differ")
    res = run_cli(log, "--out", tmp_path / "strict", "--strict-stack")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("error: --strict-stack: software stacks differ")
    assert not (tmp_path / "strict" / "report.md").exists()


def test_cli_bad_inputs_exit_2(tmp_path):
    newer = write_jsonl(tmp_path / "newer.jsonl", [dict(two_gpu_log()[0], schema=records.SCHEMA + 1)])
    res = run_cli(newer, "--out", tmp_path / "o")
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "newer than this code reads" in res.stderr
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log())
    res = run_cli(log, "--price", "A100=3", "--out", tmp_path / "o")
    assert res.returncode == 2 and "--price 'A100=3': no GPU named 'A100'" in res.stderr
    res = run_cli(log, "--price", "H200=free", "--out", tmp_path / "o")
    assert res.returncode == 2 and "expected GPU=USD_PER_GPU_HOUR" in res.stderr
    res = run_cli(log, "--baseline", "MI300X", "--out", tmp_path / "o")
    assert res.returncode == 2 and "--baseline 'MI300X'" in res.stderr
    res = run_cli(tmp_path / "nothing-*.jsonl", "--out", tmp_path / "o")
    assert res.returncode == 2 and "no match" in res.stderr


def test_cli_stdin_folder_and_baseline_flag(tmp_path):
    recs = two_gpu_log()
    folder = tmp_path / "logs"
    folder.mkdir()
    is_h200 = lambda r: r["run_id"].endswith(("h200", "-h"))  # noqa: E731
    write_jsonl(folder / "h200.jsonl", [r for r in recs if is_h200(r)])
    b200 = "".join(json.dumps(r) + "\n" for r in recs if not is_h200(r))
    res = run_cli(folder, "-", "--baseline", "b200", "--out", tmp_path / "out", stdin=b200)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    assert "baseline GPU: **B200 SXM**" in text
    assert "| 1K | 10.0% | 800.0 | 400.0 |" in text and "0.50x" in text


def test_cli_on_a_real_benchmark_log(tmp_path):
    """benchmark.py's actual CPU output, copied as two renamed 'GPUs'."""
    log = tmp_path / "tiny.jsonl"
    rc, _, err = run_script("benchmark.py", {**TINY_FAST, "SEQ_LEN": "64 128", "OUTPUT": str(log)},
                            timeout=300)
    assert rc == 0, err[-2000:]
    real, skipped = records.read_lines(log.read_text().splitlines())
    assert skipped == 0
    fake = []
    for gpu, scale in (("NVIDIA H200", 1.0), ("NVIDIA B200", 2.0)):
        for r in real:
            r = json.loads(json.dumps(r))
            r["run_id"] += gpu[-4:]
            if r["kind"] == "header":
                r["hardware"]["gpu_name"] = gpu
            if r["kind"] == "summary":
                r["tflops_per_gpu"] *= scale
                r["tokens_per_s_per_gpu"] *= scale
                r["step_ms"] /= scale
            fake.append(r)
    res = run_cli(write_jsonl(tmp_path / "two.jsonl", fake), "--out", tmp_path / "out",
                  "--price", "H200=1", "--price", "B200=2")
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Speedup: B200 SXM sdpa vs H200 SXM sdpa" in text
    assert text.count("| 2.00x | 2.28x | - | - | - |") == 2    # CPU run: MFU null
    assert text.count("B200 SXM: same $/token (within 3%), 2.00x faster per step") == 2
    assert png_size(tmp_path / "out" / "upgrade.png") == (1400, 1000)
