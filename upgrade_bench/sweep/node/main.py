"""run_node.sh: everything the decision page reads, measured on the node it runs on, into one
folder to copy: capabilities, MAMF, HBM bandwidth, the collectives' bus bandwidth (on two GPUs
or more), the model's own attention layers, the sequence-length sweep and the step
decomposition at the guide's lengths.

It prints its plan (the lengths each step covers, what is left, an estimated wall time and
GPU-hours) before anything starts, a line as each step starts and ends, and writes
`node.jsonl` (a `header`, then a `node_step` record per step: its command, identity, lengths,
exit code, estimate and wall time). The training settings are the sweep's (MODEL, NUM_LAYERS,
SEQLENS, WORKLOAD, ...: ./run_sweep.sh --help; WORKLOAD=auto runs right-sized-8b on fewer GPUs
than the guide's 8); the plan marks each point by its estimated peak memory against the GPU's
(one that does not fit is recorded and not run, unless RUN_UNFIT=1; the default, neither WORKLOAD
nor SEQLENS set, asks only for its workload's lengths that fit and says the others with what would
fit them); the decomposition is a sweep
of DECOMPOSE_SEQLENS (of the sweep's lengths that fit) with the same settings (Liger included) and
DECOMPOSE=3 profiled steps per point, each length in a process of its own.

NODE_OUT holds one configuration. Run the command again on it and it resumes: only what the
folder's records lack of this request runs (the sweep and the decomposition point by point,
attention by length, the other steps if no earlier run of them ended with exit 0), so one more
length measures only that length. Another model, cut, training setting, attention backend or
GPU is refused in one line naming the difference, before anything runs: give it a NODE_OUT of
its own. One run at a time holds the folder (lock.py): a second one started on it is
refused in one line naming the first's pid; a step ends with its node, however the node ends
(kill -9 too), and one that outlives it still holds the folder. A failed step or point is a record and the next
one runs; the last line says what is missing (exit 1 then). Ctrl-C or SIGTERM stops the step
running and its processes, keeps what was written, and exits 130 or 143. The estimate is rough
and says what it rests on: per-step constants and, for the training steps, the FLOP count at an
assumed MFU.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

from ... import faults, settings
from ...faults import BadInput
from ...interrupts import Signals, ignored
from ...log import header
from ...log.records import RecordWriter, folder_problem
from ...numfmt import fmt_s
from ...capability import main as capabilities
from ...kernels.attention import main as attention
from ...kernels.comm import main as comm
from ...kernels.hbm import main as hbm
from ...training import variables
from .. import child_process, plan as sweep_plan
from . import lock, plan as node_plan
from .plan import STEPS

SCRIPT = "run_node.sh"
VARS = [
    settings.Var("NODE_OUT", "path", "out/node", "the folder every log of the node goes to (one to copy); "
                 "a rerun resumes it, another configuration is refused"),
    settings.Var("SKIP", "str_list", [], "steps to leave out: " + " ".join(STEPS)),
    settings.Var("ATTN_SEQLENS", "int_list", [8192, 32768], "isolated-attention lengths", min=1,
                 max=variables.MAX_TOKENS),
    settings.Var("DECOMPOSE_SEQLENS", "int_list", [8192, 32768], "decomposition lengths (the guide's: 8K; "
                 "32K shows the attention-bound side), of those the sweep plans and that fit (none among them: "
                 "the sweep's shortest that fits); one the sweep ran out of memory at is left out",
                 min=1, max=variables.MAX_TOKENS),
    settings.Var("DRY_RUN", "bool", False, "print the plan and its estimate; run nothing"),
]
OWN = {v.name for v in VARS}
# The scripts whose settings a step passes on from the node's environment (mamf-finder.py
# takes flags, and the training steps are run_sweep.sh's).
CHILDREN = {"capabilities": capabilities, "hbm": hbm, "comm": comm, "attention": attention}
# The sweep's settings each training step sets itself (SEQLENS: from the node's, DECOMPOSE_SEQLENS).
SET_PER_STEP = ("OUT", "RESUME")
# A step stopped by Ctrl-C or SIGTERM gets this long to stop its own processes (a sweep: its
# launcher on other nodes, then its ranks) before the node kills what is left of it.
STEP_GRACE_S = child_process.PDSH_GRACE_S + 3 * child_process.KILL_GRACE_S


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def suite_vars(children: dict) -> list:
    """Every setting the node's environment may carry: its own, the sweep's and benchmark.py's,
    and those of the step scripts it passes its environment on to."""
    tables = [VARS, sweep_plan.VARS, sweep_plan.PASSED] + [m.VARS for m in children.values()]
    return list({v.name: v for table in tables for v in table}.values())


def check_out(environ) -> None:
    """BadInput unless NODE_OUT is a folder the node can make and write in (before the plan)."""
    raw = environ.get("NODE_OUT")
    if raw is not None and not raw.strip():
        raise BadInput(f"NODE_OUT={raw!r}: expected a folder (unset it for out/node)")
    path = raw or VARS[0].default
    problem = folder_problem(path)
    if problem:
        raise BadInput(f"NODE_OUT={path!r}: cannot write there ({problem})")


def load(argv) -> tuple[settings.Settings, settings.Settings, dict]:
    """(the node's settings, the sweep's, the step scripts as modules); BadInput on any bad
    or misspelt setting, before anything runs."""
    every = suite_vars(CHILDREN)
    names = {v.name for v in every}
    s = settings.load(VARS, __doc__, argv, known=names)
    settings.check_misspelt(every)
    node_plan.check_skip(s.SKIP)
    check_out(os.environ)
    for name in SET_PER_STEP:  # else silently replaced by the node's own
        if os.environ.get(name):
            raise BadInput(f"{name} is set: run_node.sh sets it per step (the sweep's records go to NODE_OUT, "
                           f"which a rerun resumes); use NODE_OUT, and another one for a fresh run")
    train = sweep_plan.load_settings([], sweep_plan.__doc__, known=names)
    if train.FIND_MAX_SEQLEN:
        raise BadInput("FIND_MAX_SEQLEN=1: the node runs the sweep; run ./run_sweep.sh alone for the "
                       "capacity search")
    return s, train, CHILDREN


def main(argv=None) -> int:
    faults.require(SCRIPT, *faults.TRAINING_STACK)
    s, train, children = load(sys.argv[1:] if argv is None else argv)
    out = Path(os.path.abspath(s.NODE_OUT))
    if s.DRY_RUN:
        planned(s, train, out, children)
        return 0
    with lock.held(out, f"NODE_OUT={s.NODE_OUT!r}") as lock_fd:  # before the plan reads the folder
        steps = planned(s, train, out, children)
        writer = RecordWriter(SCRIPT, str(out / "node.jsonl"))
        writer.write("header", **header.fields(
            {**settings.as_dict(s), **{k: getattr(train, k) for k in ("MODEL", "NUM_LAYERS", "GPUS")}},
            "", [], steps=[st.name for st in steps]))
        signals = Signals()
        signals.install()
        try:
            return run(steps, out, writer, signals, OWN, lock_fd)
        finally:
            signals.restore()


def planned(s, train, out: Path, children: dict) -> list:
    """The steps to run, their plan said; BadInput where the folder holds records of another
    configuration, or where a step cannot run on this machine (DRY_RUN: said in the plan)."""
    python = os.environ.get("PYTHON") or sys.executable
    steps = node_plan.plan(s, train, out, python, children, os.environ, OWN)
    conflict = node_plan.folder_conflict(steps, out)
    if conflict:
        raise BadInput(f"NODE_OUT={s.NODE_OUT!r} holds another configuration's records ({conflict}): give "
                       f"this run a NODE_OUT of its own; the folder's own configuration resumes it")
    steps = [st for st in steps if st.name not in s.SKIP]
    training = {w: None for st in steps if st.sweep and not st.finished for w in st.sweep.warnings}
    for warning in training:  # a setting that changes nothing here among them: said before the plan
        say(f"warning: {warning}")
    say(node_plan.plan_text(steps, train.GPUS or len(sweep_plan.planned_gpus(train, os.environ))))
    cannot = [st for st in steps if st.cannot and not st.finished]
    if cannot and not s.DRY_RUN:  # before the steps that can run: not an hour, then the refusal
        names = " ".join(st.name for st in cannot)
        raise BadInput(f"{names}: cannot run on this machine ({cannot[0].cannot}); or leave them out: "
                       f"SKIP='{' '.join(list(s.SKIP) + [st.name for st in cannot])}'")
    return steps


def run(steps: list, out: Path, writer, signals, own: set, lock_fd: int | None = None) -> int:
    """Each step in turn, what an earlier run did skipped; the exit code: 0 when nothing is
    missing, 1 when something is (the last line says what), 128 + a signal that stopped it.
    `lock_fd`: the folder's lock (lock.held's), which each step holds too."""
    missing = {}
    sweep = next((st for st in steps if st.name == "sweep"), None)
    for i, st in enumerate(steps, 1):
        if st.name == "decomposition" and sweep:  # what the sweep found out of memory is not retried
            ooms = [n for n in node_plan.sweep_ooms(sweep) if n in st.lengths]
            if ooms:
                say(f"[node] {st.name}: {' '.join(map(str, ooms))} left out: out of memory in the sweep")
                node_plan.leave_out(st, ooms)
        try:
            missing[st.name] = run_step(st, f"[node] {i}/{len(steps)}", out, writer, signals, own, lock_fd)
        except KeyboardInterrupt:
            say(f"[node] stopped by {faults.signal_name(signals.received)} during {st.name}: what was "
                f"written is kept; run again with the same NODE_OUT to resume")
            return signals.exit_code()
    for line in health_lines(out):
        say(f"[node] {line}")
    complete = sum(1 for st in steps if not missing[st.name])
    lacking = [phrase for st in steps for phrase in missing[st.name]]
    if not lacking:
        say(f"[node] {complete} of {len(steps)} steps done; the folder to copy: {out}")
        return 0
    memory_only = all(any(w in phrase for w in node_plan.MEMORY_WORDS) for phrase in lacking)
    retry = "" if memory_only else " (run again with the same NODE_OUT to retry what is missing)"
    say(f"[node] {complete} of {len(steps)} steps complete; missing: {', '.join(lacking)}; the folder to "
        f"copy: {out}{retry}")
    return faults.EXIT_ERROR


def health_lines(out: Path) -> list:
    """The node check of what the folder holds (report/node/check.py): each figure against a
    healthy node of its GPU kind, a shortfall with its likely cause."""
    from ...report.node import check as node_check
    from ...report.page import node as node_page

    try:
        checks = node_check.check_folder(str(out))
    except BadInput as err:  # a folder with no log to read: nothing to check
        return [f"node check: none ({err})"]
    return node_page.terminal_lines(checks) or ["node check: none (no GPU figure in the folder)"]


def run_step(st, prefix: str, out: Path, writer, signals, own: set, lock_fd: int | None = None) -> list:
    """Run one step unless an earlier run did it all; what it leaves missing. The step dies with
    the node, however the node ends (child_process.dies_with_parent), and holds the folder's lock
    while it lives (`lock_fd`, inherited): where that signal cannot be armed, or the step outlives
    it, no second run starts on the folder beside it."""
    if st.finished:
        say(f"{prefix} {st.name}{node_plan.covers(st)}: {node_plan.finished_text(st)}")
        return node_plan.missing(st, 0, out) if st.lengths and st.name in node_plan.TRAINING_STEPS else []
    say(f"{prefix} {st.name}{node_plan.covers(st)}: starting (~{fmt_s(st.estimate_s)})")
    env = st.run_env()
    started = time.monotonic()
    with open(out / f"{st.name}.log", "ab") as log:
        proc = subprocess.Popen(st.argv, env=node_plan.step_environ(os.environ, st.name, env, own),
                                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
                                pass_fds=() if lock_fd is None else (lock_fd,),
                                preexec_fn=child_process.dies_with_parent())
        lock.step_noted(lock_fd, proc.pid)
        try:
            code = proc.wait()
        except KeyboardInterrupt:  # the step's own processes first: none writes on after us
            child_process.stop_group(proc, False, STEP_GRACE_S)
            with ignored():
                record(writer, st, env, proc.returncode, time.monotonic() - started)
            raise
    lock.step_noted(lock_fd, None)
    wall = time.monotonic() - started
    with signals.hold():
        record(writer, st, env, code, wall)
    say(f"{prefix} {st.name}: exit {code} after {fmt_s(wall)} (estimated {fmt_s(st.estimate_s)}); its "
        f"terminal is {out / (st.name + '.log')}")
    return node_plan.missing(st, code, out)


def record(writer, st, env: dict, code: int | None, wall_s: float) -> None:
    writer.write("node_step", step=st.name, argv=st.argv, env=env, exit_code=code, estimate_s=st.estimate_s,
                 wall_s=wall_s, output=st.output, identity=st.identity,
                 seq_lens=st.todo if st.name == "attention" else st.lengths)
