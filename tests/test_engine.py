"""upgrade_bench.training.engine's pure parts: the process environment DeepSpeed needs, the DeepSpeed
config of a point, and the random (dense or packed) batches."""
import torch
from dataclasses import replace

from upgrade_bench.training.engines import deepspeed as ds_engine
from upgrade_bench.training import engine, variables
from upgrade_bench.models import model
from upgrade_bench import settings


def test_arch_list_loses_suffixes_deepspeed_cannot_parse():
    assert engine.sanitize_arch_list("9.0a") == "9.0"
    assert engine.sanitize_arch_list("8.0;9.0a;10.0a+PTX") == "8.0;9.0;10.0+PTX"
    assert engine.sanitize_arch_list("10.0f 12.0") == "10.0 12.0"


def test_process_env_fixes_the_arch_list_before_deepspeed_reads_it():
    environ = {"TORCH_CUDA_ARCH_LIST": "9.0a", "RANK": "1"}
    engine.prepare_process_env(environ)
    assert environ == {"TORCH_CUDA_ARCH_LIST": "9.0", "RANK": "1"}  # a launched rank keeps its world
    single = {}
    engine.prepare_process_env(single)
    assert single == {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"}  # no port


def test_deepspeed_gets_the_guides_zero_settings_at_every_stage():
    # overlap_comm also moves ZeRO-2's reduction buffers to DeepSpeed's side stream, which
    # kept the 8-layer 8K H200 peak at the guide script's 62.5 GiB instead of 67.7.
    s = settings.parse(variables.TRAINING_VARS, {})
    for stage in range(4):
        zero = ds_engine.deepspeed_config(replace(s, ZERO_STAGE=stage, OFFLOAD_OPTIMIZER=False), True)["zero_optimization"]
        assert zero == {"stage": stage, "overlap_comm": True, "contiguous_gradients": True}
    offload = ds_engine.deepspeed_config(s, True)["zero_optimization"]["offload_optimizer"]
    assert offload == {"device": "cpu", "pin_memory": True}


def test_packed_batch_positions_and_labels():
    batch = engine.make_batch(2, 10, 4, (0, 50), torch.device("cpu"), torch.Generator().manual_seed(0))
    assert batch["position_ids"][0].tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    # the first token of documents 2 and 3 is never predicted from the previous document
    assert (batch["labels"][:, [4, 8]] == -100).all()
    assert (batch["labels"][:, [0, 1, 5, 9]] == batch["input_ids"][:, [0, 1, 5, 9]]).all()
    assert batch["use_cache"] is False and int(batch["input_ids"].max()) < 50


def test_random_tokens_stay_clear_of_the_special_tokens_at_either_end():
    assert engine.token_range(model.load_config("llama-3.1-8b")) == (0, 128000)  # bos 128000, eos 128001
    assert engine.token_range(model.load_config("tiny")) == (0, 1000)
    # DeepSeek-V3: bos 0, eos 1; a ceiling at the first special id drew no token (an H200 run failed)
    assert engine.token_range(model.load_config("deepseek-v3")) == (2, 129280)
    assert engine.token_range(model.load_config("gemma-3-12b")) == (3, 262208)  # pad 0, eos 1, bos 2: not only 0s
    assert engine.token_range(model.load_config("gpt-oss-20b")) == (0, 199999)  # pad 199999, eos 200002


def test_the_start_line_says_what_a_compiling_backends_first_step_costs():
    assert engine.started_text(47.6, [8192, 32768], "sdpa") == "start-up done in 48 s; measuring seq_len 8192 32768"
    flex = engine.started_text(3.0, [8192], "flex")
    assert flex.startswith("start-up done in 3 s; measuring seq_len 8192; in each first step FlexAttention "
                           "compiles its kernels and masks (")
    assert "compiles" in engine.started_text(3.0, [8192], "fa4")
    # a cut with no attention layer (Granite's first 4, all Mamba-2) names no attention compile
    assert engine.started_text(3.0, [8192], None, compiles_mixers=True) == (
        "start-up done in 3 s; measuring seq_len 8192; in each first step the linear mixers' Triton kernels "
        "compile and autotune (1-2 minutes on a cold cache; TRITON_CACHE_AUTOTUNING=1 keeps the tuning for later runs)")
    hybrid = engine.started_text(3.0, [8192], "sdpa", compiles_mixers=True)
    assert hybrid.endswith("the linear mixers' Triton kernels compile and autotune (1-2 minutes on a cold cache; "
                           "TRITON_CACHE_AUTOTUNING=1 keeps the tuning for later runs)")
    moe = engine.started_text(3.0, [8192], "sdpa", tunes_liger_moe=True)
    assert moe.endswith("in each first step Liger's fused MoE autotunes its Triton kernels, once per process "
                        "(minutes with nothing compiled; USE_LIGER=0 runs transformers' own experts instead)")
    compiled = engine.started_text(3.0, [8192], "sdpa", compiles_precision=True, compiles_blocks=True)
    assert compiled.endswith("in each first step torch.compile builds each decoder block's kernels (COMPILE=1)")
    fp8 = engine.started_text(3.0, [8192], "sdpa", compiles_precision=True)
    assert fp8.startswith("start-up done in 3 s; measuring seq_len 8192; in each first step torch.compile "
                          "builds the converted linears' kernels")
