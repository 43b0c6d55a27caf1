"""One matmul shape timed as the published mamf-finder times it (mamf-finder.py's measurement).

Random normal operands, B column-major, the output in the operands' dtype; 256 MiB zeroed
and the output re-randomised before every iteration, outside its CUDA event pair; fp8
through torch._scaled_mm with per-tensor scales (the published tool's: the output in fp8) or
row-wise ones (one fp32 scale per row of A and per column of B, torchao's fp8-rowwise GEMMs;
cuBLAS writes such a product in bf16 only).
"""
import time

from ...models import flops
from . import search as mamf
from .. import timing


class MatmulBench:
    """Operands and timing of one shape, the established way."""

    def __init__(self, device, dtype: str, scaling: str = "tensorwise"):
        import torch

        self.torch, self.device, self.dtype, self.scaling = torch, device, dtype, scaling
        self.flush = timing.CacheFlusher(device)

    @property
    def scaled(self) -> bool:
        """Whether the operands carry scales (fp8: torch._scaled_mm)."""
        return self.dtype.startswith("float8")

    def operands(self, shape):
        """(fn, before): one matmul, and the flush + output re-randomisation before it."""
        torch, dev = self.torch, self.device
        fp8 = self.scaled
        target = getattr(torch, self.dtype)
        # Random normal data: zeros or constants draw less power, so the chip clocks higher
        # than on real data. float8 has no randn: drawn in bf16 and converted.
        draw = torch.bfloat16 if fp8 else target
        a = torch.randn(shape.m, shape.k, dtype=draw, device=dev).to(target)
        # B column-major (k x n as the transpose of a contiguous n x k): the layout
        # torch._scaled_mm requires, and cuBLAS's fast "TN" GEMM for the other dtypes too.
        b = torch.randn(shape.n, shape.k, dtype=draw, device=dev).to(target).t()
        # The output in the operands' dtype, fp8 included, as the published tool writes it.
        rowwise = fp8 and self.scaling == "rowwise"
        out_dtype = torch.bfloat16 if rowwise else target
        c = torch.empty(shape.m, shape.n, dtype=out_dtype, device=dev)
        c_rand = torch.randn(shape.m, shape.n, device=dev).to(out_dtype)
        if fp8:
            scale_a = torch.ones((shape.m, 1) if rowwise else (), dtype=torch.float32, device=dev)
            scale_b = torch.ones((1, shape.n) if rowwise else (), dtype=torch.float32, device=dev)

            def fn():
                torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out=c, out_dtype=out_dtype)
        else:
            def fn():
                torch.mm(a, b, out=c)

        def before():
            self.flush()
            c.copy_(c_rand)  # the output is really written, every iteration

        return fn, before

    def time_shape(self, shape, iters: int, warmup: int) -> dict:
        fn, before = self.operands(shape)
        with self.torch.no_grad():
            times, method = timing.time_iterations(fn, self.device, iters, warmup, before,
                                                   host_ahead=False)
        return {**mamf.tflops_stats(times, flops.matmul_flops(*shape)), **method}

    def warm_up(self, shape, seconds: float, iters: int, warmup: int, show) -> None:
        """Measure `shape` over and over for `seconds` first, each time with fresh operands and
        the run's iteration counts, as the published tool's warm-up does: a cold chip scores
        higher on the first shapes than on the same shapes a minute later, and the power state
        the scan starts from decides what its shapes (bursts of 20-200 ms on an H200) read."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.time_shape(shape, iters, warmup)
            show(f"warming up the accelerator on {shape}: "
                 f"{seconds - max(0.0, end - time.monotonic()):.0f}/{seconds:.0f} s")
