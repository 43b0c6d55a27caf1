"""One resolver of what a training run will run (training/resolver.py): the plans (from a
config.json, without transformers) and the training process (from transformers' config)
agree on every resolved field for every shipped family; the expert cut; the precision's
refusals; Liger's model types read without importing it. In-process, no GPU."""
import json
import re

import pytest

from upgrade_bench import settings
from upgrade_bench.faults import BadInput
from upgrade_bench.hardware import precisions
from upgrade_bench.hardware.fingerprint import Device
from upgrade_bench.models import cuts, flops, model
from upgrade_bench.log import runs
from upgrade_bench.training import resolver, variables

CPU = resolver.Machine(Device(None), None, 1, frozenset({"sdpa", "eager"}), None)
# An H200 with every backend installed and a liger-kernel that patches some families only.
LIGER = frozenset({"llama", "qwen3_moe", "qwen3_next", "gemma3_text", "gpt_oss"})
H200 = resolver.Machine(Device((9, 0)), "NVIDIA H200", 8, frozenset({"fa3", "fa4", "sdpa", "eager", "flex"}), LIGER,
                        frozenset({"qwen3_moe", "qwen3_next"}))


def training(**env) -> dict:
    return settings.parse(variables.TRAINING_VARS, {k: str(v) for k, v in env.items()})


def fields(r: resolver.Resolved) -> dict:
    """Everything a header and a plan take from the resolver."""
    cut = r.cut
    # (the cut's config fields are each config's own words: Granite's config.json says `mamba`
    # where transformers' config says `linear_attention`; the layers they make are the specs')
    return {"config": r.config(), "backend": (r.backend, r.backend_why), "liger": r.use_liger,
            "precision": r.precision.name, "peak": (r.peak_tflops, r.peak_source), "warnings": r.warnings,
            "liger_moe": r.liger_moe, "liger_swiglu": r.liger_swiglu,
            "cut": (cut.label(), sorted(cut.fields), cut.counted, cut.built)}


@pytest.mark.parametrize("preset, machine", [(p, H200) for p in sorted(model.PRESETS)] + [
    (p, CPU) for p in sorted(model.PRESETS) if p.startswith("tiny")])
def test_the_plan_and_the_process_resolve_every_family_alike(preset, machine):
    s = training(MODEL=preset, NUM_LAYERS=2, SEQ_LEN=64)
    planned = resolver.resolve(s, machine, model.cheap_config(preset), [64])  # what sweep_plan and node do
    child = resolver.resolve(s, machine, model.load_config(preset), [64])     # what run_config does
    assert fields(planned) == fields(child)


def test_liger_follows_the_family_in_the_plan_as_in_the_process():
    # The sweep's plan once asked Liger without the family: a granitemoehybrid sweep planned
    # USE_LIGER=True while its processes ran without (liger-kernel has no kernels for it).
    granite = resolver.resolve(training(MODEL="granite-4.0-h-small", NUM_LAYERS=2), H200,
                               model.cheap_config("granite-4.0-h-small"), [8192])
    assert granite.use_liger is False and granite.config()["USE_LIGER"] is False
    assert any("no kernels for model type 'granitemoehybrid'" in w for w in granite.warnings)
    assert resolver.resolve(training(MODEL="llama-3.1-8b", NUM_LAYERS=2), H200,
                            model.cheap_config("llama-3.1-8b"), [8192]).use_liger is True


@pytest.mark.parametrize("env, liger", [
    ({"ENGINE": "fsdp2", "COMPILE": 1}, False),            # inductor fuses what Liger would
    ({"ENGINE": "fsdp2", "COMPILE": 1, "USE_LIGER": 1}, True),  # asked for, it runs
    ({"ENGINE": "fsdp2"}, True),
    ({}, True),
])
def test_liger_auto_is_off_where_fsdp2_compiles_the_blocks(env, liger):
    r = resolver.resolve(training(MODEL="llama-3.1-8b", NUM_LAYERS=2, OFFLOAD_OPTIMIZER=0, **env), H200,
                         model.cheap_config("llama-3.1-8b"), [8192])
    assert r.use_liger is liger and r.config()["USE_LIGER"] is liger


def test_fsdp2_on_one_gpu_without_liger_is_a_run_of_its_own():
    # torchtitan's single-device path (nothing sharded) is another run than FSDP2's sharded one,
    # which every FSDP2 run before it took, one GPU too: recorded only where taken
    one_gpu = resolver.Machine(Device((9, 0)), "NVIDIA H100 80GB HBM3", 1, frozenset({"fa4", "sdpa"}), LIGER)

    def config(machine, **env):
        return resolver.resolve(training(MODEL="llama-3.1-8b", NUM_LAYERS=2, OFFLOAD_OPTIMIZER=0, **env), machine,
                                model.cheap_config("llama-3.1-8b"), [8192]).config()

    compiled = config(one_gpu, ENGINE="fsdp2", COMPILE=1)
    assert compiled["SINGLE_DEVICE"] is True and compiled["USE_LIGER"] is False
    assert "SINGLE_DEVICE" not in config(one_gpu, ENGINE="fsdp2")            # Liger on: sharded
    assert "SINGLE_DEVICE" not in config(H200, ENGINE="fsdp2", COMPILE=1)    # 8 GPUs: sharded
    assert "SINGLE_DEVICE" not in config(one_gpu, USE_LIGER=0)               # DeepSpeed
    sharded_before = {k: v for k, v in compiled.items() if k != "SINGLE_DEVICE"}  # a log of 634f28b
    assert runs.identity_difference(sharded_before, compiled) == "SINGLE_DEVICE=unset there, true asked"


def test_liger_types_are_read_from_its_source_without_importing_it():
    source = 'import torch\nX = {"no": 1}\nMODEL_TYPE_TO_APPLY_LIGER_FN = {\n  "llama": f,\n  "qwen3": g,\n}\n'
    assert resolver.liger_types_in(source) == {"llama", "qwen3"}
    assert resolver.liger_types_in("MODEL_TYPE_TO_APPLY_LIGER_FN = dict()") == frozenset()


def test_which_families_get_ligers_fused_moe_is_read_from_its_source():
    # liger-kernel 0.8.5's shape: the apply function swaps the experts class when `swiglu`, whose
    # default decides (model.apply_liger calls it with its defaults); gpt-oss's defaults to False.
    source = """
def apply_qwen3_moe(rope=True, swiglu: bool = True, model=None):
    if swiglu:
        modeling.Qwen3MoeExperts = LigerExperts
def apply_gpt_oss(*, swiglu: bool = False):
    if swiglu:
        modeling.GptOssExperts = LigerExperts
def apply_llama(swiglu: bool = True):
    modeling.LlamaMLP = LigerSwiGLUMLP
MODEL_TYPE_TO_APPLY_LIGER_FN = {"qwen3_moe": apply_qwen3_moe, "gpt_oss": apply_gpt_oss, "llama": apply_llama}
"""
    assert resolver.liger_fused_moe_types_in(source) == {"qwen3_moe"}
    assert resolver.liger_fused_moe_types_in("x = 1") == frozenset()
    # positional-only arguments shift which default is swiglu's; an attribute names the class too
    odd = """
def a(x=1, /, swiglu=True):
    m.Experts = swiglu_mod.LigerExperts
def b(x=True, /, swiglu=False):
    m.Experts = LigerExperts
MODEL_TYPE_TO_APPLY_LIGER_FN = {"a": a, "b": b}
"""
    assert resolver.liger_fused_moe_types_in(odd) == {"a"}
    moe = dict(MODEL="tiny-qwen3-moe", NUM_LAYERS=1)
    assert resolver.resolve(training(**moe), H200, model.cheap_config("tiny-qwen3-moe"), [64]).liger_moe
    assert not resolver.resolve(training(**moe, USE_LIGER=0), H200, model.cheap_config("tiny-qwen3-moe"), [64]).liger_moe
    assert not resolver.resolve(training(**moe), CPU, model.cheap_config("tiny-qwen3-moe"), [64]).liger_moe
    # in FP8 the experts run torchao's grouped GEMM: Liger goes on without the SwiGLU swap that
    # would put its fused MoE in their place (and tune it in the first step)
    fp8 = resolver.resolve(training(**moe, PRECISION="fp8-rowwise", FP8_EXPERTS=1), H200,
                           model.cheap_config("tiny-qwen3-moe"), [64])
    assert fp8.use_liger and not fp8.liger_moe and not fp8.liger_swiglu
    assert "Liger is applied without its SwiGLU (swiglu=False)" in fp8.warnings[-1]
    assert fp8.config()["FP8_EXPERTS"] is True  # part of the run's identity, only when on
    fp8 = resolver.resolve(training(**moe, PRECISION="fp8-rowwise"), H200, model.cheap_config("tiny-qwen3-moe"), [64])
    assert fp8.liger_moe and fp8.liger_swiglu and "FP8_EXPERTS" not in fp8.config()  # experts bf16: Liger's MoE
    with pytest.raises(BadInput, match=r"^FP8_EXPERTS=1: PRECISION=bf16 has no FP8 grouped GEMM for the experts; "
                                       r"use PRECISION=(\S+ or )*fp8-tensorwise or fp8-rowwise or fp8-rowwise-gw-hp"
                                       r"( or \S+)*, or FP8_EXPERTS=0$") as refused:
        resolver.resolve(training(**moe, FP8_EXPERTS=1), H200, model.cheap_config("tiny-qwen3-moe"), [64])
    assert "mxfp8" not in str(refused.value)  # a block-scaled format has no grouped GEMM for the experts
    dense = resolver.resolve(training(MODEL="tiny", PRECISION="fp8-rowwise"), H200, model.cheap_config("tiny"), [64])
    assert dense.use_liger and dense.liger_swiglu


# ---------------------------------------------------------------- the expert cut

@pytest.mark.parametrize("preset, experts, field", [
    ("tiny-qwen3-moe", 4, "num_experts"), ("tiny-qwen3-next", 2, "num_experts"),
    ("tiny-deepseek-v3", 4, "n_routed_experts"), ("tiny-gpt-oss", 2, "num_local_experts")])
def test_the_expert_cut_keeps_the_flops_per_token_and_cuts_the_memory(preset, experts, field):
    full = cuts.cut(model.load_config(preset))
    cut = cuts.cut(model.load_config(preset), 0, experts, preset)
    assert cut.fields == {field: experts} and getattr(cut.config, field) == experts
    assert cut.counted == full.counted  # the count: every routed expert, as the full model's token sees it
    assert flops.step_flops(cut.counted, 1, 64).model == flops.step_flops(full.counted, 1, 64).model
    assert cut.built.total_params < full.built.total_params
    per_expert = 3 * cut.built.hidden * next(ly.mlp for ly in full.full.layers if ly.mlp.experts).active_params
    assert cuts.experts_of(cut.built) == experts and per_expert  # the experts the model is built with
    assert cut.label() == f"all {len(full.full.layers)} layers, {experts} of 8 experts"
    assert cuts.cut(json.loads(model.PRESETS[preset].read_text()), 0, experts, preset).built == cut.built


def test_the_expert_cut_keeps_deepseeks_dense_layers_and_the_shared_experts():
    full = cuts.cut(model.load_config("deepseek-v3"))
    cut = cuts.cut(model.load_config("deepseek-v3"), 4, 16, "deepseek-v3")
    assert cut.label() == "4 of 61 layers, 16 of 256 experts"
    layers = cut.built.layers
    assert [ly.mlp.experts for ly in layers] == [0, 0, 0, 16]  # first_k_dense_replace = 3 dense layers kept
    assert layers[3].mlp.top_k == full.full.layers[3].mlp.top_k == 8
    # a token's work: top-8 routed + the shared expert, as in the full model, whatever N
    assert cut.counted.active_params == cuts.cut(model.load_config("deepseek-v3"), 4).counted.active_params


@pytest.mark.parametrize("preset, experts, problem", [
    ("tiny", 2, "NUM_EXPERTS=2: model type 'llama' here has no routed experts to cut"),
    ("tiny-qwen3-moe", 1, "NUM_EXPERTS=1: expected from the top-k (2) to the model's 8 routed experts"),
    ("tiny-qwen3-moe", 9, "NUM_EXPERTS=9: expected from the top-k (2) to the model's 8 routed experts")])
def test_an_expert_cut_that_makes_no_sense_is_refused(preset, experts, problem):
    with pytest.raises(BadInput) as err:
        resolver.resolve(training(MODEL=preset, NUM_EXPERTS=experts), CPU, model.cheap_config(preset), [64])
    assert str(err.value) == problem


def test_the_expert_cut_is_part_of_the_run_identity():
    base = resolver.resolve(training(MODEL="tiny-qwen3-moe"), CPU, model.cheap_config("tiny-qwen3-moe"), [64])
    cut = resolver.resolve(training(MODEL="tiny-qwen3-moe", NUM_EXPERTS=4), CPU,
                           model.cheap_config("tiny-qwen3-moe"), [64])
    assert "NUM_EXPERTS" not in base.config() and cut.config()["NUM_EXPERTS"] == 4  # older logs: all experts


# ---------------------------------------------------------------- precision

def test_a_precision_this_gpu_or_stack_cannot_run_is_refused_naming_what_can():
    found = lambda dist, name: name == "torchao.float8"  # noqa: E731: torchao installed, without MX or NVFP4 training
    hopper, ampere = Device((9, 0)), Device((8, 0))
    assert precisions.resolve("fp8-rowwise", hopper, found).recipe == "rowwise"
    with pytest.raises(BadInput) as err:
        precisions.resolve("nvfp4", hopper, found)
    assert re.fullmatch(r"PRECISION=nvfp4 does not run on sm_90: fp4 tensor cores need sm_100\+ \(Blackwell\); here use "
                        r"bf16( or \S+)* or fp8-tensorwise or fp8-rowwise or fp8-rowwise-gw-hp( or \S+)*", str(err.value))
    assert "mxfp8" not in str(err.value)  # Blackwell's block format is no way out on a Hopper
    with pytest.raises(BadInput, match="^PRECISION=fp8-tensorwise does not run on sm_80: fp8 tensor cores need "
                                       "sm_89.*; here use bf16$"):
        precisions.resolve("fp8-tensorwise", ampere, found)
    with pytest.raises(BadInput, match=r"^PRECISION=nvfp4: torchao .* has no torchao.prototype.mx_formats.nvfp4_training"):
        precisions.resolve("nvfp4", Device(None), found)  # CPU: emulation, where the library has the recipe
    with pytest.raises(BadInput, match="not offered on AMD GPUs"):
        precisions.resolve("fp8-tensorwise", Device((9, 4), is_hip=True), found)
    with pytest.raises(BadInput, match="needs torchao, which is not installed"):
        precisions.resolve("fp8-tensorwise", hopper, found, version=lambda dist: None)
    assert precisions.resolve("bf16", Device((7, 5)), lambda dist, name: False).name == "bf16"
    # the installed torchao's own file list: its float8 and MX training modules, no NVFP4 training
    assert precisions.module_found("torchao", "torchao.float8") and precisions.module_found("torchao", "torchao.prototype.mx_formats.mx_linear")
    assert not precisions.module_found("torchao", "torchao.prototype.mx_formats.nvfp4_training")
    assert not precisions.module_found("no-such-distribution", "x")
    # each format's capability item names what it trains (check_capabilities' detail)
    assert precisions.unlocked_by("matmul:fp8_e4m3:rowwise") == ["fp8-rowwise", "fp8-rowwise-gw-hp"]


def test_precision_is_part_of_the_identity_and_bf16_reads_as_older_logs():
    fp8 = resolver.resolve(training(MODEL="tiny", PRECISION="fp8-tensorwise"), CPU, model.cheap_config("tiny"), [64])
    bf16 = resolver.resolve(training(MODEL="tiny"), CPU, model.cheap_config("tiny"), [64])
    assert fp8.config()["PRECISION"] == "fp8-tensorwise" and "PRECISION" not in bf16.config()


def test_a_setting_that_changes_nothing_on_this_model_or_machine_says_so_before_the_run():
    # issue 46: each ran as without it, with no word
    def warned(machine, **env):
        s = training(SEQ_LEN=64, **env)
        return [w for w in resolver.resolve(s, machine, model.cheap_config(s.MODEL), [64]).warnings
                if "changes nothing" in w or "emulates" in w]

    assert warned(H200, MODEL="tiny", PRECISION="fp8-rowwise", FP8_EXPERTS=1) == [
        "FP8_EXPERTS=1: MODEL=tiny has no MoE layer: it changes nothing here"]
    assert warned(H200, MODEL="tiny-deepseek-v3", NUM_LAYERS=1, NUM_EXPERTS=4, PRECISION="fp8-rowwise",
                  FP8_EXPERTS=1) == [  # its first layer is dense (first_k_dense_replace=1)
        f"{name}: the cut to NUM_LAYERS=1 keeps no MoE layer of tiny-deepseek-v3: it changes nothing here"
        for name in ("NUM_EXPERTS=4", "FP8_EXPERTS=1")]
    assert warned(H200, MODEL="tiny-deepseek-v3", NUM_EXPERTS=4, PRECISION="fp8-rowwise", FP8_EXPERTS=1) == []
    assert warned(CPU, MODEL="tiny", PRECISION="fp8-rowwise") == [
        "PRECISION=fp8-rowwise on CPU: torchao emulates the format (every linear it can convert, no size threshold, "
        "nothing compiled): the numbers run, not its speed"]
    assert warned(CPU, MODEL="tiny") == []


def test_fp8_experts_on_a_model_whose_experts_cannot_take_it_says_so_in_the_process():
    from upgrade_bench.training import fp8_experts, run_config

    rc = run_config.resolve_here(training(MODEL="tiny-gpt-oss", SEQ_LEN=64, PRECISION="fp8-rowwise", FP8_EXPERTS=1))
    assert (f"FP8_EXPERTS=1: no experts module of MODEL=tiny-gpt-oss can run the FP8 grouped GEMM "
            f"({fp8_experts.TRANSPOSED}): its experts stay bf16, it changes nothing here") in rc.warnings
    rc = run_config.resolve_here(training(MODEL="tiny-qwen3-moe", SEQ_LEN=64, PRECISION="fp8-rowwise", FP8_EXPERTS=1))
    assert not [w for w in rc.warnings if "changes nothing" in w]
