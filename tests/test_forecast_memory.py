"""A length the baseline ran out of memory at, in a forecast: the memory it needs per GPU, by the
baseline's own points or else by the peak-memory model (models/peak_memory.py), and whether the
candidate's HBM holds it: on the committed H100 node (one point, 8K; 32K out of memory) and on
series written by hand."""
import pytest

from conftest import REPO
from report.helpers import cli, header, rec, skip_figures, summary
from upgrade_bench.models import peak_memory
from upgrade_bench.report.forecast import series as forecasts
from upgrade_bench.report.read import series

PARAMS = 2_795_503_616  # the 8-layer cut of Llama-3.1-8B (tests/test_peak_memory.py)
RIGHT_SIZED = {"MODEL": "llama-3.1-8b", "NUM_LAYERS": 8, "ZERO_STAGE": 2, "world_size": 1, "BATCH_SIZE": 1,
               "OFFLOAD_OPTIMIZER": False, "GRAD_CHECKPOINT": False}


def one_point(config):
    """An H100's 8K point at 62.5 GiB, then an out-of-memory at 32K, of `config`."""
    records = [header("h", "NVIDIA H100 80GB HBM3", backend="fa4", config=config, hbm=79.2),
               dict(summary("h", 8192, 385.0, 989.0, 25000.0, 324.0), peak_mem_gib=62.5),
               rec("error", "h", error="oom", message="exit code 3", seq_len=32768)]
    (s,) = series.load(records).series
    return s


def test_one_point_and_an_oom_get_the_models_estimate_and_the_candidates_fit():
    s = one_point(RIGHT_SIZED)
    # by hand: 16 bytes a parameter, DeepSpeed's buffers, 8 layers of (4096 + 14336) widths a token
    gib = 16 * PARAMS / 2**30 + peak_memory.BUFFER_GIB[2] + 32768 * 8 * 18432 * peak_memory.ACT_BYTES_PER_WIDTH / 2**30
    (b,) = forecasts.beyond_memory(s, 141.0)
    assert (b.seq_len, b.floor, b.fits) == (32768, False, True) and b.gib == pytest.approx(gib)
    assert "peak-memory model" in b.how
    assert gib == pytest.approx(84.37, rel=peak_memory.ESTIMATE_ERROR)  # what an H200 measured there
    assert forecasts.beyond_memory(s, 80.0)[0].fits is False
    # a baseline of more memory than the estimate that still ran out there: the estimate is a floor
    roomy = one_point(RIGHT_SIZED)
    roomy.hbm_gib = 96.0
    (b,) = forecasts.beyond_memory(roomy, 141.0)
    assert (b.floor, b.fits) == (True, None) and "ran out of memory with 96 GiB, more than that" in b.how


def test_a_floor_says_nothing_of_fitting_and_a_model_not_at_hand_gives_no_estimate():
    (b,) = forecasts.beyond_memory(one_point({**RIGHT_SIZED, "ENGINE": "fsdp2"}), 141.0)
    # FSDP2's backward is not calibrated: its optimizer step's 16 bytes a parameter (fp32 weights,
    # gradients and moments), a floor; the H100's 79.2 GiB that ran out there is the higher one
    assert 16 * PARAMS / 2**30 < 79.2
    assert (b.floor, b.fits, b.gib) == (True, None, 79.2) and "optimizer step alone" in b.how
    assert forecasts.beyond_memory(one_point({**RIGHT_SIZED, "ENGINE": "fsdp2"}), 40.0)[0].fits is False
    assert forecasts.beyond_memory(one_point({**RIGHT_SIZED, "MODEL": "no-org/no-such-model"}), 141.0) == []
    assert peak_memory.of_run({**RIGHT_SIZED, "ZERO_STAGE": "two"}, 8192) is None  # a hostile log: no estimate
    assert peak_memory.of_run({**RIGHT_SIZED, "MODEL": 7}, 8192) is None


@pytest.mark.parametrize("candidate, words", [
    ("H200", "H100 SXM ran out of memory at 32K, which H200 SXM's memory would hold by estimate "
             "(about 84.4 GiB; no step time)"),
    ("A100 SXM", "H100 SXM ran out of memory at 32K, which A100 SXM's memory would not hold either by "
                 "estimate (about 84.4 GiB, more than its HBM)")], ids=["fits", "does-not-fit"])
def test_the_committed_h100_node_says_what_the_candidate_would_need_at_the_length_it_could_not_run(
        tmp_path, capsys, monkeypatch, candidate, words):
    skip_figures(monkeypatch)
    code, out, err = cli(capsys, REPO / "results" / "h100-node-10" / "node", "--forecast", candidate,
                         "--out", tmp_path)
    assert code == 0, err
    assert words in " ".join(out.split())  # the terminal wraps its lines
    page = (tmp_path / "report.md").read_text()
    assert "At 32K the baseline ran out of memory; it needs about 84.4 GiB per GPU (the peak-memory model's" in page


def test_the_terminal_says_a_floor_within_the_candidates_hbm_is_no_forecast():
    from upgrade_bench.report.decide.answer import Only
    from upgrade_bench.report.page.terminal import estimate_words
    floor = forecasts.Beyond(32768, 62.5, "the optimizer step alone", True, None)
    assert estimate_words(Only("H200 SXM", "forecast", 32768, "H100 SXM", "OOM", True, floor), "H200 SXM") == (
        "not forecast on H200 SXM (its memory estimate, at least 62.5 GiB, is a floor within its HBM)")
    assert estimate_words(Only("H200 SXM", "forecast", 32768, "H100 SXM", "OOM"), "H200 SXM") == (
        "not forecast on H200 SXM (no memory estimate)")


def test_a_length_the_baseline_ran_out_of_memory_at_needs_more_than_the_baselines_hbm():
    # 60 GiB at 4K, 62 at 8K on an H100 (79.2 GiB), out of memory at 32K: the two points extrapolate
    # to 74 GiB, less than the memory that ran out; a 78 GiB GPU cannot hold what 79.2 could not
    records = [header("h", "NVIDIA H100 80GB HBM3", backend="fa4", config=RIGHT_SIZED, hbm=79.2),
               dict(summary("h", 4096, 385.0, 989.0, 25000.0, 160.0), peak_mem_gib=60.0),
               dict(summary("h", 8192, 385.0, 989.0, 25000.0, 324.0), peak_mem_gib=62.0),
               rec("error", "h", error="oom", message="exit code 3", seq_len=32768)]
    (s,) = series.load(records).series
    (b,) = forecasts.beyond_memory(s, 78.0)
    assert (b.gib, b.floor, b.fits) == (79.2, True, False)
    assert "ran out of memory with 79.2 GiB, more than that" in b.how
    assert forecasts.beyond_memory(s, 141.0)[0].fits is None  # a floor within its HBM: no claim either way
