"""run_node.sh's plan: its steps and their commands, what the node's folder already holds of
this request, and the estimate of what is left. Nothing here starts a process.

Every step has an identity: the machine (GPU name and count), and what the step measures as
its script resolves it (the training steps: the sweep's resolved run identity, log/runs.py,
and attention backend; the others: their own settings). A step is done only where its
records answer this identity: the sweep and the decomposition by point (sweep_plan.
already_done, RESUME's own test), attention by length, the other steps by a `node_step`
record of a run that ended with exit 0. Records of another identity in the folder are
refused (folder_conflict), never mixed with this request's.

The decomposition step is a sweep of DECOMPOSE_SEQLENS with DECOMPOSE=N: the sweep's plan,
settings (Liger included) and identity, each length in a process of its own, a point that
does not fit a recorded error; RESUME counts a point of it done only with its decomposition.
"""
import os
import signal
from dataclasses import dataclass, field, replace
from pathlib import Path

from ... import faults
from ...faults import BadInput
from ...hardware import devices, fingerprint
from ...kernels.attention import bench as attn_bench
from ...kernels import timing
from ...log.records import read_log
from ...log.runs import identity_difference, run_identity, with_headers
from ...numfmt import fmt_s
from ...paths import REPO
from ...training import extensions, memory, workloads
from .. import fit, plan as sweep_plan
from . import cost
from ... import settings
from ...settings import Settings

STEPS = ("capabilities", "mamf", "hbm", "comm", "attention", "sweep", "decomposition")
TRAINING_STEPS = ("sweep", "decomposition")
OUTPUTS = {"capabilities": "capabilities.jsonl", "mamf": "mamf.jsonl", "hbm": "hbm.jsonl", "comm": "comm.jsonl",
           "attention": "attention.jsonl", "sweep": "sweep.jsonl", "decomposition": "decompose.jsonl"}
# A kernel benchmark's timing window changes how precisely a point is timed, not what it measures.
TIMING = frozenset(v.name for v in timing.window_vars(attn_bench.TIMING_DEFAULTS, ""))
# Nor does how a step's ranks are started (bench_comm.py's RANKS, NNODES and NODE_RANK, settings newer
# than some folders).
NOT_MEASURED = TIMING | {"RANKS", "NNODES", "NODE_RANK"}
# bench_flash_attn.py records the heads it resolved from MODEL where these were 0 (unset).
HEAD_SETTINGS = ("NHEADS", "NHEADS_KV", "HEAD_DIM")
DECOMPOSE_STEPS = 3  # profiled steps per point: bench_decompose.py's PROFILE_STEPS


@dataclass
class Step:
    name: str
    argv: list
    env: dict                       # what it gets on top of the node's environment
    output: str                     # its records file, in the node's folder
    identity: dict                  # what it measures, as compared with the folder's records
    lengths: list | None = None     # the lengths it covers (None: a step without lengths)
    todo: list | None = None        # of those, the ones still to run
    done: bool = False              # a step without lengths: done in an earlier run
    estimate_s: float | None = None  # of what is left to run
    cannot: str | None = None       # why this machine cannot run it (a training state past a CPU host's memory)
    not_asked: list = field(default_factory=list)  # the default's lengths left out of the request: they do not fit
    sweep: sweep_plan.Plan | None = field(default=None, repr=False)  # a training step's sweep

    @property
    def finished(self) -> bool:
        return self.done if self.lengths is None else not self.todo

    def run_env(self) -> dict:
        """`env` as this run gives it: attention only the lengths no earlier run measured (a
        training step's sweep skips its points itself, RESUME=1, and shows them in its table)."""
        if self.name == "attention":
            return {**self.env, "SEQLENS": " ".join(map(str, self.todo))}
        return dict(self.env)


def training_step(name: str, train: Settings, out: Path, lengths: list, decompose: int, dry_run: bool,
                  machine: dict, environ, hbm_gib: float | None = None) -> Step:
    """The sweep or the decomposition step: run_sweep.sh on `lengths`, planned by the sweep's own
    planner (sweep_plan.prepare: its checks, resolution, RESUME and what fits), what is left to
    run (the lengths that do not fit are not: the sweep records why) and its estimate."""
    env = {"OUT": str(out / OUTPUTS[name]), "RESUME": "1", "SEQLENS": " ".join(map(str, lengths))}
    if train.WORKLOAD != workloads.NONE:  # resolved here: the sweep runs what this plan planned
        env["WORKLOAD"] = train.WORKLOAD
    if decompose:
        env["DECOMPOSE"] = str(decompose)
    plan = sweep_plan.prepare(replace(train, SEQLENS=lengths, OUT=env["OUT"], RESUME=True,
                                       DECOMPOSE=decompose or train.DECOMPOSE, DRY_RUN=dry_run), environ, hbm_gib)
    todo = sweep_plan.pending(lengths, sweep_plan.already_done(plan, sweep_plan.existing_records(plan.out)))
    todo = [n for n in todo if n not in sweep_plan.unfit(plan, todo)]
    identity = {**machine, **run_identity(plan.config)[0], "attn_backend": plan.backend}
    return Step(name, ["bash", str(REPO / "run_sweep.sh")], env, OUTPUTS[name], identity, sorted(set(lengths)),
                todo, estimate_s=cost.points_s(plan, todo, cost.mixer_tuning(
                    plan.resolved.cut and plan.resolved.cut.counted, environ) == "each"),
                cannot=None if machine["gpu_count"] else host_problem(plan), sweep=plan)


def host_problem(plan: sweep_plan.Plan) -> str | None:
    """Why a training step of `plan` cannot run on a host without a GPU (its weights, gradients
    and Adam state past the host's memory: the benchmark's own check), or None."""
    s, r = plan.s, plan.resolved
    if r.cut is None:
        return None
    return memory.fit_problem(s.MODEL, r.cut.built.total_params, s.ZERO_STAGE, r.world_size,
                              s.OFFLOAD_OPTIMIZER, None, fingerprint.host_ram_bytes())


def child_identity(module, env: dict) -> dict:
    """A step script's settings as it will parse them from `env` (BadInput now, not after the
    steps before it ran), less what does not change what it measures."""
    parsed = settings.parse(module.VARS, env)
    getattr(module, "validate", lambda s: None)(parsed)
    return run_identity(settings.as_dict(parsed), ignore=NOT_MEASURED)[0]


def plan(s: Settings, train: Settings, out: Path, python: str, children: dict, environ, own: set) -> list:
    """Every step, in order, with its command, identity, what is left of it and its estimate
    (SKIP's steps too: the folder must not hold another configuration of them either);
    `children`: the step scripts' modules (node.main.CHILDREN); `own`: the node's settings."""
    seen = sweep_plan.planned_gpus(train, environ)
    machine = {"gpu_name": seen[0].name if seen else None, "gpu_count": len(seen)}
    on_gpu = bool(seen)  # the steps' constants are an H100's and H200's: on a CPU host no step has an estimate
    train_lengths = sorted(set(train.SEQLENS))
    hbm = measured_hbm_gib(out)
    sweep = training_step("sweep", train, out, train_lengths, 0, s.DRY_RUN, machine, environ, hbm)
    if asks_only_what_fits(environ):
        sweep.not_asked = unfit_lengths(sweep) if set(sweep.lengths) - set(unfit_lengths(sweep)) else []
        leave_out(sweep, sweep.not_asked)
    lengths = decompose_lengths(s.DECOMPOSE_SEQLENS, sweep)
    decomposition = (training_step("decomposition", train, out, lengths, train.DECOMPOSE or DECOMPOSE_STEPS,
                                   s.DRY_RUN, machine, environ, hbm) if lengths else None)
    resolved = sweep.sweep.resolved
    spec = resolved.cut.counted if resolved.cut else None
    attention_lengths = sorted(set(s.ATTN_SEQLENS))
    envs = {"capabilities": {"OUTPUT": str(out / OUTPUTS["capabilities"])},
            "hbm": {"OUTPUT": str(out / OUTPUTS["hbm"])},
            "comm": {"OUTPUT": str(out / OUTPUTS["comm"]),  # RANKS: the step is planned on 2 GPUs or more
                     **({"RANKS": str(machine["gpu_count"])} if machine["gpu_count"] >= 2 else {})},
            "attention": {"MODEL": train.MODEL, "SEQLENS": " ".join(map(str, attention_lengths)),
                          "OUTPUT": str(out / OUTPUTS["attention"])}}
    asked = {name: {**machine, **child_identity(children[name], step_environ(environ, name, env, own))}
             for name, env in envs.items()}
    attention = Step("attention", [python, str(REPO / children["attention"].SCRIPT)], envs["attention"],
                     OUTPUTS["attention"], asked["attention"], attention_lengths, attention_lengths)
    steps = [
        Step("capabilities", [python, str(REPO / children["capabilities"].SCRIPT)], envs["capabilities"],
             OUTPUTS["capabilities"], asked["capabilities"], estimate_s=cost.CAPABILITIES_S if on_gpu else None),
        Step("mamf", [python, str(REPO / "mamf-finder.py"), "--output_file", str(out / OUTPUTS["mamf"])], {},
             OUTPUTS["mamf"], dict(machine), estimate_s=cost.MAMF_S if on_gpu else None),
        Step("hbm", [python, str(REPO / children["hbm"].SCRIPT)], envs["hbm"], OUTPUTS["hbm"], asked["hbm"],
             estimate_s=cost.HBM_S if on_gpu else None),
        # one GPU has no link to measure (bench_comm.py refuses one rank): the step is planned on 2+, its
        # ranks started by bench_comm.py itself (RANKS: a failing rank's one line, no launcher traceback)
        *([Step("comm", [python, str(REPO / children["comm"].SCRIPT)], envs["comm"], OUTPUTS["comm"], asked["comm"],
                estimate_s=cost.COMM_S)] if machine["gpu_count"] >= 2 else []),
        attention,
        sweep,
        *([decomposition] if decomposition else []),
    ]
    resume(steps, out)
    attention.estimate_s = cost.attention_s(spec, attention.todo, resolved.peak_tflops) if attention.todo else 0.0
    add_first_process_costs(steps, s.SKIP, train, resolved.liger_moe, environ,
                            cost.mixer_tuning(spec, environ) == "once")
    return steps


def measured_hbm_gib(out: Path) -> float | None:
    """The GPU memory the capability step's header measured in the folder (torch's total), if
    it ran; else None (the plan takes NVML's, or the GPU table's in a dry run for PLAN_GPU)."""
    path = out / OUTPUTS["capabilities"]
    if not path.is_file():
        return None
    found = [(r.get("hardware") or {}).get("hbm_gib") for r in read_log(str(path), "NODE_OUT's capabilities.jsonl")
             if r.get("kind") == "header"]
    return next((g for g in reversed(found) if isinstance(g, (int, float)) and g > 0), None)


def asks_only_what_fits(environ) -> bool:
    """Whether the training lengths are the default's, WORKLOAD=auto's (neither WORKLOAD nor
    SEQLENS set): those the plan estimates do not fit are then not asked for (the plan says
    them and what would fit them), so the default ends with exit 0 where a length of its
    workload cannot run on this GPU; asked for by name, such a length is recorded and missing."""
    return not environ.get("SEQLENS") and environ.get("WORKLOAD", workloads.AUTO) in ("", workloads.AUTO)


def decompose_lengths(asked: list, sweep: Step) -> list:
    """The decomposition's lengths: those of DECOMPOSE_SEQLENS the sweep plans and that fit (a
    length the sweep will not run is not profiled either); where none is among them, the
    sweep's shortest that fits; none where nothing fits."""
    plan = sweep.sweep
    ooms = sweep_ooms(sweep)
    fitting = [n for n in sweep.lengths if n not in sweep_plan.unfit(plan, [n]) and n not in ooms]
    ours = sorted(set(asked) & set(fitting))
    return ours or fitting[:1]


def leave_out(st: Step, left: list) -> None:
    """Leave out of a training step the lengths `left` (the sweep ran out of memory at them, or
    the default does not ask for them)."""
    st.lengths = [n for n in st.lengths if n not in left]
    st.todo = [n for n in st.todo if n not in left]
    st.env["SEQLENS"] = " ".join(map(str, st.lengths))


def unfit_lengths(st: Step) -> list:
    """A training step's lengths its plan estimates do not fit, which it does not run."""
    return sweep_plan.unfit(st.sweep, st.lengths) if st.sweep else []


def sweep_ooms(st: Step) -> list:
    """The lengths the sweep's log shows ran out of memory in this configuration (the error's
    own config, else its process's header's): a later step does not retry them (the same point
    runs out of memory again)."""
    key = run_identity(st.sweep.config)[1]
    return sorted({r["seq_len"] for r, header in with_headers(sweep_plan.existing_records(st.sweep.out))
                   if r.get("kind") == "error" and r.get("error") == "oom" and isinstance(r.get("seq_len"), int)
                   and run_identity(r.get("config") or (header or {}).get("config"))[1] == key})


def add_first_process_costs(steps: list, skip: list, train: Settings, liger_moe: bool, environ,
                            mixers_once: bool = False) -> None:
    """What the node's first training process builds once for the rest, to the estimate of the
    first training step that will run points: DeepSpeed's Adam op where no earlier run left it built,
    Liger's fused MoE kernels and, where Triton keeps their tuning, a hybrid's linear mixers
    (Triton's cache is not looked into: counted every run)."""
    op = extensions.adam_op(bool(train.OFFLOAD_OPTIMIZER))
    built = train.ENGINE != "deepspeed" or extensions.is_built(op, extensions.cache_root(environ))  # FSDP2 builds none
    once = ((0.0 if built else cost.ADAM_BUILD_S)
            + (cost.LIGER_MOE_COMPILE_S if liger_moe else 0.0) + (cost.MIXER_FIRST_STEP_S if mixers_once else 0.0))
    first = next((st for st in steps if st.name in TRAINING_STEPS and st.name not in skip and st.todo
                  and st.estimate_s is not None), None)
    if first:
        first.estimate_s += once


def step_environ(environ, name: str, env: dict, own: set) -> dict:
    """What a step's process sees: the node's environment less the node's `own` settings, and
    but for the training steps less the sweep's (bench_flash_attn.py has a SEQLENS of its
    own), plus the step's own variables."""
    inherited = {k: v for k, v in environ.items() if k not in own}
    if name not in TRAINING_STEPS:
        inherited = sweep_plan.without_sweep_settings(inherited)
    return {**inherited, **env}


def node_records(out: Path) -> list:
    """The `node_step` records of the folder's node.jsonl (none where there is none yet)."""
    return [r for r in read_log(str(out / "node.jsonl"), "NODE_OUT's node.jsonl") if r.get("kind") == "node_step"]


def resume(steps: list, out: Path) -> None:
    """Mark what earlier runs on the folder did of each step without lengths, and what they
    measured of attention: a run of the same identity that ended with exit 0, its file still
    there. (The training steps' points were read from their files by their sweep's plan.)"""
    ended = [r for r in node_records(out) if r.get("exit_code") == 0 and isinstance(r.get("identity"), dict)]
    for st in steps:
        if st.name in TRAINING_STEPS or not (out / st.output).exists():
            continue
        ours = [r for r in ended
                if r.get("step") == st.name and identity_difference(r["identity"], st.identity) is None]
        if st.lengths is None:
            st.done = bool(ours)
            st.estimate_s = 0.0 if st.done else st.estimate_s
        else:
            measured = {n for r in ours for n in (r.get("seq_lens") or [])}
            st.todo = [n for n in st.lengths if n not in measured]


def folder_conflict(steps: list, out: Path) -> str | None:
    """Where the folder holds records of another configuration than this request's: the file
    and the settings that differ; None when everything in it is of this request."""
    by_name = {st.name: st for st in steps}
    for r in node_records(out):
        st = by_name.get(r.get("step"))
        if st and isinstance(r.get("identity"), dict):
            difference = identity_difference(r["identity"], st.identity)
            if difference:
                return f"node.jsonl ({st.name}): {difference}"
    for st in steps:
        path = out / st.output
        if st.name not in TRAINING_STEPS + ("attention",) or not path.is_file():
            continue
        for header in (h for h in read_log(str(path), f"NODE_OUT's {st.output}")
                       if h.get("kind") == "header" and h.get("script") != "run_sweep.sh"):
            difference = header_difference(st, header)
            if difference:
                return f"{st.output}: {difference}"
    return None


def header_difference(st: Step, header: dict) -> str | None:
    """How a header in a step's file differs from what the step asks (None: the same)."""
    config = header.get("config") if isinstance(header.get("config"), dict) else {}
    if st.name == "attention":
        asked = {k: v for k, v in st.identity.items() if k not in ("gpu_name", "gpu_count")}
        unset = {k for k in HEAD_SETTINGS if not asked.get(k)}
        return identity_difference(config, asked, ignore=TIMING | unset)
    if not header.get("attn_backend"):  # a header from before the field: its config alone
        return identity_difference(config, st.sweep.config)
    return identity_difference({**config, "attn_backend": header["attn_backend"]},
                               {**st.sweep.config, "attn_backend": st.sweep.backend})


def missing(st: Step, exit_code: int | None, out: Path) -> list:
    """What a step that ran (exit `exit_code`) left unmeasured, each as a phrase: its points
    without a summary (with the reason its records give), a length, or the step itself."""
    if st.name in TRAINING_STEPS:
        records = sweep_plan.existing_records(st.sweep.out)
        left = sweep_plan.pending(st.lengths, sweep_plan.already_done(st.sweep, records))
        why = {r.get("seq_len"): r.get("error") for r, _ in with_headers(records) if r.get("kind") == "error"}
        if exit_code is not None and any(faults.killed_by(exit_code, sig) for sig in (signal.SIGINT, signal.SIGTERM)):
            why.setdefault(next((n for n in left if n not in why), None), "interrupted")  # the point it was on
        return [f"{st.name} at {n} ({memory_phrase(st, n, why.get(n)) or why.get(n) or 'not run'})" for n in left]
    if exit_code == 0:
        return []
    what = f"{st.name} at {' '.join(map(str, st.todo))}" if st.lengths is not None else st.name
    killed = exit_code is not None and faults.killed_by(exit_code, signal.SIGKILL)
    return [f"{what} ({faults.exit_meaning(exit_code)[1] if killed else f'exit {exit_code}'})"]


MEMORY_ERRORS = ("oom", "does_not_fit")
MEMORY_WORDS = ("(out of memory", "(not run: ")  # how memory_phrase begins: a rerun would not help


def memory_phrase(st: Step, seq_len: int, error: str | None) -> str | None:
    """'out of memory; fits with GRAD_CHECKPOINT=1 (~62 GiB) ...' for a point that ran out of
    memory or was planned out (what would fit it, not a rerun: the same point fails alike); None
    for another failure."""
    if error not in MEMORY_ERRORS:
        return None
    f = st.sweep.fits.get(seq_len) if st.sweep else None
    if error == "does_not_fit" and f:
        return f"not run: {f.text()}"
    fix = f"; fits with {' or '.join(f.fixes)}" if f and f.fixes else ""
    return f"out of memory{f' (estimated ~{f.peak_gib:.0f} GiB of {f.usable_gib:.0f})' if f else ''}{fix}"


def plan_text(steps: list, gpu_count: int) -> str:
    """The plan: each step with the lengths it covers, what an earlier run did of it, its
    estimate and command (or why this machine cannot run it); then the total, or what cannot
    be estimated here."""
    lines, total, unknown = [], 0.0, []
    resolved = next((st.sweep.resolved for st in steps if st.sweep), None)
    if resolved:
        cut = resolved.cut.label() if resolved.cut else "its config not at hand yet"
        lines.append(f"[node] training (sweep, decomposition): {resolved.train.MODEL}, {cut}, attention "
                     f"{resolved.backend}, Liger {'on' if resolved.use_liger else 'off'}, {resolved.world_size} "
                     f"rank(s){'' if resolved.train.ENGINE == 'deepspeed' else ', on ' + resolved.train.ENGINE}")
        lines += workload_lines(resolved.train, resolved.world_size)
        sweep = next(st for st in steps if st.name == "sweep" or st.sweep)
        if sweep.sweep.fits:
            gib = sweep.sweep.fits[sweep.lengths[0]].usable_gib
            lines.append(f"[node] memory, {gib:.1f} GiB usable ({hbm_source(sweep)}), each point's peak estimated:")
            lines += [f"[node]   {n}: {f.text()}" for n, f in sorted(sweep.sweep.fits.items())]
        if sweep.not_asked:
            lengths = " ".join(map(str, sweep.not_asked))
            lines.append(f"[node] {lengths} not asked for: it does not fit, and the default (WORKLOAD=auto) asks "
                         f"for the lengths of {resolved.train.WORKLOAD} that fit; WORKLOAD={resolved.train.WORKLOAD} "
                         f"or SEQLENS asks for it (to run, with a change above)")
    for i, st in enumerate(steps, 1):
        if st.finished:
            lines.append(f"[node] {i}. {st.name}{covers(st)}: {finished_text(st)}")
            continue
        if st.cannot:
            said = next((other.name for other in steps[:i - 1] if other.cannot == st.cannot), None)
            lines.append(f"[node] {i}. {st.name}{covers(st)}: cannot run on this machine: "
                         f"{'as the ' + said if said else st.cannot}")
            continue
        if st.estimate_s is None:
            unknown.append(st.name)
        total += st.estimate_s or 0.0
        lines.append(f"[node] {i}. {st.name}{covers(st)}: ~{fmt_s(st.estimate_s)}  "
                     f"{sweep_plan.shell_line(st.run_env(), st.argv)}")
    why = ("no GPU here: the steps' times are a GPU's, the training steps' from its peak" if not gpu_count
           else "no GPU peak known for their FLOPs")
    todo = [st for st in steps if not st.finished and not st.cannot]
    if todo and len(unknown) == len(todo):
        lines.append(f"[node] no estimate of the wall time ({', '.join(unknown)}): {why}")
        return "\n".join(lines)
    hours = (f"{total * gpu_count / 3600:.2f} GPU-hours on {gpu_count} GPU(s)" if gpu_count
             else "no GPU (a CPU try-out)")
    note = f" (steps marked ? have no estimate here: {why})" if unknown else ""
    lines.append(f"[node] estimated {fmt_s(total)} of wall time at least, {hours}{note}")
    return "\n".join(lines)


def workload_lines(train: Settings, world: int) -> list:
    """Which workload the training steps run, and the guide's full sweep one name away."""
    name = train.WORKLOAD
    if name == workloads.NONE:
        return []
    why = (f" (auto: {world} GPU(s), fewer than the {workloads.GUIDE_GPUS} the guide's configuration needs)"
           if name == workloads.auto_name(world) and world < workloads.GUIDE_GPUS and not explicit_workload() else "")
    lines = [f"[node] workload {name}{why}"]
    if name != "guide-long-context":
        lines.append("[node] the guide's full sweep (the whole 8B, 8K..256K, 8 GPUs): WORKLOAD=guide-long-context")
    return lines


def explicit_workload() -> bool:
    return os.environ.get("WORKLOAD", workloads.AUTO) not in ("", workloads.AUTO)


def hbm_source(sweep: Step) -> str:
    """Where the usable memory came from: the capability step's record, NVML, or the GPU table."""
    p = sweep.sweep
    if p.s.PLAN_GPU:
        return (f"the GPU table's {p.hardware.get('hbm_gib')} GiB for {p.hardware.get('gpu_name')} (PLAN_GPU) less "
                f"{fit.CONTEXT_GIB} outside the allocator")
    return f"{p.hardware.get('hbm_gib')} GiB less {fit.CONTEXT_GIB} outside the allocator"


def finished_text(st: Step) -> str:
    """Why a step has nothing to run: an earlier run did it, or none of its lengths fits."""
    if st.lengths is not None and set(st.lengths) <= set(unfit_lengths(st)):
        return "nothing to run"
    return "done in an earlier run, skipped"


def covers(st: Step) -> str:
    """' at 8192 32768' (and, resumed, which of them were done), or '' for a step without lengths."""
    if st.lengths is None:
        return ""
    text = " at " + " ".join(map(str, st.lengths))
    unfit = unfit_lengths(st)
    if unfit:
        text += f" ({' '.join(map(str, unfit))} not run: does not fit)"
    done = [n for n in st.lengths if n not in st.todo and n not in unfit]
    if done and st.todo:
        text += f" ({' '.join(map(str, done))} done in an earlier run; {' '.join(map(str, st.todo))} to run)"
    return text


def check_skip(skip: list) -> None:
    unknown = [name for name in skip if name not in STEPS]
    if unknown:
        raise BadInput(f"SKIP={' '.join(skip)!r}: {unknown[0]!r} is no step; expected names among "
                       f"{' '.join(STEPS)}")
    if set(STEPS) <= set(skip):
        raise BadInput(f"SKIP={' '.join(skip)!r}: every step is left out, so nothing would run")
