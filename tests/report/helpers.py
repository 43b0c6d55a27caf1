"""Records and runs shared by the report's tests (tests/report/ and the tests of the report in
tests/): two GPUs' logs written by hand with hand-computed expectations, the guide's published
figures with a measured H200 beside them, and plot_results' main run in-process."""
import io
import json

from upgrade_bench import faults
from upgrade_bench.log import records
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.figures import draw as figures
from upgrade_bench.report.read import series
from upgrade_bench.report.published import guide as published
from upgrade_bench.report import main as plot_results


H200_PEAK, B200_PEAK = 989.0, 2250.0


STACK = {"python": "3.12.12", "torch": "2.13.0", "cuda": "13.0", "transformers": "5.14.1",
         "deepspeed": "0.19.2", "liger-kernel": "0.8.0", "flash-attn-3": None, "flash-attn-4": None}


CONFIG = {"MODEL": "llama-3.1-8b", "ZERO_STAGE": 3, "GRAD_CHECKPOINT": True, "OFFLOAD_OPTIMIZER": True,
          "USE_LIGER": True, "ATTN_BACKEND": "auto", "PACKED_DOC_LEN": 0, "world_size": 8,
          "SEQ_LEN": [1024], "OUTPUT": "x.jsonl", "NOTES": ""}


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


def bad(capsys, *args, **kw):
    code, out, err = cli(capsys, *args, **kw)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), (code, err)
    return err


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

def overlaps(fig) -> list:
    """Pairs of visible texts whose boxes overlap, texts outside the figure, and texts over
    bars (a bar chart's labels sit beside the bars)."""
    from matplotlib.text import Text  # only the figure tests need matplotlib
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
