"""run_sweep.sh: the guide's sequence-length sweep and memory ceiling, on one node or many.

Runs benchmark.py over SEQLENS (ascending) under the DeepSpeed launcher and gathers every
record in one JSON-lines file, results/<gpu>_<backend>_<time>.jsonl (or OUT; out/ instead
of results/ without a GPU): the only input plot_results.py needs. Each length runs in a
fresh benchmark process, as a training job starts: a length's peak memory depends on what
the allocator cached for the lengths before it in the same process (REUSE_PROCESS=1 runs
them all in one and pays start-up, 70-120 s on an 8B model, once). A point that fails (OOM,
crash, or no summary within POINT_TIMEOUT: its process group is killed) gets an `error`
record and the sweep goes on with the next length. A length the plan estimates does not fit
the GPU's memory (sweep/fit.py; said before anything runs, with the change that would fit it)
gets an `error` record `does_not_fit` and does not run, unless RUN_UNFIT=1. An existing OUT (or RESUME=1) skips
lengths that already have a `summary` of the same run identity (upgrade_bench/log/runs.py),
and with DECOMPOSE its `decomposition` too;
Ctrl-C or SIGTERM stops cleanly and keeps what was done. Progress and the final table go to stderr, the records to stdout
and the file, the benchmark's own log to <file>.log.

FIND_MAX_SEQLEN=1 finds the largest length that fits instead and writes a `capacity` record:
one step per probe, doubling from the smallest SEQLENS value (each probe a fresh process
unless REUSE_PROCESS=1; the ladder stops at the first that does not fit), then the length
where the peak-memory line of two fits (the sweep's own, if OUT holds them) meets HBM,
then bisection to SEQLEN_STEP.

    ./run_sweep.sh                                        # the guide's sweep on all local GPUs
    SEQLENS="8192 32768" GPUS=8 STEPS=5 ./run_sweep.sh
    FIND_MAX_SEQLEN=1 SEQLENS=131072 ./run_sweep.sh
    HOSTFILE=hosts MASTER_ADDR=node1 GPUS=8 ./run_sweep.sh    # multi-node (pdsh + ssh)
    DRY_RUN=1 GPUS=8 ./run_sweep.sh                        # print the commands, run nothing

Every benchmark.py variable (listed after the sweep's own: MODEL, ZERO_STAGE, STEPS, ...) is
passed through; SEQ_LEN and OUTPUT are the sweep's to set.
"""
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field

from .. import faults
from . import launch
from ..log import header, runs
from .child_process import PORT_ATTEMPTS, PORT_TAKEN, Log, ProcessResult, run_process
from ..faults import BadInput, WriteFailed, run_main, stop
from ..interrupts import Signals, ignored
from ..numfmt import sig
from ..paths import REPO
from ..log.records import RecordWriter, claim_stdout
from .capacity import Probe, ProbesInterrupted, find_max_seq_len, known_probes
from .plan import VARS, Plan, already_done, dry_run, existing_records, fallback_note, fit_lines, load_settings, passed_through, pending, without_sweep_settings, prepare, process_plan, shell_line, unfit
from ..numfmt import fmt_s
from .tables import capacity_table, sweep_table
from ..settings import Settings

SCRIPT = "run_sweep.sh"
DOES_NOT_FIT = "does_not_fit"  # an error record's kind of failure: planned out, not measured


@dataclass
class Context:
    """A sweep as it runs: what it planned, where its records and log go, its processes."""
    plan: Plan
    writer: RecordWriter
    log: Log
    signals: Signals
    started: float = field(default_factory=time.monotonic)
    processes: list = field(default_factory=list)


def say(message: str) -> None:
    sys.stderr.write(f"[run_sweep] {message}\n")
    sys.stderr.flush()


def write_node_env(lines: list[str]) -> str:
    fd, path = tempfile.mkstemp(prefix="run_sweep-", suffix=".ds_env")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _pythonpath() -> str:
    return os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))


def port_taken(result: ProcessResult) -> bool:
    """The process failed before its header because its rendezvous port was in use."""
    return result.status == "failed" and result.header is None and any(
        PORT_TAKEN in line for line in result.stderr_tail)


def start_process(ctx: Context, seq_lens: list[int], probe: bool, on_summary) -> ProcessResult:
    """Run one benchmark process over `seq_lens`; again on a new port if its port was taken."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        result = _run_once(ctx, seq_lens, probe, on_summary)
        if not (ctx.plan.picks_port() and port_taken(result)) or attempt == PORT_ATTEMPTS:
            break
        say(f"process {len(ctx.processes)}: its rendezvous port was taken before the ranks bound "
            f"it; again on a new port")
    return result


def _run_once(ctx: Context, seq_lens: list[int], probe: bool, on_summary) -> ProcessResult:
    extra, argv, node_lines = ctx.plan.command(seq_lens, probe)
    if node_lines:
        extra["DS_ENV_FILE"] = write_node_env(node_lines)
    number = len(ctx.processes) + 1
    try:
        say(f"process {number}: seq_len {' '.join(map(str, seq_lens))}: "
            f"{shell_line({**passed_through(os.environ), **extra}, argv)}")
        say(f"process {number}: starting up (imports, model build, {ctx.plan.s.ENGINE} init: minutes for an "
            f"8B model on a node) before its first point")
        env = {**without_sweep_settings(os.environ), **extra, "PYTHONPATH": _pythonpath()}
        if extra.get("CUDA_VISIBLE_DEVICES") == "":
            del env["CUDA_VISIBLE_DEVICES"]
        result = run_process(argv, env, seq_lens, ctx.plan.s.POINT_TIMEOUT, ctx.log, on_summary,
                             ctx.plan.multi_node, ctx.writer.stream)
    finally:
        if node_lines:
            os.unlink(extra["DS_ENV_FILE"])
    if ctx.plan.s.ENGINE != "deepspeed":  # torchrun's own exit code hides its ranks'
        result.exit_code = launch.rank_exit_code(result.exit_code, result.stderr_tail)
    ctx.processes.append(result)
    return result


def points_ended(todo: list[int], summaries: dict, failures: dict) -> int:
    """How many of this run's `todo` lengths have ended, ok or failed: the count its progress
    line shows against len(todo). `failures` also holds the lengths the plan kept from running
    (does_not_fit), which are not in `todo`, so counting the dicts would pass the total."""
    return sum(n in summaries or n in failures for n in todo)


def eta_s(point_durations_s: list[float], remaining: int) -> float | None:
    """Time left from the mean of the points done (long lengths take longer: a floor)."""
    return statistics.fmean(point_durations_s) * remaining if point_durations_s else None


def timing_totals(processes: list[dict]) -> dict:
    """Where the sweep's time went, summed over its processes (see ProcessResult.timing)."""
    keys = ("wall_s", "startup_s", "steps_s", "timed_steps_s")
    totals = {("process_" + k if k == "wall_s" else k): sum(p[k] for p in processes) for k in keys}
    return {**totals, "processes": processes}


def point_failure(ctx: Context, result: ProcessResult) -> tuple[dict | None, dict | None]:
    """(the failure of the point a failed process was on, the fields of the `error` record the
    sweep writes for it): both None if nothing failed, no fields when the benchmark wrote its
    own record (a timeout or a crash without a record gets one here)."""
    if result.status in ("ok", "interrupted"):
        return None, None
    at = result.seq_lens[len(result.summaries)]  # the point the process was on
    if result.error is not None and result.status == "failed":
        return {"seq_len": at, "error": result.error.get("error"), "message": result.error.get("message")}, None
    if result.status == "timeout":
        kind, message = "timeout", (f"no summary within POINT_TIMEOUT={ctx.plan.s.POINT_TIMEOUT:g} s; "
                                    f"process group killed")
    else:
        kind, message = faults.exit_meaning(result.exit_code)
        if kind == "environment":  # what to fix, in the benchmark's own line
            said = [line for line in result.stderr_tail if line.startswith("error: ")]
            message += f": {said[-1].removeprefix('error: ')}" if said else ""
    # What its header said ran beside the settings (the report's series: log/runs.config_as_run)
    as_run = {k: result.header[k] for k in runs.AS_RUN_FIELDS if result.header and k in result.header}
    return {"seq_len": at, "error": kind, "message": message}, {
        "error": kind, "message": message, "seq_len": at, "config": ctx.plan.config,
        "exit_code": result.exit_code, "stderr_tail": "\n".join(result.stderr_tail), **as_run}


def stop_if_hopeless(ctx: Context, failure: dict | None) -> None:
    """Stop the sweep where every later point would fail alike: a configuration the benchmark
    refuses (exit 2), a results file it cannot write to (exit 4, a full disk), or the machine's
    environment (exit 5, a stale build lock)."""
    if not failure:
        return
    if failure["error"] == "bad_input":
        raise BadInput(f"the benchmark rejected the configuration (exit 2); see {ctx.plan.log_path}")
    if failure["error"] == "environment":
        raise faults.EnvironmentFault(f"the benchmark stopped on this machine's environment (exit 5, its line "
                                      f"above); later points not run: fix it, then run again with the same OUT "
                                      f"to resume")
    if failure["error"] == "write_failed":
        raise WriteFailed(f"the benchmark could not append to {ctx.plan.out} (exit 4: disk full?); later "
                          f"points not run: make room, then run again with the same OUT to resume")


def run_sweep(ctx: Context, todo: list[int], summaries: dict, failures: dict, stopped_at: list) -> bool:
    """Run every pending length, filling summaries and failures (by length) as points end, so
    they hold what ran however the sweep stops; True if interrupted, the point a stop found
    running then in `stopped_at`."""
    durations = []
    last = [time.monotonic()]
    remaining = list(todo)

    def on_summary(summary):
        now = time.monotonic()
        durations.append(now - last[0])
        last[0] = now
        summaries[summary["seq_len"]] = summary
        done = points_ended(todo, summaries, failures)
        say(f"point {done}/{len(todo)} seq_len {summary['seq_len']}: ok, "
            f"{sig(summary.get('tflops_per_gpu'))} TFLOPS/GPU, peak "
            f"{sig(summary.get('peak_mem_gib'))} GiB, {fmt_s(durations[-1])}; elapsed "
            f"{fmt_s(now - ctx.started)}, ETA {fmt_s(eta_s(durations, len(todo) - done))}")

    while remaining:
        batch = process_plan(remaining, ctx.plan.s.REUSE_PROCESS)[0]
        last[0] = time.monotonic()
        result = start_process(ctx, batch, False, on_summary)
        if result.status == "interrupted":
            stopped_at += result.seq_lens[len(result.summaries):][:1]
            return True
        finished = {s["seq_len"] for s in result.summaries}
        failure, error = point_failure(ctx, result)
        if failure:
            failures[failure["seq_len"]] = failure
            say(f"point {points_ended(todo, summaries, failures)}/{len(todo)} seq_len {failure['seq_len']}: "
                f"{failure['error']}: {failure['message']}")
            if error:
                ctx.writer.write("error", **error)
            stop_if_hopeless(ctx, failure)
        remaining = [s for s in remaining if s not in finished and s not in failures]
    return False


def run_capacity(ctx: Context, known: list[Probe]) -> dict:
    s = ctx.plan.s
    if known:
        say("seeding the search with what the file holds for this config: " + ", ".join(
            f"{p.seq_len} {'fits' if p.fits else 'oom'}" for p in sorted(known, key=lambda p: p.seq_len)))

    def run(lengths):
        """Probes of ascending `lengths` up to the first that does not fit: one process, or
        (the default) a fresh process each, as a training job at that length starts."""
        probes = []
        try:
            for batch in process_plan(lengths, s.REUSE_PROCESS):
                probes += run_process_of(batch)
                if not probes or not probes[-1].fits:
                    break
        except ProbesInterrupted as stop:
            raise ProbesInterrupted(probes + stop.probes) from None
        except KeyboardInterrupt:  # a signal between two probes' processes
            raise ProbesInterrupted(probes) from None
        return probes

    def run_process_of(lengths):
        result = start_process(ctx, lengths, True, lambda summary: None)
        hbm = ((result.header or {}).get("hardware") or {}).get("hbm_gib") or ctx.plan.hardware.get("hbm_gib")
        probes = [Probe(x["seq_len"], True, x.get("peak_mem_gib"), hbm) for x in result.summaries]
        if result.status == "interrupted":
            raise ProbesInterrupted(probes)  # the lengths that fitted before the stop still count
        failure, error = point_failure(ctx, result)
        if error:
            ctx.writer.write("error", **error)
        stop_if_hopeless(ctx, failure)
        if failure:
            probes.append(Probe(failure["seq_len"], False, None, hbm, failure["error"]))
        for p in probes:
            say(f"probe seq_len {p.seq_len}: {'fits' if p.fits else 'does not fit (' + p.reason + ')'}"
                f"{'' if p.peak_mem_gib is None else f', peak {sig(p.peak_mem_gib)} GiB'}")
        return probes

    capacity = find_max_seq_len(run, min(s.SEQLENS), s.SEQLEN_STEP, s.MAX_SEQLEN_LIMIT, known)
    ctx.writer.write("capacity", config=ctx.plan.config, **capacity)
    if not capacity["complete"]:
        say("capacity search interrupted: the record holds the bracket found so far; run again "
            "with the same OUT to narrow it")
    return capacity


def main(argv=None) -> int:
    """The sweep; bad input raises BadInput before anything starts (see faults.run_main)."""
    try:
        s = load_settings(sys.argv[1:] if argv is None else argv, __doc__)
        return execute(s, claim_stdout())  # records (or DRY_RUN's commands) only: imports print too
    except KeyboardInterrupt:  # before the sweep's own handlers
        return faults.exit_for_signal(signal.SIGINT)


def execute(s: Settings, stdout) -> int:
    """Plan the sweep, then run it, or write its commands to `stdout` (DRY_RUN); the exit code."""
    plan = prepare(s)
    previous = existing_records(plan.out)
    done = already_done(plan, previous)
    todo = pending(s.SEQLENS, done)
    if not s.DRY_RUN:
        faults.require(SCRIPT, *faults.TRAINING_STACK)  # its processes' Python is this one
    log = Log(plan.log_path)
    for warning in plan.warnings:  # before anything runs; each process's own repeat of it is not echoed
        log.show(f"warning: {warning}\n")
    for line in fit_lines(plan):
        say(f"memory: {line}")
    skipped = unfit(plan, todo)
    todo = [n for n in todo if n not in skipped]
    if s.DRY_RUN:
        dry_run(plan, todo, stdout)
        return 0
    signals = Signals()
    signals.install()  # scancel / kill: the same clean stop as Ctrl-C
    try:
        ctx = Context(plan, RecordWriter(SCRIPT, plan.out, stream=stdout), log, signals)
        return run(ctx, previous, done, todo, skipped)
    finally:
        signals.restore()


def run(ctx: Context, previous: list[dict], done: dict, todo: list[int], skipped=()) -> int:
    """The sweep (or the capacity search) once every check passed: its header, the processes,
    then its `sweep` record and table, whatever stopped it; returns the exit code.

    A record the sweep cannot write (a full disk) stops it like a benchmark that cannot
    (exit 4): later points could not be kept either. Only the header's failure raises
    WriteFailed (nothing has started then).
    """
    plan, s = ctx.plan, ctx.plan.s
    ctx.writer.write("header", **header.fields(
        {**{v.name: getattr(s, v.name) for v in VARS}, **plan.config}, s.NOTES, plan.warnings,
        hardware=plan.hardware, attn_backend=plan.backend, peak_tflops=plan.resolved.peak_tflops,
        peak_source=plan.resolved.peak_source, precision=plan.resolved.precision.name,
        model_cut=plan.resolved.cut and plan.resolved.cut.label(), out=plan.out, log=plan.log_path,
        workload=s.WORKLOAD,
        skipped_seq_lens=sorted(done)))
    say(f"results: {plan.out}  (benchmark log: {plan.log_path})")
    if done:
        say(f"resuming: seq_len {' '.join(map(str, sorted(done)))} already done with this config "
            f"in {plan.out} (a new OUT runs them again)")
        note = fallback_note(previous, done)
        if note:
            sys.stderr.write(f"warning: {note}\n")
    summaries, failures, capacity, interrupted, stopped, stopped_at = {}, {}, None, False, None, []
    for n in skipped:  # not run: the plan's estimate says why, and what would fit it
        f = plan.fits[n]
        failures[n] = {"seq_len": n, "error": DOES_NOT_FIT, "message": f.text()}
        ctx.writer.write("error", seq_len=n, error=DOES_NOT_FIT, message=f"not run: {f.text()} (RUN_UNFIT=1 runs it)",
                         config=plan.config, estimated_peak_gib=f.peak_gib, usable_gib=f.usable_gib)
    try:
        if s.FIND_MAX_SEQLEN:
            capacity = run_capacity(ctx, known_probes(previous, plan.config))
            interrupted = not capacity["complete"]
        else:
            interrupted = run_sweep(ctx, todo, summaries, failures, stopped_at)
    except (KeyboardInterrupt, ProbesInterrupted):
        interrupted = True
    except tuple(faults.STOPS) as err:
        stopped = err
    with ignored():  # what ran gets its record and its table, whatever comes now
        totals = timing_totals([p.timing() for p in ctx.processes])
        try:
            ctx.writer.write("sweep", mode="capacity" if s.FIND_MAX_SEQLEN else "sweep",
                             reuse_process=s.REUSE_PROCESS, interrupted=interrupted,
                             wall_s=time.monotonic() - ctx.started, points_ok=len(summaries),
                             points_failed=len(failures), **totals)
        except WriteFailed as err:
            stopped = stopped or err
        if capacity is not None:
            sys.stderr.write(capacity_table(capacity) + "\n")
        elif not s.FIND_MAX_SEQLEN:
            sys.stderr.write(sweep_table(s.SEQLENS, summaries, failures, done, stopped_at) + "\n")
        say(f"{len(ctx.processes)} process(es), {fmt_s(totals['process_wall_s'])}: start-up "
            f"{fmt_s(totals['startup_s'])}, steps {fmt_s(totals['steps_s'])}")
        if ctx.log.error:
            say(f"the benchmark log {plan.log_path} is incomplete: {ctx.log.error.strerror or ctx.log.error}")
    code = stop(stopped) if stopped else 0
    if interrupted:
        say("interrupted: what finished is in the file; run again with the same OUT to resume")
        return ctx.signals.exit_code()
    if stopped:
        return code
    crashed = [f for f in failures.values() if f["error"] not in ("oom", DOES_NOT_FIT)]
    return faults.EXIT_ERROR if crashed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
