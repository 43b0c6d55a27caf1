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
    python mamf-finder.py --dtype float8_e4m3fn --scaling rowwise   # PRECISION=fp8-rowwise's ceiling
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

from . import search as mamf, run as mamf_run
from ... import settings
from ...faults import BadInput, Parser

SCRIPT = "mamf-finder.py"


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
    p.add_argument("--scaling", choices=mamf.SCALINGS, default="tensorwise",
                   help="float8 only: one fp32 scale per tensor (the published tool's) or per row of A and "
                        "column of B (torchao's fp8-rowwise GEMMs; output bf16) (default: %(default)s)")
    p.add_argument("--num_iterations", type=_int(1), default=100, help="timed iterations per shape (default: %(default)s)")
    p.add_argument("--num_warmup_iterations", type=_int(0), default=50,
                   help="untimed iterations before them (default: %(default)s)")
    p.add_argument("--budget_s", type=_seconds(True), default=None,
                   help=f"time for the search (default {mamf_run.SEARCH_BUDGET_S:g}) or, when given, a scan")
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
    if args.scaling != "tensorwise" and not args.dtype.startswith("float8"):
        p.error(f"--scaling {args.scaling}: only for a float8 --dtype (scales are torch._scaled_mm's)")
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


def main(argv=None) -> int:
    args, shapes = parse_args(argv)
    return mamf_run.FinderRun(SCRIPT, args, shapes, _T0).execute()

