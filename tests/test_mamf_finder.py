"""mamf-finder.py: the search on synthetic landscapes, flag parsing, real CPU runs, Ctrl-C."""
import math
import random
import signal
import sys

import pytest

from conftest import REPO, import_script, parse_jsonl, run_proc
from upgrade_bench.models import flops
from upgrade_bench.hardware import gpus
from upgrade_bench import faults
from upgrade_bench.kernels.mamf import search as mamf, run as mamf_run
from upgrade_bench.faults import BadInput
from upgrade_bench.kernels.mamf.search import GemmShape

SCRIPT = "mamf-finder.py"
LATTICE = range(256, 20480 + 1, 256)  # every shape the GPU search space can reach


def load_script():
    return import_script(SCRIPT)


class Counter:
    """A measure callable over a landscape that counts its calls and advances a fake clock."""

    def __init__(self, landscape, cost_s=0.0, noise=0.0, seed=0):
        self.landscape, self.cost_s, self.noise = landscape, cost_s, noise
        self.rng = random.Random(seed)
        self.calls = 0
        self.now = 0.0

    def __call__(self, shape):
        self.calls += 1
        self.now += self.cost_s
        value = self.landscape(shape)
        return None if value is None else value * (1 + self.rng.gauss(0, self.noise))

    def clock(self):
        return self.now


# --- the search on synthetic landscapes ---------------------------------------------------

def smooth(shape):
    """Unimodal in log space, optimum 800 at 3328x5376x11520: on no grid, one 256-step away
    costs ~0.6%, more than the search's 0.2% threshold."""
    best = (3328, 5376, 11520)
    return 800 * math.exp(-sum(math.log2(x / b) ** 2 for x, b in zip(shape, best)) / 2)


def mn_term(m, n):
    # Whole waves of 128x256 tiles on 132 SMs; more than one wave's worth of output costs
    # a little (data movement, power), and so does an elongated output.
    return (mamf.wave_fill(m, n, 132) * (1 - 0.005 * abs(math.log2(m / n)))
            * (1 - 0.02 * max(0.0, math.log2(m * n / 2**22))))


def k_term(k):
    # A long reduction amortises the prologue; a longer kernel heats the chip.
    return k / (k + 512) * (1 - 0.02 * (k / 16384) ** 2)


def waves(shape):
    return 800 * mn_term(shape.m, shape.n) * k_term(shape.k)


def waves_optimum():
    """The landscape is a product of an (m, n) and a k term: its maximum over the lattice."""
    return 800 * max(mn_term(m, n) for m in LATTICE for n in LATTICE) * max(map(k_term, LATTICE))


def test_search_finds_an_off_grid_optimum_exactly():
    measure = Counter(smooth)
    result = mamf.search(measure, mamf.default_space(), budget_s=1e9, clock=measure.clock)
    assert result.best == GemmShape(3328, 5376, 11520)
    assert result.tflops == pytest.approx(800)
    assert measure.calls <= 250  # 64 coarse + refinement + 16 finals, of 512,000 lattice shapes


def test_search_finds_whole_wave_shapes_within_one_percent():
    optimum = waves_optimum()  # at 1536x2816 (12 x 11 tiles: all 132 SMs busy)
    measure = Counter(waves)
    result = mamf.search(measure, mamf.default_space(sm_count=132), budget_s=1e9,
                           clock=measure.clock)
    assert waves(result.best) >= 0.99 * optimum
    assert measure.calls <= 600
    # Without the whole-wave candidates, one-axis moves from the grid's 97%-full shapes
    # cannot reach it: that is why the coarse phase has them.
    blind = Counter(waves)
    result = mamf.search(blind, mamf.default_space(), budget_s=1e9, clock=blind.clock)
    assert waves(result.best) < 0.98 * optimum


def test_search_under_noise_still_lands_within_one_percent():
    optimum = waves_optimum()
    for seed in range(3):
        measure = Counter(waves, noise=0.003, seed=seed)  # 0.3%: a 30-iteration screen's jitter
        result = mamf.search(measure, mamf.default_space(sm_count=132), budget_s=1e9,
                               clock=measure.clock)
        assert waves(result.best) >= 0.99 * optimum, seed


def test_search_uses_the_cheap_screen_to_rank_and_measure_only_for_finals():
    screen, full = Counter(waves), Counter(waves)
    result = mamf.search(full, mamf.default_space(sm_count=132), budget_s=1e9,
                           clock=lambda: 0.0, screen=screen, finalists=5)
    assert full.calls == 5 and len(result.finals) == 5
    assert set(result.finals) <= set(result.screened)
    assert screen.calls == len(result.screened)  # never the same shape screened twice
    assert result.tflops == max(result.finals.values())


def test_search_stops_at_its_budget_and_still_reports_a_full_measurement():
    measure = Counter(waves, cost_s=0.5)  # 20 s buys 40 measurements: not even the coarse grid
    phases = []
    result = mamf.search(measure, mamf.default_space(sm_count=132), budget_s=20,
                           clock=measure.clock, progress=phases.append)
    assert phases == ["coarse", "refine", "final"]
    assert measure.now <= 20 + 0.5  # one final may start just before the end
    assert result.best is not None and len(result.finals) >= 1
    tiny = Counter(waves, cost_s=100)  # a budget spent on the first screen: one final anyway
    result = mamf.search(tiny, mamf.default_space(), budget_s=1, clock=tiny.clock)
    assert tiny.calls == 2 and result.best == GemmShape(1024, 2048, 4096)


def test_search_skips_failed_shapes():
    def ooms_above_12k(shape):
        return None if shape.k > 12288 else waves(shape)

    measure = Counter(ooms_above_12k)
    result = mamf.search(measure, mamf.default_space(sm_count=132), budget_s=1e9,
                           clock=measure.clock)
    assert result.best.k <= 12288 and result.tflops is not None
    assert any(v is None for v in result.screened.values())


# --- pure helpers ---------------------------------------------------------------------------

def test_ranges_skip_zero_like_the_classic():
    assert mamf.expand_range(0, 1024, 256) == [256, 512, 768]
    assert mamf.expand_range(512, 1025, 256) == [512, 768, 1024]
    assert len(mamf.expand_range(0, 20480, 256)) == 79  # the classic quick scan: 256..20224


def test_tflops_figures_from_iteration_times():
    stats = mamf.tflops_stats([1.0, 2.0, 6.0], flops.matmul_flops(1000, 1000, 1000))
    # 2e9 FLOP: mean 3 ms -> 0.667 TFLOPS, median 2 ms -> 1, fastest 1 ms -> 2
    assert stats["tflops_mean"] == pytest.approx(2 / 3)
    assert stats["tflops_median"] == pytest.approx(1.0)
    assert stats["tflops_max"] == pytest.approx(2.0)


def test_wave_fill_and_whole_wave_pairs():
    assert mamf.wave_fill(1024, 4096, 132) == pytest.approx(128 / 132)
    assert mamf.wave_fill(1536, 2816, 132) == 1.0           # 12 x 11 tiles
    assert mamf.wave_fill(1280, 4096, 132) == pytest.approx(160 / 264)  # a nearly empty 2nd wave
    pairs = mamf.full_wave_pairs(132, lo=1024, hi=16384)
    assert (1024, 4096) in pairs and (1536, 2816) in pairs and (1280, 4096) not in pairs
    assert all(mamf.wave_fill(m, n, 132) >= 0.95 and m % 256 == n % 256 == 0 for m, n in pairs)


def test_default_space_is_tile_aligned_and_scales_down_for_a_cpu():
    space = mamf.default_space(sm_count=132)
    assert all(d % 256 == 0 and space.lo <= d <= space.hi for s in space.coarse() for d in s)
    assert GemmShape(1024, 4096, 12288) in space.coarse() and GemmShape(1536, 2816, 12288) in space.coarse()
    assert space.neighbours(GemmShape(256, 4096, 20480), 256) == [
        GemmShape(512, 4096, 20480), GemmShape(256, 4352, 20480), GemmShape(256, 3840, 20480),
        GemmShape(256, 4096, 20224)]  # never below lo or above hi
    cpu = mamf.default_space(unit=4)
    assert max(max(s) for s in cpu.coarse()) == 256 and cpu.steps == (16, 8, 4)


def test_tally_reports_full_measurements_and_a_screen_only_before_any():
    tally = mamf.Measured()
    rec = lambda m, tflops: {"m": m, "n": 1, "k": 1, "tflops_mean": tflops}  # noqa: E731
    tally.add(rec(1, 700.0), full=False)
    tally.add(rec(2, 650.0), full=False)
    assert tally.best()["m"] == 1  # interrupted before any full measurement: the best screen
    tally.add(rec(2, 640.0), full=True)
    assert tally.best()["m"] == 2  # a screen's 700 never becomes the headline
    tally.add(rec(3, 690.0), full=True)
    assert [r["m"] for r in tally.top(5)] == [3, 2]
    assert len(tally.shapes) == 3 and tally.measurements == 4


def test_peaks_efficiency_and_warmup():
    assert gpus.resolve_peak("NVIDIA H200", mamf.PEAK_KEY["float8_e4m3fn"])[0] == 1979
    assert mamf.published_mamf("NVIDIA H200", "bfloat16") == 794.5
    assert mamf.published_mamf("NVIDIA H200", "float8_e4m3fn") == 1453.4
    assert mamf.published_mamf("NVIDIA H200", "float32") is None
    # every dtype names a peak the table has (a B200 has them all), or none on purpose (float32)
    assert {d: bool(gpus.lookup("NVIDIA B200").peak_tflops(k)) for d, k in mamf.PEAK_KEY.items() if k} == {
        "bfloat16": True, "float16": True, "float8_e4m3fn": True, "float8_e4m3fnuz": True}
    assert mamf.PEAK_KEY["float32"] is None and gpus.resolve_peak("NVIDIA B200", None)[0] is None
    best = {"m": 1024, "n": 4096, "k": 13312, "tflops_mean": 784.3, "tflops_median": 786.0,
            "tflops_max": 792.0, "iters": 100}
    fields = mamf.mamf_fields(best, "bfloat16", 989)
    assert fields["efficiency"] == pytest.approx(784.3 / 989) and fields["k"] == 13312
    assert mamf.mamf_fields(None, "bfloat16", 989)["tflops_mean"] is None
    assert mamf.warmup_seconds(30, 60, True) == 30
    assert mamf.warmup_seconds(30, 20, True) == 10  # a short budget shortens the warm-up
    assert mamf.warmup_seconds(30, None, True) == 30
    assert mamf.warmup_seconds(30, 60, False) == 0


# --- flags ----------------------------------------------------------------------------------

def test_flags_ranges_and_lists():
    script = load_script()
    args, shapes = script.parse_args(["--m_range", "0", "1024", "256", "--n", "64", "--k", "32", "64"])
    assert shapes == [GemmShape(m, 64, k) for m in (256, 512, 768) for k in (32, 64)]
    args, shapes = script.parse_args([])
    assert shapes is None and args.dtype == "bfloat16" and args.budget_s is None
    assert (args.num_iterations, args.num_warmup_iterations, args.warmup_s) == (100, 50, 30.0)
    args, _ = script.parse_args(["--dtype", "float8_e4m3fn", "--output_file", "x.jsonl",
                               "--notes", "n", "--cuda_device", "1", "--budget_s", "90"])
    assert (args.dtype, args.output_file, args.cuda_device, args.budget_s) == (
        "float8_e4m3fn", "x.jsonl", 1, 90.0)


@pytest.mark.parametrize("argv, needle", [
    (["--m", "1024"], "give all of --m, --n, --k"),
    (["--m_range", "0", "1024", "--n", "1", "--k", "1"], "expected 3 arguments"),
    (["--m_range", "0", "1024", "0", "--n", "1", "--k", "1"], "STEP >= 1"),
    (["--m_range", "1024", "512", "256", "--n", "1", "--k", "1"], "STOP > START"),
    (["--m", "0", "--n", "1", "--k", "1"], "'0': expected an integer >= 1"),
    (["--m", "8", "--m_range", "0", "16", "8", "--n", "1", "--k", "1"], "not allowed with"),
    (["--dtype", "float64"], "invalid choice"),
    (["--budget_s", "0"], "expected finite seconds > 0"),
    (["--budget_s", "inf"], "expected finite seconds > 0"),
    (["--num_iterations", "0"], "expected an integer >= 1"),
    (["--output_file", "/proc/mamf.jsonl"], "--output_file='/proc/mamf.jsonl': cannot write there"),
    (["--scaling", "rowwise"], "--scaling rowwise: only for a float8 --dtype"),
])
def test_bad_flags_are_bad_input_of_one_line(argv, needle):
    script = load_script()
    with pytest.raises(BadInput) as err:
        script.parse_args(argv)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_bad_flag_in_a_real_process_before_any_work():
    proc = run_proc([sys.executable, str(REPO / SCRIPT), "--k_range", "0", "64", "-8"], {}, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--k_range" in proc.stderr


# --- real CPU runs --------------------------------------------------------------------------

def run(capsys, args):
    """(exit code, records on stdout, stderr) of the script's main in this process, on the real
    kernels; the process boundary (exit codes, signals) is the real processes' above and below."""
    code = faults.run_main(load_script().main, args)
    out, err = capsys.readouterr()
    return code, parse_jsonl(out), err


def check_matmul(r):
    ms = {"tflops_mean": r["ms_mean"], "tflops_median": r["ms_median"], "tflops_max": r["ms_min"]}
    for key, time_ms in ms.items():
        assert r[key] == pytest.approx(2 * r["m"] * r["n"] * r["k"] / (time_ms * 1e-3) / 1e12)
    assert r["tflops_max"] >= r["tflops_median"] > 0 and r["tflops_max"] >= r["tflops_mean"] > 0


def test_scan_on_cpu_writes_matmul_and_mamf_records(tmp_path, capsys):
    out = tmp_path / "mamf.jsonl"
    out.write_text('{"kind": "earlier run"}\n')  # appended to, like every log of the suite
    rc, recs, err = run(capsys, ["--m_range", "0", "96", "32", "--n", "16", "--k", "32", "48",
                                 "--dtype", "float32", "--num_iterations", "5",
                                 "--num_warmup_iterations", "2", "--output_file", str(out), "--notes", "cpu"])
    assert rc == 0, err
    assert [r["kind"] for r in recs] == ["header"] + ["matmul"] * 4 + ["mamf"]
    assert parse_jsonl(out.read_text()) == [{"kind": "earlier run"}] + recs
    header, matmuls, headline = recs[0], recs[1:-1], recs[-1]
    assert header["config"]["mode"] == "scan" and header["notes"] == "cpu"
    assert header["config"]["warmup_s"] == 0  # no accelerator warm-up on a CPU
    assert [(r["m"], r["k"]) for r in matmuls] == [(32, 32), (32, 48), (64, 32), (64, 48)]
    for r in matmuls:
        check_matmul(r)
        assert (r["iters"], r["warmup_iters"], r["dtype"], r["scaling"]) == (5, 2, "float32", None)
    best = max(matmuls, key=lambda r: r["tflops_mean"])
    assert {key: headline[key] for key in ("m", "n", "k", "tflops_mean", "tflops_max")} == {
        key: best[key] for key in ("m", "n", "k", "tflops_mean", "tflops_max")}
    assert headline["shapes_tried"] == 4 and headline["interrupted"] is False
    assert headline["efficiency"] is None and header["warnings"]  # no peak for a CPU, and it says so
    assert "MAMF float32" in err


def test_search_on_cpu_ranks_with_screens_and_reports_a_full_measurement(capsys):
    rc, recs, err = run(capsys, ["--dtype", "float32", "--budget_s", "3", "--num_iterations", "8",
                                 "--num_warmup_iterations", "2"])
    assert rc == 0, err
    matmuls = [r for r in recs if r["kind"] == "matmul"]
    phases = {r["phase"] for r in matmuls}
    assert {"coarse", "final"} <= phases
    assert all(r["iters"] == 8 for r in matmuls)  # the screen never exceeds the full counts
    finals = [r for r in matmuls if r["phase"] == "final"]
    headline = recs[-1]
    assert headline["kind"] == "mamf" and headline["mode"] == "search"
    assert headline["tflops_mean"] == max(r["tflops_mean"] for r in finals)
    assert headline["search_s"] < 3 + 2  # the budget, plus one final measurement at most
    assert headline["shapes_tried"] == len({(r["m"], r["n"], r["k"]) for r in matmuls})


def test_fp8_runs_through_scaled_mm_with_an_fp8_output(tmp_path, capsys):
    out = tmp_path / "mamf.jsonl"
    rc = load_script().main(["--dtype", "float8_e4m3fn", "--m", "32", "--n", "32", "--k", "32",
                             "--num_iterations", "3", "--num_warmup_iterations", "1",
                             "--output_file", str(out)])
    recs = parse_jsonl(out.read_text())
    assert rc == 0, capsys.readouterr().err
    check_matmul(recs[1])
    assert recs[-1]["kind"] == "mamf" and recs[-1]["dtype"] == "float8_e4m3fn"
    assert recs[1]["scaling"] == recs[-1]["scaling"] == "tensorwise"


def test_rowwise_fp8_is_fp8_rowwises_ceiling_without_the_published_per_tensor_figure(tmp_path, capsys):
    out = tmp_path / "mamf.jsonl"
    rc = load_script().main(["--dtype", "float8_e4m3fn", "--scaling", "rowwise", "--m", "32", "--n", "48",
                             "--k", "32", "--num_iterations", "3", "--num_warmup_iterations", "1",
                             "--output_file", str(out)])
    assert rc == 0, capsys.readouterr().err
    recs = parse_jsonl(out.read_text())
    assert recs[0]["config"]["scaling"] == recs[1]["scaling"] == recs[-1]["scaling"] == "rowwise"
    assert recs[-1]["published_mamf_tflops"] is None  # the guide's fp8 MAMF is per-tensor
    assert "MAMF float8_e4m3fn rowwise:" in capsys.readouterr().err


def test_a_dtype_the_device_cannot_run_is_one_record(tmp_path, capsys, monkeypatch):
    # What a GPU without fp8 kernels raises; CPUs differ in which fp8 formats torch runs.
    import torch

    def refuse(*args, **kwargs):
        raise RuntimeError("_scaled_mm is not supported on this device for Float8_e4m3fnuz")
    monkeypatch.setattr(torch, "_scaled_mm", refuse)
    out = tmp_path / "mamf.jsonl"
    rc = load_script().main(["--dtype", "float8_e4m3fnuz", "--m", "32", "--n", "32", "--k", "32",
                             "--output_file", str(out)])
    recs = parse_jsonl(out.read_text())
    assert rc == 1
    assert [r["kind"] for r in recs] == ["header", "error"] and recs[1]["error"] == "unsupported"
    assert "float8_e4m3fnuz" in capsys.readouterr().err.splitlines()[-1]


def test_progress_goes_to_the_stderr_of_the_moment(capsys):
    # Not to the one of when mamf_run was imported (here, at collection): a test capturing
    # stderr then would leave every later run writing to its closed stream.
    mamf_run.Progress().line("phase 1")
    assert capsys.readouterr().err == "phase 1\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_still_writes_the_best_so_far(signum, tmp_path, start_proc):
    out = tmp_path / "mamf.jsonl"
    proc = start_proc([sys.executable, str(REPO / SCRIPT), "--m_range", "0", "100000", "8",
                       "--n", "64", "--k", "64", "--dtype", "float32", "--num_iterations", "20",
                       "--output_file", str(out)], {})
    seen = 0
    for line in proc.stdout:  # wait until three shapes are measured
        seen += '"kind": "matmul"' in line
        if seen == 3:
            break
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    recs = parse_jsonl(out.read_text())
    assert proc.returncode == 128 + signum, err
    headline = recs[-1]
    assert headline["kind"] == "mamf" and headline["interrupted"] is True and "interrupted" in err
    matmuls = [r for r in recs if r["kind"] == "matmul"]
    assert 3 <= headline["shapes_tried"] == len(matmuls) < 12500
    assert headline["tflops_mean"] == max(r["tflops_mean"] for r in matmuls)
