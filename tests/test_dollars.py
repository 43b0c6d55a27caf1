"""The page in dollars: the terminal answer that fits, a cut's price as the whole model's, no call
on a tie or a workload that does not fit, the cost to train and the owner's cost, each number
against one computed by hand from the committed logs."""
import json

import pytest

from conftest import REPO
from upgrade_bench import faults
from upgrade_bench.report.decide import cost, dollars
from upgrade_bench.report.page import terminal
from upgrade_bench.report.compare import verdict
from upgrade_bench.report import main as plot_results
from upgrade_bench.report.decide.dollars import compact

NODE = REPO / "results" / "h200-moe-8" / "node"
# The 8-layer cut's 8K point in that folder, and the whole 32-layer model's FLOP count at 8K as
# its own 2-GPU run recorded it (results/h200x2_8b_longctx_sweep.jsonl): the cut's factor by hand.
CUT_8K_TOKENS_PER_S = 26828.69745836776
CUT_8K_TFLOP, WHOLE_8K_TFLOP = 124.777389883392, 421.645529382912
CUT_8K_J_PER_TOKEN = 0.02487724609375


def run(capsys, *args):
    """plot_results.main in-process: (exit code, stdout lines, stderr)."""
    code = faults.run_main(plot_results.main, [str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def fits_a_terminal(lines: list) -> None:
    # the last: report.md's path; a path longer than a line is printed whole on a line of its own
    assert len(lines) <= 30 and all(len(line) <= 100 or len(line.split()) == 1 for line in lines[:-1])
    assert not any(line.startswith(("#", "- ", "|", "**")) for line in lines)


def test_the_formulas_by_hand():
    assert cost.break_even_usd_per_gpu_hour(3.50, 1.87) == pytest.approx(6.545)
    t = cost.train_cost(1e12, 10_000.0, 8, 2.0)
    hours = 1e12 / 1e4 / 3600
    assert (t.gpu_hours, t.usd, t.days) == pytest.approx((hours, 2 * hours, hours / 8 / 24))
    assert cost.train_cost(1e12, 10_000.0, 8, None).usd is None
    assert cost.owned_usd_per_gpu_hour(30_000, 4) == pytest.approx(30_000 / 35_064)  # 4 x 8766 hours
    # 0.0245 J/token: 24,500 J per 1M tokens = 6.81 Wh, x1.3 PUE at $0.08/kWh
    assert cost.energy_usd_per_mtok(0.0245, 1.3, 0.08) == pytest.approx(24_500 / 3.6e6 * 1.3 * 0.08)
    assert cost.owner_usd_per_mtok(1.0, 1e4, 0.0245, 1.3, 0.08) == pytest.approx(
        1e6 / 3.6e7 + 24_500 / 3.6e6 * 1.3 * 0.08)
    assert cost.board_j_per_token(700 * 0.76, 26_600.0) == pytest.approx(0.02)
    assert cost.whole_model_factor(WHOLE_8K_TFLOP, CUT_8K_TFLOP) == pytest.approx(3.379, abs=1e-3)


def test_a_gpu_without_logs_draws_its_rated_power_as_the_baseline_did_or_as_training_does():
    tokens = (1000.0, 800.0, 1250.0)  # (mid, slowest, fastest) tokens/s
    # the baseline drew half its rating here (an offloaded step idles): the candidate too, up to 76%
    j, how = dollars._rated("B200 SXM", tokens, share=0.5, base="H200 SXM")
    assert j == pytest.approx((500 / 1000, 500 / 1250, 760 / 800))
    assert how == "estimated: 50% of its rated 1000 W as the H200 SXM drew here, to 76%"
    j, how = dollars._rated("B200 SXM", tokens)  # nothing measured: 76% (Newkirk et al.) to all of it
    assert j == pytest.approx((760 / 1000, 760 / 1250, 1000 / 800)) and how.endswith("76% to 100% of its rated 1000 W")


def test_the_noise_floor_is_the_spread_of_the_committed_h200_node_runs():
    steps = []
    for path in ("h200-precision-7/node/sweep.jsonl", "h200-experts-9/llama8k.jsonl", "h200-moe-8/node/sweep.jsonl"):
        bf16 = set()  # runs in bf16: the precision sweep's node log holds an FP8 run too
        for line in (REPO / "results" / path).read_text().splitlines():
            r = json.loads(line)
            if r.get("kind") == "header" and r["config"].get("PRECISION", "bf16") == "bf16":
                bf16.add(r["run_id"])
            if r.get("kind") == "summary" and r.get("seq_len") == 8192 and r["run_id"] in bf16:
                steps.append(r["step_ms"])
    assert len(steps) == 3 and round(max(steps) / min(steps) - 1, 2) == verdict.NOISE_FLOOR
    assert verdict.call(0.97, (0.965, 0.975)).word == verdict.WITHIN  # 3% cheaper, its range narrow: even
    assert verdict.call(0.95, (0.945, 0.955)).word == verdict.BELOW
    assert verdict.call(1.05, (1.045, 1.055)).word == verdict.ABOVE


def test_one_node_folder_with_a_forecast_prices_the_cut_as_the_whole_model_and_owns_it(tmp_path, capsys):
    code, lines, err = run(capsys, NODE, "--price", "H200=3.50", "--price", "B200=7.00", "--forecast", "B200",
                           "--tokens", "2T", "--gpus", "8", "--own", "H200=30000", "--own", "B200=45000:5",
                           "--kwh", "0.10", "--pue", "1.2", "--out", tmp_path / "r")
    assert code == 0, err
    fits_a_terminal(lines)
    text = "\n".join(lines)
    assert "[1] Cut: llama-3.1-8b, 8 of 32 layers: 1 GPU" in lines
    assert "  $/token scaled x3.38-3.53 to the whole model by FLOPs per token, at the cut's TFLOPS/GPU" in lines
    (row,) = [line for line in lines if line.startswith("  B200 SXM forecast  8K")]
    factor = WHOLE_8K_TFLOP / CUT_8K_TFLOP
    base_usd = 3.50 * 1e6 / (CUT_8K_TOKENS_PER_S * 3600) * factor  # the cut's $0.036 as the model's
    assert f"${base_usd:.3f} v $" in row and row.endswith("84/180") and "/h" in row
    # the whole model on 2T tokens on 8 GPUs, at the cut's tokens per second over the FLOP factor
    tokens_per_s = CUT_8K_TOKENS_PER_S / factor
    gpu_hours = 2e12 / tokens_per_s / 3600
    assert any(line.startswith(f"  H200 SXM measured: {compact(gpu_hours)} (") and
               f"GPU-h, ${compact(gpu_hours * 3.50)} (" in line and f", {dollars.duration((gpu_hours / 8 / 24,) * 3)} (" in line
               for line in lines), text
    assert ("Training the whole model of [1] on 2T tokens (--tokens) at 8K, 8 GPU(s) (--gpus), scaled by FLOPs "
            "from the") in " ".join(line.strip() for line in lines)
    # the owner: $30,000 over 4 years plus the measured board energy x PUE 1.2 x $0.10/kWh
    owner = (30_000 / (4 * 365.25 * 24) * 1e6 / (tokens_per_s * 3600)
             + CUT_8K_J_PER_TOKEN * factor * 1e6 / 3.6e6 * 1.2 * 0.10)
    assert f"  H200 SXM measured: ${compact(owner)} (" in text
    (b200,) = [line for line in lines if line.startswith("  B200 SXM forecast: $")]
    assert "(est. energy); owner " in b200 and ", renter even" in b200
    page = (tmp_path / "r" / "report.md").read_text()
    assert "## Cost to train the whole model on 2T tokens" in page and "Newkirk et al., arXiv 2506.14551" in page
    assert "| 8K | H200 SXM (measured) |" in page and "rated 1000 W" in page


def test_an_expert_cut_is_never_priced_as_its_model(tmp_path, capsys):
    # 64 of Qwen3-Next's 512 experts: the same FLOPs per token, but each expert gets 8x the tokens
    code, lines, err = run(capsys, REPO / "results" / "h200-experts-9" / "q3next_cc.jsonl", "--price", "H200=3.50",
                           "--price", "B200=7.00", "--forecast", "B200", "--own", "H200=30000", "--out", tmp_path / "r")
    assert code == 0, err
    fits_a_terminal(lines)
    assert "[1] Cut: qwen3-next-80b-a3b, 4 of 48 layers, 64 of 512 experts: 1 GPU" in lines
    assert "  the expert cut flatters the step (more tokens per expert): no whole-model $/token" in lines
    (row,) = [line for line in lines if line.startswith("  B200 SXM forecast")]
    start = 2 + sum(width for _, width in terminal.COLUMNS[:4])  # the $/1M tokens column
    assert row[start:start + terminal.COLUMNS[4][1]].strip() == "-" and "/h" in row  # its break-even stands
    assert not any(line.startswith(("Training", "Owning")) for line in lines)  # no whole-model cost either


def test_a_forecast_that_does_not_fit_gets_no_price_call(tmp_path, capsys):
    # the 8-layer cut's 32K step took 84.4 GiB of an H200: more than an H100's 80
    code, lines, err = run(capsys, REPO / "results" / "h200x1_8L_rightsized_fa4_liger.jsonl", "--forecast", "H100",
                           "--price", "H100=2", "--price", "H200=3.5", "--out", tmp_path / "r")
    assert code == 0, err
    fits_a_terminal(lines)
    no_fit = [line for line in lines if "NO: " in line]
    assert no_fit and all(" no call " in line and "cheaper" not in line and "/h" not in line for line in no_fit)
    assert any(line.startswith("  H100 SXM forecast  32K ") and line.endswith("NO: 84>80") for line in no_fit)
    assert "Bottom line [1]: H100 SXM (forecast) at $2.00/GPU-hour is cheaper at 8K; does not fit at 32K; it" in lines
    page = (tmp_path / "r" / "report.md").read_text()
    assert "no price call: it does not fit, the baseline's peak is 84.4 GiB, more than its 80 GB (datasheet)" in page


def test_energy_not_measured_is_said_not_invented(tmp_path, capsys):
    log = tmp_path / "cpu.jsonl"
    records = [json.loads(line) for line in (NODE / "sweep.jsonl").read_text().splitlines()]
    for r in records:
        r.pop("energy_j_per_token", None)
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    code, lines, err = run(capsys, log, "--price", "H200=3.5", "--price", "B200=7", "--forecast", "B200",
                           "--own", "H200=30000", "--own", "B200=45000", "--out", tmp_path / "r")
    assert code == 0, err
    assert any(line.startswith("  H200 SXM measured: no owner's cost (energy not measured: its summaries record "
                               "no board energy") for line in lines)


@pytest.mark.parametrize("args, needle", [
    (["--forecast", "B2000"], "--forecast 'B2000': not a GPU name of the GPU table"),
    (["--forecast", "B200-NVL"], "--forecast 'B200-NVL': not a GPU name of the GPU table"),
    (["--tokens", "0"], "--tokens '0': expected a token count from 1 to 1e+16"),
    (["--tokens", "lots"], "--tokens 'lots'"),
    (["--gpus", "2.5"], "--gpus '2.5': expected a whole GPU count"),
    (["--own", "H200"], "--own 'H200': expected GPU=USD_PER_GPU[:YEARS]"),
    (["--own", "H200=30000:0"], "--own 'H200=30000:0': expected years from 0.5 to 20"),
    (["--own", "B2000=30000"], "--own 'B2000=30000': expected GPU=USD_PER_GPU[:YEARS] with a GPU of the GPU table"),
    (["--pue", "0.9"], "--pue '0.9': expected a power usage effectiveness from 1 to 3"),
    (["--kwh", "nan"], "--kwh 'nan': expected dollars per kWh"),
])
def test_a_bad_cost_or_forecast_flag_is_one_line_and_exit_2(tmp_path, capsys, args, needle):
    code, _, err = run(capsys, NODE, "--out", tmp_path / "r", *args)
    assert code == 2 and err.count("\n") == 1 and needle in err, err
    if "B2000" in needle or "B200-NVL" in needle:
        assert "B200 SXM" in err and "H200 SXM" in err  # the table's names, to pick from
    assert not (tmp_path / "r").exists()


def test_a_gpu_name_as_the_table_spells_it_or_its_first_word():
    assert [plot_results.forecast_gpu(n) for n in ("B200", "b200 sxm", "H200", "H200 NVL", "H100", "GB200")] == [
        "B200 SXM", "B200 SXM", "H200 SXM", "H200 NVL", "H100 SXM", "GB200"]
    assert [plot_results.forecast_gpu(n) for n in ("B2000", "B200-NVL", "NVIDIA B200", "B20", "")] == [None] * 5


def test_an_owned_gpu_without_a_price_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, NODE, "--forecast", "B200", "--price", "H200=3.5", "--own", "B200=45000",
                       "--out", tmp_path / "r")
    assert code == 2 and "--own B200 SXM: no --price for it" in err


def test_a_workload_that_does_not_fit_is_priced_only_as_reconfigured_to_fit():
    from types import SimpleNamespace as NS

    from upgrade_bench.report.decide import answer
    from upgrade_bench.report.read import whole_model

    kind = NS(kind="dense-bound, bf16", words=lambda: "as backtested")
    row = NS(seq_len=32768, fits=False, cost_call=verdict.call(0.8, (0.7, 0.9)), calibration=kind,
             speedup=(2.5, 2.2, 2.8), base_usd_per_mtok=0.30, usd_per_mtok=(0.24, 0.21, 0.27), peak_mem_gib=190.0)
    plan = NS(label="reconfigured: ckpt on", peak_gib=150.0)
    fc = NS(candidate="B200 SXM", prices=(3.5, 7.0), hbm_gib=180, base=NS(gpu="H200 SXM"), rows=[row],
            reconfigured=[NS(seq_len=32768, plan=plan, speedup=(1.6, 1.5, 1.7), memory_how="the model's count")])
    whole = whole_model.Scope(True, "all layers")
    like, reconfigured = answer.forecast_regimes(fc, whole)
    assert like.word == answer.NO_FIT and like.base_usd == [] and like.cand_usd == []  # cheaper by 20%: no call
    # the reconfigured configuration fits and is priced: 2.00x the price at 1.6x (1.5x-1.7x) the speed
    assert reconfigured.source == "forecast, reconfigured: ckpt on" and reconfigured.fits
    assert reconfigured.word == verdict.ABOVE and reconfigured.margins == [pytest.approx((2 / 1.7 - 1, 2 / 1.5 - 1))]
    assert reconfigured.cand_usd == [pytest.approx(0.30 * 2 / 1.6)] and reconfigured.break_even_usd == [3.5 * 1.6]
    sentence = answer.regime_sentence(like, "H200 SXM")
    assert ("no price call: it does not fit, the baseline's peak is 190.0 GiB, more than its 180 GB (datasheet)"
            in sentence)
    assert terminal.regime_row(reconfigured).startswith("  B200 SXM reconfig. 32K       1.50-1.70x dearer 18-33%")


def test_a_candidates_range_is_its_speedups_around_the_baseline_median_and_a_measured_one_is_never_estimated():
    from types import SimpleNamespace as NS

    base = dollars.Side("H200 SXM", "measured", (100.0, 90.0, 110.0), (2.0, 2.0, 2.0), "measured", 3.5,
                        power_share=0.8)
    regime = NS(seq_lens=[8192], speedups=[(2.0, 1.5, 2.5)], cand_j_per_token=None, candidate="B200 SXM",
                prices=(3.5, 7.0), word=verdict.BELOW, source="measured")
    cand = dollars.candidate_side(base, regime, 8192, 1.0)
    # the speedup range already holds the baseline's step-time spread: around 100, not 90-110 again
    assert cand.tokens_per_s == (200.0, 150.0, 250.0)
    assert cand.j_per_token is None and cand.energy_how.startswith("not measured")  # measured: never estimated
    forecast = dollars.candidate_side(base, NS(**{**vars(regime), "source": "forecast"}), 8192, 1.0)
    assert forecast.j_per_token is not None and forecast.energy_how.startswith("estimated: 80% of its rated 1000 W")
    # the owner's call sets the candidate's range against the baseline's median, as the renter's does
    owner = dollars.owner_call(dollars.OwnerCost((0.30, 0.28, 0.33)), dollars.OwnerCost((0.40, 0.35, 0.46)), True)
    assert (owner.value, owner.low, owner.high) == pytest.approx((0.40 / 0.30, 0.35 / 0.30, 0.46 / 0.30))
    assert owner.word == verdict.ABOVE
