"""Model families: what architecture.describe reads from each shipped config, against hand
counts of the published figures, and the per-layer-type FLOP terms against hand-computed values."""
import json

import pytest

from conftest import REPO
from upgrade_bench.models import cuts, architecture, flops, model
from upgrade_bench.faults import BadInput


def preset(name: str) -> architecture.ModelSpec:
    return architecture.describe(json.loads((REPO / "configs" / f"{name}.json").read_text()))


def test_qwen3_30b_a3b_active_and_total_parameters_by_hand():
    spec = preset("qwen3-30b-a3b")
    attention = 2048 * (32 * 128 + 2 * 4 * 128 + 32 * 128)   # q, k, v, o: 18,874,368
    experts_active = 8 * 3 * 2048 * 768                      # top-8 of 128 SwiGLU experts
    router = 2048 * 128
    lm_head = 151936 * 2048
    assert spec.active_params == 48 * (attention + experts_active + router) + lm_head == 3_041_656_832
    # The published 3.3B active counts the embedding too; 30.5B total.
    assert (spec.active_params + lm_head) / 1e9 == pytest.approx(3.35, abs=0.01)
    assert spec.total_params == 48 * (attention + 128 * 3 * 2048 * 768 + router) + 2 * lm_head
    assert spec.total_params / 1e9 == pytest.approx(30.5, abs=0.05)


def test_published_sizes_of_the_other_shipped_families():
    # Published: gpt-oss-20b 21B total / 3.6B active; Qwen3-Next-80B-A3B 80B total;
    # DeepSeek-V3 671B total / 37B active (embedding included).
    assert preset("gpt-oss-20b").total_params / 1e9 == pytest.approx(20.9, abs=0.1)
    assert preset("gpt-oss-20b").active_params / 1e9 == pytest.approx(3.6, abs=0.05)
    assert preset("qwen3-next-80b-a3b").total_params / 1e9 == pytest.approx(79.7, abs=0.3)
    ds = preset("deepseek-v3")
    assert ds.total_params / 1e9 == pytest.approx(671, abs=1)
    assert (ds.active_params + ds.lm_head_params) / 1e9 == pytest.approx(37.5, abs=0.5)


def test_granite_4_h_small_active_and_total_parameters_by_hand():
    spec = preset("granite-4.0-h-small")
    # Mamba-2: in_proj 4096 -> z 8192 + x, B, C 8192 + 2*1*128 + dt per head 128; out_proj 8192 -> 4096
    mamba = 4096 * (8192 + 8448 + 128) + 8192 * 4096           # 102,236,160
    attention = 4096 * (32 * 128 + 2 * 8 * 128 + 32 * 128)    # q, k, v, o: 41,943,040
    expert, shared, router = 3 * 4096 * 768, 3 * 4096 * 1536, 4096 * 72
    lm_head = 100352 * 4096                                    # tied: the embedding, held once
    assert spec.active_params == 36 * mamba + 4 * attention + 40 * (10 * expert + shared + router) + lm_head \
        == 8_800_960_512
    assert spec.total_params == 36 * mamba + 4 * attention + 40 * (72 * expert + shared + router) + lm_head \
        == 32_205_176_832
    # Published: 32B total (32.2B), 9B active (9.2B with the embedding lookup counted too).
    assert spec.total_params / 1e9 == pytest.approx(32.2, abs=0.05)
    assert (spec.active_params + lm_head) / 1e9 == pytest.approx(9.2, abs=0.05)


def test_layer_patterns_of_the_shipped_families():
    assert preset("gpt-oss-20b").mix() == {"sliding_attention": 12, "full_attention": 12}
    assert preset("gemma-3-12b").mix() == {"sliding_attention": 40, "full_attention": 8}
    assert preset("qwen3-next-80b-a3b").mix() == {"linear_attention": 36, "full_attention": 12}
    assert preset("qwen3-next-80b-a3b").mix_text() == "36 linear_attention, 12 full_attention"
    ds = preset("deepseek-v3")
    assert [ly.mlp.experts for ly in ds.layers[:4]] == [0, 0, 0, 256]  # first_k_dense_replace=3
    granite = preset("granite-4.0-h-small")
    assert granite.mix_text() == "36 mamba2, 4 full_attention"
    assert [i for i, ly in enumerate(granite.layers) if ly.mixer.kind == "full_attention"] == [5, 15, 25, 35]
    # transformers reads the config.json's "mamba" / "attention" as linear_attention /
    # full_attention: the same model either way
    assert model.spec(model.load_config("granite-4.0-h-small")) == granite


def test_granite_layer_types_and_mamba_sizes_are_checked():
    cfg = json.loads((REPO / "configs" / "tiny-granite-hybrid.json").read_text())
    with pytest.raises(BadInput, match=r"^layer_types=\['mamba', 'gdn', .*\]: expected 4 of mamba, "
                                       r"attention, linear_attention, full_attention$"):
        architecture.describe({**cfg, "layer_types": ["mamba", "gdn", "mamba", "attention"]})
    with pytest.raises(BadInput, match=r"^mamba_n_heads=8, mamba_d_head=12, mamba_n_groups=2: expected "
                                       r"heads x head dim = mamba_expand x hidden_size = 128"):
        architecture.describe({**cfg, "mamba_d_head": 12})
    # no layer_types: every layer Mamba-2, as transformers builds it; no experts: the shared MLP alone
    dense = architecture.describe({**cfg, "layer_types": None, "num_local_experts": 0})
    assert dense.mix() == {"mamba2": 4} and not dense.moe
    assert dense.layers[0].mlp.active_params == 3 * 64 * 64


def test_the_pattern_is_derived_when_a_config_does_not_list_layer_types():
    cfg = json.loads((REPO / "configs" / "qwen3-next-80b-a3b.json").read_text())
    del cfg["layer_types"]
    assert [ly.mixer.kind for ly in architecture.describe(cfg).layers[:4]] == \
        ["linear_attention"] * 3 + ["full_attention"]


def test_mla_parameters_and_attention_by_hand():
    ds = preset("deepseek-v3").layers[0].mixer
    q = 7168 * 1536 + 1536 * 128 * (128 + 64)
    kv = 7168 * (512 + 64) + 512 * 128 * (128 + 128)
    o = 128 * 128 * 7168
    assert ds.params == q + kv + o == 187_105_280
    # scores over 192 dims (nope + rope), values over 128: 6 * s^2/2 * (192 + 128) * H
    assert flops.attention_layer_flops(ds, flops.causal_pairs(4096)) == 6 * 4096**2 / 2 * 320 * 128


def test_gated_deltanet_parameters_and_flops_by_hand():
    gdn = preset("qwen3-next-80b-a3b").layers[0].mixer
    key_dim, value_dim = 16 * 128, 32 * 128
    assert gdn.params == 2048 * (2 * key_dim + 2 * value_dim) + 2048 * 2 * 32 + value_dim * 2048
    # forward per token: the conv, 2 FLOPs for each of 4 taps over the q, k, v channels; the
    # state, Megatron-LM's 4 products of each value head's 128 x 128 state, 2 FLOPs each; x3
    fwd = 2 * 4 * (2 * key_dim + value_dim) + 8 * 32 * 128 * 128
    assert flops.linear_mixer_flops(gdn, 8192) == 3 * fwd * 8192


def test_mamba2_parameters_and_flops_by_hand():
    mamba = preset("granite-4.0-h-small").layers[0].mixer
    assert mamba.params == 4096 * (8192 + (8192 + 2 * 128) + 128) + 8192 * 4096 == 102_236_160
    # the depthwise conv: 4 taps over x, B, C (8448 channels), 2 FLOPs a tap; the SSD state, a
    # 128 (d_state) x 64 (head dim) matrix per head, Megatron-LM's scan term 7 * d_inner *
    # d_state (d_inner = 128 heads x 64): per token forward 2*4*8448 + 7*8192*128 = 7,407,616; x3
    assert flops.linear_mixer_flops(mamba, 8192) == 3 * 7_407_616 * 8192
    # at 32K the 36 Mamba-2 layers are linear in s, the 4 attention layers quadratic
    step = flops.step_flops(preset("granite-4.0-h-small"), 1, 32768)
    assert step.linear == 36 * 3 * 7_407_616 * 32768
    assert step.attention == 4 * 6 * 32768**2 / 2 * (128 + 128) * 32
    # 4 attention layers of 40 at 32K: 5.7% of the model FLOPs grow with s^2 (Llama-3.1-8B: 36%)
    assert step.attn_share == pytest.approx(0.057, abs=0.0005)


@pytest.mark.parametrize("length, window, pairs", [
    (8, 3, 8 * 3 - 9 / 2),            # the triangle less the part beyond the window: 19.5
    (8, 8, 32), (8, 0, 32), (8, 20, 32),  # a window as long as the sequence is the guide's s^2/2
    (8192, 128, 8192 * 128 - 128**2 / 2),
])
def test_causal_band_of_a_sliding_window(length, window, pairs):
    assert flops.causal_pairs(length, window) == pairs


def test_the_band_never_exceeds_full_attention_and_is_within_w_over_2_of_the_exact_count():
    for w in (1, 2, 127, 8191, 8192):
        band = flops.causal_pairs(8192, w)
        assert band <= flops.causal_pairs(8192)
        if w < 8192:
            assert sum(min(i + 1, w) for i in range(8192)) - band == w / 2


def test_windowed_layers_cap_the_quadratic_share():
    # gpt-oss-20b at 32K: 12 full layers of 64 heads x (64 + 64) dims, 12 windows of 128.
    gpt_oss = preset("gpt-oss-20b")
    full = 6 * (32768**2 / 2) * 128 * 64
    band = 6 * (32768 * 128 - 128**2 / 2) * 128 * 64
    assert flops.step_flops(gpt_oss, 1, 32768).attention == 12 * full + 12 * band
    # Packed 4K documents: each full layer does 1/8 of its work; a 128-token window inside a
    # 4K document scores 4096*128 - 128^2/2 pairs, eight documents per sequence.
    packed = flops.step_flops(gpt_oss, 1, 32768, doc_len=4096).attention
    assert packed == 12 * full / 8 + 12 * 8 * 6 * (4096 * 128 - 128**2 / 2) * 128 * 64


def test_linear_layers_are_not_quadratic():
    qn = flops.step_flops(preset("qwen3-next-80b-a3b"), 1, 32768)
    assert qn.linear > 0
    assert qn.attention == 12 * 6 * 32768**2 / 2 * 512 * 16  # only the 12 full layers


def test_an_unknown_family_is_refused_naming_the_counted_ones():
    with pytest.raises(BadInput) as err:
        architecture.describe({"model_type": "bert", "hidden_size": 64})
    assert str(err.value) == f"model type 'bert' is not one the FLOP count covers: {', '.join(architecture.FAMILIES)}"


def test_an_alias_of_a_transformers_config_is_read_not_lost():
    # Qwen3MoeConfig stores num_experts as num_local_experts (attribute_map): to_dict() hides it.
    config = model.load_config("tiny-qwen3-moe")
    assert config.to_dict().get("num_experts") is None
    assert model.spec(config).layers[0].mlp.experts == 8


def test_qwen_windows_only_with_use_sliding_window_and_from_max_window_layers():
    base = json.loads((REPO / "configs" / "tiny.json").read_text())
    qwen = {**base, "model_type": "qwen2", "num_hidden_layers": 4, "sliding_window": 131072}
    assert architecture.describe({**qwen, "use_sliding_window": False}).mix() == {"full_attention": 4}
    windowed = architecture.describe({**qwen, "use_sliding_window": True, "sliding_window": 32,
                                      "max_window_layers": 2})
    assert [ly.mixer.window for ly in windowed.layers] == [0, 0, 32, 32]


def test_cut_keeps_the_family_pattern_and_says_when_it_cannot():
    def cut(preset: str, layers: int):
        return cuts.cut(model.load_config(preset), layers, 0, preset)

    four = cut("qwen3-next-80b-a3b", 4)
    assert model.spec(four.config).mix() == {"linear_attention": 3, "full_attention": 1} and not four.note
    assert cut("qwen3-next-80b-a3b", 2).note == (
        "NUM_LAYERS=2: the first 2 layers (2 linear_attention) have no full_attention, which the full model has "
        "(36 linear_attention, 12 full_attention): cut to a whole period of its pattern")
    assert "have no MoE layers" in cut("deepseek-v3", 3).note
    # Granite's cut keeps transformers' own words, from which it builds Mamba layers
    granite = cut("granite-4.0-h-small", 6).config
    assert granite.layer_types == ["linear_attention"] * 5 + ["full_attention"]
    assert model.spec(granite).mix() == {"mamba2": 5, "full_attention": 1}
    import transformers

    net = transformers.AutoModelForCausalLM.from_config(cuts.cut(model.load_config("tiny-granite-hybrid"), 2).config)
    assert [layer.mamba is not None for layer in net.model.layers] == [True, True]


def test_a_hybrid_without_its_kernel_packages_says_torch_fallback():
    # On CPU neither FLA nor causal-conv1d is installed: the layer holds transformers' torch
    # code (or None) for each, and the header says so, never a package.
    kernels = model.mixer_kernels(model.load_config("tiny-qwen3-next"))
    assert kernels == {"chunk_gated_delta_rule": "torch fallback", "causal_conv1d_fn": "torch fallback"}
    assert model.mixer_kernels(model.load_config("tiny")) == {}
    assert "slow torch fallback" in model.mixer_kernel_warnings("qwen3_next", kernels)[0]
    granite = model.mixer_kernels(model.load_config("tiny-granite-hybrid"))
    assert granite == {"mamba_chunk_scan_combined": "torch fallback", "causal_conv1d_fn": "torch fallback"}
    assert "(mamba_ssm, causal_conv1d: not installed" in model.mixer_kernel_warnings("granitemoehybrid", granite)[0]


def test_granites_mamba_kernels_count_only_all_together(monkeypatch):
    # Granite's Mamba layer resolves its kernels into module globals as it is built and takes
    # its fast path only when all five resolved: one missing package puts every kernel on torch.
    import types

    from transformers.integrations import hub_kernels
    from transformers.models.granitemoehybrid import modeling_granitemoehybrid as granite

    for name in ("selective_state_update", "mamba_chunk_scan_combined", "mamba_split_conv1d_scan_combined",
                 "causal_conv1d_fn", "causal_conv1d_update", "is_fast_path_available"):
        monkeypatch.setattr(granite, name, getattr(granite, name, None), raising=False)  # restored after

    def package(name: str, functions: list, at: str = ""):
        module = types.ModuleType(name)
        for fn_name in functions:
            fn = lambda *args: None  # noqa: E731
            fn.__module__ = f"{name}.{at}" if at else name
            setattr(module, fn_name, fn)
        return module

    ssd = package("mamba_ssm", ["mamba_chunk_scan_combined", "mamba_split_conv1d_scan_combined"],
                  "ops.triton.ssd_combined")
    mamba_ssm = package("mamba_ssm", [])  # lazy_load_kernel takes a module; the path below, any object
    mamba_ssm.ops = types.SimpleNamespace(triton=types.SimpleNamespace(
        ssd_combined=ssd, selective_state_update=package("mamba_ssm", ["selective_state_update"])))
    conv = package("causal_conv1d", ["causal_conv1d_fn", "causal_conv1d_update"])
    config = model.load_config("tiny-granite-hybrid")
    monkeypatch.setitem(hub_kernels._KERNEL_MODULE_MAPPING, "mamba-ssm", mamba_ssm)
    monkeypatch.setitem(hub_kernels._KERNEL_MODULE_MAPPING, "causal-conv1d", conv)
    assert model.mixer_kernels(config) == {"mamba_chunk_scan_combined": "mamba_ssm.ops.triton.ssd_combined",
                                           "causal_conv1d_fn": "causal_conv1d"}
    monkeypatch.setitem(hub_kernels._KERNEL_MODULE_MAPPING, "causal-conv1d", package("causal_conv1d", []))
    assert model.mixer_kernels(config) == {"mamba_chunk_scan_combined": "torch fallback",
                                           "causal_conv1d_fn": "torch fallback"}


def test_granite_without_the_fast_path_flag_says_whose_choice_each_kernel_is(monkeypatch):
    # transformers 5.17's Granite module has no is_fast_path_available: its Mamba layer calls
    # module functions that take mamba-ssm and causal-conv1d where they import (seen on an H200,
    # where the flag's absence had the header say "torch fallback" while the kernels ran)
    # (5.14's layer sets the flag as it is built: a flag of another name stands for its absence)
    family = architecture.FAMILIES["granitemoehybrid"]
    monkeypatch.setitem(architecture.FAMILIES, "granitemoehybrid", architecture.Family(
        family.read, family.note, fast_kernels=family.fast_kernels, fast_path_flag="no_such_flag"))
    monkeypatch.setattr(model, "_fast_kernel", lambda target: print if target.startswith("mamba_ssm") else None)
    assert model.mixer_kernels(model.load_config("tiny-granite-hybrid")) == {
        "mamba_chunk_scan_combined": "mamba_ssm.ops.triton.ssd_combined (transformers' choice)",
        "causal_conv1d_fn": "torch fallback"}


def test_an_installed_kernel_is_bound_where_transformers_left_its_torch_code(monkeypatch):
    # a layer that holds transformers' torch code though FLA is installed: the suite binds
    # FLA's, and the header says it did
    import transformers

    def fla_kernel(*args, **kwargs):
        raise AssertionError("not called here")

    fla_kernel.__module__ = "fla.ops.gated_delta_rule.chunk"
    monkeypatch.setattr(model, "_fast_kernel", lambda target: fla_kernel if target.startswith("fla") else None)
    config = model.load_config("tiny-qwen3-next")
    kernels = model.mixer_kernels(config)
    assert kernels["chunk_gated_delta_rule"] == ("fla.ops.gated_delta_rule (bound by the suite: "
                                                 "transformers held its torch code)")
    assert kernels["causal_conv1d_fn"] == "torch fallback"
    net = transformers.AutoModelForCausalLM.from_config(config)
    assert model.bind_mixer_kernels(net, "qwen3_next") == 3  # its 3 Gated DeltaNet layers
    bound = [m.chunk_gated_delta_rule for m in net.modules() if type(m).__name__ == "Qwen3NextGatedDeltaNet"]
    assert bound == [fla_kernel] * 3
    assert model.bind_mixer_kernels(net, "qwen3_next") == 0  # bound already: nothing to do
    assert model.bind_mixer_kernels(net, "llama") == 0


def test_a_layer_that_calls_a_module_function_says_whose_choice_it_is(monkeypatch):
    # transformers 5.17's Gated DeltaNet layer has no kernel attribute: it calls a module
    # function that picks FLA itself when FLA imports. Nothing is bound; the header says so.
    family = architecture.FAMILIES["qwen3_next"]
    monkeypatch.setitem(architecture.FAMILIES, "qwen3_next", architecture.Family(
        family.read, family.note, fast_kernels=(family.fast_kernels[0], {
            "no_such_attribute": "json:dumps", "nor_this_one": "no_such_package:fn"})))
    config = model.load_config("tiny-qwen3-next")
    assert model.mixer_kernels(config) == {"no_such_attribute": "json (transformers' choice)",
                                           "nor_this_one": "torch fallback"}
    import transformers

    net = transformers.AutoModelForCausalLM.from_config(config)
    assert model.bind_mixer_kernels(net, "qwen3_next") == 0


TINY = sorted(p for p in model.PRESETS if p.startswith("tiny"))


def families_without_a_tiny_preset(families: dict, presets: dict) -> set:
    """Counted families no tiny preset exercises: the tests that run every family (here,
    test_flops.py, test_resolver.py) iterate the tiny presets; dense families share the Llama
    reader, which test_flops runs for each dense type through transformers' own configs."""
    tiny = {model.cheap_model_type(p) for p in presets if p.startswith("tiny")}
    return {t for t, f in families.items() if f.read is not architecture.read_dense} - tiny


def test_every_family_has_a_tiny_preset_for_the_cpu_tests():
    assert families_without_a_tiny_preset(architecture.FAMILIES, model.PRESETS) == set()


def test_a_new_family_is_checked_by_the_registry_not_a_list_in_a_test(tmp_path, monkeypatch):
    # A copy of the registry with one more family: the checks above see it at once, and its
    # tiny preset is all they ask for.
    families = {**architecture.FAMILIES, "olmo_like": architecture.Family(architecture.read_qwen3_moe, "an MoE")}
    assert families_without_a_tiny_preset(families, model.PRESETS) == {"olmo_like"}
    config = {**json.loads(model.PRESETS["tiny-qwen3-moe"].read_text()), "model_type": "olmo_like"}
    (tmp_path / "tiny-olmo.json").write_text(json.dumps(config))
    monkeypatch.setitem(architecture.FAMILIES, "olmo_like", families["olmo_like"])
    presets = {**model.PRESETS, "tiny-olmo": tmp_path / "tiny-olmo.json"}
    monkeypatch.setitem(model.PRESETS, "tiny-olmo", tmp_path / "tiny-olmo.json")
    assert families_without_a_tiny_preset(families, presets) == set()
    assert architecture.describe(config).moe and "olmo_like" in str(pytest.raises(
        BadInput, architecture.describe, {"model_type": "bert", "hidden_size": 1}).value)


@pytest.mark.parametrize("preset", TINY)
def test_moe_blocks_are_found_for_zero3_leaf_modules(preset):
    import transformers

    config = model.load_config(preset)
    blocks = model.moe_block_classes(transformers.AutoModelForCausalLM.from_config(config))
    assert bool(blocks) == model.spec(config).moe  # every MoE family's block holds its experts
    assert all(hasattr(c, "forward") for c in blocks)
