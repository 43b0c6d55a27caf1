#!/usr/bin/env python3
"""Settle the FP8 grouped GEMM the suite's MoE experts run (training/fp8_experts.py) on this GPU.

For each case, the suite's path (each expert's tokens padded to multiples of 16 rows, torchao's
`_to_fp8_rowwise_then_scaled_grouped_mm`) against torch's bf16 `_grouped_mm` on the same
operands: the SQNR (dB) of the output and of both gradients, and fwd+bwd time by
`triton.testing.do_bench` (back to back, the L2 flushed between calls). Groups of 16-multiples
also run torchao unpadded, which shows what the padding costs; groups that are not would trip
torchao's alignment requirement, so the padded path is the only one there.

Cases: `aligned` (8 experts x 512 tokens), `unaligned` (500 and 517 tokens), `empty` (one
expert with no token), and Qwen3-30B-A3B's two expert GEMMs at 8K tokens, top-8 of 128 experts
routed unevenly (`qwen3-30b-a3b:gate_up`, `:down`). A JSON line per case.

    python tools/fp8_grouped_check.py
"""
import json
import sys

from upgrade_bench import settings
from upgrade_bench.faults import run_main


def sqnr_db(got, want) -> float:
    import torch

    return (20 * torch.log10(want.float().norm() / (got.float() - want.float()).norm())).item()


def run(gemm, x, w, offs, grad):
    """(out, d input, d weight) of gemm(x, w as (experts, in, out), offs)."""
    x = x.detach().requires_grad_()
    w = w.detach().requires_grad_()
    y = gemm(x, w.transpose(-2, -1), offs)
    y.backward(grad)
    return y, x.grad, w.grad


def case(name: str, sizes, hidden_in: int, hidden_out: int, seed: int = 0) -> dict:
    import torch
    from triton.testing import do_bench

    from upgrade_bench.training import fp8_experts

    gen = torch.Generator(device="cuda").manual_seed(seed)
    offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
    rows = int(offs[-1])
    x = torch.randn(rows, hidden_in, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(len(sizes), hidden_out, hidden_in, device="cuda", dtype=torch.bfloat16, generator=gen) * 0.02
    grad = torch.randn(rows, hidden_out, device="cuda", dtype=torch.bfloat16, generator=gen) * 1e-2

    def bf16(a, b, o):
        return torch._grouped_mm(a, b, offs=o)

    def suite(a, b, o):
        return fp8_experts.padded_grouped_mm(fp8_experts.torchao_gemm, a, b, o)

    paths = {"bf16": bf16, "fp8_padded": suite}
    if all(n % fp8_experts.ALIGN_ROWS == 0 and n for n in sizes):
        paths["fp8_unpadded"] = fp8_experts.torchao_gemm
    want = run(bf16, x, w, offs, grad)
    out = {"tool": "fp8_grouped_check", "case": name, "experts": len(sizes), "rows": rows,
           "smallest_group": min(sizes), "largest_group": max(sizes), "k": hidden_in, "n": hidden_out,
           "gpu": torch.cuda.get_device_name(), "torch": torch.__version__}
    flops = 6.0 * rows * hidden_in * hidden_out  # fwd and both gradients
    for path, gemm in paths.items():
        try:
            got = run(gemm, x, w, offs, grad)
        except Exception as e:  # a refusal is this case's answer, not the end of the check
            out[f"{path}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            continue
        if path != "bf16":
            out[f"{path}_sqnr_db"] = {k: round(sqnr_db(g, r), 1) for k, g, r in zip(("out", "dx", "dw"), got, want)}
        ms = do_bench(lambda: run(gemm, x, w, offs, grad), warmup=50, rep=300)
        out[f"{path}_fwd_bwd_ms"] = round(ms, 4)
        out[f"{path}_tflops"] = round(flops / ms / 1e9, 1)
    return out


def main() -> int:
    settings.load([], __doc__)  # no settings: --help, and refuses arguments
    import importlib.metadata as md

    import torch

    torch.manual_seed(0)
    # 8K tokens, each to 8 of 128 experts, routed unevenly (per-expert weights from 0.2 to 1.2)
    ids = torch.multinomial(torch.rand(128) + 0.2, 8192 * 8, replacement=True, generator=torch.Generator().manual_seed(1))
    routed = torch.bincount(ids, minlength=128).tolist()
    cases = [("aligned", [512] * 8, 2048, 1536), ("unaligned", [500, 517] * 4, 2048, 1536),
             ("empty", [0] + [584] * 7, 2048, 1536),
             ("qwen3-30b-a3b:gate_up", routed, 2048, 1536), ("qwen3-30b-a3b:down", routed, 768, 2048)]
    for name, sizes, k, n in cases:
        line = case(name, sizes, k, n)
        line["torchao"] = md.version("torchao")
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))
