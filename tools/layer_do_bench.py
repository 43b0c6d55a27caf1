#!/usr/bin/env python3
"""A yardstick for bench_flash_attn.py: a model's own attention layers timed by triton's do_bench.

For every distinct quadratic-attention layer of MODEL (full, sliding window, sinks, MLA's
score/value dims), FA4 (`flash_attn.cute.flash_attn_func`) forward and forward+backward are
timed with `triton.testing.do_bench` (CUDA events, a 256 MiB cache flush between calls, the
median of its window), independently of the suite's own timing code, so the two can be run
side by side in one process start on one GPU. FLOPs follow the suite's convention
(upgrade_bench.models.flops.attention_kernel_flops), so the TFLOPS compare directly.

    MODEL=gpt-oss-20b SEQLENS="8192 32768" python tools/layer_do_bench.py   # a JSON line per point
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from flash_attn.cute import flash_attn_func  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from upgrade_bench.models import flops, model  # noqa: E402
from upgrade_bench.models.architecture import QUADRATIC  # noqa: E402


def first(result):
    return result[0] if isinstance(result, tuple) else result


def time_layer(m, seq_len: int) -> list:
    dev, dt = "cuda", torch.bfloat16
    q = torch.randn(1, seq_len, m.heads, m.qk_head_dim, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(1, seq_len, m.kv_heads, m.qk_head_dim, device=dev, dtype=dt, requires_grad=True)
    v = torch.randn(1, seq_len, m.kv_heads, m.v_head_dim, device=dev, dtype=dt, requires_grad=True)
    extra = {}
    if m.window:
        extra["window_size"] = (m.window - 1, 0)
    if m.sinks:
        extra["learnable_sink"] = torch.randn(m.heads, device=dev, dtype=torch.float32)
    dout = torch.randn(1, seq_len, m.heads, m.v_head_dim, device=dev, dtype=dt)

    def fwd():
        return first(flash_attn_func(q, k, v, causal=True, **extra))

    def fwd_bwd():
        fwd().backward(dout)

    out = []
    for name, fn in (("fwd", fwd), ("fwd_bwd", fwd_bwd)):
        fn()  # FA4 compiles each configuration on its first call
        torch.cuda.synchronize()
        ms = do_bench(fn, warmup=100, rep=500, return_mode="median")
        flop = flops.attention_kernel_flops(1, seq_len, m.heads, m.qk_head_dim, causal=True, pass_=name,
                                            window=m.window, v_head_dim=m.v_head_dim)
        out.append({"tool": "layer_do_bench", "model": os.environ["MODEL"], "layer": m.kind,
                    "window": m.window, "sinks": m.sinks, "heads": m.heads, "kv_heads": m.kv_heads,
                    "head_dim": m.qk_head_dim, "v_head_dim": m.v_head_dim, "seq_len": seq_len,
                    "pass": name, "backend": "fa4", "ms": ms, "tflops": flops.tflops(flop, ms)})
    return out


def main() -> None:
    spec = model.spec(model.load_config(os.environ["MODEL"]))
    lengths = [int(n) for n in os.environ.get("SEQLENS", "8192 32768").split()]
    for m in spec.distinct_mixers():
        if m.kind not in QUADRATIC:
            continue
        for seq_len in lengths:
            for rec in time_layer(m, seq_len):
                print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
