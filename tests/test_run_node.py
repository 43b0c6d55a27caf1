"""run_node.sh: the node's plan and estimate before anything starts, every bad input refused
before it, each step's record, resume by identity (the tiny preset for real: a killed sweep,
longer SEQLENS, changed ATTN_SEQLENS, another model), what a rerun leaves missing, and a stop
that takes the step's processes with it."""
import errno
import json
import os
import re
from dataclasses import replace
import signal
import sys
import threading
import time

import pytest

from conftest import REPO, SWEEP_CLEARED, mount_tmpfs, records, run_proc, unmount
from upgrade_bench import faults, settings
from upgrade_bench.hardware import devices, fingerprint
from upgrade_bench.log.records import RecordWriter
from upgrade_bench.models import flops, model
from upgrade_bench.sweep.node import cost as node_cost, lock as folder_lock, main as node, plan as node_plan
from upgrade_bench.sweep import plan as sweep_plan
from upgrade_bench.training import low_precision, resolver, variables

RUN_NODE = REPO / "run_node.sh"
CHILDREN = node.CHILDREN
EVERY = node.suite_vars(CHILDREN)
# What a node test's process reads: set by the test, nothing leaks in from this environment.
NODE_CLEARED = SWEEP_CLEARED | {v.name for v in EVERY}
# bench_flash_attn.py without sustained windows: a CPU's timings test the plumbing
CPU_TIMING = {"ITERS": "3", "WARMUP": "1", "WARMUP_MS": "0", "TIME_MS": "0"}
TINY = {"MODEL": "tiny", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0", "STEPS": "2",
        "WARMUP_STEPS": "1"}


@pytest.fixture
def in_process(as_script, capsys, monkeypatch):
    """main(**env) -> (exit code, stderr lines): run_node.sh's main here, on no GPU."""
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])

    def main(**env):
        for name in NODE_CLEARED:
            monkeypatch.delenv(name, raising=False)
        as_script("run_node.sh", EVERY, {k: str(v) for k, v in env.items()})
        code = faults.run_main(node.main)
        return code, capsys.readouterr().err.splitlines()
    return main


def node_env(**extra) -> dict:
    return {"PYTHON": sys.executable, **{k: str(v) for k, v in extra.items()}}


@pytest.fixture
def planned(as_script, monkeypatch):
    """planned(out, **env) -> {step name: node_plan.Step}: the plan run_node.sh makes of `env` here."""
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])

    def plan(out, **env):
        for name in NODE_CLEARED:
            monkeypatch.delenv(name, raising=False)
        as_script("run_node.sh", EVERY, {k: str(v) for k, v in env.items()})
        s, train, children = node.load([])
        return {st.name: st for st in node_plan.plan(s, train, out, sys.executable, children, os.environ, OWN)}
    return plan


OWN = {v.name for v in node.VARS}


# --------------------------------------------------------------- the plan, and what it refuses

def test_the_plan_says_which_lengths_each_step_covers_and_runs_nothing(tmp_path, in_process):
    code, err = in_process(**TINY, SEQLENS="64 128", ATTN_SEQLENS="32", DECOMPOSE_SEQLENS="64", DRY_RUN=1,
                           NODE_OUT=tmp_path / "node")
    assert code == 0, err
    lines = [line for line in err if line.startswith("[node] ")]
    assert lines[0] == "[node] training (sweep, decomposition): tiny, all 2 layers, attention sdpa, Liger off, 1 rank(s)"
    steps = lines[1:-1]
    assert [line.split(":")[0] for line in steps] == [
        "[node] 1. capabilities", "[node] 2. mamf", "[node] 3. hbm", "[node] 4. attention at 32",
        "[node] 5. sweep at 64 128", "[node] 6. decomposition at 64"]
    # the decomposition is a sweep of its lengths with the sweep's settings, profiled (DECOMPOSE)
    assert steps[5].endswith(f"OUT={tmp_path}/node/decompose.jsonl RESUME=1 SEQLENS=64 DECOMPOSE=3 bash "
                             f"{REPO}/run_sweep.sh")
    # issue 46: "0m00s at least" where nothing had an estimate; the steps' constants are a GPU's
    assert lines[-1] == ("[node] no estimate of the wall time (capabilities, mamf, hbm, attention, sweep, "
                         "decomposition): no GPU here: the steps' times are a GPU's, the training steps' from its peak")
    assert not (tmp_path / "node").exists()  # a dry run writes nothing


@pytest.fixture
def host_gib(monkeypatch):
    """host_gib(n): this machine has n GiB of RAM, as the plan reads it."""
    return lambda gib: monkeypatch.setattr(fingerprint, "host_ram_bytes", lambda: gib * 2**30)


def test_a_cpu_plan_says_the_training_steps_cannot_run_where_the_model_outgrows_the_host(tmp_path, in_process,
                                                                                         host_gib):
    # issue 46: the 8B at 256K planned on a 24 GiB laptop as "1m31s at least"
    host_gib(24)
    code, err = in_process(DRY_RUN=1, NODE_OUT=tmp_path / "node")
    assert code == 0, err
    cannot = ("MODEL=llama-3.1-8b (8B parameters) needs at least 120 GiB for its weights, gradients and Adam state "
              "(16 bytes a parameter); this machine has 24.0 GiB and no GPU: try MODEL=tiny")
    err = [line for line in err if line.startswith("[node] ")]
    assert err[5].startswith("[node] 5. sweep at 8192 32768 65536 131072 196608 262144: cannot run on this "
                             "machine: " + cannot)
    assert err[6] == "[node] 6. decomposition at 8192 32768: cannot run on this machine: as the sweep"
    assert err[7] == ("[node] no estimate of the wall time (capabilities, mamf, hbm, attention): no GPU here: the "
                      "steps' times are a GPU's, the training steps' from its peak") and len(err) == 8
    # run, it stops before any step, in one line naming what to leave out
    code, err = in_process(NODE_OUT=tmp_path / "node")
    assert code == 2 and err[-1].startswith(f"error: sweep decomposition: cannot run on this machine ({cannot}")
    assert err[-1].endswith("; or leave them out: SKIP='sweep decomposition'") and not (tmp_path / "node").exists()
    code, err = in_process(NODE_OUT=tmp_path / "node", SKIP="mamf sweep")
    assert code == 2 and err[-1].startswith("error: decomposition: cannot run") and err[-1].endswith(
        "SKIP='mamf sweep decomposition'")
    host_gib(256)  # a host that holds it: planned, its time unknown without a GPU peak
    code, err = in_process(DRY_RUN=1, NODE_OUT=tmp_path / "node")
    assert code == 0 and "[node] 5. sweep at 8192 32768 65536 131072 196608 262144: ~?  " in "\n".join(err)


def test_a_setting_that_changes_nothing_is_said_before_the_nodes_plan(tmp_path, in_process):
    # issue 46: the sweep's own line went to its log file, after the steps before it
    code, err = in_process(**TINY, PRECISION="fp8-rowwise", FP8_EXPERTS=1, DRY_RUN=1, NODE_OUT=tmp_path / "node")
    said = [line for line in err if line.startswith("warning: ")]
    assert code == 0 and "warning: FP8_EXPERTS=1: MODEL=tiny has no MoE layer: it changes nothing here" in said
    assert len(said) == len(set(said)) and err.index(said[-1]) < err.index(next(
        line for line in err if line.startswith("[node] 1. ")))


def test_a_model_that_is_no_model_is_refused_before_the_plan(in_process):
    code, err = in_process(MODEL="llama3", DRY_RUN=1)
    assert code == 2 and err[0].startswith("error: MODEL='llama3': not a preset") and len(err) == 1


@pytest.mark.parametrize("changes, problem", [
    ({"num_hidden_layers": 10**6}, "no model has more than 4096 layers"),
    ({"hidden_size": 10**200}, "expected an integer from 1 to 2147483647"),
    ({"model_type": "mistral", "sliding_window": 10**20}, "sliding_window=100000000000000000000"),
    ({"hidden_size": 2**20, "intermediate_size": 2**24, "head_dim": 2**18}, "parameters: sizes no model has"),
    ({"model_type": ["llama"]}, "model_type=['llama']: expected a string"),  # issue 46: TypeError
    ({"layer_types": [["full_attention"]] * 2}, "layer_types=[['full_attention'], ['full_attention']]: expected"),
])
def test_a_config_no_model_has_is_one_line_before_the_plan(tmp_path, in_process, changes, problem):
    config = {**json.loads((REPO / "configs" / "tiny.json").read_text()), **changes}
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, err = in_process(MODEL=tmp_path, DRY_RUN=1)
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: MODEL='{tmp_path}'") and problem in err[0]


@pytest.mark.parametrize("lengths", [{"SEQLENS": "64"}, {"ATTN_SEQLENS": "64"}])
def test_packed_documents_as_long_as_any_steps_length_are_refused_by_the_plan(in_process, lengths):
    code, err = in_process(**{"SEQLENS": "128", "DECOMPOSE_SEQLENS": "128", "ATTN_SEQLENS": "128", **lengths},
                           MODEL="tiny", PACKED_DOC_LEN=64, DRY_RUN=1)
    assert code == 2 and len(err) == 1 and "PACKED_DOC_LEN=64: must be shorter than every" in err[0], err


@pytest.fixture
def bad_out(request, tmp_path):
    """A NODE_OUT no node can write in (issue 38: each was a traceback after the plan)."""
    (tmp_path / "file").write_text("")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    if request.param != "read-only":
        yield {"file": tmp_path / "file", "null": "/dev/null", "proc": "/proc/node", "long": "x" * 5000,
               "loop": tmp_path / "loop" / "node", "empty": ""}[request.param]
        return
    (tmp_path / "ro").mkdir()
    if not mount_tmpfs(tmp_path / "ro", "ro,size=4k"):
        pytest.skip("no tmpfs can be mounted here")
    try:
        yield tmp_path / "ro" / "node"
    finally:
        unmount(tmp_path / "ro")


@pytest.mark.parametrize("bad_out", ["file", "null", "proc", "read-only", "long", "loop", "empty"], indirect=True)
def test_a_node_out_that_cannot_be_written_is_refused_before_anything(bad_out, in_process, tmp_path):
    before = sorted(tmp_path.rglob("*"))
    code, err = in_process(MODEL="tiny", NODE_OUT=bad_out, SKIP="capabilities mamf hbm attention", DRY_RUN=0)
    assert code == 2 and len(err) == 1 and err[0].startswith("error: NODE_OUT="), err
    assert sorted(tmp_path.rglob("*")) == before and not os.path.exists("x" * 255)


@pytest.mark.parametrize("env, line", [
    ({"DRYRUN": "1"}, "error: DRYRUN is not a setting of this script: did you mean DRY_RUN?"),
    ({"MODLE": "tiny"}, "error: MODLE is not a setting of this script: did you mean MODEL?"),
    # issue 46: ran bf16 with no word; counted as on by the estimate, read as off by Triton
    ({"precision": "fp8-rowwise"}, "error: precision is not a setting of this script: did you mean PRECISION?"),
    ({"TRITON_CACHE_AUTOTUNING": "2"}, "error: TRITON_CACHE_AUTOTUNING='2': Triton reads it as off"),
    ({"TRITON_CACHE_AUTOTUNNING": "1"}, "error: TRITON_CACHE_AUTOTUNNING is not a variable Triton reads: did you"),
    ({"ITER": "3"}, "error: ITER is not a setting of this script: did you mean ITERS?"),  # a step script's
    ({"SKIP": "mamff"}, "error: SKIP='mamff': 'mamff' is no step; expected names among capabilities mamf"),
    ({"SKIP": " ".join(node_plan.STEPS)}, f"error: SKIP='{' '.join(node_plan.STEPS)}': every"),
    ({"FIND_MAX_SEQLEN": "1"}, "error: FIND_MAX_SEQLEN=1: the node runs the sweep"),
    ({"OUT": "night.jsonl"}, "error: OUT is set: run_node.sh sets it per step"),  # was silently replaced
    ({"RESUME": "0"}, "error: RESUME is set: run_node.sh sets it per step"),
    ({"BACKENDS": "fa9"}, "error: BACKENDS='fa9': expected auto, all or a list of"),  # attention's, not after 3 steps
    # lengths no kernel indexes: the sweep's and attention's processes failed after start-up
    ({"SEQLENS": "99999999999999999999"}, "error: SEQLENS='99999999999999999999': expected space- or comma-"),
    ({"ATTN_SEQLENS": "4294967296"}, "error: ATTN_SEQLENS='4294967296': expected space- or comma-"),
    ({"DECOMPOSE_SEQLENS": "4294967296"}, "error: DECOMPOSE_SEQLENS='4294967296': expected space- or comma-"),
])
def test_a_misspelt_or_unknown_setting_stops_the_node_before_any_work(tmp_path, in_process, env, line):
    code, err = in_process(MODEL="tiny", NODE_OUT=tmp_path / "node", **env)
    assert code == 2 and len(err) == 1 and err[0].startswith(line), err
    assert not (tmp_path / "node").exists()


def test_no_step_script_takes_another_scripts_setting_for_a_misspelling_of_its_own():
    # every script gets its parent's environment, and its siblings' settings with it
    every = {v.name: "1" for v in EVERY}
    tables = {**{name: m.VARS for name, m in CHILDREN.items()}, "benchmark.py": variables.TRAINING_VARS,
              "run_sweep.sh": sweep_plan.VARS + sweep_plan.PASSED, "run_node.sh": node.VARS}
    for name, table in tables.items():
        environ = {k: v for k, v in every.items() if k not in ("SEQ_LEN", "SEQLENS")}  # each parent sets its own
        assert settings.misspelt(table, environ) == [], name


def test_estimates_by_hand_on_an_h200(as_script, monkeypatch, tmp_path):
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))])
    monkeypatch.setattr(resolver, "liger_source", lambda: LIGER_SOURCE)  # installed, as on the node
    for name in NODE_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))  # nothing built yet
    as_script("run_node.sh", EVERY, {"MODEL": "llama-3.1-8b", "NUM_LAYERS": "8", "SEQLENS": "8192 32768",
                                     "ATTN_SEQLENS": "8192 32768", "DECOMPOSE_SEQLENS": "8192", "ZERO_STAGE": "2",
                                     "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0",
                                     "ATTN_BACKEND": "sdpa", "DRY_RUN": "1"})
    s, train, children = node.load([])
    steps = {st.name: st for st in node_plan.plan(s, train, tmp_path, "python", children, os.environ,
                                                  {v.name for v in node.VARS})}
    spec = steps["sweep"].sweep.resolved.cut.counted
    # Llama's one layer kind (32 heads of 128), causal: fwd 2*s^2*H*d, bwd 5*s^2*H*d, fwd_bwd
    # 7*s^2*H*d FLOPs; each point 0.7 s of windows and 7 calls (1 + 1 warm-up + 5) at half the
    # peak, for two backends, after a 23 s start.
    calls_s = sum(7 * k * n * n * 32 * 128 / (0.5 * 989e12) for n in (8192, 32768) for k in (2, 5, 7))
    assert steps["attention"].estimate_s == pytest.approx(23 + 2 * (6 * 0.7 + calls_s))
    step_s = {n: node_cost.training_step_s(spec, n, 989.0, False) for n in (8192, 32768)}
    assert step_s[8192] == flops.step_flops(spec, 1, 8192).hardware / (989e12 * 0.35)
    # start-up: 20 s, 1.5 s per billion weights with the optimizer on the GPU (8 layers of the 8B:
    # 2.80B with both embeddings), and a 10 s first step, per process: a length each, as in the sweep
    # its first process builds fused Adam (30 s)
    start = 20 + 1.5 * 2.80 + 10
    assert steps["sweep"].estimate_s == pytest.approx(30 + 2 * start + 12 * sum(step_s.values()), abs=0.1)
    # the decomposition: the sweep's process and steps at its length, and DECOMPOSE=3 profiled ones
    assert steps["decomposition"].estimate_s == pytest.approx(start + 15 * step_s[8192], abs=0.05)
    # once built (torch's layout: the op's folder holding its library), no step pays for it;
    # a skipped sweep leaves the build to the decomposition
    replan = lambda skip=(): {st.name: st for st in node_plan.plan(  # noqa: E731
        replace(s, SKIP=list(skip)), train, tmp_path, "python", children, os.environ, {v.name for v in node.VARS})}
    assert replan(["sweep"])["decomposition"].estimate_s == pytest.approx(30 + start + 15 * step_s[8192], abs=0.05)
    (tmp_path / "ext" / "fused_adam").mkdir(parents=True)
    (tmp_path / "ext" / "fused_adam" / "fused_adam.so").touch()
    assert replan()["sweep"].estimate_s == pytest.approx(2 * start + 12 * sum(step_s.values()), abs=0.1)
    # the optimizer offloaded needs CPU Adam, a build of its own
    offloaded = lambda: {st.name: st for st in node_plan.plan(  # noqa: E731
        s, replace(train, OFFLOAD_OPTIMIZER=True), tmp_path, "python", children, os.environ,
        {v.name for v in node.VARS})}["sweep"].estimate_s
    unbuilt = offloaded()
    (tmp_path / "ext" / "cpu_adam").mkdir()
    (tmp_path / "ext" / "cpu_adam" / "cpu_adam.so").touch()
    assert unbuilt - offloaded() == pytest.approx(30)
    # issue 38: the decomposition ran Liger off where the sweep ran it on, and did not fit at 32K
    assert steps["sweep"].sweep.resolved.use_liger and steps["decomposition"].sweep.resolved.use_liger
    assert steps["hbm"].estimate_s == node_cost.HBM_S
    assert list(steps) == [n for n in node_plan.STEPS if n != "comm"]  # one GPU: bench_comm.py would refuse it
    # on two GPUs bench_comm.py after bench_hbm.py, starting its two ranks itself, its records in the folder
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))] * 2)
    two = {st.name: st for st in node_plan.plan(s, train, tmp_path, "python", children, os.environ,
                                                {v.name for v in node.VARS})}
    assert list(two) == list(node_plan.STEPS) and two["comm"].estimate_s == node_cost.COMM_S
    assert two["comm"].argv == ["python", str(REPO / "bench_comm.py")]
    assert two["comm"].env == {"OUTPUT": str(tmp_path / "comm.jsonl"), "RANKS": "2"}
    # a backend that compiles in the first step (flex: 80 s) replaces the 10 s of it, per process
    # the optimizer on the host: DeepSpeed's CPU Adam pins its state, 10 s per billion weights
    assert node_cost.start_s(spec, "sdpa", True) - node_cost.start_s(spec, "sdpa") == pytest.approx(8.5 * spec.total_params / 1e9)
    flex = node_cost.start_s(spec, "flex") - node_cost.start_s(spec, "sdpa")
    assert flex == pytest.approx(80 - 10)


# liger-kernel's patch table as the resolver reads it: Llama's kernels; Qwen3-MoE's experts swapped
LIGER_SOURCE = """
def llama(swiglu=True):
    pass
def qwen3_moe(swiglu=True):
    modeling.Qwen3MoeExperts = LigerExperts
MODEL_TYPE_TO_APPLY_LIGER_FN = {"llama": llama, "qwen3_moe": qwen3_moe}
"""


def test_ligers_fused_moe_tuning_is_in_the_estimate(as_script, monkeypatch, tmp_path):
    # results/h200-moe-8/: Liger's MoE autotune took 194 s with nothing compiled, 31 s compiled,
    # whatever the experts: a compile once per node (160 s), 31 s in every process
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))])
    for name in NODE_CLEARED:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "ext" / "fused_adam").mkdir(parents=True)
    (tmp_path / "ext" / "fused_adam" / "fused_adam.so").touch()  # built: only the MoE's costs differ
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))

    def estimates(source, experts):
        monkeypatch.setattr(resolver, "liger_source", lambda: source)
        as_script("run_node.sh", EVERY, {"MODEL": "qwen3-30b-a3b", "NUM_LAYERS": "4", "NUM_EXPERTS": str(experts),
                                         "SEQLENS": "8192 32768", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0",
                                         "GRAD_CHECKPOINT": "0", "ATTN_BACKEND": "sdpa", "DRY_RUN": "1"})
        s, train, children = node.load([])
        steps = {st.name: st for st in node_plan.plan(s, train, tmp_path / "node", "python", children, os.environ, OWN)}
        return steps["sweep"].estimate_s, steps["decomposition"].estimate_s

    kernels_only = LIGER_SOURCE.replace("modeling.Qwen3MoeExperts = LigerExperts", "pass")
    for experts in (128, 32):
        plain, plain_decomposition = estimates(kernels_only, experts)
        fused, fused_decomposition = estimates(LIGER_SOURCE, experts)
        assert fused - plain == pytest.approx(160 + 2 * 31)  # two processes, one length each
        assert fused_decomposition - plain_decomposition == pytest.approx(2 * 31)  # compiled by the sweep


# --------------------------------------------------------------- steps, records, resume

def test_steps_run_in_turn_and_a_failure_is_a_record_and_the_last_line_says_what_is_missing(tmp_path, capsys):
    out = tmp_path / "node"
    out.mkdir()

    def step(name, code):
        (out / f"{name}.jsonl").write_text("")
        return node_plan.Step(name, [sys.executable, "-c", f"import sys; sys.stderr.write('{name}\\n'); "
                                                           f"sys.exit({code})"],
                              {}, f"{name}.jsonl", {"gpu_name": None, "gpu_count": 0}, estimate_s=1.0)

    writer = RecordWriter("run_node.sh", str(out / "node.jsonl"))
    signals = node.Signals()
    steps = [step("capabilities", 0), step("mamf", 1), step("hbm", 0)]
    assert node.run(steps, out, writer, signals, set()) == faults.EXIT_ERROR
    assert (out / "mamf.log").read_text() == "mamf\n"
    recs = records(out / "node.jsonl")
    assert [(r["step"], r["exit_code"], r["identity"]) for r in recs] == [
        (n, c, {"gpu_name": None, "gpu_count": 0}) for n, c in (("capabilities", 0), ("mamf", 1), ("hbm", 0))]
    assert capsys.readouterr().err.splitlines()[-1].startswith("[node] 2 of 3 steps complete; missing: mamf (exit 1);")
    # a rerun: only what did not end with exit 0 (and only of the same identity)
    again = [step("capabilities", 0), step("mamf", 0), step("hbm", 0)]
    again[2].identity = {"gpu_name": "NVIDIA H200", "gpu_count": 8}
    node_plan.resume(again, out)
    assert [st.finished for st in again] == [True, False, False]
    assert node_plan.folder_conflict(again, out) == ('node.jsonl (hbm): gpu_count=0 there, 8 asked; gpu_name=null '
                                                     'there, "NVIDIA H200" asked')


def test_a_step_sees_neither_the_node_commands_settings_nor_anothers():
    environ = {"NODE_OUT": "o", "SKIP": "", "SEQLENS": "8192", "GPUS": "1", "MODEL": "tiny", "PATH": "/bin"}
    own = {v.name for v in node.VARS}
    # bench_flash_attn.py has a SEQLENS of its own; the sweep's is not it
    assert node_plan.step_environ(environ, "attention", {"SEQLENS": "8192"}, own) == {
        "MODEL": "tiny", "PATH": "/bin", "SEQLENS": "8192"}
    assert node_plan.step_environ(environ, "decomposition", {"OUT": "d.jsonl"}, own) == {
        "SEQLENS": "8192", "GPUS": "1", "MODEL": "tiny", "PATH": "/bin", "OUT": "d.jsonl"}


def seed(out, sweep, points: dict) -> None:
    """Records as an earlier node left them, of `sweep`'s plan: {file: [(kind, seq_len)]} after
    a benchmark header of its config (a killed step leaves what it had written)."""
    out.mkdir(exist_ok=True)
    for name, written in points.items():
        writer = RecordWriter("benchmark.py", str(out / name), stream=open(os.devnull, "w"))
        writer.write("header", config=sweep.config, attn_backend=sweep.backend)
        for kind, seq_len in written:
            writer.write(kind, seq_len=seq_len)


def test_the_point_a_signal_stopped_is_missing_as_interrupted_the_later_ones_as_not_run(tmp_path, planned):
    out = tmp_path / "node"
    sweep = planned(out, **TINY, NODE_OUT=out, SEQLENS="64 128 256", DRY_RUN=1)["sweep"]
    seed(out, sweep.sweep, {"sweep.jsonl": [("summary", 64)]})
    for code in (130, 143, -signal.SIGINT):
        assert node_plan.missing(sweep, code, out) == ["sweep at 128 (interrupted)", "sweep at 256 (not run)"]
    assert node_plan.missing(sweep, 1, out) == ["sweep at 128 (not run)", "sweep at 256 (not run)"]
    # issue 46: a stale build lock read "bad_input" here: the sweep's error record says what stopped it
    RecordWriter("run_sweep.sh", str(out / "sweep.jsonl"), stream=open(os.devnull, "w")).write(
        "error", seq_len=256, error="environment", message="exit code 5: the machine's environment stopped it")
    assert node_plan.missing(sweep, 5, out) == ["sweep at 128 (not run)", "sweep at 256 (environment)"]
    hbm = planned(out, **TINY, NODE_OUT=out, DRY_RUN=1)["hbm"]  # issue 46: "hbm (exit -9)", nothing more
    assert node_plan.missing(hbm, -9, out) == ["hbm (killed by SIGKILL (exit -9): the host's OOM killer?)"]
    assert node_plan.missing(hbm, 1, out) == ["hbm (exit 1)"]


def test_a_rerun_measures_only_the_attention_lengths_no_earlier_run_did(tmp_path, in_process, planned):
    out = tmp_path / "node"
    env = {**TINY, **CPU_TIMING, "NODE_OUT": out, "SKIP": "capabilities mamf hbm sweep decomposition"}
    # an earlier node's attention step at 32, as it left the folder: its records, its node_step record
    attention = planned(out, **env, ATTN_SEQLENS="32", DRY_RUN=1)["attention"]
    RecordWriter("bench_flash_attn.py", str(out / "attention.jsonl"), stream=open(os.devnull, "w")).write(
        "attention", backend="sdpa-flash", seq_len=32, status="ok")
    RecordWriter("run_node.sh", str(out / "node.jsonl"), stream=open(os.devnull, "w")).write(
        "node_step", step="attention", argv=attention.argv, env=attention.run_env(), exit_code=0, estimate_s=None,
        wall_s=6.0, output="attention.jsonl", identity=attention.identity, seq_lens=[32])
    # issue 38: a changed ATTN_SEQLENS was "done in an earlier run, skipped"
    code, err = in_process(**env, ATTN_SEQLENS="32 48", PYTHON=sys.executable)
    assert code == 0, err[-30:]
    assert "[node] 1/1 attention at 32 48 (32 done in an earlier run; 48 to run): starting (~?)" in err
    header, *measured = records(out / "attention.jsonl")[1:]
    assert {r["seq_len"] for r in measured} == {48}  # bench_flash_attn.py, for real
    steps = [r for r in records(out / "node.jsonl") if r["kind"] == "node_step"]
    assert [(r["step"], r["seq_lens"], r["exit_code"]) for r in steps] == [("attention", [32], 0), ("attention", [48], 0)]
    # the real run's header is of this request, and of no other model's
    assert node_plan.header_difference(attention, header) is None
    other = planned(out, **{**env, "MODEL": "tiny-gemma3"}, ATTN_SEQLENS="32", DRY_RUN=1)["attention"]
    assert node_plan.header_difference(other, header) == 'MODEL="tiny" there, "tiny-gemma3" asked'
    code, err = in_process(**{**env, "MODEL": "tiny-gemma3"}, ATTN_SEQLENS="32", DRY_RUN=1)
    assert code == 2 and err == [f"error: NODE_OUT='{out}' holds another configuration's records (node.jsonl "
                                 f'(attention): MODEL="tiny" there, "tiny-gemma3" asked): give this run a NODE_OUT '
                                 f"of its own; the folder's own configuration resumes it"]


@pytest.mark.parametrize("seq_lens", [[[32]], [{"n": 32}], ["32"], [32.0], [True]])
def test_a_node_step_whose_lengths_are_no_lengths_is_skipped_and_they_run_again(tmp_path, planned, seq_lens):
    # a list or an object among them was a traceback on the rerun; text, a float or true
    # counted as lengths measured (True == 1)
    out = tmp_path / "node"
    env = {**TINY, "SKIP": "capabilities mamf hbm sweep decomposition", "ATTN_SEQLENS": "1 32", "DRY_RUN": 1}
    attention = planned(out, **env)["attention"]
    out.mkdir()
    (out / "attention.jsonl").write_text("")
    (out / "node.jsonl").write_text(json.dumps({
        "kind": "node_step", "schema": 1, "script": "run_node.sh", "run_id": "r", "step": "attention",
        "exit_code": 0, "output": "attention.jsonl", "identity": attention.identity, "seq_lens": seq_lens}) + "\n")
    assert planned(out, **env)["attention"].todo == [1, 32]


def test_a_rerun_measures_only_the_points_the_folder_lacks_of_this_request(tmp_path, in_process, planned):
    out = tmp_path / "node"
    env = {**TINY, "GPUS": "1", "REUSE_PROCESS": "1", "NODE_OUT": out, "SKIP": "capabilities mamf hbm attention",
           "DECOMPOSE_SEQLENS": "64"}
    # the sweep step killed during 96, the decomposition done (as the node's steps leave them)
    earlier = planned(out, **env, SEQLENS="64 96", DRY_RUN=1)
    seed(out, earlier["sweep"].sweep, {"sweep.jsonl": [("summary", 64)],
                                        "decompose.jsonl": [("summary", 64), ("decomposition", 64)]})
    before = (out / "decompose.jsonl").read_text()
    # issue 38: a longer SEQLENS skipped the sweep step and never measured the new length
    code, err = in_process(**env, SEQLENS="32 64 96", PYTHON=sys.executable)
    assert code == 0, err[-30:]
    said = [line for line in err if line.startswith("[node] ")]
    assert "[node] 1. sweep at 32 64 96 (64 done in an earlier run; 32 96 to run): " in "\n".join(said)
    assert "[node] 2. decomposition at 64: done in an earlier run, skipped" in said
    assert said[-1] == f"[node] 2 of 2 steps done; the folder to copy: {out}"
    assert said[-2] == "[node] node check: none (no GPU figure in the folder)"  # CPU ranks: nothing to judge
    sweep = records(out / "sweep.jsonl")
    ran = [r["config"]["SEQ_LEN"] for r in sweep if r["kind"] == "header" and r["script"] == "benchmark.py"
           and r.get("model_cut")]  # the real ones, not the seed
    assert ran == [[32, 96]]  # one process (REUSE_PROCESS=1), 64 not again
    assert sorted(r["seq_len"] for r in sweep if r["kind"] == "summary") == [32, 64, 96]
    assert (out / "decompose.jsonl").read_text() == before
    # the real benchmark's header is of this request (RESUME's test), and of no other model's
    [real] = [r for r in sweep if r["kind"] == "header" and r["script"] == "benchmark.py" and r.get("model_cut")]
    assert node_plan.header_difference(earlier["sweep"], real) is None
    other = planned(out, **{**env, "MODEL": "tiny-gemma3"}, SEQLENS="64", DRY_RUN=1)["sweep"]
    assert node_plan.header_difference(other, real) == 'MODEL="tiny" there, "tiny-gemma3" asked'
    code, err = in_process(**{**env, "MODEL": "tiny-gemma3"}, SEQLENS="64", DRY_RUN=1)
    assert code == 2 and len(err) == 1 and 'MODEL="tiny" there, "tiny-gemma3" asked' in err[0], err


@pytest.mark.parametrize("change, named", [({"ZERO_STAGE": "3"}, "ZERO_STAGE=2 there, 3 asked"),
                                           ({"GRAD_CHECKPOINT": "1"}, "GRAD_CHECKPOINT=false there, true asked"),
                                           ({"NUM_LAYERS": "1"}, "NUM_LAYERS=0 there, 1 asked"),
                                           ({"ATTN_BACKEND": "eager"}, 'attn_backend="sdpa" there, "eager" asked')])
def test_a_folder_of_another_configuration_is_refused_naming_the_difference(tmp_path, in_process, planned,
                                                                          change, named):
    out = tmp_path / "node"
    env = {**TINY, "NODE_OUT": out, "SEQLENS": "64", "DRY_RUN": 1}
    seed(out, planned(out, **env)["sweep"].sweep, {"sweep.jsonl": [("summary", 64)]})
    code, err = in_process(**env)
    assert code == 0 and "[node] 5. sweep at 64: done in an earlier run, skipped" in err  # its own: resumed
    code, err = in_process(**{**env, **change})
    assert code == 2 and len(err) == 1 and f"(sweep.jsonl: {named})" in err[0], err


# --------------------------------------------------------------- one run at a time on a folder

def test_a_folder_another_run_holds_is_refused_naming_its_pid_before_the_plan(tmp_path, in_process):
    # issue 46: two runs started together on one NODE_OUT both planned from the same records and
    # both wrote (two precisions in one sweep.jsonl, every step run twice)
    out = tmp_path / "node"
    out.mkdir()
    holder = folder_lock.take(out, "NODE_OUT")  # another open file: flock refuses it as another process
    try:
        code, err = in_process(**TINY, NODE_OUT=out, SEQLENS="64")
    finally:
        os.close(holder)
    assert (code, err) == (2, [f"error: NODE_OUT='{out}' is in use by another run_node.sh (pid {os.getpid()}): one "
                               f"run at a time on a folder; wait for it to end, or give this run a folder of its own"])
    assert os.listdir(out) == [folder_lock.LOCK_NAME]  # nothing planned, nothing written


def test_the_lock_ends_with_the_run_and_a_refused_run_leaves_no_folder_it_made(tmp_path, in_process):
    out = tmp_path / "node"
    code, err = in_process(**TINY, NODE_OUT=out, SEQLENS="64", PACKED_DOC_LEN="64")  # refused by the plan
    assert code == 2 and "PACKED_DOC_LEN=64" in err[-1] and not out.exists()
    out.mkdir()
    code, err = in_process(**TINY, NODE_OUT=out, SEQLENS="64", PACKED_DOC_LEN="64")
    assert code == 2 and out.exists()  # a folder it did not make stays
    assert os.listdir(out) == []  # issue 54: the lock file goes with the run that held it
    os.close(folder_lock.take(out, "NODE_OUT"))  # nothing holds it after a run


def test_how_the_comm_steps_ranks_start_is_not_part_of_its_identity():
    # bench_comm.py's RANKS, NNODES and NODE_RANK are newer than folders whose comm step ran: they resume,
    # not conflict
    identity = node_plan.child_identity(node.CHILDREN["comm"], {"OUTPUT": "/x/comm.jsonl", "RANKS": "2"})
    assert not {"RANKS", "NNODES", "NODE_RANK"} & set(identity) and identity["OPS"] == ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]


def test_a_folder_whose_filesystem_has_no_locks_runs_unlocked_and_says_so(tmp_path, monkeypatch, capsys):
    def no_locks(fd, how):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    monkeypatch.setattr(folder_lock.fcntl, "flock", no_locks)
    os.close(folder_lock.take(tmp_path, "NODE_OUT='x'"))
    assert capsys.readouterr().err == (f"warning: NODE_OUT='x': cannot lock it here ({os.strerror(errno.ENOLCK)}): "
                                       f"nothing stops a second run_node.sh on it while this one runs\n")


def test_a_second_run_node_sh_on_a_folder_in_use_exits_2_with_the_holders_pid(tmp_path, start_proc):
    out = tmp_path / "node"
    out.mkdir()
    holder = start_proc([sys.executable, "-c", "import sys, time; from pathlib import Path; from upgrade_bench.sweep."
                         "node import lock; lock.take(Path(sys.argv[1]), 'x'); print('held', flush=True); "
                         "time.sleep(60)", str(out)], {})
    assert holder.stdout.readline() == "held\n"
    proc = run_proc(["bash", str(RUN_NODE)], node_env(**TINY, NODE_OUT=out, SEQLENS="64"), timeout=60,
                    cleared=NODE_CLEARED)
    assert proc.returncode == 2 and proc.stderr.splitlines() == [
        f"error: NODE_OUT='{out}' is in use by another run_node.sh (pid {holder.pid}): one run at a time on a "
        f"folder; wait for it to end, or give this run a folder of its own"], proc.stderr
    assert os.listdir(out) == [folder_lock.LOCK_NAME]


def test_a_point_that_does_not_fit_is_recorded_and_the_last_line_names_it(tmp_path, fake, planned, in_process):
    # issue 38: the decomposition ran out of memory at 32K where the sweep fitted, and the node
    # ended "5 of 6 steps done"; a point that still does not fit is an error record, named last
    out = tmp_path / "node"
    env = dict(BENCHMARK=fake, MODEL="tiny", NODE_OUT=out, SEQLENS="64 128", DECOMPOSE_SEQLENS="64 128",
               SKIP="capabilities mamf hbm attention sweep")
    config = planned(out, **env)["decomposition"].sweep.config  # the fake's header: what was planned
    code, err = in_process(**env, FAKE_OOM_AT=128, FAKE_CONFIG=json.dumps(config), PYTHON=sys.executable)
    assert code == 1, err[-30:]
    # issue 54: what would fit it, not a rerun of a deterministic out of memory
    assert err[-1].startswith(
        "[node] 0 of 1 steps complete; missing: decomposition at 128 (out of memory); the folder to copy: ")
    assert "run again" not in err[-1]
    decomposed = records(out / "decompose.jsonl")
    assert [r["seq_len"] for r in decomposed if r["kind"] == "decomposition"] == [64]
    assert [(r["error"], r["seq_len"]) for r in decomposed if r["kind"] == "error"] == [("oom", 128)]
    assert [h["config"]["SEQ_LEN"] for h in decomposed if h["kind"] == "header" and h["script"] == "benchmark.py"] == [
        [64], [128]]  # a process per length, as the sweep's


HANGS = """import os, subprocess, sys, time
child = subprocess.Popen(["sleep", "600"])
with open(sys.argv[1] + ".part", "w") as f:
    f.write(str(child.pid))
os.rename(sys.argv[1] + ".part", sys.argv[1])
time.sleep(600)
"""


def test_ctrl_c_stops_the_steps_processes_records_it_and_says_so(tmp_path, capsys):
    # in this process: the node's own handler, a step whose process started one of its own
    pid_file = tmp_path / "pid"
    st = node_plan.Step("hbm", [sys.executable, "-c", HANGS, str(pid_file)], {}, "hbm.jsonl", {"gpu_count": 0})
    writer = RecordWriter("run_node.sh", str(tmp_path / "node.jsonl"), stream=open(os.devnull, "w"))

    def interrupt():
        while not pid_file.exists():
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    signals = node.Signals()
    signals.install()
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        assert node.run([st], tmp_path, writer, signals, set()) == 130
    finally:
        signals.restore()
    assert capsys.readouterr().err.splitlines()[-1] == (
        "[node] stopped by Ctrl-C during hbm: what was written is kept; run again with the same NODE_OUT to resume")
    grandchild = int(pid_file.read_text())
    assert not os.path.exists(f"/proc/{grandchild}") or open(f"/proc/{grandchild}/stat").read().split()[2] == "Z"
    [step] = records(tmp_path / "node.jsonl")
    assert (step["step"], step["exit_code"]) == ("hbm", -signal.SIGTERM)


def test_sigterm_ends_the_node_and_its_steps_processes_with_one_line(tmp_path, fake, in_process):
    # issue 38: SIGTERM to run_node left its sweep and benchmark running and writing into the folder
    out, pid_file = tmp_path / "node", tmp_path / "pid"

    def scancel():
        while not pid_file.exists():  # the sweep's benchmark is at its second length
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=scancel, daemon=True).start()
    code, err = in_process(BENCHMARK=fake, MODEL="tiny", NODE_OUT=out, SEQLENS="64 128", FAKE_HANG_AT=128,
                           FAKE_PID_FILE=pid_file, SKIP="capabilities mamf hbm attention decomposition",
                           PYTHON=sys.executable)
    assert code == 143, err[-30:]
    assert err[-1] == ("[node] stopped by SIGTERM during sweep: what was written is kept; run again with the same "
                       "NODE_OUT to resume")
    hung = int(pid_file.read_text())  # the benchmark's own child: nothing of the step is left
    assert not os.path.exists(f"/proc/{hung}") or open(f"/proc/{hung}/stat").read().split()[2] == "Z"
    [step] = [r for r in records(out / "node.jsonl") if r["kind"] == "node_step"]
    assert (step["step"], step["exit_code"]) == ("sweep", 143)  # the sweep stopped its benchmark itself
    sweep = records(out / "sweep.jsonl")
    assert [r["seq_len"] for r in sweep if r["kind"] == "summary"] == [64]
    assert [r for r in sweep if r["kind"] == "sweep"][0]["interrupted"] is True


def test_the_slurm_batch_script_runs_run_node_sh_on_the_allocation(tmp_path):
    # The batch script's own part: the allocation's GPUs and nodes in the environment, then
    # the submit folder's run_node.sh, its exit code passed on. run_node.sh itself is tested
    # above; here a stand-in in a submit folder says what it was given.
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / "slurm").mkdir(parents=True)
    bin_dir.mkdir()
    (repo / "slurm" / "nodes.sh").symlink_to(REPO / "slurm" / "nodes.sh")
    stand_in = 'echo "GPUS=$GPUS MASTER_ADDR=$MASTER_ADDR HOSTFILE=$HOSTFILE"; exit 3'
    scontrol = '[[ "$*" == "show hostnames gpu[01-02]" ]] && printf "gpu01\\ngpu02\\n"'
    for path, text in ((repo / "run_node.sh", stand_in), (bin_dir / "scontrol", scontrol)):
        path.write_text(f"#!/usr/bin/env bash\n{text}\n")
        path.chmod(0o755)
    env = {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_JOB_ID": "42", "SLURM_GPUS_ON_NODE": "4",
           "SLURM_SUBMIT_DIR": str(repo), "TMPDIR": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = run_proc(["bash", str(REPO / "slurm" / "run_node.sbatch")], env, 60,
                      cleared=SWEEP_CLEARED | {"MASTER_PORT"})
    hostfile = tmp_path / "run_node-hostfile.42"
    assert (result.returncode, result.stdout) == (3, f"GPUS=4 MASTER_ADDR=gpu01 HOSTFILE={hostfile}\n"), result.stderr
    assert hostfile.read_text() == "gpu01 slots=4\ngpu02 slots=4\n"


def test_a_low_precision_adds_its_compile_to_each_process_first_step():
    spec = model.spec(model.load_config("tiny"))
    assert node_cost.start_s(spec, "sdpa", low_precision=True) - node_cost.start_s(spec, "sdpa") == \
        low_precision.FIRST_STEP_S == 18.0  # three linear shapes compiled: 17-18 s on an H200


def test_compile_adds_each_blocks_compile_to_the_estimate_within_10_percent_of_the_h100s_points(planned, tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    sweep_s = {}
    for precision in ("bf16", "fp8-tensorwise"):
        for compiled in ("0", "1"):
            steps = planned(tmp_path / "node", DRY_RUN=1, PLAN_GPU="H100", WORKLOAD="right-sized-8b", ENGINE="fsdp2",
                            ATTN_BACKEND="sdpa", SEQLENS="8192", PRECISION=precision, COMPILE=compiled)
            assert steps["sweep"].todo == [8192]  # one process
            sweep_s[precision, compiled] = steps["sweep"].estimate_s
    # 8 blocks at 1.6 s in bf16; in fp8 8 at 2.25 s, in place of the converted linears' 18 s
    assert sweep_s["bf16", "1"] - sweep_s["bf16", "0"] == pytest.approx(8 * 1.6)
    assert sweep_s["fp8-tensorwise", "1"] - sweep_s["fp8-tensorwise", "0"] == pytest.approx(8 * 2.25 - 18.0)
    # the whole run_sweep.sh points those ran on an H100 (FA4 there: no FA4 here, its first step alike)
    log = (REPO / "results" / "h100-stacks-11" / "progress.log").read_text()
    walls = {p: float(re.search(rf"end fsdp2_compile_{p} rc=0 wall=(\d+)s", log)[1]) for p in ("bf16", "fp8-tensorwise")}
    assert walls == {"bf16": 54.0, "fp8-tensorwise": 62.0}
    for precision, wall_s in walls.items():
        assert sweep_s[precision, "1"] == pytest.approx(wall_s, rel=0.10), (precision, sweep_s[precision, "1"])


def test_a_hybrids_linear_mixers_tune_in_each_process_unless_triton_keeps_the_tuning():
    hybrid, dense = model.spec(model.load_config("tiny-qwen3-next")), model.spec(model.load_config("tiny"))
    assert node_cost.mixer_tuning(hybrid, {}) == "each"
    assert node_cost.mixer_tuning(hybrid, {"TRITON_CACHE_AUTOTUNING": "1"}) == "once"
    assert node_cost.mixer_tuning(hybrid, {"TRITON_CACHE_AUTOTUNING": "0"}) == "each"
    # issue 46: 'false' or 'off' was counted as on, while Triton reads it as off
    for off in ("false", "off", "OFF"):
        assert node_cost.mixer_tuning(hybrid, {"TRITON_CACHE_AUTOTUNING": off}) == "each"
    assert node_cost.mixer_tuning(hybrid, {"TRITON_CACHE_AUTOTUNING": "true"}) == "once"
    assert node_cost.mixer_tuning(dense, {}) == "" and node_cost.mixer_tuning(None, {}) == ""
    # 132 s (Qwen3-Next) and 82 s (Granite) on a fresh H200: 130 s a process
    assert node_cost.start_s(hybrid, "sdpa", mixers=True) - node_cost.start_s(hybrid, "sdpa") == 130.0


def test_what_the_first_training_process_builds_once_goes_to_the_first_step_that_runs(tmp_path):
    # the sweep is done: the decomposition's first process builds DeepSpeed's Adam op (none in
    # this empty extensions cache), compiles Liger's fused MoE and, with Triton keeping the
    # tuning, the linear mixers' kernels, once for the node
    sweep = node_plan.Step("sweep", [], {}, "sweep.jsonl", {}, [8192], [], estimate_s=0.0)
    decomposition = node_plan.Step("decomposition", [], {}, "decompose.jsonl", {}, [8192], [8192], estimate_s=100.0)
    train = settings.parse(variables.TRAINING_VARS, {"OFFLOAD_OPTIMIZER": "0"})
    node_plan.add_first_process_costs([sweep, decomposition], [], train, True, {"TORCH_EXTENSIONS_DIR": str(tmp_path)},
                                      mixers_once=True)
    assert (sweep.estimate_s, decomposition.estimate_s) == (0.0, 100.0 + 30.0 + 160.0 + 130.0)


# --------------------------------------------------------------- the lock file, and steps that outlive the node

SWEEP_LINES = '{"kind": "header", "schema": 1}\n' * 400  # a folder's records the lock must never touch


def hostile_lock(out, outside, kind: str) -> None:
    """NODE_OUT/.run_node.lock as issue 55 found it: not the file a run makes."""
    lock_path = out / folder_lock.LOCK_NAME
    if kind == "link to the folder's sweep.jsonl":
        lock_path.symlink_to(out / "sweep.jsonl")
    elif kind == "dangling link outside":
        lock_path.symlink_to(outside)
    elif kind == "link to /dev/null":
        lock_path.symlink_to("/dev/null")
    elif kind == "hard link to sweep.jsonl":
        os.link(out / "sweep.jsonl", lock_path)
    elif kind == "folder":
        lock_path.mkdir()
    else:
        os.mkfifo(lock_path)


@pytest.mark.parametrize("kind, what", [
    ("link to the folder's sweep.jsonl", "a symbolic link"), ("dangling link outside", "a symbolic link"),
    ("link to /dev/null", "a symbolic link"), ("hard link to sweep.jsonl", "a file with 2 names (a hard link)"),
    ("folder", "a folder"), ("fifo", "a named pipe (FIFO)")])
def test_a_lock_file_that_is_no_regular_file_of_its_own_is_one_line_and_nothing_is_written(tmp_path, in_process,
                                                                                            kind, what):
    # issue 55: a link to the folder's sweep.jsonl turned 19,428 bytes into 5 (the pid), exit 0; a
    # dangling link made a file outside the folder; a folder, a FIFO or /dev/null: a traceback
    out, outside = tmp_path / "node", tmp_path / "outside"
    out.mkdir()
    (out / "sweep.jsonl").write_text(SWEEP_LINES)
    hostile_lock(out, outside, kind)
    before = sorted(os.listdir(tmp_path))
    code, err = in_process(**TINY, NODE_OUT=out, SEQLENS="64")
    lock_path = out / folder_lock.LOCK_NAME
    assert (code, err) == (2, [f"error: NODE_OUT='{out}': its lock file {lock_path} is {what}, not the regular file "
                               f"run_node.sh makes there: remove it and run again"])
    assert (out / "sweep.jsonl").read_text() == SWEEP_LINES
    assert sorted(os.listdir(tmp_path)) == before and not os.path.lexists(outside)


def test_a_full_disk_while_the_lock_takes_its_pid_is_one_line(tmp_path, in_process, monkeypatch):
    out = tmp_path / "node"
    out.mkdir()
    (out / "sweep.jsonl").write_text(SWEEP_LINES)
    real_write = os.write

    def full(fd, data):
        if os.readlink(f"/proc/self/fd/{fd}") == str(out / folder_lock.LOCK_NAME):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)
    monkeypatch.setattr(os, "write", full)
    code, err = in_process(**TINY, NODE_OUT=out, SEQLENS="64")
    assert (code, err) == (4, [f"error: NODE_OUT='{out}': cannot write its lock file {out / folder_lock.LOCK_NAME} "
                               f"({os.strerror(errno.ENOSPC)})"])
    assert (out / "sweep.jsonl").read_text() == SWEEP_LINES


def gone(pid: int, timeout_s: float) -> bool:
    """Whether process `pid` has ended (a zombie has) within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def wait_for(path, timeout_s: float = 60) -> str:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never came"
        time.sleep(0.05)
    return path.read_text()


def test_a_node_killed_by_sigkill_takes_its_step_with_it(tmp_path, fake, start_proc):
    # issue 55: after kill -9 of run_node.sh its step measured on, the lock gone, and a second
    # run_node.sh measured beside it into the same file (two run ids in one attention.jsonl)
    out, pid_file = tmp_path / "node", tmp_path / "pid"
    first = start_proc(["bash", str(RUN_NODE)], node_env(BENCHMARK=fake, MODEL="tiny", NODE_OUT=out, SEQLENS="64",
                                                         SKIP="capabilities mamf hbm attention decomposition",
                                                         FAKE_HANG_AT=64, FAKE_PID_FILE=pid_file),
                       cleared=NODE_CLEARED)
    grandchild = int(wait_for(pid_file))  # the sweep's benchmark is measuring (a process of its own started)
    node_pid, step_pid = map(int, (out / folder_lock.LOCK_NAME).read_text().split())
    assert node_pid == first.pid
    first.kill()
    assert gone(step_pid, 15) and gone(grandchild, 15), "the step's processes outlived the node"
    os.close(folder_lock.take(out, "NODE_OUT"))  # the folder is free for the next run


STUBBORN_STEP = """import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1] + ".part", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".part", sys.argv[1])
time.sleep(60)
"""
NODE_OF_ONE_STEP = """import sys
from pathlib import Path
from upgrade_bench.log.records import RecordWriter
from upgrade_bench.sweep.node import lock, main, plan
out = Path(sys.argv[1])
with lock.held(out, "NODE_OUT") as fd:
    step = plan.Step("hbm", [sys.executable, "-c", sys.argv[2], sys.argv[3]], {}, "hbm.jsonl", {"gpu_count": 0})
    main.run([step], out, RecordWriter("run_node.sh", str(out / "node.jsonl")), main.Signals(), set(), fd)
"""


def test_a_folder_whose_step_outlived_its_node_is_in_use_until_the_step_ends(tmp_path, start_proc):
    # a step that does not stop when its node dies (it ignores the signal) still holds the folder
    out, pid_file = tmp_path / "node", tmp_path / "pid"
    node_proc = start_proc([sys.executable, "-c", NODE_OF_ONE_STEP, str(out), STUBBORN_STEP, str(pid_file)], {})
    step_pid = int(wait_for(pid_file, 30))
    try:
        node_proc.kill()
        node_proc.wait()
        with pytest.raises(faults.BadInput) as refused:
            folder_lock.take(out, "NODE_OUT")
        assert str(refused.value) == (
            f"NODE_OUT is in use by another run_node.sh (pid {node_proc.pid}; its step's process: pid {step_pid}): "
            f"one run at a time on a folder; wait for it to end, or give this run a folder of its own")
    finally:
        os.kill(step_pid, signal.SIGKILL)
    assert gone(step_pid, 5)
    os.close(folder_lock.take(out, "NODE_OUT"))




# --------------------------------------------------------------- issue 53: what fits, and a default that decides in minutes

H100_RUN = REPO / "results" / "h100-node-10" / "node"


@pytest.mark.parametrize("gpu, at_32k", [("H100", "does not fit: needs ~84 GiB of 79; fits with GRAD_CHECKPOINT=1"),
                                         ("H200", "fits (~84 GiB of 140)")])
def test_the_default_plan_on_one_gpu_is_right_sized_and_says_what_fits(tmp_path, in_process, gpu, at_32k):
    code, err = in_process(DRY_RUN=1, PLAN_GPU=gpu, NODE_OUT=tmp_path / "node")
    assert code == 0, err
    lines = [line for line in err if line.startswith("[node]")]
    assert lines[1] == ("[node] workload right-sized-8b (auto: 1 GPU(s), fewer than the 8 the guide's configuration "
                        "needs)")
    assert lines[2] == "[node] the guide's full sweep (the whole 8B, 8K..256K, 8 GPUs): WORKLOAD=guide-long-context"
    assert "[node]   8192: fits (~62 GiB of" in "\n".join(lines)
    assert any(line.startswith(f"[node]   32768: {at_32k}") for line in lines), lines
    decomposition = next(line for line in lines if ". decomposition at" in line)
    # the decomposition plans only what the sweep plans and fits; the whole set well within 15 minutes
    assert decomposition.split(":")[0].endswith("decomposition at 8192" if gpu == "H100" else "at 8192 32768")
    total = lines[-1].split("estimated ")[1].split(" of wall")[0]
    assert int(total.split("m")[0]) < 15
    assert not (tmp_path / "node").exists()


def finished(steps: dict) -> list:
    """The plan's steps with nothing left to run (what their files hold stands): for node.run."""
    for st in steps.values():
        st.done, st.todo = True, None if st.lengths is None else []
    return list(steps.values())


def finished_as_measured(steps: dict, out, lengths: list, ruled_out: list) -> list:
    """The plan's steps as a run that measured `lengths` and recorded `ruled_out` as not fitting
    leaves them (each training point a summary, a decomposition too, in its file): for node.run."""
    for st in steps.values():
        if st.sweep is None:
            continue
        writer = RecordWriter("run_sweep.sh", st.sweep.out)
        writer.write("header", config=st.sweep.config, attn_backend=st.sweep.backend)
        for n in lengths:
            writer.write("summary", seq_len=n)
            writer.write("decomposition", seq_len=n)
        for n in ruled_out:
            writer.write("error", seq_len=n, error="does_not_fit")
    return finished(steps)


def test_the_default_asks_only_for_the_lengths_that_fit_and_ends_with_exit_0(tmp_path, planned, capsys):
    """results/h100-stacks-11: the default on an H100 named 32K missing (exit 1) although it was
    planned out; asked for by name (WORKLOAD, SEQLENS) such a length stays missing."""
    out = tmp_path / "node"
    out.mkdir()
    steps = planned(out, DRY_RUN=1, PLAN_GPU="H100")
    assert steps["sweep"].lengths == [8192] and steps["sweep"].not_asked == [32768]
    assert steps["sweep"].env["SEQLENS"] == "8192" and steps["decomposition"].lengths == [8192]
    assert steps["sweep"].sweep.fits[32768].verdict == "does not fit"  # still said in the plan
    ran = finished_as_measured(steps, out, [8192], [32768])
    assert node.run(ran, out, None, None, set()) == 0
    assert capsys.readouterr().err.splitlines()[-1] == f"[node] 6 of 6 steps done; the folder to copy: {out}"
    for asked in ({"WORKLOAD": "right-sized-8b"}, {"SEQLENS": "8192 32768"}):
        steps = planned(out, DRY_RUN=1, PLAN_GPU="H100", **asked)
        assert steps["sweep"].lengths == [8192, 32768] and steps["sweep"].not_asked == [], asked
        assert node.run(finished(steps), out, None, None, set()) == 1
        last = capsys.readouterr().err.splitlines()[-1]
        assert last.startswith("[node] 5 of 6 steps complete; missing: sweep at 32768 (not run: does not fit: "
                               "needs ~84 GiB of 79; fits with GRAD_CHECKPOINT=1"), (asked, last)


def test_the_default_plan_says_the_length_it_leaves_out_and_how_to_ask_for_it(tmp_path, in_process):
    code, err = in_process(DRY_RUN=1, PLAN_GPU="H100", NODE_OUT=tmp_path / "node")
    assert code == 0, err
    assert ("[node] 32768 not asked for: it does not fit, and the default (WORKLOAD=auto) asks for the lengths of "
            "right-sized-8b that fit; WORKLOAD=right-sized-8b or SEQLENS asks for it (to run, with a change "
            "above)") in err
    assert next(line for line in err if ". sweep at" in line).split(":")[0].endswith("sweep at 8192")
    code, err = in_process(DRY_RUN=1, PLAN_GPU="H100", NODE_OUT=tmp_path / "node", WORKLOAD="right-sized-8b")
    assert not [line for line in err if "not asked for" in line]
    assert "sweep at 8192 32768 (32768 not run: does not fit):" in next(line for line in err if ". sweep at" in line)


def test_the_fixes_offered_are_only_settings_not_already_in_force(tmp_path, in_process):
    code, err = in_process(DRY_RUN=1, PLAN_GPU="H100", NODE_OUT=tmp_path / "node", WORKLOAD="right-sized-8b",
                           GRAD_CHECKPOINT=0, OFFLOAD_OPTIMIZER=1, SEQLENS="65536")
    line = next(line for line in err if line.startswith("[node]   65536: "))
    assert "does not fit" in line and "OFFLOAD_OPTIMIZER" not in line and "GRAD_CHECKPOINT=1" in line


def test_plan_gpu_is_for_dry_runs_of_a_gpu_the_table_knows(tmp_path, in_process):
    code, err = in_process(PLAN_GPU="H100", NODE_OUT=tmp_path / "node")
    assert code == 2 and "PLAN_GPU='H100' without DRY_RUN=1" in err[-1]
    code, err = in_process(PLAN_GPU="Z9000", DRY_RUN=1, NODE_OUT=tmp_path / "node")
    assert code == 2 and "PLAN_GPU='Z9000': not a GPU of the table" in err[-1]


def test_a_point_that_does_not_fit_is_recorded_not_run_unless_asked(tmp_path, fake, monkeypatch, as_script, capsys):
    # A GPU of 8 GiB: the tiny model (its state and DeepSpeed's buffers, ~5.6 GiB) fits at 64
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H100 80GB HBM3", 8.0, (9, 0))])
    for name in SWEEP_CLEARED | {v.name for v in sweep_plan.VARS + sweep_plan.PASSED}:
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "sweep.jsonl"
    # 1M tokens of the tiny model's activations pass 8 GiB less the context
    as_script("run_sweep.sh", sweep_plan.VARS + sweep_plan.PASSED, dict(
        BENCHMARK=str(fake), MODEL="tiny", SEQLENS="64 1048576", OUT=str(out), ZERO_STAGE="2",
        OFFLOAD_OPTIMIZER="0", GRAD_CHECKPOINT="0", STEPS="1", WARMUP_STEPS="0", USE_LIGER="0"))
    from upgrade_bench.sweep import runner
    code = faults.run_main(runner.main)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "[run_sweep] memory: seq_len 1048576: does not fit: needs ~" in err and "not run (RUN_UNFIT=1 runs it)" in err
    errors = [r for r in records(out) if r["kind"] == "error"]
    assert [(r["seq_len"], r["error"]) for r in errors] == [(1048576, "does_not_fit")]
    assert errors[0]["estimated_peak_gib"] > errors[0]["usable_gib"] == pytest.approx(6.7)
    assert [r["seq_len"] for r in records(out) if r["kind"] == "summary"] == [64]
    # the progress counts the lengths this run runs, not the one planned out: not "point 2/1 ... ETA -"
    [progress] = [line for line in err.splitlines() if line.startswith("[run_sweep] point ")]
    assert progress.startswith("[run_sweep] point 1/1 seq_len 64: ok,") and progress.endswith(", ETA 0m00s")


def node_walls(path) -> dict:
    """{step: wall_s} of a node.jsonl (or the node's stdout, the same records)."""
    return {r["step"]: r["wall_s"] for r in records(path) if r["kind"] == "node_step"}


def h100_walls() -> dict:
    """{step: the mean wall_s} of the default right-sized run at 8K on two H100 machines:
    results/h100-node-10 (lease 1) and results/h100-stacks-11 (its default node run)."""
    first = node_walls(H100_RUN / "node.jsonl")
    # its decomposition also started 32K, which ran out of memory: that process's time is not the plan's
    decomposed = records(H100_RUN / "decompose.jsonl")
    split = next(r["time"] for r in decomposed if r["kind"] == "decomposition" and r["seq_len"] == 8192)
    oom = next(r["time"] for r in decomposed if r["kind"] == "error" and r["seq_len"] == 32768)
    first["decomposition"] -= oom - split
    second = node_walls(REPO / "results" / "h100-stacks-11" / "stderr" / "node_default.out")
    assert first.keys() == second.keys()
    return {name: (first[name] + second[name]) / 2 for name in first}


def test_the_estimate_is_within_10_percent_of_each_step_the_h100_nodes_ran(planned, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))  # a fresh machine: Adam not built
    steps = planned(tmp_path / "node", DRY_RUN=1, PLAN_GPU="H100", ATTN_BACKEND="sdpa")  # the default
    assert steps["decomposition"].lengths == [8192] and steps["sweep"].todo == [8192]
    ran = h100_walls()
    for name, wall_s in ran.items():
        assert steps[name].estimate_s == pytest.approx(wall_s, rel=0.10), (name, steps[name].estimate_s, wall_s)
    assert sum(steps[n].estimate_s for n in ran) == pytest.approx(sum(ran.values()), rel=0.10)


def test_the_estimate_is_within_10_percent_of_each_step_the_h200_node_ran(planned, tmp_path, monkeypatch):
    """results/h200-moe-8: the right-sized run at 8K and 32K on one H200, 6m04s taken."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    steps = planned(tmp_path / "node", DRY_RUN=1, PLAN_GPU="H200", WORKLOAD="right-sized-8b", ATTN_BACKEND="sdpa")
    ran = node_walls(REPO / "results" / "h200-moe-8" / "node" / "node.jsonl")
    for name, wall_s in ran.items():
        assert steps[name].estimate_s == pytest.approx(wall_s, rel=0.10), (name, steps[name].estimate_s, wall_s)
    assert sum(steps[n].estimate_s for n in ran) == pytest.approx(sum(ran.values()), rel=0.10)


def test_a_length_the_sweep_ran_out_of_memory_at_is_not_retried(tmp_path, fake, planned, in_process):
    out = tmp_path / "node"
    env = dict(BENCHMARK=fake, MODEL="tiny", NODE_OUT=out, SEQLENS="64 128", DECOMPOSE_SEQLENS="64 128",
               SKIP="capabilities mamf hbm attention", FAKE_RUNS=tmp_path / "runs")
    config = planned(out, **env)["sweep"].sweep.config
    code, err = in_process(**env, FAKE_OOM_AT=128, FAKE_CONFIG=json.dumps(config), PYTHON=sys.executable)
    assert code == 1, err[-20:]
    assert "[node] decomposition: 128 left out: out of memory in the sweep" in err
    assert (tmp_path / "runs").read_text().split("\n") == ["64", "128", "64", ""]  # sweep 64, 128; decomposition 64
    assert err[-1].startswith("[node] 1 of 2 steps complete; missing: sweep at 128 (out of memory); the folder")
    assert "run again" not in err[-1]
    assert sorted(os.listdir(out)) == ["decompose.jsonl", "decompose.log", "decomposition.log", "node.jsonl",
                                       "sweep.jsonl", "sweep.log"]  # logs only: no lock file left
