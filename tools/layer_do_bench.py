#!/usr/bin/env python3
"""A yardstick for bench_flash_attn.py: a model's own attention layers timed by triton's do_bench.

For every distinct quadratic-attention layer of MODEL (full, sliding window, sinks, MLA's
score/value dims), BACKEND's forward and forward+backward are timed with
`triton.testing.do_bench` (CUDA events, a 256 MiB cache flush between calls, the median of its
window), independently of the suite's own timing code and adapters, so the two can be run side
by side in one process start on one GPU: fa4 (`flash_attn.cute.flash_attn_func`) or flex
(torch's FlexAttention, compiled, its BlockMask built here; sinks applied as transformers
applies them, by renormalising with the log-sum-exp). FLOPs follow the suite's convention
(upgrade_bench.models.flops.attention_kernel_flops), so the TFLOPS compare directly.

    MODEL=gpt-oss-20b SEQLENS="8192 32768" python tools/layer_do_bench.py   # a JSON line per point
    BACKEND=flex SEQLENS=8192 python tools/layer_do_bench.py                # Llama-3.1-8B, FlexAttention
"""
import json
import sys

import torch
from triton.testing import do_bench

from upgrade_bench import settings
from upgrade_bench.faults import run_main
from upgrade_bench.models import flops, model
from upgrade_bench.models.layers import QUADRATIC


def first(result):
    return result[0] if isinstance(result, tuple) else result


def fa4_call(m, q, k, v, sink):
    """FA4 on (b, s, h, d) leaves."""
    from flash_attn.cute import flash_attn_func

    extra = {"window_size": (m.window - 1, 0)} if m.window else {}
    if sink is not None:
        extra["learnable_sink"] = sink
    return lambda: first(flash_attn_func(q, k, v, causal=True, **extra))


def flex_call(m, q, k, v, sink):
    """Compiled FlexAttention on the same leaves seen as (b, h, s, d)."""
    from torch.nn.attention.flex_attention import AuxRequest, create_block_mask, flex_attention

    window = m.window
    seq_len = q.shape[1]

    def visible(b, h, qi, ki):
        return (qi >= ki) & (qi - ki < window) if window else qi >= ki

    # every (layer, length) is a graph of its own: past dynamo's default of 8 it would fall back
    # to the unfused reference without a word; fullgraph makes any break an error
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 1024)
    mask = torch.compile(create_block_mask, fullgraph=True)(visible, None, None, seq_len, seq_len, device="cuda")
    flex = torch.compile(flex_attention, dynamic=False, fullgraph=True)
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))

    def call():
        if sink is None:
            return flex(qt, kt, vt, block_mask=mask, enable_gqa=True).transpose(1, 2)
        out, aux = flex(qt, kt, vt, block_mask=mask, enable_gqa=True, return_aux=AuxRequest(lse=True))
        lse = aux.lse.unsqueeze(-1)
        renorm = torch.exp(lse - torch.logaddexp(lse, sink.view(1, -1, 1, 1)))
        return (out * renorm).to(q.dtype).transpose(1, 2)
    return call


CALLS = {"fa4": fa4_call, "flex": flex_call}


def time_layer(m, seq_len: int, backend: str, model_name: str) -> list:
    dev, dt = "cuda", torch.bfloat16
    q = torch.randn(1, seq_len, m.heads, m.qk_head_dim, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(1, seq_len, m.kv_heads, m.qk_head_dim, device=dev, dtype=dt, requires_grad=True)
    v = torch.randn(1, seq_len, m.kv_heads, m.v_head_dim, device=dev, dtype=dt, requires_grad=True)
    sink = torch.randn(m.heads, device=dev, dtype=torch.float32) if m.sinks else None
    dout = torch.randn(1, seq_len, m.heads, m.v_head_dim, device=dev, dtype=dt)
    fwd = CALLS[backend](m, q, k, v, sink)

    def fwd_bwd():
        fwd().backward(dout)

    out = []
    for name, fn in (("fwd", fwd), ("fwd_bwd", fwd_bwd)):
        fn()  # FA4 and FlexAttention compile each configuration on its first call
        torch.cuda.synchronize()
        ms = do_bench(fn, warmup=100, rep=500, return_mode="median")
        flop = flops.attention_kernel_flops(1, seq_len, m.heads, m.qk_head_dim, causal=True, pass_=name,
                                            window=m.window, v_head_dim=m.v_head_dim)
        out.append({"tool": "layer_do_bench", "model": model_name, "layer": m.kind,
                    "window": m.window, "sinks": m.sinks, "heads": m.heads, "kv_heads": m.kv_heads,
                    "head_dim": m.qk_head_dim, "v_head_dim": m.v_head_dim, "seq_len": seq_len,
                    "pass": name, "backend": backend, "ms": ms, "tflops": flops.tflops(flop, ms)})
    return out


VARS = [settings.Var("MODEL", "str", "llama-3.1-8b", "model preset, config folder or cached hub id"),
        settings.Var("SEQLENS", "int_list", [8192, 32768], "sequence lengths", min=1),
        settings.Var("BACKEND", "choice", "fa4", "the kernel to time", choices=tuple(CALLS))]


def main() -> int:
    s = settings.load(VARS, __doc__)
    spec = model.spec(model.load_config(s.MODEL))
    for m in spec.distinct_mixers():
        if m.kind not in QUADRATIC:
            continue
        for seq_len in s.SEQLENS:
            for rec in time_layer(m, seq_len, s.BACKEND, s.MODEL):
                print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
