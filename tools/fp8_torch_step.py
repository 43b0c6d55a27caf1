#!/usr/bin/env python3
"""A yardstick for PRECISION: a plain-torch training step with torchao's float8 linears.

No DeepSpeed and none of the suite's training code: a transformers causal LM from the
model's config.json (cut to NUM_LAYERS), random bf16 weights on the GPU, fused AdamW on
fp32 master copies whose update is copied back into the bf16 weights, as DeepSpeed's bf16 mode
does (MASTER=fp32, the default: the suite's optimizer work, so only the precision differs), or
on the bf16 weights themselves (MASTER=bf16), random tokens, fwd + bwd + step timed with CUDA
syncs around each step. For a float8 RECIPE, torchao's own `convert_to_float8_training` with
its own size filter (`_auto_filter_for_recipe`, lm_head left out) and each converted module
compiled alone, as torchao's README advises for speed. ATTN (transformers' attn_implementation) and LIGER=1
(liger-kernel's patch for the family) match the suite's run being compared; the suite's
fp8-over-bf16 speedup is compared with this tool's, both measured in one device session.

    RECIPES="bf16 tensorwise" SEQLENS="8192 32768" python tools/fp8_torch_step.py   # a JSON line per point
"""
import json
import statistics
import sys
import time

from upgrade_bench import settings
from upgrade_bench.faults import run_main

VARS = [
    settings.Var("CONFIG", "str", "configs/llama-3.1-8b.json", "the model's config.json"),
    settings.Var("NUM_LAYERS", "int", 8, "decoder layers kept", min=1, max=4096),
    settings.Var("RECIPES", "str_list", ["bf16", "tensorwise"], "bf16 and/or torchao float8 recipes "
                 "(tensorwise, rowwise): each a fresh model"),
    settings.Var("SEQLENS", "int_list", [8192, 32768], "sequence lengths", min=16, max=2**21),
    settings.Var("STEPS", "int", 10, "timed steps per length", min=1, max=1000),
    settings.Var("WARMUP_STEPS", "int", 2, "untimed steps first (the compile happens in the first)", min=1, max=100),
    settings.Var("ATTN", "str", "sdpa", "transformers' attn_implementation"),
    settings.Var("LIGER", "bool", False, "liger-kernel's patch of the model family first"),
    settings.Var("MASTER", "choice", "fp32", "where AdamW updates: fp32 master copies as DeepSpeed's "
                 "bf16 mode (the suite's optimizer work), or the bf16 weights (this tool's lines before the "
                 "option, which have no `master` field)", choices=("fp32", "bf16")),
]


def build(s: dict, recipe: str):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(s.CONFIG)
    config.num_hidden_layers = s.NUM_LAYERS
    if hasattr(config, "layer_types") and config.layer_types:
        config.layer_types = config.layer_types[:s.NUM_LAYERS]
    if s.LIGER:
        from liger_kernel.transformers import _apply_liger_kernel

        _apply_liger_kernel(config.model_type)
    torch.manual_seed(0)
    with torch.device("cuda"):
        net = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16, attn_implementation=s.ATTN)
    net.config.use_cache = False
    converted = 0
    if recipe != "bf16":
        from torchao.float8 import Float8LinearConfig, convert_to_float8_training
        from torchao.float8.float8_linear import Float8Linear
        from torchao.float8.float8_linear_utils import _auto_filter_for_recipe

        convert_to_float8_training(net, config=Float8LinearConfig.from_recipe_name(recipe),
                                   module_filter_fn=_auto_filter_for_recipe(recipe, ["lm_head"]))
        torch._dynamo.config.recompile_limit = 64
        for m in net.modules():
            if isinstance(m, Float8Linear):
                m.forward = torch.compile(m.forward)
                converted += 1
    return net, config, converted


def optimizer(net, master: str):
    """(step, zero_grad) of fused AdamW on `net`'s bf16 weights, or on fp32 master copies of them
    (each step takes the bf16 gradients to fp32, updates the masters, copies them back)."""
    import torch

    params = [p for p in net.parameters() if p.requires_grad]
    if master == "bf16":
        opt = torch.optim.AdamW(params, lr=1e-5, fused=True)
        return opt.step, lambda: opt.zero_grad(set_to_none=True)
    masters = [p.detach().float() for p in params]
    opt = torch.optim.AdamW(masters, lr=1e-5, fused=True)

    def step():
        for p, m in zip(params, masters):
            m.grad = p.grad.float()
        opt.step()
        torch._foreach_copy_([p.data for p in params], masters)

    def zero_grad():
        for p, m in zip(params, masters):
            p.grad, m.grad = None, None
    return step, zero_grad


def main() -> int:
    s = settings.load(VARS, __doc__)
    import torch

    for recipe in s.RECIPES:
        net, config, converted = build(s, recipe)
        step_optimizer, zero_grad = optimizer(net, s.MASTER)
        for seq_len in s.SEQLENS:
            gen = torch.Generator().manual_seed(seq_len)
            ids = torch.randint(0, min(config.vocab_size, 128000), (1, seq_len), generator=gen).cuda()
            torch.cuda.reset_peak_memory_stats()
            times, losses = [], []
            for step in range(s.WARMUP_STEPS + s.STEPS):
                torch.cuda.synchronize()
                start = time.perf_counter()
                loss = net(input_ids=ids, labels=ids, use_cache=False).loss
                loss.backward()
                step_optimizer()
                zero_grad()
                value = loss.item()
                torch.cuda.synchronize()
                if step >= s.WARMUP_STEPS:
                    times.append((time.perf_counter() - start) * 1e3)
                    losses.append(value)
                elif step == 0:
                    first_ms = (time.perf_counter() - start) * 1e3  # the compile, for a float8 recipe
            print(json.dumps({"tool": "fp8_torch_step", "recipe": recipe, "seq_len": seq_len,
                              "num_layers": s.NUM_LAYERS, "attn": s.ATTN, "liger": s.LIGER,
                              "master": s.MASTER,
                              "converted_linears": converted, "step_ms": statistics.median(times),
                              "step_ms_min": min(times), "step_ms_max": max(times), "steps": len(times),
                              "first_step_ms": first_ms, "loss_mean": statistics.fmean(losses),
                              "peak_mem_gib": torch.cuda.max_memory_reserved() / 2**30,
                              "torch": torch.__version__}), flush=True)
        del net, step_optimizer, zero_grad
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
