"""A mamf-finder.py run: the device, the records, the live progress line, the final table.

The search itself is mamf.search (pure); a shape's measurement is mamf_bench.MatmulBench.
"""
import sys
import time

from ... import faults
from ...hardware import fingerprint, gpus, telemetry
from ...log import header
from . import search as mamf
from ...faults import BadInput
from ...interrupts import Interrupted, Signals, ignored
from .bench import MatmulBench
from ...log.records import RecordWriter

SEARCH_BUDGET_S = 60.0
# Screens rank shapes; only full measurements are reported as the MAMF. 10 + 30 iterations
# rank the ~300 shapes of a search in seconds; per-iteration jitter averages out to ~0.3%.
SCREEN_WARMUP, SCREEN_ITERS = 10, 30


class Progress:
    """One live line on a terminal's stderr; phase lines only when stderr is a file."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr  # the stderr of now, not of when this was imported
        self.live = self.stream.isatty()
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


def pick_device(args):
    """(device, hardware fingerprint of the GPU measured (not always GPU 0), SM count)."""
    import torch

    if not torch.cuda.is_available():
        return torch.device("cpu"), fingerprint.hardware(), None
    if args.cuda_device >= torch.cuda.device_count():
        raise BadInput(f"--cuda_device {args.cuda_device}: expected an index below "
                       f"{torch.cuda.device_count()} (the GPUs visible here)")
    torch.cuda.set_device(args.cuda_device)
    hardware = fingerprint.hardware(args.cuda_device)  # the config names the index
    return torch.device("cuda", args.cuda_device), hardware, hardware["sm_count"]


class FinderRun:
    """One mamf-finder run: measures shapes, writes their records, keeps what was measured, shows progress."""

    def __init__(self, script: str, args, shapes, started: float):
        """`started`: time.monotonic() when the script began (its elapsed time counts from there)."""
        self.args, self.shapes, self.started = args, shapes, started
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
        self.peak, self.peak_source, _ = gpus.resolve_peak(self.gpu_name, mamf.PEAK_KEY[args.dtype])
        # The guide's published fp8 MAMF was measured with per-tensor scales: no figure for row-wise.
        self.published = mamf.published_mamf(self.gpu_name, args.dtype) if args.scaling == "tensorwise" else None
        self.writer = RecordWriter(script, args.output_file)
        self.bench = MatmulBench(self.device, args.dtype, args.scaling)
        self.scaling = args.scaling if self.bench.scaled else None  # a bf16 matmul has no scales
        self.sampler = telemetry.RunSampler(self.device.index or 0)  # one NVML session
        self.measured = mamf.Measured()
        self.progress = Progress()
        self.signals = Signals()
        self.phase = "dtype check"
        self.start = None

    def config(self) -> dict:
        a, space = self.args, self.space
        config = {"mode": self.mode, "dtype": a.dtype, "scaling": self.scaling, "num_iterations": a.num_iterations,
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
        warnings = [] if self.peak else [f"no {self.args.dtype} peak known for "
                                         f"{self.gpu_name or 'a CPU'}: efficiency is null"]
        self.writer.write("header", **header.fields(
            self.config(), self.args.notes, warnings, hardware=self.hardware, peak_tflops=self.peak,
            peak_source=self.peak_source, published_mamf_tflops=self.published))
        for text in warnings:
            sys.stderr.write(f"warning: {text}\n")

    def check_dtype(self) -> bool:
        """One tiny matmul: an unsupported dtype becomes one clear record, not a crash."""
        try:
            self.bench.time_shape(mamf.GemmShape(self.space.lo, self.space.lo, self.space.lo), 1, 1)
            return True
        except Exception as err:
            fields = {**faults.error_fields(err), "error": "unsupported"}
            self.writer.write("error", seq_len=None, **fields,
                              config={"dtype": self.args.dtype, "device": str(self.device)})
            reason = (fields["message"] or fields["exception"]).splitlines()[0]
            sys.stderr.write(f"error: --dtype {self.args.dtype} does not run on "
                             f"{self.gpu_name or 'this CPU'}: {reason}\n")
            return False

    def record_shape(self, shape, full: bool):
        """Mean TFLOPS of one shape (full or screen iteration counts); None if it failed."""
        a = self.args
        warmup, iters = (a.num_warmup_iterations, a.num_iterations) if full else self.screen_iters
        try:
            stats, gpu = self.sampler.during(lambda: self.bench.time_shape(shape, iters, warmup))
        except Exception as err:  # one record per failed shape (an OOM, say); the run goes on
            with self.signals.hold():
                self.writer.write("error", seq_len=None, phase=self.phase, **faults.error_fields(err),
                                  config={"m": shape.m, "n": shape.n, "k": shape.k, "dtype": a.dtype})
            if self.on_gpu:
                self.bench.torch.cuda.empty_cache()
            return None
        with self.signals.hold():
            record = self.writer.write("matmul", m=shape.m, n=shape.n, k=shape.k, dtype=a.dtype, scaling=self.scaling,
                                       **stats, iters=iters, phase=self.phase,
                                       **gpu)
            self.measured.add(record, full)
        best = self.measured.best()
        self.progress.show(f"[{self.phase}] {self.measured.measurements:>4} | {str(shape):>17} "
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
            self.bench.warm_up(warm, self.warmup_s, self.args.num_iterations,
                               self.args.num_warmup_iterations, self.progress.show)
        self.start = time.monotonic()
        if self.mode == "search":
            mamf.search(lambda s: self.record_shape(s, True), self.space, self.budget_s,
                        screen=lambda s: self.record_shape(s, False), progress=self.enter)
            return
        self.enter("scan")
        for shape in self.shapes:
            if self.budget_s and self.measured.measurements and \
                    time.monotonic() - self.start >= self.budget_s:
                break
            self.record_shape(shape, True)

    def finish(self, interrupted) -> None:
        """The `mamf` record and the table on stderr, also after an interrupt."""
        now = time.monotonic()
        best = self.measured.best()
        fields = mamf.mamf_fields(best, self.args.dtype, self.peak)
        self.writer.write("mamf", **fields, shapes_tried=len(self.measured.shapes),
                          measurements=self.measured.measurements, elapsed_s=now - self.started,
                          search_s=now - self.start if self.start else 0.0, warmup_s=self.warmup_s,
                          mode=self.mode, interrupted=bool(interrupted), scaling=self.scaling,
                          published_mamf_tflops=self.published)
        self.progress.end()
        err = sys.stderr
        if interrupted:
            err.write(f"interrupted (signal {int(interrupted)}): the best so far\n")
        if best is None:
            err.write("no shape was measured\n")
            return
        top = self.measured.top(5)
        if top:
            err.write(f"\n{'shape (MxNxK)':>20} {'mean':>8} {'median':>8} {'max':>8}  TFLOPS\n")
        for r in top:
            shape = f"{r['m']}x{r['n']}x{r['k']}"
            err.write(f"{shape:>20} {r['tflops_mean']:8.5g} {r['tflops_median']:8.5g} "
                      f"{r['tflops_max']:8.5g}\n")
        share = (f", {fields['efficiency']:.1%} of the {self.peak:g} peak ({self.peak_source})"
                 if fields["efficiency"] else "")
        published = f"; published {self.published:g}" if self.published else ""
        err.write(f"\nMAMF {self.args.dtype}{' ' + self.scaling if self.scaling else ''}: {fields['tflops_mean']:.5g} TFLOPS (mean; median "
                  f"{fields['tflops_median']:.5g}, max {fields['tflops_max']:.5g}) at "
                  f"{fields['m']}x{fields['n']}x{fields['k']}{share}{published}\n")
        err.write(f"{len(self.measured.shapes)} shapes, {self.measured.measurements} measurements, "
                  f"{now - self.started:.0f} s in all (warm-up {self.warmup_s:.0f} s)\n")

    def execute(self) -> int:
        """Header, probe, measurements, then the `mamf` record and table, after Ctrl-C or
        SIGTERM too; the exit code: 128 + the signal when interrupted, 1 if the dtype cannot run."""
        self.write_header()
        interrupted, probed = None, False
        self.signals.install()
        self.sampler.start()
        try:
            try:
                probed = self.check_dtype()
                if probed:
                    self.measure_all()
            except Interrupted as sig:
                interrupted = sig.signum
            with ignored():  # nothing stops the summary now
                self.sampler.stop()
                if probed or interrupted:
                    self.finish(interrupted)
        finally:
            self.signals.restore()
        if interrupted:
            return self.signals.exit_code()
        return 0 if probed else faults.EXIT_ERROR
