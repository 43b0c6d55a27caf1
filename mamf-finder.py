#!/usr/bin/env python3
"""mamf-finder.py: Maximum Achievable Matmul FLOPS (MAMF), the realistic ceiling, fast.

With no shape flags it searches (about a minute after the accelerator warm-up): a coarse
scan of large aligned shapes, local refinement around the best, then the best shapes
measured with the full iteration counts; the headline is the best mean. With --m/--n/--k
(or their _range) it scans every shape like the classic mamf-finder. Each shape is timed
exactly as the published mamf-finder times it, so the numbers sit next to published tables:
random normal operands, 256 MiB zeroed and the output re-randomised before every iteration
(outside its CUDA event pair), warm-up and timed iterations back to back, mean/median/max
TFLOPS.

    python mamf-finder.py                            # bf16 search
    python mamf-finder.py --dtype float8_e4m3fn      # fp8 (torch._scaled_mm, per-tensor scales)
    python mamf-finder.py --m_range 0 20480 256 --n 4096 --k 4096   # classic scan
    python mamf-finder.py --m 64 --n 64 --k 64 --dtype float32      # CPU, seconds

JSON lines on stdout, appended to --output_file too: a `header`, a `matmul` per measurement,
a final `mamf`. Ctrl-C (or SIGTERM) records and prints the best so far. Exit codes: 0 done,
2 bad flags, 1 dtype unsupported here, 4 a record could not be written to --output_file (a
full disk), 128+signal when interrupted (the mamf is written).
"""
import time

_T0 = time.monotonic()  # the wall clock of the run starts before torch is imported

import argparse
import math
import signal
import sys
from contextlib import contextmanager

from upgrade_bench import faults, fingerprint, flops, gpus, header, mamf, settings, telemetry, timing
from upgrade_bench.faults import BadInput, run_main
from upgrade_bench.records import RecordWriter

SCRIPT = "mamf-finder.py"
SEARCH_BUDGET_S = 60.0
# Screens rank shapes; only full measurements are reported as the MAMF. 10 + 30 iterations
# rank the ~300 shapes of a search in seconds; per-iteration jitter averages out to ~0.3%.
SCREEN_WARMUP, SCREEN_ITERS = 10, 30


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise BadInput(f"{message} (see --help)")


def _int(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"{text!r}: expected an integer >= {low}")
        return value
    return parse


def _seconds(positive: bool):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not math.isfinite(value) or not (value > 0 if positive else value >= 0):
            bound = "> 0" if positive else ">= 0"
            raise argparse.ArgumentTypeError(f"{text!r}: expected finite seconds {bound}")
        return value
    return parse


def parse_args(argv=None):
    """(args, shapes to scan or None for the search); BadInput for bad flags."""
    p = Parser(prog=SCRIPT, description=__doc__, usage=argparse.SUPPRESS,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    for dim, what in (("m", "rows of A and C"), ("n", "columns of B and C"),
                      ("k", "reduction dimension")):
        group = p.add_mutually_exclusive_group()
        group.add_argument(f"--{dim}", nargs="+", type=_int(1), help=f"{what}: values to scan")
        group.add_argument(f"--{dim}_range", nargs=3, type=_int(0),
                           metavar=("START", "STOP", "STEP"),
                           help=f"{what}: range(START, STOP, STEP); START 0 begins at STEP")
    p.add_argument("--dtype", choices=mamf.DTYPES, default="bfloat16",
                   help="float8_e4m3fn: NVIDIA sm89+, float8_e4m3fnuz: ROCm (default: %(default)s)")
    p.add_argument("--num_iterations", type=_int(1), default=100, help="timed iterations per shape (default: %(default)s)")
    p.add_argument("--num_warmup_iterations", type=_int(0), default=50,
                   help="untimed iterations before them (default: %(default)s)")
    p.add_argument("--budget_s", type=_seconds(True), default=None,
                   help=f"time for the search (default {SEARCH_BUDGET_S:g}) or, when given, a scan")
    p.add_argument("--warmup_s", type=_seconds(False), default=30.0,
                   help="accelerator warm-up before measuring, at most half the budget; "
                        "0 skips it, a CPU never has one (default: %(default)s)")
    p.add_argument("--output_file", default="", help="append every JSON line to this file too")
    p.add_argument("--notes", default="", help="free text copied into the header")
    p.add_argument("--cuda_device", type=_int(0), default=0, help="GPU index (default: 0)")
    args = p.parse_args(argv)
    if args.output_file:
        try:
            settings.check_output("--output_file", args.output_file)
        except BadInput as err:
            p.error(str(err))
    dims = {}
    for dim in "mnk":
        values, rng = getattr(args, dim), getattr(args, f"{dim}_range")
        if rng:
            values = mamf.expand_range(*rng) if rng[2] else []
            if not values:
                p.error(f"--{dim}_range {' '.join(map(str, rng))}: expected STEP >= 1 and "
                        f"STOP > START")
        dims[dim] = values
    given = [d for d in "mnk" if dims[d]]
    if given and len(given) < 3:
        p.error("give all of --m, --n, --k (or their _range) to scan shapes, or none to search")
    if not given:
        return args, None
    return args, [mamf.GemmShape(m, n, k) for m in dims["m"] for n in dims["n"] for k in dims["k"]]


class Bench:
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

    def measure(self, shape, iters: int, warmup: int) -> dict:
        fn, before = self.operands(shape)
        with self.torch.no_grad():
            times, method = timing.time_iterations(fn, self.device, iters, warmup, before,
                                                   host_ahead=False)
        return {**mamf.tflops_stats(times, flops.matmul_flops(*shape)), **method}

    def warm_up(self, shape, seconds: float, show) -> None:
        """Run the measurement loop for `seconds` first: a cold chip scores higher on the
        first shapes than on the same shapes a minute later, which would be no ceiling."""
        fn, before = self.operands(shape)
        end = time.monotonic() + seconds
        with self.torch.no_grad():
            while time.monotonic() < end:
                timing.time_iterations(fn, self.device, 50, 0, before, host_ahead=False)
                show(f"warming up the accelerator on {shape}: "
                     f"{seconds - max(0.0, end - time.monotonic()):.0f}/{seconds:.0f} s")


class Progress:
    """One live line on a terminal's stderr; phase lines only when stderr is a file."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.live = stream.isatty()
        self.dirty = False

    def show(self, text: str) -> None:
        if self.live:
            self.stream.write("\r" + text + "\033[K")
            self.stream.flush()
            self.dirty = True

    def line(self, text: str) -> None:
        self.end()
        self.stream.write(text + "\n")
        self.stream.flush()

    def end(self) -> None:
        if self.dirty:
            self.stream.write("\n")
            self.dirty = False


class Interrupted(KeyboardInterrupt):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Signals:
    """SIGINT and SIGTERM raise Interrupted, except while a record is being written and
    counted (`hold`): then they wait for its end, so no log line is ever cut in two."""

    def __init__(self):
        self.holding = False
        self.pending = None
        self.previous = {}

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        """The handlers from before install() (main() may run inside another program)."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum, frame):
        if self.holding:
            self.pending = signum
        else:
            raise Interrupted(signum)

    @contextmanager
    def hold(self):
        self.holding = True
        try:
            yield
        finally:
            self.holding = False
        if self.pending:
            raise Interrupted(self.pending)

    @staticmethod
    def ignore() -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


def pick_device(args):
    """(device, hardware fingerprint of the GPU measured (not always GPU 0), SM count)."""
    import torch

    if not torch.cuda.is_available():
        return torch.device("cpu"), fingerprint.hardware(), None
    if args.cuda_device >= torch.cuda.device_count():
        raise BadInput(f"--cuda_device {args.cuda_device}: expected an index below "
                       f"{torch.cuda.device_count()} (the GPUs visible here)")
    torch.cuda.set_device(args.cuda_device)
    hardware = dict(fingerprint.hardware(args.cuda_device), cuda_device=args.cuda_device)
    return torch.device("cuda", args.cuda_device), hardware, hardware["sm_count"]


class Run:
    """One run: measures shapes, writes their records, keeps the tally, shows progress."""

    def __init__(self, args, shapes):
        self.args, self.shapes = args, shapes
        self.device, self.hardware, sm_count = pick_device(args)
        self.on_gpu = self.device.type == "cuda"
        self.gpu_name = self.hardware["gpu_name"]
        self.mode = "scan" if shapes else "search"
        self.budget_s = args.budget_s or (SEARCH_BUDGET_S if self.mode == "search" else None)
        self.warmup_s = mamf.warmup_seconds(args.warmup_s, self.budget_s, self.on_gpu)
        # A CPU gets the same search on shapes 64x smaller: seconds, not hours.
        self.space = mamf.default_space(sm_count, unit=256 if self.on_gpu else 4)
        self.screen_iters = (min(SCREEN_WARMUP, args.num_warmup_iterations),
                             min(SCREEN_ITERS, args.num_iterations))
        self.peak_key = mamf.PEAK_KEY[args.dtype]
        self.peak, self.peak_source, _ = gpus.resolve_peak(self.gpu_name, self.peak_key)
        self.published = mamf.published_mamf(self.gpu_name, args.dtype)
        self.writer = RecordWriter(SCRIPT, args.output_file)
        self.bench = Bench(self.device, args.dtype)
        self.sampler = telemetry.RunSampler(self.device.index or 0)  # one NVML session
        self.tally = mamf.Tally()
        self.progress = Progress()
        self.signals = Signals()
        self.phase = "probe"
        self.start = None

    def config(self) -> dict:
        a, space = self.args, self.space
        config = {"mode": self.mode, "dtype": a.dtype, "num_iterations": a.num_iterations,
                  "num_warmup_iterations": a.num_warmup_iterations, "budget_s": self.budget_s,
                  "warmup_s": self.warmup_s, "cuda_device": a.cuda_device, "argv": sys.argv[1:],
                  "shapes": len(self.shapes) if self.shapes else None, "output_file": a.output_file}
        if self.mode == "search":
            config.update(screen_warmup_iterations=self.screen_iters[0],
                          screen_iterations=self.screen_iters[1], grid_m=space.grid_m,
                          grid_n=space.grid_n, grid_k=space.grid_k, full_wave_shapes=len(space.extra),
                          steps=space.steps, bounds=(space.lo, space.hi))
        return config

    def write_header(self) -> None:
        warnings = [] if self.peak else [f"no {self.peak_key} peak known for "
                                         f"{self.gpu_name or 'a CPU'}: efficiency is null"]
        self.writer.write("header", **header.fields(
            self.config(), self.args.notes, warnings, hardware=self.hardware, peak_tflops=self.peak,
            peak_source=self.peak_source, published_mamf_tflops=self.published))
        for text in warnings:
            sys.stderr.write(f"warning: {text}\n")

    def probe(self) -> bool:
        """One tiny matmul: an unsupported dtype becomes one clear record, not a crash."""
        try:
            self.bench.measure(mamf.GemmShape(self.space.lo, self.space.lo, self.space.lo), 1, 1)
            return True
        except Exception as err:
            fields = {**faults.error_fields(err), "error": "unsupported"}
            self.writer.write("error", seq_len=None, **fields,
                              config={"dtype": self.args.dtype, "device": str(self.device)})
            reason = (fields["message"] or fields["exception"]).splitlines()[0]
            sys.stderr.write(f"error: --dtype {self.args.dtype} does not run on "
                             f"{self.gpu_name or 'this CPU'}: {reason}\n")
            return False

    def measure(self, shape, full: bool):
        """Mean TFLOPS of one shape (full or screen iteration counts); None if it failed."""
        a = self.args
        warmup, iters = (a.num_warmup_iterations, a.num_iterations) if full else self.screen_iters
        try:
            stats, gpu = self.sampler.measure(lambda: self.bench.measure(shape, iters, warmup))
        except Exception as err:  # one record per failed shape (an OOM, say); the run goes on
            with self.signals.hold():
                self.writer.write("error", seq_len=None, phase=self.phase, **faults.error_fields(err),
                                  config={"m": shape.m, "n": shape.n, "k": shape.k, "dtype": a.dtype})
            if self.on_gpu:
                self.bench.torch.cuda.empty_cache()
            return None
        with self.signals.hold():
            record = self.writer.write("matmul", m=shape.m, n=shape.n, k=shape.k, dtype=a.dtype,
                                       **stats, iters=iters, phase=self.phase,
                                       **gpu)
            self.tally.add(record, full)
        best = self.tally.best()
        self.progress.show(f"[{self.phase}] {self.tally.measurements:>4} | {str(shape):>17} "
                           f"{stats['tflops_mean']:8.5g} | best {best['tflops_mean']:8.5g} TFLOPS @ "
                           f"{best['m']}x{best['n']}x{best['k']} | {time.monotonic() - self.start:.0f} s")
        return stats["tflops_mean"]

    def enter(self, phase: str) -> None:
        self.phase = phase
        self.progress.line(f"{phase} ...")

    def measure_all(self) -> None:
        if self.warmup_s > 0:
            # On the first shape to be measured, as the classic mamf-finder does.
            warm = (self.shapes or self.space.coarse())[0]
            self.progress.line(f"warming up the accelerator for {self.warmup_s:.0f} s on {warm} ...")
            self.bench.warm_up(warm, self.warmup_s, self.progress.show)
        self.start = time.monotonic()
        if self.mode == "search":
            mamf.search(lambda s: self.measure(s, True), self.space, self.budget_s,
                          screen=lambda s: self.measure(s, False), progress=self.enter)
            return
        self.enter("scan")
        for shape in self.shapes:
            if self.budget_s and self.tally.measurements and \
                    time.monotonic() - self.start >= self.budget_s:
                break
            self.measure(shape, True)

    def finish(self, interrupted) -> None:
        """The `mamf` record and the table on stderr, also after an interrupt."""
        now = time.monotonic()
        best = self.tally.best()
        fields = mamf.mamf_fields(best, self.args.dtype, self.peak)
        self.writer.write("mamf", **fields, shapes_tried=len(self.tally.shapes),
                          measurements=self.tally.measurements, elapsed_s=now - _T0,
                          search_s=now - self.start if self.start else 0.0, warmup_s=self.warmup_s,
                          mode=self.mode, interrupted=bool(interrupted),
                          published_mamf_tflops=self.published)
        self.progress.end()
        err = sys.stderr
        if interrupted:
            err.write(f"interrupted (signal {int(interrupted)}): the best so far\n")
        if best is None:
            err.write("no shape was measured\n")
            return
        top = self.tally.top(5)
        if top:
            err.write(f"\n{'shape (MxNxK)':>20} {'mean':>8} {'median':>8} {'max':>8}  TFLOPS\n")
        for r in top:
            shape = f"{r['m']}x{r['n']}x{r['k']}"
            err.write(f"{shape:>20} {r['tflops_mean']:8.5g} {r['tflops_median']:8.5g} "
                      f"{r['tflops_max']:8.5g}\n")
        share = (f", {fields['efficiency']:.1%} of the {self.peak:g} peak ({self.peak_source})"
                 if fields["efficiency"] else "")
        published = f"; published {self.published:g}" if self.published else ""
        err.write(f"\nMAMF {self.args.dtype}: {fields['tflops_mean']:.5g} TFLOPS (mean; median "
                  f"{fields['tflops_median']:.5g}, max {fields['tflops_max']:.5g}) at "
                  f"{fields['m']}x{fields['n']}x{fields['k']}{share}{published}\n")
        err.write(f"{len(self.tally.shapes)} shapes, {self.tally.measurements} measurements, "
                  f"{now - _T0:.0f} s in all (warm-up {self.warmup_s:.0f} s)\n")


def main(argv=None) -> int:
    args, shapes = parse_args(argv)
    run = Run(args, shapes)
    run.write_header()
    interrupted, probed = None, False
    run.signals.install()
    run.sampler.start()
    try:
        probed = run.probe()
        if probed:
            run.measure_all()
    except Interrupted as sig:
        interrupted = sig.signum
    except KeyboardInterrupt:
        interrupted = signal.SIGINT
    finally:
        run.signals.ignore()  # nothing stops the summary now
        run.sampler.stop()
    if probed or interrupted:
        run.finish(interrupted)
    run.signals.restore()
    if interrupted:
        return 128 + int(interrupted)
    return 0 if probed else 1


if __name__ == "__main__":
    sys.exit(run_main(main))
