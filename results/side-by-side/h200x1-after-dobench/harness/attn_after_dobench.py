"""Harness only (kept with its results, not part of the suite): the suite's attention timing
and triton.testing.do_bench on the very same callable, alternating in one process, so both
read the GPU in the same power state. ROUNDS overrides the order (suite/do_bench windows). Per point (suite order: backend, seq_len, pass):
suite, do_bench, suite, do_bench; for fwd_bwd also do_bench of the probe's form
(out.backward(dout), which also accumulates .grad). JSON lines to $OUT_FILE."""
import json
import os
import sys
import time

sys.path.insert(0, os.getcwd())
import torch  # noqa: E402

from upgrade_bench import attn_backends, attn_bench, attn_kernels, telemetry, timing  # noqa: E402

SMOKE = not torch.cuda.is_available()  # CPU smoke test of this harness: a stand-in for do_bench
if SMOKE:
    def do_bench(fn, warmup, rep, return_mode):
        fn()
        t0 = time.perf_counter(); fn(); return (time.perf_counter() - t0) * 1e3
else:
    from triton.testing import do_bench

BACKENDS = os.environ.get("BACKENDS", "fa4,sdpa-cudnn").split(",")
SEQLENS = [int(x) for x in os.environ.get("SEQLENS", "8192,32768").split(",")]
HEADS, KV, D = (4, 2, 16) if SMOKE else (32, 8, 128)
dev = torch.device("cuda" if not SMOKE else "cpu")
s = {"ITERS": 20, "WARMUP": 3, "WARMUP_MS": 200.0, "TIME_MS": 500.0, "SEED": 0, "DTYPE": "bf16"}
bench = attn_bench.AttentionBench(s, torch.bfloat16, dev, timing.CacheFlusher(dev), None,
                                  telemetry.RunSampler(0))
out = open(os.environ["OUT_FILE"], "a")


def emit(**rec):
    rec["t"] = round(time.time(), 3)
    out.write(json.dumps(rec) + "\n"); out.flush()
    print(json.dumps(rec), flush=True)


bench.sampler.start()
for name in BACKENDS:
    backend = attn_backends.KERNELS[name]
    base = attn_kernels.AttentionShape(1, SEQLENS[0], HEADS, KV, D, True, 0)
    mode, _ = attn_kernels.check_backend(backend, attn_kernels.check_shape(base), torch.bfloat16, dev, 0)
    for seq in SEQLENS:
        shape = attn_kernels.AttentionShape(1, seq, HEADS, KV, D, True, 0)
        forward, leaves, dout = attn_bench.prepare(backend, shape, mode, bench)
        for pass_ in ("fwd", "fwd_bwd"):
            _, timed = attn_bench.pass_calls(forward, leaves, dout, pass_)

            def probe_form():
                forward().backward(dout)

            if os.environ.get("ROUNDS"):  # e.g. suite,suite,do_bench,suite: what follows a do_bench window
                rounds = [(m, timed if m == "do_bench" else None) for m in os.environ["ROUNDS"].split(",")]
            else:
                rounds = [("suite", None), ("do_bench", timed)] * 2
                if pass_ == "fwd_bwd":
                    rounds.append(("do_bench_probe_form", probe_form))
            for i, (method, fn) in enumerate(rounds):
                if method == "suite":
                    m = attn_bench.time_pass(forward, leaves, dout, pass_, bench)
                    ms, extra = m["ms"], {k: m.get(k) for k in ("iters", "warmup_iters", "sm_clock_mhz_median",
                                                              "power_w_mean", "throttle")}
                else:
                    for x in leaves:
                        x.grad = None
                    ms, extra = do_bench(fn, warmup=100, rep=500, return_mode="median"), {}
                emit(backend=name, seq_len=seq, **{"pass": pass_}, round=i, method=method, ms=ms,
                     tflops=shape.flops(pass_) / ms / 1e9, **extra)
        del forward, leaves, dout
        torch.cuda.empty_cache() if not SMOKE else None
bench.sampler.stop()
