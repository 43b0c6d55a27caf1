"""run_sweep.sh's runner (upgrade_bench.sweep.runner, child_process): the real benchmark.py on the tiny model
(conftest's two real sweeps, one rank and two, which test_benchmark reads too), a fake benchmark for
the faults it injects, and the process machinery."""
import errno
import io
import json
import math
import os
import shutil
import signal
import sys
import time
import types
from pathlib import Path

import pytest

from conftest import (ONE_RANK, REPO, RUN_SWEEP, SMALL_DISK_BYTES, SWEEP_CLEARED, records, run_proc, run_sweep,
                      sweep_env)
from upgrade_bench.sweep import child_process, runner, plan as sweep_plan
from upgrade_bench.hardware import devices
from upgrade_bench import faults, interrupts
from upgrade_bench.faults import BadInput, WriteFailed
from upgrade_bench.log.records import read_lines
from upgrade_bench.log.runs import run_identity
from upgrade_bench.sweep.tables import sweep_table




def of_kind(recs, kind, script=None):
    return [r for r in recs if r["kind"] == kind and (script is None or r["script"] == script)]


@pytest.fixture
def in_process(monkeypatch, capsys):
    """execute(**env) -> (exit code, stderr): the sweep in this process, on no GPU, its
    benchmark processes real children; env goes to os.environ, as the children read it."""
    for name in SWEEP_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])

    def execute(**env):
        for key, value in env.items():
            monkeypatch.setenv(key, str(value))
        code = runner.execute(sweep_plan.load_settings([], "doc"), io.StringIO())
        return code, capsys.readouterr().err

    return execute


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_dead(pid: int, timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not alive(pid)


# ---------------------------------------------------------------- the real benchmark

@pytest.mark.xdist_group("one_rank")
def test_real_sweep_with_real_oom_then_resume_plans_only_the_missing_point(one_rank, monkeypatch):
    # conftest's run: SEQLENS="128 64 1048576", REUSE_PROCESS=1; 1M tokens with eager attention
    # is a 1 TiB mask, refused by the CPU allocator ("can't allocate memory", at once, on any
    # machine) -> benchmark.py's oom record, exit 3.
    first, out, recs = one_rank.result, one_rank.out, one_rank.records
    [header] = of_kind(recs, "header", "benchmark.py")
    assert header["config"]["SEQ_LEN"] == [64, 128, 1048576]  # one process
    assert sorted(r["seq_len"] for r in of_kind(recs, "summary")) == [64, 128]
    # 128 ran after 64 in that process: its peak memory is not a fresh job's, and says so
    assert {r["seq_len"]: r["earlier_points_in_process"] for r in of_kind(recs, "summary")} == {64: 0, 128: 1}
    [oom] = of_kind(recs, "error")
    assert (oom["script"], oom["error"], oom["seq_len"]) == ("benchmark.py", "oom", 1048576)
    [timing] = of_kind(recs, "sweep")
    [proc] = timing["processes"]
    assert proc["finished"] == [64, 128] and proc["exit_code"] == 3
    assert proc["steps_s"] > 0 and proc["startup_s"] > 0
    # The split comes from the process's own step records; start-up is the rest of its wall time.
    steps = of_kind(recs, "step")
    assert proc["steps_s"] == pytest.approx(sum(r["step_ms"] for r in steps) / 1e3)
    assert proc["timed_steps_s"] == pytest.approx(sum(r["step_ms"] for r in steps if not r["warmup"]) / 1e3)
    assert proc["timed_steps_s"] < proc["steps_s"] < proc["wall_s"]  # warm-up excluded
    table = first.stderr[first.stderr.index("seq_len  TFLOPS/GPU"):].splitlines()[:4]
    assert [row.split()[-1] for row in table[1:]] == ["ok", "ok", "oom"]
    assert all(row.split()[1] not in ("0.0", "-") for row in table[1:3])  # a CPU's figures, readable
    assert "point 2/3 seq_len 128" in first.stderr and "ETA" in first.stderr
    assert "process 1: starting up" in first.stderr
    assert "start-up done in" in one_rank.log  # the benchmark says so too
    stdout_recs = [json.loads(line) for line in first.stdout.splitlines()]
    assert [r["kind"] for r in stdout_recs].count("summary") == 2  # stdout is the same JSONL stream
    assert not any("log_file" in r for r in stdout_recs)  # as written, not as read back

    # Lose the 128 summary, as if the night had been cut short: what the sweep plans from the
    # file (its run identity against the real benchmark's header) runs only that point.
    kept = [r for r in recs if not (r["kind"] == "summary" and r["seq_len"] == 128)]
    for name in SWEEP_CLEARED:
        monkeypatch.delenv(name, raising=False)
    for key, value in {**ONE_RANK, "SEQLENS": "64 128", "OUT": str(out), "RESUME": "1"}.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])
    plan = sweep_plan.prepare(sweep_plan.load_settings([], "doc"))
    assert run_identity(plan.config) == run_identity(header["config"])
    done = sweep_plan.done_summaries(kept, plan.config, plan.s.SEQLENS)
    assert set(done) == {64}
    assert sweep_plan.process_plan(sweep_plan.pending(plan.s.SEQLENS, done), True) == [[128]]


# ---------------------------------------------------------------- faults (fake benchmark)

def test_oom_timeout_and_crash_are_recorded_and_the_sweep_goes_on(tmp_path, fake):
    out, runs, pid_file = tmp_path / "night.jsonl", tmp_path / "runs.txt", tmp_path / "pid"
    ran = {"mixer_kernels": {"causal_conv1d_fn": "torch fallback"}}
    result = run_sweep(BENCHMARK=fake, OUT=out, SEQLENS="64 128 256 512 1024", FAKE_OOM_AT=128,
                       FAKE_HANG_AT=256, FAKE_CRASH_AT=512, POINT_TIMEOUT=5, FAKE_RUNS=runs,
                       FAKE_PID_FILE=pid_file, FAKE_HEADER=json.dumps(ran))
    assert result.returncode == 1, result.stderr[-3000:]  # a crash happened: not a clean night
    # A fresh process per length (the default); a failure ends only its own.
    assert runs.read_text().splitlines() == ["64", "128", "256", "512", "1024"]
    recs = records(out)
    assert sorted(r["seq_len"] for r in of_kind(recs, "summary")) == [64, 1024]
    errors = {r["seq_len"]: r for r in of_kind(recs, "error")}
    assert errors[128]["error"] == "oom" and errors[128]["script"] == "benchmark.py"
    assert errors[256]["error"] == "timeout" and errors[256]["script"] == "run_sweep.sh"
    assert errors[512]["error"] == "exception" and "fake NCCL failure" in errors[512]["stderr_tail"]
    # the errors the sweep writes carry what the process's header said ran (the report's series:
    # tests/report/test_read.py's test_a_failed_point_the_sweep_records_joins_its_processs_series)
    assert errors[256]["mixer_kernels"] == errors[512]["mixer_kernels"] == ran["mixer_kernels"]
    # The hung point's process group is gone, grandchild included: nothing holds the GPU.
    assert wait_dead(int(pid_file.read_text()))
    statuses = [p["status"] for p in of_kind(recs, "sweep")[0]["processes"]]
    assert statuses == ["ok", "failed", "timeout", "failed", "ok"]
    table = result.stderr[result.stderr.index("seq_len  TFLOPS/GPU"):].splitlines()
    assert [row.split()[-1] for row in table[1:6]] == ["ok", "oom", "timeout", "exception", "ok"]
    assert "a log line that is not a record" in (tmp_path / "night.log").read_text()


@pytest.mark.xdist_group("guide_two_ranks")
def test_two_cpu_ranks_through_the_deepspeed_launcher(guide_two_ranks):
    # conftest's run: the real benchmark.py, GPUS=2, two lengths in one process
    result, recs = guide_two_ranks.result, guide_two_ranks.records
    assert "-m deepspeed.launcher.runner --num_gpus 2 --master_port" in result.stderr
    [header] = of_kind(recs, "header", "benchmark.py")  # rank 0 writes
    assert header["config"]["SEQ_LEN"] == [64, 128]
    assert [(r["seq_len"], r["world_size"]) for r in of_kind(recs, "summary")] == [(64, 2), (128, 2)]
    [proc] = of_kind(recs, "sweep")[0]["processes"]
    assert proc["finished"] == [64, 128] and proc["status"] == "ok"
    assert proc["exit_code"] == 0  # the ranks' exit code, through the launcher


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_scancel_stops_the_child_group_and_keeps_what_was_done(tmp_path, fake, signum, start_proc):
    out, pid_file = tmp_path / "cut.jsonl", tmp_path / "pid"
    proc = start_proc([str(RUN_SWEEP)], sweep_env(BENCHMARK=fake, OUT=out, SEQLENS="64 128 256", FAKE_HANG_AT=128,
                                                  FAKE_PID_FILE=pid_file), cleared=SWEEP_CLEARED)
    for line in proc.stdout:  # the first point is done once its summary is out
        if json.loads(line)["kind"] == "summary":
            break
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, stderr[-2000:]
    assert wait_dead(int(pid_file.read_text()))
    recs = records(out)
    assert [r["seq_len"] for r in of_kind(recs, "summary")] == [64]
    assert of_kind(recs, "sweep")[0]["interrupted"] is True
    assert not of_kind(recs, "error")  # an interruption is not a failed point
    table = stderr[stderr.index("seq_len  TFLOPS/GPU"):].splitlines()[1:4]
    assert [row.split("  ")[-1] for row in table] == ["ok", "interrupted", "not run"]  # issue 46: 128 "not run"


def test_a_full_disk_stops_the_sweep_with_one_line_and_every_record_whole(small_disk, tmp_path, fake,
                                                                          in_process):
    # Issue 15's night: OUT on a 64 KiB disk. The first point fits, the second fills it.
    runs = tmp_path / "runs.txt"
    out = small_disk / "night.jsonl"
    code, err = in_process(STEPS=250, WARMUP_STEPS=0, FAKE_RUNS=runs, FAKE_DISK_BYTES=SMALL_DISK_BYTES,
                           SEQLENS="64 128 256", REUSE_PROCESS=0, BENCHMARK=fake, OUT=out)
    assert code == 4 and "Traceback" not in err
    last = err.splitlines()[-1]
    assert last.startswith("error: ") and str(out) in last
    assert runs.read_text().splitlines() == ["64", "128"]  # nothing started after the disk filled
    table = err[err.index("seq_len  TFLOPS/GPU"):].splitlines()[1:4]
    assert [row.split("  ")[-1] for row in table] == ["ok", "write_failed", "not run"]
    text = out.read_text()
    assert text.endswith("\n")  # no partial last line
    recs, skipped = read_lines(text.splitlines())
    assert skipped == 0 and [r["seq_len"] for r in of_kind(recs, "summary")] == [64]


def test_resume_runs_only_what_the_file_lacks_and_says_so(tmp_path, fake, in_process):
    out, runs = tmp_path / "night.jsonl", tmp_path / "runs.txt"
    env = dict(BENCHMARK=fake, OUT=out, SEQLENS="64 128", FAKE_RUNS=runs, DRY_RUN=1)
    assert in_process(**env)[0] == 0  # nothing runs, nothing is written
    assert not out.exists()
    # An earlier night of this sweep's configuration finished 64, and 256, not asked for now.
    config = sweep_plan.prepare(sweep_plan.load_settings([], "doc")).config
    earlier = [{"kind": "header", "config": config, "mixer_kernels": {"causal_conv1d_fn": "torch fallback"}},
               {"kind": "summary", "seq_len": 64, "tflops_per_gpu": 0.00123},
               {"kind": "summary", "seq_len": 256, "tflops_per_gpu": 0.00456}]
    out.write_text("".join(json.dumps({**r, "script": "benchmark.py", "run_id": "a"}) + "\n" for r in earlier))
    code, err = in_process(DRY_RUN=0, FAKE_CONFIG=json.dumps(config))
    assert code == 0, err
    assert runs.read_text().splitlines() == ["128"]
    recs = records(out)
    assert of_kind(recs, "header", "run_sweep.sh")[-1]["skipped_seq_lens"] == [64]
    table = err[err.index("seq_len  TFLOPS/GPU"):].splitlines()
    assert table[1].split() == ["64", "0.00123", "-", "-", "ok", "(earlier", "run)"]
    assert f"resuming: seq_len 64 already done with this config in {out} (a new OUT" in err
    # kept as done, and said: its run had transformers' torch fallback for a hybrid's kernel
    assert ("warning: seq_len 64 kept from its run on transformers' torch fallback for causal_conv1d_fn; "
            "with the kernels installed since, a new OUT measures them") in err


@pytest.mark.parametrize("mode", [{}, {"FIND_MAX_SEQLEN": 1}])
def test_a_configuration_the_benchmark_rejects_stops_after_one_process(tmp_path, fake, mode, in_process):
    out, runs = tmp_path / "o.jsonl", tmp_path / "runs.txt"
    code, err = in_process(BENCHMARK=fake, FAKE_RUNS=runs, FAKE_REJECT=1, SEQLENS="64 128", OUT=out,
                           REUSE_PROCESS=0, **mode)
    assert code == 2
    assert "error: ZERO_STAGE=5" in err  # the benchmark's own line, passed on
    assert "error: the benchmark rejected the configuration (exit 2)" in err
    assert len(runs.read_text().splitlines()) == 1  # not once per point
    [error] = of_kind(records(out), "error")
    assert error["error"] == "bad_input" and error["seq_len"] == 64


def test_find_max_seqlen_writes_a_capacity_record(tmp_path, fake, in_process):
    out, runs = tmp_path / "cap.jsonl", tmp_path / "runs.txt"
    code, err = in_process(BENCHMARK=fake, OUT=out, FIND_MAX_SEQLEN=1, SEQLENS=8192, FAKE_OOM_ABOVE=100000,
                           FAKE_RUNS=runs)
    assert code == 0, err[-3000:]
    [capacity] = of_kind(records(out), "capacity")
    assert capacity["max_fit_seq_len"] <= 100000 < capacity["min_fail_seq_len"]
    assert capacity["min_fail_seq_len"] - capacity["max_fit_seq_len"] <= 8192
    runs_bound = math.ceil(math.log2((1048576 - 8192) / 8192)) + 2  # the bound
    assert capacity["runs"] <= runs_bound
    # Each probe a fresh process (its peak memory a fresh job's); the ladder stops at its
    # first length that does not fit.
    processes = runs.read_text().splitlines()
    assert all(len(p.split()) == 1 for p in processes)
    assert sorted(int(p) for p in processes) == sorted(p["seq_len"] for p in capacity["probes"])
    assert processes[:5] == ["8192", "16384", "32768", "65536", "131072"]  # 128K does not fit: stop
    assert int(processes[5]) < 131072
    assert capacity["seq_len_step"] == 8192 and capacity["config"]["STEPS"] == 1
    # Each probe is one step, no warm-up: as short as knowing it fits allows.
    steps = of_kind(records(out), "step")
    assert steps and all(not s["warmup"] for s in steps)
    assert len(steps) == len(of_kind(records(out), "summary"))
    assert "largest that fits" in err
    # REUSE_PROCESS=1: one process per search round, as few start-ups as the search allows.
    runs.unlink()
    code, err = in_process(BENCHMARK=fake, OUT=tmp_path / "one.jsonl", FIND_MAX_SEQLEN=1, SEQLENS=8192,
                           FAKE_OOM_ABOVE=100000, FAKE_RUNS=runs, REUSE_PROCESS=1)
    assert code == 0, err[-3000:]
    [capacity] = of_kind(records(tmp_path / "one.jsonl"), "capacity")
    assert capacity["runs"] == len(runs.read_text().splitlines()) <= runs_bound
    assert runs.read_text().splitlines()[0] == "8192 16384 32768 65536 131072 262144 524288 1048576"


def test_a_warning_every_process_repeats_is_shown_once_and_logged_by_each(tmp_path, fake, in_process):
    out = tmp_path / "w.jsonl"
    code, err = in_process(BENCHMARK=fake, OUT=out, SEQLENS="64 128", FAKE_WARN="no GPU: Liger off")
    assert code == 0, err[-3000:]
    assert err.count("warning: no GPU: Liger off") == 1
    assert (tmp_path / "w.log").read_text().count("warning: no GPU: Liger off") == 2


def test_a_signal_between_two_probes_processes_still_writes_the_capacity_record(tmp_path, monkeypatch,
                                                                                 in_process):
    started = []

    def run_process(argv, env, seq_lens, timeout_s, log, on_summary, multi_node, echo):
        started.append(list(seq_lens))
        if len(started) == 3:  # Ctrl-C as the sweep starts its third probe
            raise interrupts.Interrupted(signal.SIGINT)
        summaries = [{"kind": "summary", "seq_len": s, "peak_mem_gib": s / 1024} for s in seq_lens]
        return child_process.ProcessResult(list(seq_lens), summaries, exit_code=0, status="ok")

    monkeypatch.setattr(runner, "run_process", run_process)
    code, err = in_process(FIND_MAX_SEQLEN=1, SEQLENS=8192, OUT=tmp_path / "c.jsonl")
    assert started == [[8192], [16384], [32768]]
    [capacity] = of_kind(records(tmp_path / "c.jsonl"), "capacity")
    assert capacity["complete"] is False and capacity["max_fit_seq_len"] == 16384
    assert [p["seq_len"] for p in capacity["probes"]] == [8192, 16384]
    assert code == 130 and "capacity search interrupted" in err


def test_a_rendezvous_port_taken_before_the_ranks_bind_it_is_tried_again(tmp_path, monkeypatch, in_process):
    ports = []

    def run_process(argv, env, seq_lens, timeout_s, log, on_summary, multi_node, echo):
        ports.append(argv[argv.index("--master_port") + 1])
        if len(ports) == 1:  # as torch says it when the launcher's ranks cannot bind the port
            return child_process.ProcessResult(list(seq_lens), exit_code=1, status="failed", stderr_tail=[
                "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
                "local network address. port: 41234, useIpv6: false, code: -98, name: EADDRINUSE, "
                "message: address already in use"])
        summaries = [{"kind": "summary", "seq_len": s} for s in seq_lens]
        for summary in summaries:
            on_summary(summary)
        return child_process.ProcessResult(list(seq_lens), summaries, exit_code=0, status="ok")

    monkeypatch.setattr(runner, "run_process", run_process)
    code, err = in_process(GPUS=2, SEQLENS=64, OUT=tmp_path / "o.jsonl")
    assert code == 0 and len(ports) == 2 and "again on a new port" in err
    failed = child_process.ProcessResult([64], exit_code=1, status="failed", stderr_tail=["RuntimeError: boom"])
    assert not runner.port_taken(failed)  # any other failure is the point's


def test_points_that_would_all_fail_alike_stop_the_sweep_and_others_do_not():
    ctx = types.SimpleNamespace(plan=types.SimpleNamespace(out="/x/night.jsonl", log_path="/x/night.log"))
    with pytest.raises(WriteFailed, match=r"could not append to /x/night.jsonl \(exit 4: disk full\?\)"):
        runner.stop_if_hopeless(ctx, {"error": "write_failed"})  # even where its error record fits
    with pytest.raises(BadInput, match="rejected the configuration"):
        runner.stop_if_hopeless(ctx, {"error": "bad_input"})
    for goes_on in ({"error": "oom"}, {"error": "timeout"}, None):
        runner.stop_if_hopeless(ctx, goes_on)


def test_a_setting_that_changes_nothing_is_said_before_the_dry_runs_commands(tmp_path, in_process):
    code, err = in_process(DRY_RUN=1, MODEL="tiny", PRECISION="fp8-rowwise", FP8_EXPERTS=1, SEQLENS=64,
                           OUT=tmp_path / "o.jsonl")
    assert code == 0 and err.count("warning: FP8_EXPERTS=1: MODEL=tiny has no MoE layer: it changes nothing here\n") == 1
    assert "warning: PRECISION=fp8-rowwise on CPU: torchao emulates the format" in err


def test_a_stale_build_lock_is_the_machines_fault_in_the_record_the_table_and_the_exit(tmp_path, fake, in_process):
    # issue 46: recorded as bad_input ("the benchmark rejected its configuration"), in the sweep's
    # table, the node's summary and the report, where the lock's own line said what to remove
    out, runs = tmp_path / "o.jsonl", tmp_path / "runs.txt"
    code, err = in_process(BENCHMARK=fake, FAKE_RUNS=runs, FAKE_STALE_LOCK="/x/cpu_adam/lock", SEQLENS="64 128",
                           OUT=out)
    assert code == faults.EXIT_ENVIRONMENT == 5
    assert len(runs.read_text().splitlines()) == 1  # every later point would wait on it too
    [error] = of_kind(records(out), "error")
    assert (error["error"], error["seq_len"], error["exit_code"]) == ("environment", 64, 5)
    assert error["message"] == ("exit code 5: the machine's environment stopped the benchmark (its error line says "
                                "what): a stale build lock at /x/cpu_adam/lock (5 min old, and no process holds it)")
    table = err[err.index("seq_len  TFLOPS/GPU"):].splitlines()
    assert [row.split()[-1] for row in table[1:3]] == ["environment", "run"]  # 128: "not run"
    assert "error: the benchmark stopped on this machine's environment (exit 5, its line above)" in err
    assert "rejected" not in err


@pytest.mark.parametrize("engine", ["deepspeed", "fsdp2"])
def test_slurm_batch_script_builds_the_hostfile_from_the_nodelist(tmp_path, engine):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text('#!/usr/bin/env bash\n[[ "$1 $2 $3" == "show hostnames gpu[01-02]" ]] '
                        '&& printf "gpu01\\ngpu02\\n"\n')
    scontrol.chmod(0o755)
    env = sweep_env(DRY_RUN=1, SLURM_JOB_NODELIST="gpu[01-02]", SLURM_JOB_ID=42, SLURM_GPUS_ON_NODE=8,
                    SLURM_SUBMIT_DIR=REPO, TMPDIR=tmp_path, SEQLENS=8192, OUT=tmp_path / "s.jsonl",
                    PATH=f"{bin_dir}:{os.environ['PATH']}", ENGINE=engine, OFFLOAD_OPTIMIZER=0)
    result = run_proc(["bash", str(REPO / "slurm" / "run_sweep.sbatch")], env, 120, cleared=SWEEP_CLEARED)
    assert result.returncode == 0, result.stderr
    hostfile = tmp_path / "run_sweep-hostfile.42"
    assert hostfile.read_text() == "gpu01 slots=8\ngpu02 slots=8\n"
    line = result.stdout.splitlines()[0]  # then, for DeepSpeed, the env file's lines, as comments
    if engine == "deepspeed":
        assert f"--hostfile {hostfile} --master_addr gpu01 --num_gpus 8 --master_port 29500" in line
        return
    # torchrun on each node, started by pdsh over ssh; the settings exported in its command
    assert "PDSH_RCMD_TYPE=ssh" in line and " pdsh -S -f 1024 -w gpu01,gpu02 " in line
    assert ("-m torch.distributed.run --nnodes 2 --nproc-per-node 8 --node-rank %n --master-addr gpu01 "
            "--master-port 29500 ") in line
    assert "export ENGINE=fsdp2; " in line and "export SEQ_LEN=8192; " in line


@pytest.mark.parametrize("script", ["run_sweep.sbatch", "run_node.sbatch"])
@pytest.mark.parametrize("nodelist, message", [
    ("gpu[01-02]", "error: no scontrol on PATH to expand SLURM_JOB_NODELIST='gpu[01-02]'"),
    ("", "error: SLURM_JOB_NODELIST is not set"),
])
def test_slurm_batch_script_without_slurm_says_what_is_missing_in_one_line(tmp_path, nodelist, message, script):
    # A PATH holding bash alone: no scontrol, as on a laptop; one line and exit 2, before any run.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "dirname"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    env = sweep_env(DRY_RUN=1, SLURM_JOB_NODELIST=nodelist, SLURM_SUBMIT_DIR=REPO, PATH=str(bin_dir))
    result = run_proc([str(bin_dir / "bash"), str(REPO / "slurm" / script)], env, 60, cleared=SWEEP_CLEARED)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.splitlines() == [result.stderr.strip()] and result.stderr.startswith(message)


# ---------------------------------------------------------------- pure rules of the runner

def test_timing_totals_split_wall_time_into_startup_and_steps():
    a = child_process.ProcessResult([8192, 32768], wall_s=200.0, steps_s=80.0, timed_s=60.0)
    b = child_process.ProcessResult([65536], wall_s=150.0, steps_s=100.0, timed_s=90.0)
    totals = runner.timing_totals([a.timing(), b.timing()])
    assert totals["process_wall_s"] == 350 and totals["steps_s"] == 180 and totals["timed_steps_s"] == 150
    assert totals["startup_s"] == 170 and totals["processes"][0]["warmup_s"] == 20


def test_exit_codes_and_eta():
    assert faults.exit_meaning(3)[0] == "oom" and faults.exit_meaning(2)[0] == "bad_input"
    assert faults.exit_meaning(4)[0] == "write_failed" and faults.exit_meaning(1)[0] == "exception"
    assert faults.exit_meaning(5)[0] == "environment"
    for killed in (-9, 137, 247):  # subprocess, a shell, the DeepSpeed launcher
        assert "OOM killer" in faults.exit_meaning(killed)[1]
    assert "OOM killer" not in faults.exit_meaning(143)[1]  # SIGTERM is no OOM killer
    assert runner.eta_s([100.0, 50.0], 4) == 300.0 and runner.eta_s([], 3) is None
    # 32768 planned out (does_not_fit, not in todo), 8192 ran, 65536 still to run: 1 of 2 ended
    assert runner.points_ended([8192, 65536], {8192: {}}, {32768: {}}) == 1
    assert runner.points_ended([8192, 65536], {8192: {}}, {32768: {}, 65536: {}}) == 2
    assert child_process.parse_record('gpu01: {"kind": "summary", "seq_len": 8}')["seq_len"] == 8
    assert child_process.parse_record("[INFO] launch.py: spawned") is None


def test_tables_show_a_cpus_small_figures():
    summaries = {64: {"tflops_per_gpu": 0.000412, "mfu": None, "peak_mem_gib": None},
                 128: {"tflops_per_gpu": 812.34, "mfu": 0.4531, "peak_mem_gib": 79.04}}
    rows = sweep_table([64, 128, 256], summaries, {256: {"error": "oom"}}, {}).splitlines()
    assert [row.split() for row in rows[1:]] == [["64", "0.000412", "-", "-", "ok"],
                                                 ["128", "812", "45.3%", "79.0", "ok"],
                                                 ["256", "-", "-", "-", "oom"]]


# ---------------------------------------------------------------- the process machinery

def test_the_benchmark_log_ends_a_partial_line_and_a_full_disk_only_stops_it(small_disk):
    path = small_disk / "night.log"
    path.write_text("a line a killed process left unfinished")
    log = child_process.Log(str(path))
    log.write("the next process\n")
    assert path.read_text() == "a line a killed process left unfinished\nthe next process\n"
    for _ in range(SMALL_DISK_BYTES // 100):
        log.write("x" * 100 + "\n")  # fills the disk; never raises into the sweep
    assert log.error.errno == errno.ENOSPC and path.read_text().endswith("\n")


# The process's last summary, then a teardown that takes a while (a rank leaving NCCL, say).
LAST_POINT_THEN_TEARDOWN = ('import json, time; print(json.dumps({"kind": "summary", "schema": 1, '
                            '"script": "benchmark.py", "run_id": "r", "seq_len": 64}), flush=True); '
                            'time.sleep(600)')


@pytest.mark.parametrize("seq_lens, status", [([64], "ok"), ([64, 128], "interrupted")])
def test_ctrl_c_in_the_teardown_after_the_last_point_is_no_interruption(tmp_path, seq_lens, status):
    def ctrl_c(summary):  # as the point is done: what is left of the process is its teardown
        signal.raise_signal(signal.SIGINT)

    # Ctrl-C as a terminal delivers it, whatever this process inherited: a shell's background
    # job starts with SIGINT ignored, and then the [64, 128] case would wait out the child's sleep
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = child_process.run_process([sys.executable, "-c", LAST_POINT_THEN_TEARDOWN], dict(os.environ),
                                           seq_lens, 0, child_process.Log(str(tmp_path / "log")), ctrl_c, False,
                                           io.StringIO())
    finally:
        signal.signal(signal.SIGINT, previous)
    assert result.status == status and len(result.summaries) == 1
    assert result.exit_code == -signal.SIGTERM  # the group was stopped, not waited for


@pytest.mark.parametrize("name, ok", [("llama3", False), ("tiny", True), ("meta-llama/Llama-3.1-8B", True),
                                      ("/no/such/folder", False), ("configs", False)])
def test_model_is_resolved_before_any_process_starts(name, ok):
    from upgrade_bench.models import model

    problem = model.cheap_problem(name)
    assert (problem is None) == ok
    if not ok:
        assert problem.startswith(f"MODEL={name!r}: not a preset (") and "tiny" in problem


@pytest.mark.parametrize("env", [{"SEQLENS": "99999999999999999999"}, {"BATCH_SIZE": "99999999999999999999"},
                                 {"FIND_MAX_SEQLEN": "1", "MAX_SEQLEN_LIMIT": "99999999999999999999"}])
def test_a_length_or_batch_beyond_torchs_sizes_is_refused_before_any_process(in_process, env):
    # each passed the plan, then every benchmark process failed after its start-up (exit 1)
    with pytest.raises(BadInput, match=r"expected (an integer|space- or comma-separated integers) >= 1 and <= "
                                       r"2147483647$"):
        in_process(MODEL="tiny", DRY_RUN=1, **env)


@pytest.mark.parametrize("bad", [{"run_id": ["a", "b"]}, {"config": "ZERO_STAGE=3"}])
def test_resume_reads_out_through_the_schema_and_skips_what_it_cannot_use(tmp_path, bad):
    # a header whose run_id is a list (unhashable) or whose config is text crashed RESUME and
    # DRY_RUN; a summary whose seq_len is text crashed FIND_MAX_SEQLEN
    from upgrade_bench.log import records

    out = tmp_path / "out.jsonl"
    good = {"kind": "header", "schema": 1, "run_id": "r", "config": {"MODEL": "tiny"}}
    rows = [{**good, **bad}, {"kind": "summary", "schema": 1, "run_id": "r", "seq_len": "64", "peak_mem_gib": "lots"},
            good, {"kind": "summary", "schema": 1, "run_id": "r", "seq_len": 64, "step_ms": 1.0}]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    kept = [{k: v for k, v in r.items() if k != "log_file"} for r in records.read_log(str(out), "OUT")]
    assert kept == [good, rows[3]]
    assert sweep_plan.done_summaries(kept, {"MODEL": "tiny"}, [64]) == {64: rows[3]}


def test_a_benchmark_process_does_not_see_the_sweeps_own_settings(tmp_path, monkeypatch, in_process):
    # A process given SEQLENS warned "did you mean SEQ_LEN?" on every point of a node run.
    envs = []

    def run_process(argv, env, seq_lens, timeout_s, log, on_summary, multi_node, echo):
        envs.append(env)
        summaries = [{"kind": "summary", "seq_len": s} for s in seq_lens]
        return child_process.ProcessResult(list(seq_lens), summaries, exit_code=0, status="ok")

    monkeypatch.setattr(runner, "run_process", run_process)
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    code, err = in_process(SEQLENS=64, GPUS=1, POINT_TIMEOUT=99, OUT=tmp_path / "o.jsonl")
    assert code == 0, err
    [env] = envs
    assert env["SEQ_LEN"] == "64" and env["MASTER_ADDR"] == "10.0.0.1"  # torch.distributed reads it
    assert not {"SEQLENS", "GPUS", "POINT_TIMEOUT", "OUT"} & set(env)
