"""run_sweep.sh: the guide's sequence-length sweep and memory ceiling, on one node or many.

Runs benchmark.py over SEQLENS (ascending) under the DeepSpeed launcher and gathers every
record in one JSON-lines file, results/<gpu>_<backend>_<time>.jsonl (or OUT): the only input
plot_results.py needs. All pending lengths run in one benchmark process, so start-up
(launch, model and DeepSpeed init, JIT: 70-120 s per process on an 8B model) is paid once;
a point that fails (OOM, crash, or no summary within POINT_TIMEOUT: its process group is
killed) gets an `error` record and the remaining lengths start in a fresh process. An
existing OUT (or RESUME=1) skips lengths that already have a `summary` with the same
config; Ctrl-C stops cleanly and keeps what was done. Progress and the final table go to
stderr, the records to stdout and the file, the benchmark's own log to <file>.log.

FIND_MAX_SEQLEN=1 finds the largest length that fits instead and writes a `capacity` record:
one step per probe, doubling from the smallest SEQLENS value in one process, then the length
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
import json
import os
import re
import shlex
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import settings
from .child_process import Log, ProcessResult, free_port, run_process, signals_ignored
from .faults import EXIT_BAD_INPUT, EXIT_OOM, EXIT_WRITE_FAILED, BadInput, WriteFailed, run_main, stop
from .paths import REPO
from .records import RecordWriter, claim_stdout, read_lines
from .settings import Var

SCRIPT = "run_sweep.sh"
GUIDE_SEQLENS = [8192, 32768, 65536, 131072, 196608, 262144]
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C

VARS = [
    Var("SEQLENS", "int_list", GUIDE_SEQLENS, "sequence lengths of the sweep", min=1),
    Var("GPUS", "int", 0, "GPUs per node (0 = all visible; 1 without a GPU: CPU ranks)", min=0),
    Var("OUT", "str", "", "results file, or a folder for <gpu>_<backend>_<time>.jsonl "
        "(default results/); an existing file resumes"),
    Var("RESUME", "bool", False, "skip lengths with a summary of the same config in OUT "
        "(default: the newest results/<gpu>_<backend>_*.jsonl)"),
    Var("REUSE_PROCESS", "bool", True, "run all pending lengths in one process (start-up "
        "once); 0 = one process per length"),
    Var("POINT_TIMEOUT", "float", 3600, "seconds a point may go without its summary (a "
        "process's start-up counts toward its first point) before the process group is killed "
        "and the point recorded as timeout (0 = never)", min=0),
    Var("FIND_MAX_SEQLEN", "bool", False, "find the largest length that fits (capacity record) "
        "instead of sweeping"),
    Var("SEQLEN_STEP", "int", 8192, "granularity of FIND_MAX_SEQLEN", min=1),
    Var("MAX_SEQLEN_LIMIT", "int", 1048576, "largest length FIND_MAX_SEQLEN tries (not below "
        "SEQLEN_STEP or the smallest SEQLENS)", min=1),
    Var("HOSTFILE", "str", "", "DeepSpeed hostfile ('host slots=N' per line): multi-node "
        "through the launcher (pdsh + passwordless ssh, shared filesystem)"),
    Var("MASTER_ADDR", "str", "", "address of the first node (multi-node; default: the "
        "launcher asks the first host)"),
    Var("MASTER_PORT", "int", 0, "rendezvous port (0 = a free port on one node, 29500 on many)",
        min=0, max=65535),
    Var("BENCHMARK", "str", str(REPO / "benchmark.py"), "the benchmark script to run"),
    Var("DRY_RUN", "bool", False, "print the command of every process that would run; run nothing"),
]
OWNED = ("SEQ_LEN", "OUTPUT")  # benchmark.py variables the sweep sets per process
PASSED = [v for v in settings.TRAINING_VARS if v.name not in OWNED]
# Read by benchmark.py's imports rather than its settings; carried to other nodes too.
EXTRA_ENV = ("MODEL_DIR", "HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
             "TORCH_CUDA_ARCH_LIST", "TORCH_EXTENSIONS_DIR", "CUDA_HOME", "PYTORCH_CUDA_ALLOC_CONF")
CONFIG_IGNORED = ("SEQ_LEN", "OUTPUT", "NOTES")  # differ between processes of one config
# Peak memory does not depend on how many steps ran: any sweep summary seeds the search.
CAPACITY_IGNORED = CONFIG_IGNORED + ("STEPS", "WARMUP_STEPS")


class Interrupted(Exception):
    """Ctrl-C or SIGTERM (scancel): stop the child, keep what was done.

    `probes`: what the interrupted capacity run had measured before it stopped.
    """

    def __init__(self, probes=()):
        super().__init__()
        self.probes = list(probes)


# ---------------------------------------------------------------- planning (pure)

def slug(name: str | None) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'; no GPU -> 'cpu'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") if name else "cpu"


def resolve_out(out: str, results_dir: str, gpu: str, backend: str, stamp: str, resume: bool,
                existing: list[str]) -> str:
    """The results file: OUT itself, or <gpu>_<backend>_<stamp>.jsonl in OUT (a folder) or
    results_dir; with resume, the newest such file among `existing` (names in that folder)."""
    if out and not out.endswith("/") and not os.path.isdir(out):
        return os.path.abspath(out)
    folder = out or results_dir
    prefix = f"{gpu}_{backend}_"
    ours = sorted(n for n in existing if n.startswith(prefix) and n.endswith(".jsonl"))
    name = ours[-1] if resume and ours else f"{prefix}{stamp}.jsonl"
    return os.path.abspath(os.path.join(folder, name))


def parse_hostfile(text: str) -> list[tuple[str, int]]:
    """[(host, slots)] from DeepSpeed's hostfile format; ValueError names the bad line."""
    hosts = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"(\S+)\s+slots\s*=\s*(\d+)", line)
        if not match or int(match.group(2)) < 1:
            raise ValueError(f"line {number} {raw.strip()!r}: expected 'hostname slots=N'")
        hosts.append((match.group(1), int(match.group(2))))
    if not hosts:
        raise ValueError("no hosts in it")
    return hosts


def gpus_problem(requested: int, visible: int, dry_run: bool, multi_node: bool) -> str | None:
    """GPUS above what this node sees; only checkable for a real run on this node."""
    if dry_run or multi_node or visible == 0 or requested <= visible:
        return None  # visible 0: no GPU, the launcher runs CPU ranks (gloo)
    return f"GPUS={requested}: only {visible} GPU(s) visible on this node"


def launch_argv(python: str, script: str, gpus: int, hostfile: str, master_addr: str,
                master_port: int | None, include: str | None) -> list[str]:
    """The command of one benchmark process: `deepspeed [--hostfile H --master_addr A]
    --num_gpus N [--master_port P] benchmark.py`, with the launcher run as a module of this
    interpreter (the venv's) rather than whichever `deepspeed` is first on PATH.

    One GPU on one node needs no launcher: benchmark.py makes a world of one itself.
    """
    if not hostfile and gpus == 1:
        return [python, "-u", script]
    argv = [python, "-u", "-m", "deepspeed.launcher.runner"]
    if hostfile:
        argv += ["--hostfile", hostfile]
        if master_addr:
            argv += ["--master_addr", master_addr]
    if include:
        argv += ["--include", include]
    elif gpus:
        argv += ["--num_gpus", str(gpus)]
    if master_port:
        argv += ["--master_port", str(master_port)]
    return argv + [script]


def select_devices(visible: str | None, gpus: int) -> tuple[str | None, str | None]:
    """(launcher --include, child CUDA_VISIBLE_DEVICES) honouring the user's
    CUDA_VISIBLE_DEVICES on one node.

    The launcher given --num_gpus N drops CUDA_VISIBLE_DEVICES and takes GPUs 0..N-1, so
    the chosen GPUs go to --include instead and the child's variable is removed ("").
    With one GPU (no launcher) the variable is kept, cut to its first entry. Fewer entries
    than GPUs (a DRY_RUN for a bigger node): --num_gpus as asked.
    """
    entries = [e.strip() for e in (visible or "").split(",") if e.strip()]
    if len(entries) < max(gpus, 1):
        return None, None
    entries = entries[:gpus]
    if gpus == 1:
        return None, entries[0]
    if not all(e.isdigit() for e in entries):
        raise ValueError(f"CUDA_VISIBLE_DEVICES={visible!r}: the DeepSpeed launcher takes GPU "
                         f"indices, not UUIDs")
    return "localhost:" + ",".join(entries), ""


# What every FIND_MAX_SEQLEN probe runs: one full step shows both fit and peak.
PROBE_STEPS = {"STEPS": 1, "WARMUP_STEPS": 0}


def process_env(seq_lens: list[int], output: str, probe: bool) -> dict:
    """What one benchmark process gets on top of the sweep's environment."""
    env = {"SEQ_LEN": " ".join(map(str, seq_lens)), "OUTPUT": output}
    if probe:
        env.update({k: str(v) for k, v in PROBE_STEPS.items()})
    return env


def node_env_lines(environ: dict, overrides: dict, inherited: list[str]) -> list[str]:
    """KEY=VALUE lines of a DeepSpeed env file (DS_ENV_FILE) for multi-node runs.

    DeepSpeed's pdsh runner forwards only PYTHON*/NCCL*-like variables to the other nodes,
    plus the lines of .deepspeed_env: `inherited` keeps the user's own such lines, then
    every benchmark.py variable that is set, then this process's overrides.
    """
    names = [v.name for v in PASSED] + list(EXTRA_ENV)
    lines = [line.rstrip("\n") for line in inherited if "=" in line]
    lines += [f"{n}={environ[n]}" for n in names if environ.get(n) and "\n" not in environ[n]]
    return lines + [f"{k}={v}" for k, v in overrides.items()]


def passed_through(environ) -> dict:
    """The benchmark.py variables set in the sweep's environment (each process inherits them)."""
    return {v.name: environ[v.name] for v in PASSED if environ.get(v.name)}


def shell_line(env: dict, argv: list[str]) -> str:
    """`K=V ... argv` as a shell would take it; a "" value is unset with `env -u`."""
    unset = [f"env -u {k}" for k, v in env.items() if v == ""]
    assign = [f"{k}={shlex.quote(str(v))}" for k, v in env.items() if v != ""]
    return " ".join(unset + assign + [shlex.quote(a) for a in argv])


def config_key(config: dict, ignored=CONFIG_IGNORED) -> str:
    """A benchmark header's config as compared for RESUME (per-process fields dropped)."""
    kept = {k: v for k, v in (config or {}).items() if k not in ignored}
    return json.dumps(kept, sort_keys=True, default=str)


def matching_summaries(records: list[dict], config: dict, ignored=CONFIG_IGNORED) -> list[tuple[dict, dict]]:
    """(summary, its header) for summaries whose run's header has `config` (minus `ignored`)."""
    key = config_key(config, ignored)
    headers = {r["run_id"]: r for r in records
               if r.get("kind") == "header" and config_key(r.get("config"), ignored) == key}
    return [(r, headers[r["run_id"]]) for r in records
            if r.get("kind") == "summary" and r.get("run_id") in headers]


def done_summaries(records: list[dict], config: dict) -> dict[int, dict]:
    """seq_len -> summary already in the file for this config: RESUME skips these."""
    return {summary["seq_len"]: summary for summary, _ in matching_summaries(records, config)}


def known_probes(records: list[dict], config: dict) -> list["Probe"]:
    """What the file already shows for this config (any STEPS): lengths that fit, with their
    peaks, and lengths that ran out of memory. They seed FIND_MAX_SEQLEN, so a search cut
    short (or run after the sweep, into the same OUT) goes on from there."""
    fits = [Probe(summary["seq_len"], True, summary.get("peak_mem_gib"),
                  (header.get("hardware") or {}).get("hbm_gib"))
            for summary, header in matching_summaries(records, config, CAPACITY_IGNORED)]
    key = config_key(config, CAPACITY_IGNORED)
    ooms = [Probe(r["seq_len"], False, reason="oom") for r in records
            if r.get("kind") == "error" and r.get("error") == "oom" and isinstance(r.get("seq_len"), int)
            and config_key(r.get("config"), CAPACITY_IGNORED) == key]
    return fits + ooms


def pending(seq_lens: list[int], done) -> list[int]:
    """Lengths still to run, ascending (memory grows with length: what fits runs first)."""
    return sorted(set(seq_lens) - set(done))


def process_plan(todo: list[int], reuse: bool) -> list[list[int]]:
    """The processes a sweep starts when nothing fails."""
    return [todo] if reuse and todo else [[s] for s in todo]


def classify_exit(code: int) -> tuple[str, str]:
    """(error kind, message) for a benchmark process that ended without an error record."""
    if code == EXIT_OOM:
        return "oom", "exit code 3 (out of memory) without an error record (another rank failed?)"
    if code == EXIT_BAD_INPUT:
        return "bad_input", "exit code 2: the benchmark rejected its configuration"
    if code == EXIT_WRITE_FAILED:
        return "write_failed", "exit code 4: the benchmark could not write its records (disk full?)"
    if code in (-signal.SIGKILL, 128 + signal.SIGKILL, 256 - signal.SIGKILL):
        return "exception", f"killed by SIGKILL (exit {code}): the host's OOM killer?"
    return "exception", f"exit code {code} without an error record"


def eta_s(point_durations_s: list[float], remaining: int) -> float | None:
    """Time left from the mean of the points done (long lengths take longer: a floor)."""
    return statistics.fmean(point_durations_s) * remaining if point_durations_s else None


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def _num(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def sweep_table(seq_lens, summaries: dict, failures: dict, earlier: dict) -> str:
    """seq_len | TFLOPS/GPU | MFU | peak GiB | status, one row per point of the sweep."""
    lines = [f"{'seq_len':>8}  {'TFLOPS/GPU':>10}  {'MFU':>6}  {'peak GiB':>8}  status"]
    for seq_len in sorted(set(seq_lens)):
        r = summaries.get(seq_len) or earlier.get(seq_len) or {}
        status = ("ok" if seq_len in summaries else "ok (earlier run)" if seq_len in earlier
                  else failures[seq_len]["error"] if seq_len in failures else "not run")
        mfu = None if r.get("mfu") is None else f"{100 * r['mfu']:.1f}%"
        lines.append(f"{seq_len:>8}  {_num(r.get('tflops_per_gpu'), '.1f'):>10}  {mfu or '-':>6}  "
                     f"{_num(r.get('peak_mem_gib'), '.1f'):>8}  {status}")
    return "\n".join(lines)


def capacity_table(capacity: dict) -> str:
    lines = [f"{'seq_len':>8}  {'peak GiB':>8}  status"]
    lines += [f"{p['seq_len']:>8}  {_num(p['peak_mem_gib'], '.1f'):>8}  {'fits' if p['fits'] else p['reason']}"
              for p in capacity["probes"]]
    return "\n".join(lines + [f"largest that fits: {capacity['max_fit_seq_len']} (smallest failing: "
                              f"{capacity['min_fail_seq_len']}; {capacity['runs']} runs)"])


def timing_totals(processes: list[dict]) -> dict:
    """Where the sweep's time went, summed over its processes (see ProcessResult.timing)."""
    keys = ("wall_s", "startup_s", "steps_s", "timed_steps_s")
    totals = {("process_" + k if k == "wall_s" else k): sum(p[k] for p in processes) for k in keys}
    return {**totals, "processes": processes}


# ---------------------------------------------------------------- capacity search (pure)

@dataclass(frozen=True)
class Probe:
    seq_len: int
    fits: bool
    peak_mem_gib: float | None = None
    hbm_gib: float | None = None
    reason: str = "ok"  # ok | oom | timeout | exception | ...


def doubling_ladder(start: int, limit: int) -> list[int]:
    """start, 2*start, 4*start ... below limit, then limit itself."""
    ladder = []
    s = start
    while s < limit:
        ladder.append(s)
        s *= 2
    return ladder + [limit]


def bracket(probes: list[Probe]) -> tuple[int, int | None]:
    """(largest length that fit, 0 if none; smallest failing length above it, or None)."""
    lo = max((p.seq_len for p in probes if p.fits), default=0)
    fails = [p.seq_len for p in probes if not p.fits and p.seq_len > lo]
    return lo, min(fails, default=None)


def predict_fit_limit(probes: list[Probe]) -> float | None:
    """Length at which peak memory reaches HBM, on the line through two fitting probes.

    Peak memory is close to linear in tokens once activations dominate (the guide: 12.6 GiB
    + 0.00043 GiB/token), so the largest fit and the largest one at most half its length
    (far apart: little noise in the slope) predict the ceiling.
    """
    fits = sorted((p.seq_len, p.peak_mem_gib, p.hbm_gib) for p in probes
                  if p.fits and p.peak_mem_gib is not None and p.hbm_gib)
    if not fits:
        return None
    s2, m2, hbm = fits[-1]
    lower = [(s, m) for s, m, _ in fits if s <= s2 / 2]
    if not lower:
        return None
    s1, m1 = lower[-1]
    slope = (m2 - m1) / (s2 - s1)
    return s2 + (hbm - m2) / slope if slope > 0 else None


def find_max_seq_len(run, start: int, step: int, limit: int, known=(), guesses: int = 2) -> dict:
    """Largest length that fits, to within `step`, with few runs.

    run(lengths) runs one process over ascending `lengths` and returns a Probe for each
    length up to and including the first that does not fit (a process stops there). With
    no ceiling seen yet, the doubling ladder from `start` runs in one process. Once two
    fits give the memory line (predict_fit_limit), up to `guesses` runs try the length it
    predicts plus the next one, so a good guess closes the bracket in one run; bisection
    does the rest. `known`: fits measured before (the sweep's own summaries), which can
    give the line before the first run.
    An interrupted run (Interrupted) ends the search with what is known so far:
    `complete` is then False and the bracket may be wider than `step`.
    """
    probes, runs, complete = list(known), 0, True

    def launch(lengths):
        nonlocal runs
        runs += 1
        probes.extend(run(lengths))

    lo, hi = bracket(probes)
    while (hi - lo > step) if hi is not None else (lo < limit):
        guess = predict_fit_limit(probes) if guesses else None
        top = limit + step if hi is None else hi  # every length tried stays below top
        try:
            if guess is not None:
                guesses -= 1
                candidate = min(max(int(guess) // step * step, lo + step), top - step)
                launch([candidate] + ([candidate + step] if candidate + step < top else []))
            elif hi is None:
                launch([s for s in doubling_ladder(start, limit) if s > lo])
            else:
                launch([lo + max(1, (hi - lo) // step // 2) * step])
        except Interrupted as stop:
            probes.extend(stop.probes)
            complete = False
        lo, hi = bracket(probes)
        if not complete:
            break
    at_max = [p.peak_mem_gib for p in probes if p.fits and p.seq_len == lo]
    return {"max_fit_seq_len": lo or None, "min_fail_seq_len": hi, "complete": complete,
            "peak_mem_gib_at_max": at_max[-1] if at_max else None,
            "hbm_gib": next((p.hbm_gib for p in probes if p.hbm_gib), None),
            "seq_len_step": step, "runs": runs, "limit_seq_len": limit,
            "probes": [vars(p) for p in sorted(probes, key=lambda p: p.seq_len)]}


# ---------------------------------------------------------------- the sweep

@dataclass
class Context:
    s: dict  # the sweep's and benchmark.py's settings
    out: str
    log_path: str
    python: str
    gpus: int
    hostfile: str
    multi_node: bool
    devices: tuple  # select_devices()
    config: dict  # what a benchmark header of this sweep says, JSON round-tripped
    writer: RecordWriter | None = None
    started: float = field(default_factory=time.monotonic)
    processes: list = field(default_factory=list)
    hardware: dict = field(default_factory=dict)
    run_config: object = None  # engine.RunConfig as resolved on this node

    def command(self, seq_lens: list[int], probe: bool) -> tuple[dict, list[str], list[str]]:
        """(environment changes, argv, DS_ENV_FILE lines) of one benchmark process; a "" value
        unsets. The lines, for a multi-node run only, are written to a file by start_process."""
        env = process_env(seq_lens, self.out, probe)
        include, child_visible = self.devices
        if child_visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = child_visible
        port = self.s["MASTER_PORT"] or (None if self.hostfile or self.gpus == 1 else free_port())
        argv = launch_argv(self.python, os.path.abspath(self.s["BENCHMARK"]), self.gpus, self.hostfile,
                           self.s["MASTER_ADDR"], port, include)
        node_lines = node_env_lines(os.environ, env, user_ds_env()) if self.multi_node else []
        return env, argv, node_lines


def user_ds_env() -> list[str]:
    """The lines DeepSpeed itself would read from DS_ENV_FILE / ~/.deepspeed_env / ./.deepspeed_env."""
    name = os.environ.get("DS_ENV_FILE", ".deepspeed_env")
    lines = []
    for folder in (os.path.expanduser("~"), "."):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            lines += Path(path).read_text().splitlines()
    return lines


def write_node_env(lines: list[str]) -> str:
    fd, path = tempfile.mkstemp(prefix="run_sweep-", suffix=".ds_env")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def say(message: str) -> None:
    sys.stderr.write(f"[run_sweep] {message}\n")
    sys.stderr.flush()


def start_process(ctx: Context, seq_lens: list[int], probe: bool, on_summary, log: Log) -> ProcessResult:
    extra, argv, node_lines = ctx.command(seq_lens, probe)
    if node_lines:
        extra["DS_ENV_FILE"] = write_node_env(node_lines)
    try:
        say(f"process {len(ctx.processes) + 1}: seq_len {' '.join(map(str, seq_lens))}: "
            f"{shell_line({**passed_through(os.environ), **extra}, argv)}")
        env = {**os.environ, **extra, "PYTHONPATH": _pythonpath()}
        if extra.get("CUDA_VISIBLE_DEVICES") == "":
            del env["CUDA_VISIBLE_DEVICES"]
        result = run_process(argv, env, seq_lens, ctx.s["POINT_TIMEOUT"], log, on_summary,
                             ctx.multi_node, ctx.writer.stream)
    finally:
        if node_lines:
            os.unlink(extra["DS_ENV_FILE"])
    ctx.processes.append(result)
    return result


def _pythonpath() -> str:
    return os.pathsep.join([str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))


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
        kind, message = "timeout", (f"no summary within POINT_TIMEOUT={ctx.s['POINT_TIMEOUT']:g} s; "
                                    f"process group killed")
    else:
        kind, message = classify_exit(result.exit_code)
    return {"seq_len": at, "error": kind, "message": message}, {
        "error": kind, "message": message, "seq_len": at, "config": ctx.config,
        "exit_code": result.exit_code, "stderr_tail": "\n".join(result.stderr_tail)}


def stop_if_hopeless(ctx: Context, failure: dict | None) -> None:
    """Stop the sweep where every later point would fail alike: a configuration the benchmark
    refuses (exit 2), or a results file it cannot write to (exit 4, a full disk)."""
    if not failure:
        return
    if failure["error"] == "bad_input":
        raise BadInput(f"the benchmark rejected the configuration (exit 2); see {ctx.log_path}")
    if failure["error"] == "write_failed":
        raise WriteFailed(f"the benchmark could not append to {ctx.out} (exit 4: disk full?); later "
                          f"points not run: make room, then run again with the same OUT to resume")


def run_sweep(ctx: Context, todo: list[int], log: Log, summaries: dict, failures: dict) -> bool:
    """Run every pending length, filling summaries and failures (by length) as points end, so
    they hold what ran however the sweep stops; True if interrupted."""
    durations = []
    last = [time.monotonic()]
    remaining = list(todo)

    def on_summary(summary):
        now = time.monotonic()
        durations.append(now - last[0])
        last[0] = now
        summaries[summary["seq_len"]] = summary
        done = len(summaries) + len(failures)
        say(f"point {done}/{len(todo)} seq_len {summary['seq_len']}: ok, "
            f"{_num(summary.get('tflops_per_gpu'), '.1f')} TFLOPS/GPU, peak "
            f"{_num(summary.get('peak_mem_gib'), '.1f')} GiB, {fmt_s(durations[-1])}; elapsed "
            f"{fmt_s(now - ctx.started)}, ETA {fmt_s(eta_s(durations, len(todo) - done))}")

    while remaining:
        batch = remaining if ctx.s["REUSE_PROCESS"] else remaining[:1]
        last[0] = time.monotonic()
        result = start_process(ctx, batch, False, on_summary, log)
        if result.status == "interrupted":
            return True
        finished = {s["seq_len"] for s in result.summaries}
        failure, error = point_failure(ctx, result)
        if failure:
            failures[failure["seq_len"]] = failure
            say(f"point {len(summaries) + len(failures)}/{len(todo)} seq_len {failure['seq_len']}: "
                f"{failure['error']}: {failure['message']}")
            if error:
                ctx.writer.write("error", **error)
            stop_if_hopeless(ctx, failure)
        remaining = [s for s in remaining if s not in finished and s not in failures]
    return False


def run_capacity(ctx: Context, known: list[Probe], log) -> dict:
    s = ctx.s
    if known:
        say("seeding the search with what the file holds for this config: " + ", ".join(
            f"{p.seq_len} {'fits' if p.fits else 'oom'}" for p in sorted(known, key=lambda p: p.seq_len)))

    def run(lengths):
        result = start_process(ctx, lengths, True, lambda summary: None, log)
        hbm = ((result.header or {}).get("hardware") or {}).get("hbm_gib") or ctx.hardware.get("hbm_gib")
        probes = [Probe(x["seq_len"], True, x.get("peak_mem_gib"), hbm) for x in result.summaries]
        if result.status == "interrupted":
            raise Interrupted(probes)  # the lengths that fitted before the stop still count
        failure, error = point_failure(ctx, result)
        if error:
            ctx.writer.write("error", **error)
        stop_if_hopeless(ctx, failure)
        if failure:
            probes.append(Probe(failure["seq_len"], False, None, hbm, failure["error"]))
        for p in probes:
            say(f"probe seq_len {p.seq_len}: {'fits' if p.fits else 'does not fit (' + p.reason + ')'}"
                f"{'' if p.peak_mem_gib is None else f', peak {p.peak_mem_gib:.1f} GiB'}")
        return probes

    capacity = find_max_seq_len(run, min(s["SEQLENS"]), s["SEQLEN_STEP"], s["MAX_SEQLEN_LIMIT"], known)
    ctx.writer.write("capacity", config=ctx.config, **capacity)
    if not capacity["complete"]:
        say("capacity search interrupted: the record holds the bracket found so far; run again "
            "with the same OUT to narrow it")
    return capacity


def load_settings(argv) -> dict:
    if any(a in ("-h", "--help") for a in argv):
        print(settings.help_text(VARS + PASSED, __doc__))
        sys.exit(0)
    if argv:
        raise BadInput(f"unexpected argument {argv[0]!r}: run_sweep.sh is configured by "
                       f"environment variables (see --help)")
    for name in OWNED:
        if os.environ.get(name):
            raise BadInput(f"{name} is set: the sweep sets it per process; use "
                           f"{'SEQLENS' if name == 'SEQ_LEN' else 'OUT'} instead")
    s = settings.parse(VARS + PASSED)
    check_capacity_bounds(s)
    return s


def check_capacity_bounds(s: dict) -> None:
    """BadInput when FIND_MAX_SEQLEN has nothing to search: a limit below where it starts."""
    limit, step, first = s["MAX_SEQLEN_LIMIT"], s["SEQLEN_STEP"], min(s["SEQLENS"])
    if s["FIND_MAX_SEQLEN"] and limit < max(step, first):
        raise BadInput(f"MAX_SEQLEN_LIMIT={limit}: below SEQLEN_STEP ({step}) or the "
                       f"smallest SEQLENS ({first}), where FIND_MAX_SEQLEN starts")


def prepare(s: dict) -> Context:
    """Every check that can fail, before anything starts (BadInput -> exit 2)."""
    from . import engine, fingerprint

    hostfile = os.path.abspath(s["HOSTFILE"]) if s["HOSTFILE"] else ""
    hosts = []
    if hostfile:
        if not os.path.isfile(hostfile):
            raise BadInput(f"HOSTFILE={s['HOSTFILE']!r}: no such file")
        try:
            hosts = parse_hostfile(Path(hostfile).read_text())
        except ValueError as err:
            raise BadInput(f"HOSTFILE={s['HOSTFILE']!r}: {err}") from None
    if not os.path.isfile(s["BENCHMARK"]):
        raise BadInput(f"BENCHMARK={s['BENCHMARK']!r}: no such file")
    if s["OUT"] and not (s["OUT"].endswith("/") or os.path.isdir(s["OUT"])):
        settings.check_output("OUT", s["OUT"])  # before the imports below: a typo fails at once

    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    multi_node = len(hosts) > 1
    problem = gpus_problem(s["GPUS"], visible, s["DRY_RUN"], bool(hostfile))
    if problem:
        raise BadInput(problem)
    gpus = s["GPUS"] or (0 if hostfile else max(visible, 1))
    if hostfile:  # GPUS=0: every host's slots
        world = gpus * len(hosts) if gpus else sum(slots for _, slots in hosts)
    else:
        world = gpus
    try:
        devices = (None, None) if hostfile else select_devices(os.environ.get("CUDA_VISIBLE_DEVICES"), gpus)
    except ValueError as err:
        raise BadInput(str(err)) from None

    training = {v.name: s[v.name] for v in PASSED}
    training.update(SEQ_LEN=sorted(set(s["SEQLENS"])), OUTPUT="")
    if s["FIND_MAX_SEQLEN"]:
        training.update(PROBE_STEPS)
    rc = engine.resolve(training)
    config = dict(rc.header_config(), world_size=world)  # OUTPUT filled in below
    hardware = fingerprint.hardware()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = s["OUT"] if s["OUT"] and (s["OUT"].endswith("/") or os.path.isdir(s["OUT"])) else str(REPO / "results")
    existing = os.listdir(folder) if os.path.isdir(folder) else []
    out = resolve_out(s["OUT"], str(REPO / "results"), slug(hardware.get("gpu_name")), rc.backend, stamp,
                      s["RESUME"], existing)
    settings.check_output("OUT", out)
    config["OUTPUT"] = out
    return Context(s=s, out=out, log_path=re.sub(r"\.jsonl$", "", out) + ".log", python=sys.executable,
                   gpus=gpus, hostfile=hostfile, multi_node=multi_node, devices=devices,
                   config=json.loads(json.dumps(config, default=str)), hardware=hardware, run_config=rc)


def existing_records(path: str) -> list[dict]:
    if not os.path.isfile(path):
        return []
    with open(path, encoding="utf-8") as f:
        return read_lines(f, path)[0]


def dry_run(ctx: Context, todo: list[int], out) -> None:
    plans = [(lens, True) for lens in [doubling_ladder(min(ctx.s["SEQLENS"]), ctx.s["MAX_SEQLEN_LIMIT"])]] \
        if ctx.s["FIND_MAX_SEQLEN"] else [(lens, False) for lens in process_plan(todo, ctx.s["REUSE_PROCESS"])]
    for lens, probe in plans:
        extra, argv, node_lines = ctx.command(lens, probe)
        if node_lines:  # shown, not written: a dry run leaves nothing behind
            extra["DS_ENV_FILE"] = "(a temporary file of the lines below)"
        out.write(shell_line({**passed_through(os.environ), **extra}, argv) + "\n")
        out.writelines(f"#   {line}\n" for line in node_lines)
    if ctx.s["FIND_MAX_SEQLEN"]:
        out.write("# later probes depend on where this one runs out of memory\n")


def main(argv=None) -> int:
    """The sweep; bad input raises BadInput before anything starts (see faults.run_main)."""
    try:
        s = load_settings(sys.argv[1:] if argv is None else argv)
        stdout = claim_stdout()  # records (or DRY_RUN's commands) only: imports print too
        ctx = prepare(s)
        previous = existing_records(ctx.out)
        done = {} if s["FIND_MAX_SEQLEN"] else done_summaries(previous, ctx.config)
        todo = pending(s["SEQLENS"], done)
        if s["DRY_RUN"]:
            dry_run(ctx, todo, stdout)
            return 0
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)  # scancel / kill: same clean stop as Ctrl-C
    ctx.writer = RecordWriter(SCRIPT, ctx.out, stream=stdout)
    return run(ctx, previous, done, todo)


def run(ctx: Context, previous: list[dict], done: dict, todo: list[int]) -> int:
    """The sweep (or the capacity search) once every check passed: its header, the processes,
    then its `sweep` record and table, whatever stopped it; returns the exit code.

    A record the sweep cannot write (a full disk) stops it like a benchmark that cannot
    (exit 4): later points could not be kept either. Only the header's failure raises
    WriteFailed (nothing has started then).
    """
    from . import header

    s, rc = ctx.s, ctx.run_config
    ctx.writer.write("header", **header.fields(
        {**{v.name: s[v.name] for v in VARS}, **ctx.config}, s["NOTES"], rc.warnings,
        hardware=ctx.hardware, attn_backend=rc.backend, peak_tflops=rc.peak_tflops,
        peak_source=rc.peak_source, out=ctx.out, log=ctx.log_path, skipped_seq_lens=sorted(done)))
    say(f"results: {ctx.out}  (benchmark log: {ctx.log_path})")
    if done:
        say(f"resuming: seq_len {' '.join(map(str, sorted(done)))} already done with this config")
    summaries, failures, capacity, interrupted, stopped = {}, {}, None, False, None
    log = Log(ctx.log_path)
    try:
        if s["FIND_MAX_SEQLEN"]:
            capacity = run_capacity(ctx, known_probes(previous, ctx.config), log)
            interrupted = not capacity["complete"]
        else:
            interrupted = run_sweep(ctx, todo, log, summaries, failures)
    except (KeyboardInterrupt, Interrupted):
        interrupted = True
    except (BadInput, WriteFailed) as err:
        stopped = err
    with signals_ignored():  # what ran gets its record and its table, whatever comes now
        totals = timing_totals([p.timing() for p in ctx.processes])
        try:
            ctx.writer.write("sweep", mode="capacity" if s["FIND_MAX_SEQLEN"] else "sweep",
                             reuse_process=s["REUSE_PROCESS"], interrupted=interrupted,
                             wall_s=time.monotonic() - ctx.started, points_ok=len(summaries),
                             points_failed=len(failures), **totals)
        except WriteFailed as err:
            stopped = stopped or err
        if capacity is not None:
            sys.stderr.write(capacity_table(capacity) + "\n")
        elif not s["FIND_MAX_SEQLEN"]:
            sys.stderr.write(sweep_table(s["SEQLENS"], summaries, failures, done) + "\n")
        say(f"{len(ctx.processes)} process(es), {fmt_s(totals['process_wall_s'])}: start-up "
            f"{fmt_s(totals['startup_s'])}, steps {fmt_s(totals['steps_s'])}")
        if log.error:
            say(f"the benchmark log {ctx.log_path} is incomplete: {log.error.strerror or log.error}")
    code = stop(stopped) if stopped else 0
    if interrupted:
        say("interrupted: what finished is in the file; run again with the same OUT to resume")
        return EXIT_INTERRUPTED
    if stopped:
        return code
    crashed = [f for f in failures.values() if f["error"] != "oom"]
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
