"""MoE experts' grouped GEMMs in FP8 (training/fp8_experts.py): the padding of each expert's
tokens against hand-computed rows, exact around a plain grouped GEMM (values and gradients);
which experts convert and what a token passes through in them; a real DeepSpeed ZeRO-2 run of
the tiny MoE whose experts run the (CPU-emulated) FP8 path and still train."""
import io
import json

import pytest
import torch

from conftest import REPO, parse_jsonl, run_proc
from upgrade_bench import faults
from upgrade_bench.hardware import precisions
from upgrade_bench.log import records
from upgrade_bench.training import engine, fp8_experts, low_precision, variables
from upgrade_bench.training import benchmark_main as benchmark



def test_each_group_starts_at_a_multiple_of_16_rows_and_holds_at_least_16():
    # groups of 5, 0 and 20 rows -> 16, 16 and 32: ends 16, 32, 64; the spare row 25 + 3 x 16 = 73
    # in a buffer of whole 16-row tiles (its fp8 transpose's stride must be a multiple of 16 bytes)
    dest, ends, rows = fp8_experts.padded_rows(torch.tensor([5, 5, 25], dtype=torch.int32), 25, 3)
    assert dest.tolist() == list(range(5)) + list(range(32, 52))
    assert ends.tolist() == [16, 32, 64] and ends.dtype == torch.int32 and rows == 80
    # a row past the last group's end (an expert id no group holds) goes to the spare last row
    dest, ends, rows = fp8_experts.padded_rows(torch.tensor([16, 17], dtype=torch.int32), 18, 2)
    assert dest.tolist() == list(range(17)) + [50] and ends.tolist() == [16, 32] and rows == 64


def test_padding_is_exact_around_a_plain_grouped_gemm_values_and_gradients():
    torch.manual_seed(0)
    offs = torch.tensor([7, 7, 40, 41], dtype=torch.int32)  # 7, 0, 33 and 1 tokens
    x = torch.randn(41, 32, dtype=torch.bfloat16, requires_grad=True)
    w = torch.randn(4, 48, 32, dtype=torch.bfloat16, requires_grad=True)  # (experts, out, in)
    grad = torch.randn(41, 48, dtype=torch.bfloat16)

    def run(f):
        x.grad = w.grad = None
        y = f(x, w.transpose(-2, -1), offs)
        y.backward(grad)
        return y, x.grad, w.grad

    def plain(a, b, o):
        return torch._grouped_mm(a, b, offs=o)

    padded = run(lambda a, b, o: fp8_experts.padded_grouped_mm(plain, a, b, o))
    for got, want in zip(padded, run(plain)):
        assert torch.equal(got, want)


def test_the_cpu_stand_in_rounds_each_row_through_e4m3():
    x = torch.tensor([[1.0, 0.3, -448.0], [1e-3, 2e-3, 3e-3]], requires_grad=True)
    rounded = fp8_experts.through_e4m3(x, -1)
    # row 1's amax is e4m3's max: 0.3 rounds to 0.3125 (3 mantissa bits); row 2 scales to its own
    assert rounded[0].tolist() == [1.0, 0.3125, -448.0]
    assert rounded[1].tolist() == pytest.approx([1e-3, 2e-3, 3e-3], rel=0.07)
    rounded.sum().backward()
    assert x.grad.tolist() == [[1.0] * 3] * 2  # straight through


def meta_model(preset: str):
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**json.loads((REPO / "configs" / f"{preset}.json").read_text()))
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def test_which_experts_convert_and_what_a_token_passes_through_in_them():
    fp8 = precisions.PRECISIONS["fp8-tensorwise"]
    plan = low_precision.plan(meta_model("tiny-qwen3-moe"), fp8, thresholds=False, experts=True)
    # 2 layers of 8 experts of gate_up 64x64 and down 64x32; a token goes through 2 of them
    assert (plan["converted_experts"], plan["kept_experts"]) == (2, {})
    assert plan["experts"] == fp8.experts
    linears = 2 * (64 * 64 + 2 * 32 * 64 + 64 * 64)  # q, k, v, o (routers are no nn.Linear)
    assert plan["converted_linears"] == 8 and plan["converted_params"] == linears + 2 * 2 * (64 * 64 + 32 * 64)
    # gpt-oss stores its experts (experts, in, out): the FP8 grouped GEMM needs them column-major
    plan = low_precision.plan(meta_model("tiny-gpt-oss"), fp8, thresholds=False, experts=True)
    assert plan["converted_experts"] == 0 and plan["kept_experts"] == {fp8_experts.TRANSPOSED: 2}
    assert plan["experts"] == "bf16"
    # a torchao without the grouped GEMM keeps them all, and says so
    plan = low_precision.plan(meta_model("tiny-qwen3-moe"), fp8, thresholds=False, experts=True,
                              found=lambda dist, module: module != fp8_experts.TORCHAO_MODULE)
    assert plan["kept_experts"] == {f"the installed torchao has no FP8 grouped GEMM ({fp8_experts.TORCHAO_MODULE})": 2}
    # FP8_EXPERTS=0, the default, keeps them and says why; the linears convert as before
    plan = low_precision.plan(meta_model("tiny-qwen3-moe"), fp8, thresholds=False, experts=False)
    assert plan["kept_experts"] == {low_precision.EXPERTS_OFF: 2} and plan["converted_params"] == linears
    # MXFP8 has no grouped GEMM wired here, whatever FP8_EXPERTS says
    plan = low_precision.plan(meta_model("tiny-qwen3-moe"), precisions.PRECISIONS["mxfp8"], thresholds=False,
                              experts=True)
    assert plan["kept_experts"] == {"mxfp8: experts' grouped GEMMs are not converted here": 2}


def test_the_tiny_moe_trains_its_linears_and_experts_in_fp8_under_zero2(as_script, monkeypatch):
    # A real engine (ZeRO-2, a world of one; the only such run in a test process: DeepSpeed's
    # groups outlive it), its linears in emulated FP8 (the dense model's under ZeRO-3 on two
    # ranks: test_benchmark's guide_two_ranks): both layers' experts run the emulated FP8
    # grouped GEMMs, twice each a step, and their weights still change: the failure torchao's
    # own conversion has under ZeRO (a stale tensor inside its wrapper) would leave them as built.
    calls, built = [], {}

    def counting(a, weight_t, offs):
        calls.append(tuple(weight_t.shape))
        return emulated(a, weight_t, offs)

    emulated = fp8_experts.emulated_gemm
    monkeypatch.setattr(fp8_experts, "emulated_gemm", counting)
    build = engine.build_engine

    def keep(rc, mark=None):
        eng, alive = build(rc, mark)
        built["engine"] = eng
        built["before"] = eng.module.model.layers[0].mlp.experts.down_proj.detach().clone()
        return eng, alive

    monkeypatch.setattr(engine, "build_engine", keep)
    as_script("benchmark.py", variables.TRAINING_VARS, {
        "MODEL": "tiny-qwen3-moe", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0",
        "SEQ_LEN": "64", "PRECISION": "fp8-tensorwise", "FP8_EXPERTS": "1", "STEPS": "1", "WARMUP_STEPS": "0", "RANK": "0",
        "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"})
    stdout = io.StringIO()
    monkeypatch.setattr(records, "claim_stdout", lambda: stdout)
    assert faults.run_main(benchmark.main) == 0
    header, step, summary = parse_jsonl(stdout.getvalue())
    low = header["low_precision"]
    assert (low["converted_linears"], low["converted_experts"]) == (8, 2)
    # forward: gate_up (in 64, out 64) and down (in 32, out 64) in each of 2 layers
    assert sorted(set(calls)) == [(8, 32, 64), (8, 64, 64)] and len(calls) == 4
    after = built["engine"].module.model.layers[0].mlp.experts.down_proj
    assert not torch.equal(after, built["before"])
    # per layer q 64x64, k and v 32x64, o 64x64, and 2 of the 8 experts' gate_up 64x64 and down 64x32
    assert low["converted_params"] == 2 * (2 * 64 * 64 + 2 * 32 * 64 + 2 * (64 * 64 + 32 * 64))
    assert summary["low_precision_flop_share"] == pytest.approx(
        6 * low["converted_params"] * 64 / (summary["model_tflop_per_step"] * 1e12))
    assert summary["precision_bound_ms"] is None  # no GPU: no published MAMF to bound it by


def test_zero3s_partitioned_experts_are_judged_by_their_shapes():
    # ZeRO-3 builds the model partitioned: each weight an empty placeholder whose shape is in
    # ds_shape (reading the placeholder's strides failed: a 1-D tensor has no dimension -2)
    net = meta_model("tiny-qwen3-moe")
    whole = low_precision.plan(net, precisions.PRECISIONS["fp8-tensorwise"], thresholds=False, experts=True)
    for _, m in fp8_experts.experts_modules(net):
        for name in ("gate_up_proj", "down_proj"):
            shape = getattr(m, name).shape
            placeholder = torch.nn.Parameter(torch.empty(0, device="meta"))
            placeholder.ds_shape = shape
            setattr(m, name, placeholder)
    assert low_precision.plan(net, precisions.PRECISIONS["fp8-tensorwise"], thresholds=False, experts=True) == whole


def test_the_tiny_moe_trains_its_experts_in_fp8_under_zero3():
    # Its own process: ZeRO-3 builds the model partitioned (one DeepSpeed run per process, the
    # ZeRO-2 one above is in this one). The experts plan and convert from the placeholders.
    proc = run_proc("benchmark.py", {"MODEL": "tiny-qwen3-moe", "ZERO_STAGE": "3", "OFFLOAD_OPTIMIZER": "0",
                                       "GRAD_CHECKPOINT": "0", "SEQ_LEN": "64", "STEPS": "1", "WARMUP_STEPS": "0",
                                       "PRECISION": "fp8-tensorwise", "FP8_EXPERTS": "1"}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    header, _step, summary = parse_jsonl(proc.stdout)
    assert header["config"]["ZERO_STAGE"] == 3 and header["low_precision"]["converted_experts"] == 2
    assert summary["kind"] == "summary" and summary["loss"] == summary["loss"]  # finite, not NaN


def test_mxfp8_keeps_the_linears_its_32_element_blocks_do_not_divide_and_trains_the_rest():
    # tiny-deepseek-v3's MLA projections include 16- and 48-wide ones: MXFP8's scale blocks are
    # 32 elements, and converting them failed in the forward (emulated on CPU)
    from transformers import AutoModelForCausalLM

    mx = precisions.PRECISIONS["mxfp8"]
    plan = low_precision.plan(meta_model("tiny-deepseek-v3"), mx, thresholds=False, experts=False)
    assert plan["kept_linears"] == {"a dimension not a multiple of 32": 4, "lm_head": 1}
    torch.manual_seed(0)
    net = AutoModelForCausalLM.from_config(meta_model("tiny-deepseek-v3").config).to(torch.bfloat16)
    assert low_precision.convert(net, mx, emulate=True, experts=False) == (plan["converted_linears"], 0)
    ids = torch.randint(2, 900, (1, 64))
    loss = net(input_ids=ids, labels=ids).loss
    loss.backward()
    assert torch.isfinite(loss)
