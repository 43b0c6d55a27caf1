"""One matmul shape timed as the published mamf-finder times it (mamf-finder.py's measurement).

Random normal operands, B column-major, the output in the operands' dtype; 256 MiB zeroed
and the output re-randomised before every iteration, outside its CUDA event pair; fp8
through torch._scaled_mm with per-tensor scales.
"""
import time

from ..models import flops
from . import mamf, timing


class MatmulBench:
    """Operands and timing of one shape, the established way."""

    def __init__(self, device, dtype: str):
        import torch

        self.torch, self.device, self.dtype = torch, device, dtype
        self.flush = timing.CacheFlusher(device)

    def operands(self, shape):
        """(fn, before): one matmul, and the flush + output re-randomisation before it."""
        torch, dev = self.torch, self.device
        fp8 = self.dtype.startswith("float8")
        target = getattr(torch, self.dtype)
        # Random normal data: zeros or constants draw less power, so the chip clocks higher
        # than on real data. float8 has no randn: drawn in bf16 and converted.
        draw = torch.bfloat16 if fp8 else target
        a = torch.randn(shape.m, shape.k, dtype=draw, device=dev).to(target)
        # B column-major (k x n as the transpose of a contiguous n x k): the layout
        # torch._scaled_mm requires, and cuBLAS's fast "TN" GEMM for the other dtypes too.
        b = torch.randn(shape.n, shape.k, dtype=draw, device=dev).to(target).t()
        # The output in the operands' dtype, fp8 included, as the published tool writes it.
        c = torch.empty(shape.m, shape.n, dtype=target, device=dev)
        c_rand = torch.randn(shape.m, shape.n, device=dev).to(target)
        if fp8:
            scale = torch.tensor(1.0, dtype=torch.float32, device=dev)  # per-tensor scales

            def fn():
                torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out=c)
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
