"""FLOP accounting against hand-computed numbers and against torch's FLOP counter."""
import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from upgrade_bench.models import architecture, flops, layers, model

LLAMA_8B = model.spec(model.load_config("llama-3.1-8b"))


def test_llama_8b_dense_params_by_hand():
    # per layer: MLP 3*4096*14336 = 176,160,768; attention 4096*(4096+1024+1024+4096)
    # = 41,943,040; 32 layers = 6,979,321,856; lm_head 128256*4096 = 525,336,576.
    assert LLAMA_8B.active_params == 7_504_658_432
    assert LLAMA_8B.mix() == {"full_attention": 32}


@pytest.mark.parametrize("seq_len, share", [(8192, 0.125), (262144, 0.82)])
def test_attention_share_matches_the_guide(seq_len, share):
    step = flops.step_flops(LLAMA_8B, 1, seq_len)
    assert step.attn_share == pytest.approx(share, abs=0.005)


def test_step_flops_8k_by_hand():
    step = flops.step_flops(LLAMA_8B, 1, 8192)
    assert step.dense == 6 * 7_504_658_432 * 8192
    assert step.attention == 6 * 8192**2 * 128 * 32 * 32
    assert step.recompute == 0


def test_hfu_adds_one_forward_of_the_layers():
    plain = flops.step_flops(LLAMA_8B, 1, 8192)
    ckpt = flops.step_flops(LLAMA_8B, 1, 8192, grad_checkpoint=True)
    layer_params = 7_504_658_432 - 128256 * 4096
    assert ckpt.model == plain.model
    assert ckpt.recompute == 2 * layer_params * 8192 + 2 * 8192**2 * 128 * 32 * 32
    # ~1.3x, as the guide says of HFU vs MFU
    assert ckpt.hardware / ckpt.model == pytest.approx(1.32, abs=0.02)


def test_packed_documents_cut_attention_by_seq_over_doc():
    # The guide's example: 8K documents packed into 256K -> attention FLOPs / 32.
    dense = flops.step_flops(LLAMA_8B, 1, 262144)
    packed = flops.step_flops(LLAMA_8B, 1, 262144, doc_len=8192)
    assert dense.attention / packed.attention == 32
    assert packed.dense == dense.dense
    assert packed.attn_share == pytest.approx(flops.step_flops(LLAMA_8B, 1, 8192).attn_share)


def test_doc_lengths_keep_the_remainder():
    assert flops.doc_lengths(10, 4) == [4, 4, 2]
    assert flops.doc_lengths(8, 4) == [4, 4]
    assert flops.doc_lengths(8, 0) == [8]
    assert flops.sum_sq_len(2, 10, 4) == 2 * (16 + 16 + 4)


def test_tflops_and_peak_share():
    assert flops.tflops(1e15, 1000.0) == pytest.approx(1000.0)
    assert flops.peak_share(494.5, 989) == pytest.approx(0.5)
    assert flops.peak_share(100.0, None) is None


def test_isolated_attention_kernel_flops_by_hand():
    # causal fwd at 8K, 32 heads x 128: 4*8192^2*32*128/2
    fwd = 4 * 8192**2 * 32 * 128 / 2
    assert flops.attention_kernel_flops(1, 8192, 32, 128) == fwd
    assert flops.attention_kernel_flops(1, 8192, 32, 128, pass_="bwd") == 2.5 * fwd
    assert flops.attention_kernel_flops(1, 8192, 32, 128, pass_="fwd_bwd") == 3.5 * fwd
    assert flops.attention_kernel_flops(1, 8192, 32, 128, causal=False) == 2 * fwd
    # gpt-oss's 128-token window at 8K, 64 heads x 64: the band 8192*128 - 128^2/2 pairs,
    # 2 matmuls of 2*pairs*64 forward per head
    band = 8192 * 128 - 128**2 / 2
    assert flops.attention_kernel_flops(1, 8192, 64, 64, window=128) == 2 * band * 64 * (64 + 64)
    # MLA (DeepSeek-V3): scores over 192 dims, values of 128; backward 3 qk + 2 v matmuls
    pairs = 4096**2 / 2
    assert flops.attention_kernel_flops(1, 4096, 128, 192, v_head_dim=128) == 2 * pairs * 128 * 320
    assert flops.attention_kernel_flops(1, 4096, 128, 192, v_head_dim=128, pass_="bwd") == \
        2 * pairs * 128 * (3 * 192 + 2 * 128)


def test_isolated_gated_deltanet_kernel_flops_by_hand():
    # Qwen3-Next: 32 value heads, 128 x 128 state; at 4K tokens 8*4096*32*128*128 forward
    # (Megatron-LM's gdn_layer_flops: 4 products of the state's size, 2 FLOPs each)
    fwd = 8 * 4096 * 32 * 128 * 128
    assert flops.linear_kernel_flops(1, 4096, 32, 128, 128) == fwd
    assert flops.linear_kernel_flops(2, 4096, 32, 128, 128, "fwd_bwd") == 2 * 3 * fwd
    # the model's count of the same state work: 3 * 8*Hv*dk*dv per token, the fwd+bwd above
    gdn = layers.Mixer(layers.LINEAR, 0, heads=32, kv_heads=16, qk_head_dim=128, v_head_dim=128)
    assert flops.linear_mixer_flops(gdn, 4096) == flops.linear_kernel_flops(1, 4096, 32, 128, 128, "fwd_bwd")


def _counted(attn_implementation: str, batch: int, seq_len: int, config=None) -> dict:
    config = config or model.load_config("tiny")
    torch.manual_seed(0)
    # Experts as a loop of per-expert matmuls: the FLOP counter gives torch._grouped_mm 0.
    net = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attn_implementation,
                                                        experts_implementation="eager")
    ids = torch.randint(0, 1000, (batch, seq_len))
    with FlopCounterMode(display=False) as counter:
        net(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    return {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}


def test_formulas_match_torch_flop_counter_on_the_tiny_model():
    batch, seq_len = 2, 64
    spec = model.spec(model.load_config("tiny"))
    eager = _counted("eager", batch, seq_len)
    sdpa = _counted("sdpa", batch, seq_len)  # CPU SDPA kernel is not counted: only RoPE's bmm
    # Every dense matmul (MLP, projections, lm_head) fwd+bwd is exactly 6*N*tokens.
    assert eager["aten.mm"] == flops.dense_flops(spec, batch * seq_len)
    # Eager attention computes the full s x s scores: the non-causal count, twice our causal one.
    eager_attention = eager["aten.bmm"] - sdpa["aten.bmm"]
    assert eager_attention == 2 * flops.step_flops(spec, batch, seq_len).attention


DENSE_TYPES = [t for t, family in architecture.FAMILIES.items() if family.read is architecture.read_dense]


@pytest.mark.parametrize("model_type", DENSE_TYPES)
def test_every_dense_model_type_matches_torch_flop_counter(model_type):
    sizes = {k: v for k, v in model.load_config("tiny").to_dict().items()
             if k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                      "num_key_value_heads", "head_dim", "vocab_size")}
    config = transformers.CONFIG_MAPPING[model_type](**sizes, sliding_window=None)
    batch, seq_len = 2, 64
    eager, sdpa = _counted("eager", batch, seq_len, config), _counted("sdpa", batch, seq_len, config)
    spec = model.spec(config)
    # Projections with a bias (qwen2's q/k/v) are addmm: still 2 FLOPs per weight and token.
    assert eager["aten.mm"] + eager.get("aten.addmm", 0) == flops.dense_flops(spec, batch * seq_len)
    eager_attention = eager["aten.bmm"] - sdpa["aten.bmm"]
    assert eager_attention == 2 * flops.step_flops(spec, batch, seq_len).attention


@pytest.mark.parametrize("preset", sorted(p for p in model.PRESETS if p.startswith("tiny") and p != "tiny"))
def test_every_shipped_family_counts_its_weight_matmuls_as_torch_does(preset):
    # Weight matmuls (projections, MLPs, the top-k experts each token is routed to, routers,
    # lm_head) are mm/addmm; attention scores and the Gated DeltaNet fallback's chunks are bmm.
    batch, seq_len = 1, 128
    config = model.load_config(preset)
    counted = _counted("eager", batch, seq_len, config)
    spec = model.spec(config)
    assert counted["aten.mm"] + counted.get("aten.addmm", 0) == flops.dense_flops(spec, batch * seq_len)
    linear = [ly.mixer for ly in spec.layers if ly.mixer.kind in layers.LINEAR_MIXERS]
    if linear:
        # The counter's forward conv is 2*kernel per channel per output position; transformers'
        # torch fallback pads kernel-1 positions, so it sees seq_len+kernel-1 outputs per layer.
        # (Its conv backward counts a depthwise conv as a dense one: not compared.)
        m = linear[0]
        per_layer = 2 * m.conv_kernel * m.conv_channels * (seq_len + m.conv_kernel - 1)
        assert counted["aten.convolution"] == len(linear) * per_layer
    if any(ly.mixer.kind == layers.MAMBA2 for ly in spec.layers):
        # transformers' torch SSD scan is elementwise products, sums and cumsums: the counter
        # sees none of it, so its bmm is the attention layer's full s x s scores and values
        assert counted["aten.bmm"] == 2 * flops.step_flops(spec, batch, seq_len).attention


def test_the_weight_matmuls_recompute_is_counted_apart_for_the_forecast():
    # Llama-3.1-8B at 8K, checkpointed: each layer's forward again, 2 FLOPs per layer weight and
    # token (lm_head is not recomputed), plus a third of attention's fwd+bwd
    step = flops.step_flops(LLAMA_8B, 1, 8192, grad_checkpoint=True)
    layer_params = LLAMA_8B.active_params - LLAMA_8B.lm_head_params
    assert step.dense_recompute == 2 * layer_params * 8192
    assert step.gemm_hardware == 6 * LLAMA_8B.active_params * 8192 + 2 * layer_params * 8192
    assert step.recompute == step.dense_recompute + step.attention / 3
    assert step.gemm_hardware / step.dense == pytest.approx(1.31, abs=0.005)  # the forecast's 4/3 estimate, made exact
