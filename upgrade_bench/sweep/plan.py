"""Planning a sweep: its settings, which processes run which lengths with which command, and
what an existing results file already holds (RESUME). Nothing here starts a process.

Planning imports neither torch nor transformers: the GPUs come from NVML or amdsmi (devices), and
whatever only the benchmark can check (the model, its sizes, packing against it) is checked
by the benchmark's first process, whose exit 2 stops the sweep. So a DRY_RUN answers at once.
"""
import json
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..hardware import devices, gpus as gpu_table
from ..training import resolver, variables, workloads
from ..models import model
from .. import settings
from . import launch
from ..kernels.ranks import free_port
from ..faults import BadInput
from ..hardware.fingerprint import Device
from ..paths import REPO
from ..log.records import read_log
from ..log.runs import run_identity, torch_fallbacks, with_headers
from ..settings import Settings, Var
from .capacity import PROBE_STEPS, doubling_ladder
from . import fit

GUIDE_SEQLENS = [8192, 32768, 65536, 131072, 196608, 262144]
# A sweep without a GPU tries the suite out: its records go to this ignored folder, not to
# the committed results/.
CPU_OUT = "out"

VARS = [
    Var("SEQLENS", "int_list", GUIDE_SEQLENS, "sequence lengths of the sweep", min=1, max=variables.MAX_TOKENS),
    Var("GPUS", "int", 0, "GPUs per node (0 = all visible; 1 without a GPU: CPU ranks)", min=0, max=1024),
    Var("OUT", "path", "", "results file, or a folder for <gpu>_<backend>_<time>.jsonl "
        f"(default results/, {CPU_OUT}/ without a GPU); an existing file resumes"),
    Var("RESUME", "bool", False, "skip lengths with a summary of the same config in OUT (and its "
        "decomposition, with DECOMPOSE) (default: the newest <gpu>_<backend>_*.jsonl of the default folder)"),
    # A length's peak memory depends on the allocator's history: on an H200, the guide's
    # long-context config after shorter lengths in the same process reserved 2.3 GiB more at
    # 32K and 14.7 GiB more at 128K than the guide's script in a fresh process
    # (results/side-by-side/README.md). A training job starts fresh, so each length does.
    Var("REUSE_PROCESS", "bool", False, "run all pending lengths in one process: start-up "
        "once, but each length's peak memory then depends on the lengths before it; 0 = a "
        "fresh process per length, as a training job starts"),
    Var("POINT_TIMEOUT", "float", 3600, "seconds a point may go without its summary (a "
        "process's start-up counts toward its first point) before the process group is killed "
        "and the point recorded as timeout (0 = never)", min=0),
    Var("FIND_MAX_SEQLEN", "bool", False, "find the largest length that fits (capacity record) "
        "instead of sweeping"),
    Var("SEQLEN_STEP", "int", 8192, "granularity of FIND_MAX_SEQLEN", min=1, max=variables.MAX_TOKENS),
    Var("MAX_SEQLEN_LIMIT", "int", 1048576, "largest length FIND_MAX_SEQLEN tries (not below "
        "SEQLEN_STEP or the smallest SEQLENS)", min=1, max=variables.MAX_TOKENS),
    Var("HOSTFILE", "str", "", "DeepSpeed hostfile ('host slots=N' per line): multi-node "
        "through the launcher (pdsh + passwordless ssh, shared filesystem)"),
    Var("MASTER_ADDR", "str", "", "address of the first node (multi-node; default: the "
        "launcher asks the first host)"),
    Var("MASTER_PORT", "int", 0, "rendezvous port (0 = a free port on one node, 29500 on many)",
        min=0, max=65535),
    Var("BENCHMARK", "str", "benchmark.py", "the benchmark script to run (relative: to the repository)"),
    Var("DRY_RUN", "bool", False, "print the command of every process that would run; run nothing"),
    Var("PLAN_GPU", "str", "", "with DRY_RUN=1: plan for this GPU of the table (H100, H200, B200 ...; GPUS "
        "of them, 1 if unset), its memory the table's HBM, instead of the GPUs visible here"),
    Var("RUN_UNFIT", "bool", False, "run the points the plan estimates do not fit the GPU's memory too "
        "(0: each gets an `error` record `does_not_fit` with its estimate, and does not run)"),
]
OWNED = ("SEQ_LEN", "OUTPUT")  # benchmark.py variables the sweep sets per process
# benchmark.py's variables the sweep passes on; its WORKLOAD defaults to `auto` (workloads.auto_name),
# resolved before the plan and passed to each process by name.
PASSED = [replace(v, default=workloads.AUTO, choices=(workloads.AUTO, *v.choices), help=workloads.help_text(True))
          if v.name == "WORKLOAD" else v for v in variables.TRAINING_VARS if v.name not in OWNED]
# Read by benchmark.py's imports rather than its settings; carried to other nodes too.
EXTRA_ENV = ("MODEL_DIR", "HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE",
             "TORCH_CUDA_ARCH_LIST", "TORCH_EXTENSIONS_DIR", "CUDA_HOME", "PYTORCH_CUDA_ALLOC_CONF")


def slug(name: str | None) -> str:
    """'NVIDIA H200' -> 'nvidia-h200'; no GPU -> 'cpu'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") if name else "cpu"


def resolve_training(train, first_gpu, world: int, model_config=None) -> resolver.Resolved:
    """What a benchmark process of these `train` settings runs on `first_gpu` (None: CPU
    ranks), resolved as the process itself will (training/resolver.py), from `model_config`
    (default: MODEL's config.json, read without transformers); BadInput for what it would refuse."""
    device = Device(first_gpu.capability, first_gpu.is_hip) if first_gpu else Device(None)
    machine = resolver.machine_for(device, first_gpu and first_gpu.name, world, train.ATTN_BACKEND)
    config = model_config if model_config is not None else model.cheap_config(train.MODEL)
    return resolver.resolve(train, machine, config, train.SEQ_LEN)


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


def user_ds_env() -> list[str]:
    """The lines DeepSpeed itself would read from DS_ENV_FILE / ~/.deepspeed_env / ./.deepspeed_env."""
    name = os.environ.get("DS_ENV_FILE", ".deepspeed_env")
    lines = []
    for folder in (os.path.expanduser("~"), "."):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            lines += Path(path).read_text().splitlines()
    return lines


# The sweep's own settings that torch.distributed reads as well, so its processes keep them.
CHILD_READS = ("MASTER_ADDR", "MASTER_PORT")


def without_sweep_settings(environ) -> dict:
    """`environ` less the sweep's own settings: a benchmark process given SEQLENS would warn
    of it as a misspelling of its SEQ_LEN."""
    own = {v.name for v in VARS} - set(CHILD_READS)
    return {k: v for k, v in environ.items() if k not in own}


def passed_through(environ) -> dict:
    """The benchmark.py variables set in the sweep's environment (each process inherits them)."""
    return {v.name: environ[v.name] for v in PASSED if environ.get(v.name)}


def shell_line(env: dict, argv: list[str]) -> str:
    """`K=V ... argv` as a shell would take it; a "" value is unset with `env -u`."""
    unset = [f"env -u {k}" for k, v in env.items() if v == ""]
    assign = [f"{k}={shlex.quote(str(v))}" for k, v in env.items() if v != ""]
    return " ".join(unset + assign + [shlex.quote(a) for a in argv])


def done_summaries(records: list[dict], config: dict, seq_lens: list[int], backend: str | None = None,
                   decomposed: bool = False) -> dict[int, dict]:
    """seq_len -> summary already in the file for a run of this config and resolved attention
    backend, of the lengths asked for: RESUME skips these. With `decomposed` (DECOMPOSE asked)
    a point is done only with its `decomposition` too: the run identity leaves DECOMPOSE out,
    so a summary alone (a sweep without it, a process stopped between the two) does not do."""
    key = run_identity(config)[1]

    def ours(header) -> bool:
        return bool(header) and run_identity(header.get("config"))[1] == key and (
            backend is None or header.get("attn_backend") in (None, backend))

    pairs = with_headers(records)
    done = {r["seq_len"]: r for r, header in pairs
            if r.get("kind") == "summary" and r.get("seq_len") in seq_lens and ours(header)}
    if decomposed:
        split = {r.get("seq_len") for r, header in pairs if r.get("kind") == "decomposition" and ours(header)}
        done = {n: r for n, r in done.items() if n in split}
    return done


def already_done(plan: "Plan", previous: list[dict]) -> dict[int, dict]:
    """seq_len -> summary of the points of this sweep that OUT's records (`previous`) hold:
    what RESUME skips, and what run_node.sh counts as done."""
    if plan.s.FIND_MAX_SEQLEN:
        return {}
    return done_summaries(previous, plan.config, plan.s.SEQLENS, plan.backend, plan.s.DECOMPOSE > 0)


def fallback_note(records: list[dict], done: dict) -> str:
    """What a resumed sweep keeps that ran on transformers' torch fallback for a hybrid's fast
    kernels (its header's mixer_kernels), in a line; '' where nothing did. Kept, not rerun: the
    plan cannot know without importing them whether the kernels would load now."""
    slow = {}
    for r, header in with_headers(records):
        if r.get("kind") == "summary" and done.get(r.get("seq_len")) is r:
            for kernel in torch_fallbacks((header or {}).get("mixer_kernels")):
                slow.setdefault(kernel, set()).add(r["seq_len"])
    if not slow:
        return ""
    lens = sorted(set().union(*slow.values()))
    return (f"seq_len {' '.join(map(str, lens))} kept from {'its run' if len(lens) == 1 else 'their runs'} on "
            f"transformers' torch fallback for {', '.join(sorted(slow))}; with the kernels installed since, a "
            "new OUT measures them (the report keeps the two apart)")


def pending(seq_lens: list[int], done) -> list[int]:
    """Lengths still to run, ascending (memory grows with length: what fits runs first)."""
    return sorted(set(seq_lens) - set(done))


def unfit(plan: "Plan", todo: list[int]) -> list[int]:
    """Of `todo`, the lengths the plan estimates do not fit and will not run (RUN_UNFIT=1: none)."""
    if plan.s.RUN_UNFIT or plan.s.FIND_MAX_SEQLEN:
        return []
    return [n for n in todo if n in plan.fits and plan.fits[n].verdict == fit.NO_FIT]


def fit_lines(plan: "Plan") -> list[str]:
    """'seq_len 32768: does not fit: needs ~84 GiB of 78 ...', one per point with a verdict."""
    def said(f):
        if f.verdict != fit.NO_FIT:
            return f.text()
        return f.text() + ("; RUN_UNFIT=1: run anyway" if plan.s.RUN_UNFIT else "; not run (RUN_UNFIT=1 runs it)")
    return [f"seq_len {n}: {said(f)}" for n, f in sorted(plan.fits.items())]


def process_plan(todo: list[int], reuse: bool) -> list[list[int]]:
    """The processes a sweep starts when nothing fails."""
    return [todo] if reuse and todo else [[s] for s in todo]


@dataclass(frozen=True)
class Plan:
    """What a sweep runs, as checked before anything starts."""
    s: Settings  # the sweep's and benchmark.py's settings
    out: str
    log_path: str
    python: str
    gpus: int
    hostfile: str
    multi_node: bool
    devices: tuple  # launch.select_devices()
    config: dict  # what a benchmark header of this sweep says, JSON round-tripped
    hardware: dict
    resolved: resolver.Resolved  # what each benchmark process will run (the same resolver's answer)
    fits: dict = field(default_factory=dict)  # seq_len -> fit.Fit on this GPU (none: memory or model unknown)

    @property
    def backend(self) -> str:
        return self.resolved.backend

    @property
    def warnings(self) -> tuple:
        return self.resolved.warnings

    def picks_port(self) -> bool:
        """Whether each process gets a free port found now (the launcher on one node)."""
        return not (self.s.MASTER_PORT or self.hostfile or self.gpus == 1)

    def command(self, seq_lens: list[int], probe: bool) -> tuple[dict, list[str], list[str]]:
        """(environment changes, argv, DS_ENV_FILE lines) of one benchmark process; a "" value
        unsets. The lines, for a multi-node run only, are written to a file by the runner."""
        env = process_env(seq_lens, self.out, probe)
        if self.s.WORKLOAD != workloads.NONE:  # resolved: `auto` is the sweep's, by the GPUs it planned for
            env["WORKLOAD"] = self.s.WORKLOAD
        if self.config.get("DATA"):
            env["DATA"] = self.config["DATA"]  # absolute (prepare)
        include, child_visible = self.devices
        if child_visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = child_visible
        port = free_port() if self.picks_port() else self.s.MASTER_PORT or None
        argv = launch.launch_argv(self.python, str(REPO / self.s.BENCHMARK), self.gpus, self.hostfile,
                           self.s.MASTER_ADDR, port, include)
        node_lines = node_env_lines(os.environ, env, user_ds_env()) if self.multi_node else []
        return env, argv, node_lines


def load_settings(argv, doc: str, known=()) -> dict:
    """The sweep's and benchmark.py's settings; BadInput for an argument, a bad value or a
    misspelt name (`known`: a parent's settings, see settings.misspelt)."""
    if any(a in ("-h", "--help") for a in argv):
        settings.print_help(settings.help_text(VARS + PASSED, doc))
    if argv:
        raise BadInput(f"unexpected argument {argv[0]!r}: run_sweep.sh is configured by "
                       f"environment variables (see --help)")
    for name in OWNED:
        if os.environ.get(name):
            raise BadInput(f"{name} is set: the sweep sets it per process; use "
                           f"{'SEQLENS' if name == 'SEQ_LEN' else 'OUT'} instead")
    s = settings.parse(VARS + PASSED)
    settings.check_misspelt(VARS + PASSED, known=known)
    check_plan_gpu(s)
    if s.WORKLOAD == workloads.AUTO:
        seen = len(planned_gpus(s, os.environ))  # none: CPU ranks, whatever GPUS says
        name = workloads.auto_name(seen and (s.GPUS or seen), bool(os.environ.get("MODEL")))
        s = settings.parse(VARS + PASSED, {**os.environ, "WORKLOAD": name})
    check_capacity_bounds(s)
    return s


def check_plan_gpu(s: Settings) -> None:
    """BadInput for a PLAN_GPU outside a dry run, or one the GPU table does not know."""
    if not s.PLAN_GPU:
        return
    if not s.DRY_RUN:
        raise BadInput(f"PLAN_GPU={s.PLAN_GPU!r} without DRY_RUN=1: a run measures the GPUs it has; add DRY_RUN=1 "
                       f"to plan for another")
    if gpu_table.lookup(s.PLAN_GPU) is None:
        raise BadInput(f"PLAN_GPU={s.PLAN_GPU!r}: not a GPU of the table; expected one of "
                       f"{', '.join(gpu_table.names())}")


def planned_gpus(s: Settings, environ) -> list:
    """The GPUs the plan is for: PLAN_GPU's (GPUS of them, the table's HBM), else those visible."""
    if not s.PLAN_GPU:
        return devices.visible_gpus(environ)
    spec = gpu_table.lookup(s.PLAN_GPU)
    capability, hip = gpu_table.DIE_CAPABILITY.get(spec.die, (None, False))
    return [devices.Gpu(spec.name, spec.hbm_gib, capability, hip)] * (s.GPUS or 1)


def check_capacity_bounds(s: Settings) -> None:
    """BadInput when FIND_MAX_SEQLEN has nothing to search (a limit below where it starts) or
    is asked for what its one-step probes cannot give."""
    if s.FIND_MAX_SEQLEN and s.DECOMPOSE:
        raise BadInput(f"DECOMPOSE={s.DECOMPOSE} with FIND_MAX_SEQLEN=1: a capacity probe times one step "
                       f"and writes no point to decompose; decompose a sweep's points (FIND_MAX_SEQLEN=0)")
    limit, step, first = s.MAX_SEQLEN_LIMIT, s.SEQLEN_STEP, min(s.SEQLENS)
    if s.FIND_MAX_SEQLEN and limit < max(step, first):
        raise BadInput(f"MAX_SEQLEN_LIMIT={limit}: below SEQLEN_STEP ({step}) or the "
                       f"smallest SEQLENS ({first}), where FIND_MAX_SEQLEN starts")


def prepare(s: Settings, environ=os.environ, hbm_gib: float | None = None) -> Plan:
    """Every check the sweep can make before anything starts (BadInput -> exit 2), and whether
    each point fits the GPU's memory (`hbm_gib`: a measured figure; default the first GPU's)."""
    hostfile = os.path.abspath(s.HOSTFILE) if s.HOSTFILE else ""
    hosts = []
    if hostfile:
        if not os.path.isfile(hostfile):
            raise BadInput(f"HOSTFILE={s.HOSTFILE!r}: no such file")
        try:
            hosts = launch.parse_hostfile(Path(hostfile).read_text())
        except ValueError as err:
            raise BadInput(f"HOSTFILE={s.HOSTFILE!r}: {err}") from None
    if not (REPO / s.BENCHMARK).is_file():
        raise BadInput(f"BENCHMARK={s.BENCHMARK!r}: no such file")
    if not s.BENCHMARK.endswith(".py"):  # each point runs it under Python (or the DeepSpeed launcher)
        raise BadInput(f"BENCHMARK={s.BENCHMARK!r}: not a Python script (.py), which each point runs "
                       f"with the project's interpreter; the default is benchmark.py")
    problem = model.cheap_problem(s.MODEL)
    if problem:  # before any process starts, DRY_RUN too: not 12 lines from a benchmark later
        raise BadInput(problem)
    out_is_folder = s.OUT.endswith("/") or os.path.isdir(s.OUT)
    if s.OUT and not out_is_folder:
        settings.check_output("OUT", s.OUT)

    seen = planned_gpus(s, environ)
    first = seen[0] if seen else None
    problem = launch.gpus_problem(s.GPUS, len(seen), s.DRY_RUN, bool(hostfile), len(os.sched_getaffinity(0)))
    if problem:
        raise BadInput(problem)
    per_node = s.GPUS or (0 if hostfile else max(len(seen), 1))
    if hostfile:  # GPUS=0: every host's slots
        world = per_node * len(hosts) if per_node else sum(slots for _, slots in hosts)
    else:
        world = per_node
    try:
        selected = (None, None) if hostfile else launch.select_devices(environ.get("CUDA_VISIBLE_DEVICES"), per_node)
    except ValueError as err:
        raise BadInput(str(err)) from None
    passed = {v.name: getattr(s, v.name) for v in PASSED}
    passed.update(SEQ_LEN=sorted(set(s.SEQLENS)), OUTPUT="")
    if passed["DATA"]:  # each process runs in the repository: DATA as this shell meant it
        passed["DATA"] = os.path.abspath(passed["DATA"])
    if s.FIND_MAX_SEQLEN:
        passed.update(PROBE_STEPS)
    train = settings.settings_type(variables.TRAINING_VARS)(**passed)
    resolved = resolve_training(train, first, world)
    backend = resolved.backend
    config = resolved.config(environ.get("PYTORCH_CUDA_ALLOC_CONF", ""))
    default_folder = str(REPO / ("results" if first or hostfile else CPU_OUT))
    folder = s.OUT if s.OUT and out_is_folder else default_folder
    existing = os.listdir(folder) if os.path.isdir(folder) else []
    out = resolve_out(s.OUT, default_folder, slug(first and first.name), backend,
                      time.strftime("%Y%m%d-%H%M%S"), s.RESUME, existing)
    settings.check_output("OUT", out)
    config["OUTPUT"] = out
    hbm = hbm_gib or (first.hbm_gib if first else None)
    full = model.cheap_config(train.MODEL) if resolved.cut else None
    fits = {n: f for n in sorted(set(s.SEQLENS))
            if (f := fit.point_fits(train, world, resolved.cut, full, n, hbm)) is not None}
    return Plan(s=s, out=out, log_path=re.sub(r"\.jsonl$", "", out) + ".log", python=sys.executable,
                gpus=per_node, hostfile=hostfile, multi_node=len(hosts) > 1, devices=selected,
                config=json.loads(json.dumps(config, default=str)), hardware=devices.hardware(seen),
                resolved=resolved, fits=fits)


def existing_records(path: str) -> list[dict]:
    """What OUT already holds (RESUME, capacity seeds); BadInput if it is no readable log."""
    return read_log(path, "OUT")


def dry_run(plan: Plan, todo: list[int], out) -> None:
    """Write the command of every process the sweep would start to `out`; run nothing."""
    s = plan.s
    lengths, probe = ((doubling_ladder(min(s.SEQLENS), s.MAX_SEQLEN_LIMIT), True)
                      if s.FIND_MAX_SEQLEN else (todo, False))
    plans = [(lens, probe) for lens in process_plan(lengths, s.REUSE_PROCESS)]
    for lens, probe in plans:
        extra, argv, node_lines = plan.command(lens, probe)
        if node_lines:  # shown, not written: a dry run leaves nothing behind
            extra["DS_ENV_FILE"] = "(a temporary file of the lines below)"
        out.write(shell_line({**passed_through(os.environ), **extra}, argv) + "\n")
        out.writelines(f"#   {line}\n" for line in node_lines)
    if s.FIND_MAX_SEQLEN:
        out.write("# the ladder stops at its first length that does not fit; later probes depend on "
                  "where that is\n")
