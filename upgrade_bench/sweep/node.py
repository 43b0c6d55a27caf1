"""run_node.sh: everything the decision page reads, measured on the node it runs on, into one
folder to copy: capabilities, MAMF, HBM bandwidth, the collectives' bus bandwidth (on two GPUs
or more), the model's own attention layers, the sequence-length sweep and the step
decomposition at the guide's lengths.

It prints its plan with an estimated wall time and GPU-hours before anything starts, a line
as each step starts and ends, and writes `node.jsonl` (a `header`, then a `node_step` record
per step: its command, exit code, estimate and wall time). A step that ended with exit 0
leaves a marker and is skipped when the command runs again on the same folder; the sweep
step resumes point by point (RESUME=1). A failed step is a record and the next one runs.
The estimate is rough and says what it rests on: per-step constants and, for the training
steps, the FLOP count at an assumed MFU.
"""
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..models import flops, layers, model
from ..kernels import attn_backends, attn_bench
from ..hardware import devices
from ..log import header
from .. import settings
from . import sweep_plan
from ..faults import EXIT_ERROR, BadInput
from ..numfmt import fmt_s
from ..paths import REPO
from ..log.records import RecordWriter

SCRIPT = "run_node.sh"
STEPS = ("capabilities", "mamf", "hbm", "comm", "attention", "sweep", "decomposition")
VARS = [
    settings.Var("NODE_OUT", "str", "out/node", "the folder every log of the node goes to (one to copy)"),
    settings.Var("SKIP", "str_list", [], "steps to leave out: " + " ".join(STEPS)),
    settings.Var("ATTN_SEQLENS", "int_list", [8192, 32768], "isolated-attention lengths", min=1),
    settings.Var("DECOMPOSE_SEQLENS", "int_list", [8192, 32768], "decomposition lengths (the guide's: 8K; "
                 "32K shows the attention-bound side)", min=1),
    settings.Var("DRY_RUN", "bool", False, "print the plan and its estimate; run nothing"),
]
# Rough costs behind the estimate, from the node command's run on one H200
# (results/h200-families-3/node/node.jsonl: each step's estimate and wall time):
CAPABILITIES_S = 25.0       # check_capabilities.py's probes: 23 s
MAMF_S = 45.0               # mamf-finder.py's default search: 42 s (41 s on another H200)
ATTENTION_START_S = 28.0    # bench_flash_attn.py up to its first point: imports, each backend's check
ATTENTION_BACKENDS = 2      # its default: the kernel training picks here, and cuDNN SDPA
ATTENTION_MFU = 0.5         # isolated attention ran 500-650 TFLOPS from 8K on the H200's 989 peak
# A training process before its first step: imports, model build, DeepSpeed init; it grows with
# the model (an 8B on 2 GPUs took 70-120 s a point; the 2-layer cut of it, 1.5B, about 20 s).
START_S = 20.0
START_S_PER_BPARAM = 10.0
FIRST_STEP_S = 10.0         # a process's first step: Liger's kernels (and the backend's: first_step_s)
ASSUMED_MFU = 0.35          # a training step's MFU for the step-time estimate
HBM_S = 25.0                # bench_hbm.py's defaults: 20 s and 17 s (results/h200-hbm-6/pipeline.log)
# bench_comm.py's defaults, not yet timed on a node: 28 points of 1.5 s windows (42 s), and the
# launcher, torch and NCCL's first connections before them (the decomposition's start, ~20 s).
COMM_S = 60.0


@dataclass
class Step:
    name: str
    argv: list
    env: dict
    estimate_s: float | None
    output: str


def start_s(spec, backend: str) -> float:
    """A training process's start-up and first step, by the model's size (all its weights) and
    what the attention backend compiles there (FlexAttention: over a minute cold)."""
    first_step = max(FIRST_STEP_S, attn_backends.BACKENDS[backend].first_step_s)
    return START_S + START_S_PER_BPARAM * spec.total_params / 1e9 + first_step


def attention_s(spec, lengths: list, peak_tflops: float | None) -> float | None:
    """bench_flash_attn.py with its default backends and timing over the model's quadratic
    layers at `lengths`, each point its floors and calls at ATTENTION_MFU of the peak (the
    linear mixers' FLA kernels are not in it); None without a peak (a CPU)."""
    if not peak_tflops:
        return None
    work = [flops.attention_kernel_flops(1, n, m.heads, m.qk_head_dim, pass_=p, window=m.window,
                                         v_head_dim=m.v_head_dim)
            for m in spec.distinct_mixers() if m.kind in layers.QUADRATIC
            for n in lengths for p in attn_bench.PASSES] * ATTENTION_BACKENDS
    floor_s, calls = attn_bench.floor_and_calls(attn_bench.TIMING_DEFAULTS)
    return ATTENTION_START_S + attn_bench.points_s(work, floor_s, calls, ATTENTION_MFU * peak_tflops)


def training_step_s(spec, seq_len: int, peak_tflops: float | None, grad_checkpoint: bool) -> float | None:
    """One fwd+bwd+step at ASSUMED_MFU of the peak; None without a peak (a CPU)."""
    if not peak_tflops:
        return None
    work = flops.step_flops(spec, 1, seq_len, grad_checkpoint=grad_checkpoint).hardware
    return work / (peak_tflops * 1e12 * ASSUMED_MFU)


def plan(s: dict, train: dict, spec, gpu_count: int, peak: float | None, python: str, backend: str) -> list:
    """The steps, in order, with their commands and estimates (`backend`: what training uses)."""
    out = Path(s["NODE_OUT"])
    base = {"MODEL": train["MODEL"], "NUM_LAYERS": str(train["NUM_LAYERS"])}
    step_s = {n: training_step_s(spec, n, peak, train["GRAD_CHECKPOINT"])
              for n in set(train_lengths(s, train)) | set(s["DECOMPOSE_SEQLENS"])}

    def points_s(lengths, steps_per_point, one_process):
        if any(step_s[n] is None for n in lengths):
            return None
        starts = len(sweep_plan.process_plan(lengths, one_process))
        return starts * start_s(spec, backend) + sum(steps_per_point * step_s[n] for n in lengths)

    launcher = [python, "-m", "deepspeed.launcher.runner", "--num_gpus", str(gpu_count)] if gpu_count > 1 else [python]
    steps = [
        Step("capabilities", [python, str(REPO / "check_capabilities.py")],
             {"OUTPUT": str(out / "capabilities.jsonl")}, CAPABILITIES_S, "capabilities.jsonl"),
        Step("mamf", [python, str(REPO / "mamf-finder.py"), "--output_file", str(out / "mamf.jsonl")], {},
             MAMF_S, "mamf.jsonl"),
        Step("hbm", [python, str(REPO / "bench_hbm.py")], {"OUTPUT": str(out / "hbm.jsonl")}, HBM_S, "hbm.jsonl"),
        Step("comm", launcher + [str(REPO / "bench_comm.py")], {"OUTPUT": str(out / "comm.jsonl")}, COMM_S,
             "comm.jsonl"),
        Step("attention", [python, str(REPO / "bench_flash_attn.py")],
             {**base, "SEQLENS": " ".join(map(str, s["ATTN_SEQLENS"])), "OUTPUT": str(out / "attention.jsonl")},
             attention_s(spec, s["ATTN_SEQLENS"], peak), "attention.jsonl"),
        Step("sweep", ["bash", str(REPO / "run_sweep.sh")],
             {"OUT": str(out / "sweep.jsonl"), "RESUME": "1"},
             points_s(train_lengths(s, train), train["WARMUP_STEPS"] + train["STEPS"],
                      train.get("REUSE_PROCESS", False)), "sweep.jsonl"),
        Step("decomposition", launcher + [str(REPO / "bench_decompose.py")],
             {**base, "SEQ_LEN": " ".join(map(str, s["DECOMPOSE_SEQLENS"])), "OUTPUT": str(out / "decompose.jsonl")},
             points_s(s["DECOMPOSE_SEQLENS"], 2 + 10 + 3, True), "decompose.jsonl"),
    ]
    # one GPU has no link to measure (bench_comm.py refuses one rank)
    return [st for st in steps if st.name not in s["SKIP"] and (st.name != "comm" or gpu_count >= 2)]


def train_lengths(s: dict, train: dict) -> list:
    return train.get("SEQLENS") or [8192]


def plan_text(steps: list, gpu_count: int) -> str:
    known = [st.estimate_s for st in steps if st.estimate_s is not None]
    total = sum(known)
    lines = [f"[node] {i}. {st.name}: ~{fmt_s(st.estimate_s)}  {shlex.join(st.argv)}"
             for i, st in enumerate(steps, 1)]
    unknown = "" if len(known) == len(steps) else " (steps marked ? have no estimate here: no GPU peak)"
    hours = (f"{total * gpu_count / 3600:.2f} GPU-hours on {gpu_count} GPU(s)" if gpu_count
             else "no GPU (a CPU try-out)")
    lines.append(f"[node] estimated {fmt_s(total)} of wall time at least, {hours}{unknown}")
    return "\n".join(lines)


def step_environ(environ, st: Step) -> dict:
    """What a step's process sees: this command's environment less its own settings, and but
    for the sweep less the sweep's (a bench_decompose.py given SEQLENS would warn of it as a
    misspelling of its SEQ_LEN), plus the step's own variables."""
    own = {v.name for v in VARS}
    inherited = {k: v for k, v in environ.items() if k not in own}
    if st.name != "sweep":
        inherited = sweep_plan.without_sweep_settings(inherited)
    return {**inherited, **st.env}


def marker(out: Path, name: str) -> Path:
    return out / f".done-{name}"


def run(steps: list, out: Path, writer, say) -> int:
    """Each step in turn; returns the number that failed."""
    failed = 0
    for i, st in enumerate(steps, 1):
        if marker(out, st.name).exists():
            say(f"[node] {i}/{len(steps)} {st.name}: done in an earlier run, skipped")
            continue
        say(f"[node] {i}/{len(steps)} {st.name}: starting (~{fmt_s(st.estimate_s)})")
        started = time.monotonic()
        with open(out / f"{st.name}.log", "ab") as log:
            code = subprocess.run(st.argv, env=step_environ(os.environ, st), stdout=subprocess.DEVNULL,
                                  stderr=log).returncode
        wall = time.monotonic() - started
        writer.write("node_step", step=st.name, argv=st.argv, env=st.env, exit_code=code,
                     estimate_s=st.estimate_s, wall_s=wall, output=st.output)
        say(f"[node] {i}/{len(steps)} {st.name}: exit {code} after {fmt_s(wall)} "
            f"(estimated {fmt_s(st.estimate_s)}); its terminal is {out / (st.name + '.log')}")
        if code == 0:
            marker(out, st.name).write_text("")
        else:
            failed += 1
    return failed


def main(argv=None) -> int:
    s = settings.load(VARS, __doc__, sys.argv[1:] if argv is None else argv)
    train = sweep_plan.load_settings([], sweep_plan.__doc__)
    problem = model.cheap_problem(train["MODEL"])
    if problem:
        raise BadInput(problem)
    seen = devices.visible_gpus()
    gpu_count = train["GPUS"] or len(seen)
    training = {**{v.name: train[v.name] for v in sweep_plan.PASSED}, "SEQ_LEN": train_lengths(s, train)}
    resolved = sweep_plan.resolve_training(training, seen[0] if seen else None, max(gpu_count, 1),
                                           model.cheap_config(train["MODEL"]) or model.load_config(train["MODEL"]))
    python = os.environ.get("PYTHON") or sys.executable
    steps = plan(s, train, resolved.cut.counted, gpu_count, resolved.peak_tflops, python, resolved.backend)
    say = lambda line: (sys.stderr.write(line + "\n"), sys.stderr.flush())  # noqa: E731
    say(plan_text(steps, gpu_count))
    if s["DRY_RUN"]:
        return 0
    out = Path(s["NODE_OUT"])
    out.mkdir(parents=True, exist_ok=True)
    writer = RecordWriter(SCRIPT, str(out / "node.jsonl"))
    writer.write("header", **header.fields({**s, **{k: train[k] for k in ("MODEL", "NUM_LAYERS", "GPUS")}},
                                           "", [], steps=[st.name for st in steps]))
    failed = run(steps, out, writer, say)
    say(f"[node] {len(steps) - failed} of {len(steps)} steps done; the folder to copy: {out}")
    return EXIT_ERROR if failed else 0
