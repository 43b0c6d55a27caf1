"""run_sweep.sh: planning rules, the capacity search, telemetry aggregation, and the script
run for real as a subprocess (the real benchmark.py on the tiny model for one sweep and its
resume; a fake benchmark script for the faults it injects)."""
import errno
import io
import json
import math
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

from conftest import SMALL_DISK_BYTES, script_env
from upgrade_bench import child_process, settings, sweep, telemetry
from upgrade_bench.faults import BadInput, WriteFailed
from upgrade_bench.records import RecordWriter, read_lines

REPO = Path(__file__).resolve().parent.parent
RUN_SWEEP = REPO / "run_sweep.sh"

FAKE_BENCHMARK = r'''
"""Fake benchmark.py: the records and exit codes run_sweep reads, none of the work.
FAKE_OOM_ABOVE=N / FAKE_OOM_AT=N: oom error record, exit 3. FAKE_CRASH_AT=N: traceback on
stderr, exit 1, no record. FAKE_HANG_AT=N: start a grandchild `sleep`, write its pid to
FAKE_PID_FILE, hang. FAKE_PEAK="a b": peak_mem_gib = a + b * seq_len. FAKE_HBM: the
header's hardware.hbm_gib. FAKE_RUNS: one line per process (its SEQ_LEN). FAKE_REJECT=1:
refuse the configuration as benchmark.py does (one line, exit 2). A record that cannot be
appended to OUTPUT ends it as in benchmark.py (one line, exit 4); FAKE_DISK_BYTES: OUTPUT's
folder is a disk of that size (where no small tmpfs can be mounted)."""
import errno, json, os, subprocess, sys, time, uuid
from upgrade_bench.records import append_line

env = os.environ
run_id, out = uuid.uuid4().hex[:8], env.get("OUTPUT", "")
seq_lens = [int(x) for x in env["SEQ_LEN"].split()]
steps, warmup = int(env.get("STEPS", "10")), int(env.get("WARMUP_STEPS", "2"))

def write(kind, **fields):
    if env.get("RANK", "0") != "0":  # as benchmark.py: rank 0 writes
        return
    line = json.dumps({"kind": kind, "schema": 1, "script": "benchmark.py", "run_id": run_id, **fields})
    print(line, flush=True)
    if not out:
        return
    try:
        used = sum(e.stat().st_size for e in os.scandir(os.path.dirname(out)))
        if env.get("FAKE_DISK_BYTES") and used + len(line) + 1 > int(env["FAKE_DISK_BYTES"]):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        append_line(out, line + "\n")
    except OSError as err:
        sys.stderr.write(f"error: cannot append to {out} ({err.strerror}): stopped\n")
        sys.exit(4)

if env.get("FAKE_RUNS"):
    with open(env["FAKE_RUNS"], "a") as f:
        f.write(env["SEQ_LEN"] + "\n")
print("[INFO] [launch.py] a log line that is not a record", flush=True)
if env.get("FAKE_REJECT"):
    sys.stderr.write("error: ZERO_STAGE=5: expected an integer >= 0 and <= 3\n")
    sys.exit(2)
hbm = float(env["FAKE_HBM"]) if env.get("FAKE_HBM") else None
write("header", config={"MODEL": "fake", "SEQ_LEN": seq_lens}, hardware={"hbm_gib": hbm})
a, b = [float(x) for x in env["FAKE_PEAK"].split()] if env.get("FAKE_PEAK") else (None, None)
for s in seq_lens:
    if env.get("FAKE_HANG_AT") == str(s):
        child = subprocess.Popen(["sleep", "600"])
        with open(env["FAKE_PID_FILE"], "w") as f:
            f.write(str(child.pid))
        time.sleep(600)
    if env.get("FAKE_CRASH_AT") == str(s):
        sys.stderr.write("Traceback (most recent call last):\nRuntimeError: fake NCCL failure\n")
        sys.exit(1)
    if (env.get("FAKE_OOM_ABOVE") and s > int(env["FAKE_OOM_ABOVE"])) or env.get("FAKE_OOM_AT") == str(s):
        write("error", error="oom", message="CUDA out of memory (fake)", seq_len=s)
        sys.exit(3)
    peak = None if a is None else a + b * s
    for i in range(warmup + steps):
        write("step", seq_len=s, step=i, warmup=i < warmup, step_ms=10.0, peak_mem_gib=peak)
    write("summary", seq_len=s, steps=steps, step_ms=10.0, tflops_per_gpu=s / 100, mfu=0.5,
          peak_mem_gib=peak)
'''

CLEARED = {v.name for v in sweep.VARS + settings.TRAINING_VARS} | {"RUN_ID", "CUDA_VISIBLE_DEVICES",
                                                                   "DS_ENV_FILE"}


def sweep_env(**extra) -> dict:
    env = {k: v for k, v in script_env({}).items() if k not in CLEARED}
    env.update(PYTHON=sys.executable, PYTHONPATH=str(REPO))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_sweep(timeout=300, **extra):
    return subprocess.run([str(RUN_SWEEP)], env=sweep_env(**extra), capture_output=True, text=True,
                          timeout=timeout)


def records(path) -> list[dict]:
    with open(path) as f:
        recs, skipped = read_lines(f)
    assert skipped == 0
    return recs


def of_kind(recs, kind, script=None):
    return [r for r in recs if r["kind"] == kind and (script is None or r["script"] == script)]


@pytest.fixture
def fake(tmp_path):
    path = tmp_path / "fake_benchmark.py"
    path.write_text(FAKE_BENCHMARK)
    return path


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

REAL_TINY = dict(MODEL="tiny", ATTN_BACKEND="eager", ZERO_STAGE=2, OFFLOAD_OPTIMIZER=0,
                 GRAD_CHECKPOINT=0, STEPS=2, WARMUP_STEPS=1, GPUS=1)


def test_real_sweep_with_real_oom_then_resume_runs_only_the_missing_point(tmp_path):
    out = tmp_path / "sweep.jsonl"
    # 1M tokens with eager attention: a 1 TiB mask, refused by the CPU allocator ("can't
    # allocate memory", at once, on any machine) -> benchmark.py's oom record, exit 3.
    first = run_sweep(SEQLENS="128 64 1048576", OUT=out, **REAL_TINY)
    assert first.returncode == 0, first.stderr[-3000:]
    recs = records(out)
    headers = of_kind(recs, "header", "benchmark.py")
    assert len(headers) == 1 and headers[0]["config"]["SEQ_LEN"] == [64, 128, 1048576]  # one process
    assert sorted(r["seq_len"] for r in of_kind(recs, "summary")) == [64, 128]
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
    table = first.stderr[first.stderr.index("seq_len  TFLOPS/GPU"):]
    assert "1048576" in table and "oom" in table and table.count(" ok") == 2
    assert "point 2/3 seq_len 128" in first.stderr and "ETA" in first.stderr
    stdout_recs = [json.loads(line) for line in first.stdout.splitlines()]
    assert [r["kind"] for r in stdout_recs].count("summary") == 2  # stdout is the same JSONL stream
    assert not any("log_file" in r for r in stdout_recs)  # as written, not as read back

    # Lose the 128 summary, as if the night had been cut short; resume.
    kept = [line for line in out.read_text().splitlines()
            if not ('"kind": "summary"' in line and '"seq_len": 128,' in line)]
    out.write_text("\n".join(kept) + "\n")
    second = run_sweep(SEQLENS="64 128", OUT=out, RESUME=1, **REAL_TINY)
    assert second.returncode == 0, second.stderr[-3000:]
    recs = records(out)
    headers = of_kind(recs, "header", "benchmark.py")
    assert len(headers) == 2 and headers[1]["config"]["SEQ_LEN"] == [128]  # only the missing one
    assert sorted(r["seq_len"] for r in of_kind(recs, "summary")) == [64, 128]
    assert of_kind(recs, "header", "run_sweep.sh")[-1]["skipped_seq_lens"] == [64]
    assert "ok (earlier run)" in second.stderr


# ---------------------------------------------------------------- faults (fake benchmark)

def test_oom_timeout_and_crash_are_recorded_and_the_sweep_goes_on(tmp_path, fake):
    out, runs, pid_file = tmp_path / "night.jsonl", tmp_path / "runs.txt", tmp_path / "pid"
    result = run_sweep(BENCHMARK=fake, OUT=out, SEQLENS="64 128 256 512 1024", FAKE_OOM_AT=128,
                       FAKE_HANG_AT=256, FAKE_CRASH_AT=512, POINT_TIMEOUT=5, FAKE_RUNS=runs,
                       FAKE_PID_FILE=pid_file)
    assert result.returncode == 1, result.stderr[-3000:]  # a crash happened: not a clean night
    # Each failure ends its process; the rest starts over in a new one.
    assert runs.read_text().splitlines() == ["64 128 256 512 1024", "256 512 1024", "512 1024", "1024"]
    recs = records(out)
    assert sorted(r["seq_len"] for r in of_kind(recs, "summary")) == [64, 1024]
    errors = {r["seq_len"]: r for r in of_kind(recs, "error")}
    assert errors[128]["error"] == "oom" and errors[128]["script"] == "benchmark.py"
    assert errors[256]["error"] == "timeout" and errors[256]["script"] == "run_sweep.sh"
    assert errors[512]["error"] == "exception" and "fake NCCL failure" in errors[512]["stderr_tail"]
    # The hung point's process group is gone, grandchild included: nothing holds the GPU.
    assert wait_dead(int(pid_file.read_text()))
    statuses = [p["status"] for p in of_kind(recs, "sweep")[0]["processes"]]
    assert statuses == ["failed", "timeout", "failed", "ok"]
    table = result.stderr[result.stderr.index("seq_len  TFLOPS/GPU"):].splitlines()
    assert [row.split()[-1] for row in table[1:6]] == ["ok", "oom", "timeout", "exception", "ok"]
    assert "a log line that is not a record" in (tmp_path / "night.log").read_text()


def test_two_cpu_ranks_through_the_deepspeed_launcher(tmp_path, fake):
    out, runs = tmp_path / "two.jsonl", tmp_path / "runs.txt"
    result = run_sweep(BENCHMARK=fake, OUT=out, SEQLENS="64 128", GPUS=2, FAKE_OOM_AT=128, FAKE_RUNS=runs)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "-m deepspeed.launcher.runner --num_gpus 2 --master_port" in result.stderr
    assert len(runs.read_text().splitlines()) == 2  # two ranks of one process
    recs = records(out)
    assert [r["seq_len"] for r in of_kind(recs, "summary")] == [64]
    [error] = of_kind(recs, "error")
    assert (error["error"], error["seq_len"]) == ("oom", 128)
    [proc] = of_kind(recs, "sweep")[0]["processes"]
    assert proc["exit_code"] == 3  # the rank's exit code, through the launcher


def test_ctrl_c_stops_the_child_group_and_keeps_what_was_done(tmp_path, fake):
    out, pid_file = tmp_path / "cut.jsonl", tmp_path / "pid"
    proc = subprocess.Popen([str(RUN_SWEEP)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=sweep_env(BENCHMARK=fake, OUT=out, SEQLENS="64 128", FAKE_HANG_AT=128,
                                          FAKE_PID_FILE=pid_file))
    for line in proc.stdout:  # the first point is done once its summary is out
        if json.loads(line)["kind"] == "summary":
            break
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    assert wait_dead(int(pid_file.read_text()))
    recs = records(out)
    assert [r["seq_len"] for r in of_kind(recs, "summary")] == [64]
    assert of_kind(recs, "sweep")[0]["interrupted"] is True
    assert not of_kind(recs, "error")  # an interruption is not a failed point
    assert "not run" in stderr


def test_a_full_disk_stops_the_sweep_with_one_line_and_every_record_whole(small_disk, tmp_path, fake,
                                                                          monkeypatch, capsys):
    # Issue 15's night: OUT on a 64 KiB disk. The first point fits, the second fills it.
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    runs = tmp_path / "runs.txt"
    for key, value in dict(STEPS=250, WARMUP_STEPS=0, FAKE_RUNS=runs, FAKE_DISK_BYTES=SMALL_DISK_BYTES).items():
        monkeypatch.setenv(key, str(value))
    out = small_disk / "night.jsonl"
    s = settings.parse(sweep.VARS + sweep.PASSED, {"SEQLENS": "64 128 256", "REUSE_PROCESS": "0",
                                                   "BENCHMARK": str(fake)})
    ctx = sweep.Context(s=s, out=str(out), log_path=str(small_disk / "night.log"), python=sys.executable,
                        gpus=1, hostfile="", multi_node=False, devices=(None, None),
                        config={"MODEL": "fake"}, writer=RecordWriter(sweep.SCRIPT, str(out), stream=io.StringIO()),
                        run_config=types.SimpleNamespace(backend="sdpa", peak_tflops=None,
                                                         peak_source=None, warnings=[]))
    code = sweep.run(ctx, [], {}, [64, 128, 256])
    err = capsys.readouterr().err
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


def test_points_that_would_all_fail_alike_stop_the_sweep_and_others_do_not():
    ctx = types.SimpleNamespace(out="/x/night.jsonl", log_path="/x/night.log")
    with pytest.raises(WriteFailed, match=r"could not append to /x/night.jsonl \(exit 4: disk full\?\)"):
        sweep.stop_if_hopeless(ctx, {"error": "write_failed"})  # even where its error record fits
    with pytest.raises(BadInput, match="rejected the configuration"):
        sweep.stop_if_hopeless(ctx, {"error": "bad_input"})
    for goes_on in ({"error": "oom"}, {"error": "timeout"}, None):
        sweep.stop_if_hopeless(ctx, goes_on)


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

    result = child_process.run_process([sys.executable, "-c", LAST_POINT_THEN_TEARDOWN], dict(os.environ),
                                       seq_lens, 0, child_process.Log(str(tmp_path / "log")), ctrl_c, False,
                                       io.StringIO())
    assert result.status == status and len(result.summaries) == 1
    assert result.exit_code == -signal.SIGTERM  # the group was stopped, not waited for


def test_a_capacity_search_with_nothing_to_search_is_refused(monkeypatch):
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("FIND_MAX_SEQLEN", "1")
    monkeypatch.setenv("MAX_SEQLEN_LIMIT", "1")
    with pytest.raises(BadInput, match=r"MAX_SEQLEN_LIMIT=1: below SEQLEN_STEP \(8192\) or the "
                                       r"smallest SEQLENS \(8192\)"):
        sweep.load_settings([])
    monkeypatch.setenv("MAX_SEQLEN_LIMIT", "8192")  # one probe is a search
    assert sweep.load_settings([])["MAX_SEQLEN_LIMIT"] == 8192
    monkeypatch.setenv("FIND_MAX_SEQLEN", "0")  # a sweep does not use the limit
    monkeypatch.setenv("MAX_SEQLEN_LIMIT", "1")
    assert sweep.load_settings([])["MAX_SEQLEN_LIMIT"] == 1


# ---------------------------------------------------------------- FIND_MAX_SEQLEN

def probe_runner(threshold, peak=None, hbm=None):
    """run(lengths) of find_max_seq_len for a GPU where lengths <= threshold fit."""
    calls = []

    def run(lengths):
        calls.append(list(lengths))
        probes = []
        for s in lengths:
            fits = s <= threshold
            probes.append(sweep.Probe(s, fits, peak(s) if peak and fits else None, hbm,
                                      "ok" if fits else "oom"))
            if not fits:
                break
        return probes

    return run, calls


START, STEP, LIMIT = 8192, 8192, 1048576
MAX_RUNS = math.ceil(math.log2((LIMIT - START) / STEP)) + 2  # the bound


@pytest.mark.parametrize("threshold", [5000, 8192, 9000, 100000, 262143, 300000, 1048575, 1048576, 5000000])
def test_capacity_search_finds_the_threshold_within_the_step(threshold):
    run, calls = probe_runner(threshold)
    found = sweep.find_max_seq_len(run, START, STEP, LIMIT)
    assert found["runs"] == len(calls) <= MAX_RUNS
    if threshold >= LIMIT:
        assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (LIMIT, None)
        return
    top, bottom = found["max_fit_seq_len"] or 0, found["min_fail_seq_len"]
    assert top <= threshold < bottom and bottom - top <= STEP
    assert calls[0] == [8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]  # one process


def test_capacity_search_bisects_below_a_start_that_does_not_fit():
    run, calls = probe_runner(9000)
    found = sweep.find_max_seq_len(run, 10000, STEP, LIMIT)
    assert calls[0][0] == 10000 and calls[1:] == [[8192]]
    assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (8192, 10000)


def test_capacity_search_seeded_by_the_sweep_skips_the_ladder():
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    run, calls = probe_runner(298604, peak, hbm=141)
    sweep_fits = [sweep.Probe(s, True, peak(s), 141) for s in (32768, 65536, 131072)]
    found = sweep.find_max_seq_len(run, START, STEP, LIMIT, known=sweep_fits)
    assert calls == [[294912, 303104]] and found["runs"] == 1
    assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (294912, 303104)


def test_capacity_search_cut_short_goes_on_from_what_it_knew():
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    run, calls = probe_runner(298604, peak, hbm=141)
    done_before = [sweep.Probe(s, True, peak(s), 141) for s in (65536, 131072, 294912)] + \
        [sweep.Probe(524288, False, reason="oom")]
    found = sweep.find_max_seq_len(run, START, STEP, LIMIT, known=done_before)
    assert calls == [[303104, 311296]]  # one run: 303104 fails, the process stops there
    assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (294912, 303104)


def test_capacity_search_guided_by_the_memory_line_needs_two_runs():
    # The guide's line: 12.6 GiB + 0.00043 GiB/token; OOM where it crosses 141 GiB.
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    threshold = int((141 - 12.6) / 0.00043)  # 298604
    run, calls = probe_runner(threshold, peak, hbm=141)
    found = sweep.find_max_seq_len(run, START, STEP, LIMIT)
    assert found["max_fit_seq_len"] <= threshold < found["min_fail_seq_len"]
    assert found["min_fail_seq_len"] - found["max_fit_seq_len"] == STEP
    assert calls[1] == [294912, 303104] and found["runs"] == 2
    assert found["peak_mem_gib_at_max"] == pytest.approx(peak(294912))


def test_capacity_search_survives_a_wrong_memory_line():
    # Peaks say the ceiling is ~58K tokens higher than it is: both guesses fail, bisection ends it.
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    run, calls = probe_runner(240000, peak, hbm=141)
    found = sweep.find_max_seq_len(run, START, STEP, LIMIT)
    assert calls[1:3] == [[253952], [245760]]
    assert found["max_fit_seq_len"] <= 240000 < found["min_fail_seq_len"]
    assert found["min_fail_seq_len"] - found["max_fit_seq_len"] <= STEP
    assert found["runs"] <= MAX_RUNS


def test_find_max_seqlen_end_to_end_writes_a_capacity_record(tmp_path, fake):
    out, runs = tmp_path / "cap.jsonl", tmp_path / "runs.txt"
    result = run_sweep(BENCHMARK=fake, OUT=out, FIND_MAX_SEQLEN=1, SEQLENS=8192, FAKE_OOM_ABOVE=100000,
                       FAKE_RUNS=runs)
    assert result.returncode == 0, result.stderr[-3000:]
    [capacity] = of_kind(records(out), "capacity")
    assert capacity["max_fit_seq_len"] <= 100000 < capacity["min_fail_seq_len"]
    assert capacity["min_fail_seq_len"] - capacity["max_fit_seq_len"] <= 8192
    assert capacity["runs"] == len(runs.read_text().splitlines()) <= MAX_RUNS
    assert capacity["seq_len_step"] == 8192 and capacity["config"]["STEPS"] == 1
    # Each probe is one step, no warm-up: as short as knowing it fits allows.
    steps = of_kind(records(out), "step")
    assert steps and all(not s["warmup"] for s in steps)
    assert len(steps) == len(of_kind(records(out), "summary"))
    assert "largest that fits" in result.stderr


# ---------------------------------------------------------------- dry runs: multi-node, SLURM, 8 GPUs

def test_dry_run_multi_node_prints_the_launcher_command_and_runs_nothing(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=8\nnode2 slots=8  # second node\n")
    out = tmp_path / "mn.jsonl"
    result = run_sweep(DRY_RUN=1, GPUS=8, HOSTFILE=hostfile, MASTER_ADDR="node1", MASTER_PORT=29555,
                       SEQLENS="32768 8192", OUT=out, STEPS=3, ZERO_STAGE=3, TMPDIR=tmp_path,
                       PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    assert result.returncode == 0, result.stderr
    line, *shown_env = result.stdout.splitlines()
    assert f"-m deepspeed.launcher.runner --hostfile {hostfile} --master_addr node1 --num_gpus 8 " \
           f"--master_port 29555 {REPO / 'benchmark.py'}" in line
    assert line.startswith("STEPS=3 ZERO_STAGE=3 SEQ_LEN='8192 32768' OUTPUT=")
    # Other nodes get the variables through DeepSpeed's env file, not the inherited environment;
    # a dry run shows its lines and writes no file.
    assert "DS_ENV_FILE='(a temporary file of the lines below)'" in line
    lines = [shown.removeprefix("#   ") for shown in shown_env]
    assert {"STEPS=3", "ZERO_STAGE=3", "SEQ_LEN=8192 32768", f"OUTPUT={out}",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"} <= set(lines)
    assert not out.exists() and not list(tmp_path.glob("run_sweep-*.ds_env"))


def test_dry_run_eight_gpus_on_a_smaller_machine(tmp_path):
    result = run_sweep(DRY_RUN=1, GPUS=8, REUSE_PROCESS=0, SEQLENS="8192 32768", OUT=tmp_path / "x.jsonl")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["SEQ_LEN=8192", "SEQ_LEN=32768"]  # one per point
    assert all("deepspeed.launcher.runner --num_gpus 8 --master_port" in line for line in lines)
    capacity = run_sweep(DRY_RUN=1, GPUS=8, FIND_MAX_SEQLEN=1, SEQLENS=131072, OUT=tmp_path / "c.jsonl")
    assert capacity.stdout.startswith("SEQ_LEN='131072 262144 524288 1048576' OUTPUT=")
    assert "STEPS=1 WARMUP_STEPS=0" in capacity.stdout
    assert not (tmp_path / "x.jsonl").exists()


def test_slurm_batch_script_builds_the_hostfile_from_the_nodelist(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text('#!/usr/bin/env bash\n[[ "$1 $2 $3" == "show hostnames gpu[01-02]" ]] '
                        '&& printf "gpu01\\ngpu02\\n"\n')
    scontrol.chmod(0o755)
    env = sweep_env(DRY_RUN=1, SLURM_JOB_NODELIST="gpu[01-02]", SLURM_JOB_ID=42, SLURM_GPUS_ON_NODE=8,
                    SLURM_SUBMIT_DIR=REPO, TMPDIR=tmp_path, SEQLENS=8192, OUT=tmp_path / "s.jsonl")
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    result = subprocess.run(["bash", str(REPO / "slurm" / "run_sweep.sbatch")], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    hostfile = tmp_path / "run_sweep-hostfile.42"
    assert hostfile.read_text() == "gpu01 slots=8\ngpu02 slots=8\n"
    line = result.stdout.splitlines()[0]  # then the env file's lines, as comments
    assert f"--hostfile {hostfile} --master_addr gpu01 --num_gpus 8 --master_port 29500" in line


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("extra, names", [
    ({"SEQLENS": "8192 abc"}, "SEQLENS"),
    ({"SEQLENS": "0"}, "SEQLENS"),
    ({"SEQLENS": "-8192"}, "SEQLENS"),
    ({"HOSTFILE": "/nonexistent/hosts"}, "HOSTFILE"),
    ({"ZERO_STAGE": "4"}, "ZERO_STAGE"),
    ({"SEQ_LEN": "8192"}, "SEQLENS"),
    ({"OUT": "FILE/sub/out.jsonl"}, "OUT"),
    ({"MODEL": "/nonexistent/model"}, "MODEL"),
])
def test_bad_input_exits_2_with_one_line_and_starts_nothing(tmp_path, fake, extra, names):
    runs = tmp_path / "runs.txt"
    (tmp_path / "FILE").write_text("a file, not a folder")
    extra = {k: v.replace("FILE", str(tmp_path / "FILE")) for k, v in extra.items()}
    result = run_sweep(BENCHMARK=fake, FAKE_RUNS=runs, **{"OUT": tmp_path / "o.jsonl", **extra})
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith("error: ") and names in line
    assert not runs.exists() and not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("out", ["/proc/sweep.jsonl", "/proc/"])  # a file, or a folder for one
def test_an_out_it_cannot_append_to_is_refused_before_anything_starts(monkeypatch, out):
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    s = settings.parse(sweep.VARS + sweep.PASSED, {"OUT": out, "MODEL": "tiny"})
    with pytest.raises(BadInput, match=r"OUT='/proc/.*\.jsonl': cannot write there \(no file can "
                                       r"be created in /proc"):
        sweep.prepare(s)


@pytest.mark.parametrize("mode", [{}, {"FIND_MAX_SEQLEN": 1}])
def test_a_configuration_the_benchmark_rejects_stops_after_one_process(tmp_path, fake, mode):
    out, runs = tmp_path / "o.jsonl", tmp_path / "runs.txt"
    result = run_sweep(BENCHMARK=fake, FAKE_RUNS=runs, FAKE_REJECT=1, SEQLENS="64 128", OUT=out,
                       REUSE_PROCESS=0, **mode)
    assert result.returncode == 2
    assert "error: the benchmark rejected the configuration (exit 2)" in result.stderr
    assert len(runs.read_text().splitlines()) == 1  # not once per point
    [error] = of_kind(records(out), "error")
    assert error["error"] == "bad_input" and error["seq_len"] == 64


def test_gpus_above_visible_is_refused_only_where_it_can_be_checked():
    assert "only 2 GPU" in sweep.gpus_problem(8, 2, dry_run=False, multi_node=False)
    assert sweep.gpus_problem(8, 2, dry_run=True, multi_node=False) is None
    assert sweep.gpus_problem(8, 2, dry_run=False, multi_node=True) is None
    assert sweep.gpus_problem(2, 0, dry_run=False, multi_node=False) is None  # CPU ranks
    assert sweep.gpus_problem(2, 2, dry_run=False, multi_node=False) is None


def test_help_lists_the_sweep_and_benchmark_variables():
    result = subprocess.run([str(RUN_SWEEP), "--help"], env=sweep_env(), capture_output=True, text=True)
    assert result.returncode == 0
    for name in ("SEQLENS", "POINT_TIMEOUT", "FIND_MAX_SEQLEN", "HOSTFILE", "ZERO_STAGE", "MODEL"):
        assert f"  {name} " in result.stdout
    assert "  SEQ_LEN " not in result.stdout and "  OUTPUT " not in result.stdout


# ---------------------------------------------------------------- planning rules (pure)

def test_launch_commands():
    py, script = "/venv/bin/python", "/repo/benchmark.py"
    assert sweep.launch_argv(py, script, 1, "", "", None, None) == [py, "-u", script]
    assert sweep.launch_argv(py, script, 2, "", "", 12345, None) == [
        py, "-u", "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port", "12345", script]
    assert sweep.launch_argv(py, script, 0, "/h", "n1", None, None) == [
        py, "-u", "-m", "deepspeed.launcher.runner", "--hostfile", "/h", "--master_addr", "n1", script]
    assert sweep.launch_argv(py, script, 2, "", "", 1, "localhost:2,3")[4:6] == ["--include", "localhost:2,3"]


def test_visible_devices_go_to_include_not_num_gpus():
    assert sweep.select_devices(None, 2) == (None, None)
    assert sweep.select_devices("2,3,5", 2) == ("localhost:2,3", "")
    assert sweep.select_devices("0,1", 8) == (None, None)  # DRY_RUN GPUS=8 on a 2-GPU node
    assert sweep.select_devices("GPU-abc,GPU-def", 1) == (None, "GPU-abc")
    with pytest.raises(ValueError, match="indices"):
        sweep.select_devices("GPU-abc,GPU-def", 2)


def test_hostfile_parsing():
    assert sweep.parse_hostfile("# nodes\nn1 slots=8\n\nn2 slots = 4 # spare\n") == [("n1", 8), ("n2", 4)]
    for bad in ("n1", "n1 slots=0", "n1 gpus=8", ""):
        with pytest.raises(ValueError):
            sweep.parse_hostfile(bad)


def test_resume_matches_summaries_by_config_ignoring_per_process_fields():
    config = {"MODEL": "m", "STEPS": 10, "SEQ_LEN": [1], "OUTPUT": "a", "NOTES": "x"}
    recs = [{"kind": "header", "run_id": "a", "config": config, "hardware": {"hbm_gib": 139.8}},
            {"kind": "summary", "run_id": "a", "seq_len": 8192, "peak_mem_gib": 20.0},
            {"kind": "header", "run_id": "b", "config": {**config, "STEPS": 1}},  # a capacity probe
            {"kind": "summary", "run_id": "b", "seq_len": 32768, "peak_mem_gib": 30.0},
            {"kind": "header", "run_id": "c", "config": {**config, "MODEL": "other"}},
            {"kind": "summary", "run_id": "c", "seq_len": 65536, "peak_mem_gib": 40.0},
            {"kind": "error", "run_id": "a", "seq_len": 65536, "error": "oom", "config": config},
            {"kind": "error", "run_id": "a", "seq_len": 98304, "error": "timeout", "config": config}]
    now = {**config, "SEQ_LEN": [8192, 32768], "OUTPUT": "b", "NOTES": ""}
    assert set(sweep.done_summaries(recs, now)) == {8192}
    # The capacity search takes any STEPS (peaks do not depend on how many steps ran), and
    # out-of-memory points; a timeout says nothing about memory.
    seeds = sweep.known_probes(recs, now)
    assert [(p.seq_len, p.fits, p.peak_mem_gib, p.hbm_gib) for p in seeds] == [
        (8192, True, 20.0, 139.8), (32768, True, 30.0, None), (65536, False, None, None)]
    assert sweep.pending([65536, 8192, 32768, 8192], {8192: {}}) == [32768, 65536]
    assert sweep.process_plan([1, 2], reuse=True) == [[1, 2]]
    assert sweep.process_plan([1, 2], reuse=False) == [[1], [2]]


def test_output_file_naming(tmp_path):
    names = ["nvidia-h200_fa4_20260101-000000.jsonl", "nvidia-h200_fa4_20260102-000000.jsonl",
             "nvidia-b200_fa4_20260103-000000.jsonl"]
    new = sweep.resolve_out("", str(tmp_path), "nvidia-h200", "fa4", "20260105-120000", False, names)
    assert new == str(tmp_path / "nvidia-h200_fa4_20260105-120000.jsonl")
    resumed = sweep.resolve_out("", str(tmp_path), "nvidia-h200", "fa4", "20260105-120000", True, names)
    assert resumed == str(tmp_path / "nvidia-h200_fa4_20260102-000000.jsonl")
    assert sweep.resolve_out(str(tmp_path / "x.jsonl"), "r", "g", "b", "t", True, names) == str(tmp_path / "x.jsonl")
    assert sweep.slug("NVIDIA H200") == "nvidia-h200" and sweep.slug(None) == "cpu"


def test_timing_totals_split_wall_time_into_startup_and_steps():
    a = child_process.ProcessResult([8192, 32768], wall_s=200.0, steps_s=80.0, timed_s=60.0)
    b = child_process.ProcessResult([65536], wall_s=150.0, steps_s=100.0, timed_s=90.0)
    totals = sweep.timing_totals([a.timing(), b.timing()])
    assert totals["process_wall_s"] == 350 and totals["steps_s"] == 180 and totals["timed_steps_s"] == 150
    assert totals["startup_s"] == 170 and totals["processes"][0]["warmup_s"] == 20


def test_exit_codes_and_eta():
    assert sweep.classify_exit(3)[0] == "oom" and sweep.classify_exit(2)[0] == "bad_input"
    assert sweep.classify_exit(4)[0] == "write_failed"
    assert "OOM killer" in sweep.classify_exit(-9)[1] and sweep.classify_exit(1)[0] == "exception"
    assert sweep.eta_s([100.0, 50.0], 4) == 300.0 and sweep.eta_s([], 3) is None
    assert child_process.parse_record('gpu01: {"kind": "summary", "seq_len": 8}')["seq_len"] == 8
    assert child_process.parse_record("[INFO] launch.py: spawned") is None


# ---------------------------------------------------------------- telemetry

def sample(t, sm, mem, power, temp, mask):
    return telemetry.Sample(t, sm, mem, power, temp, mask)


def test_telemetry_aggregate_by_hand():
    samples = [sample(0.0, 1980, 2619, 600, 60, 0),
               sample(0.1, 1900, 2619, 700, 62, 0x4),          # sw_power_cap
               sample(0.2, 1700, 2619, 700, 65, 0x40 | 0x1),   # hw_thermal (+ gpu_idle, ignored)
               sample(0.3, 1980, 2619, 600, 63, 0x2)]          # applications clocks: ignored
    got = telemetry.aggregate(samples, tokens=1000)
    assert got["sm_clock_mhz_median"] == 1940 and got["sm_clock_mhz_min"] == 1700
    assert got["mem_clock_mhz_median"] == 2619 and got["power_w_mean"] == 650
    assert got["temp_c_max"] == 65 and got["throttle"] == ["hw_thermal", "sw_power_cap"]
    # trapezoid: (600+700)/2*0.1 + (700+700)/2*0.1 + (700+600)/2*0.1 = 200 J over 1000 tokens
    assert got["energy_j_per_token"] == pytest.approx(0.2)
    assert got["telemetry_samples"] == 4
    # The GPU's energy counter wins over sampled power when there is one.
    assert telemetry.aggregate(samples, 1000, energy_mj=150_000)["energy_j_per_token"] == pytest.approx(0.15)


def test_telemetry_without_nvml_is_all_null():
    got = telemetry.aggregate([], tokens=1000)
    assert got["telemetry_samples"] == 0
    assert all(got[k] is None for k in telemetry.FIELDS)
    sparse = telemetry.aggregate([sample(0.0, None, None, None, None, None)], 10)
    assert all(sparse[k] is None for k in telemetry.FIELDS)
    sampler = telemetry.Sampler(0)
    sampler.start()  # no GPU here: nothing to sample, nothing raised
    assert sampler.stop() == [] and sampler.energy_mj is None and sampler.error


def test_telemetry_worst_rank_decides():
    a = telemetry.aggregate([sample(0, 1980, 2619, 600, 60, 0), sample(1, 1980, 2619, 600, 61, 0)], 100)
    b = telemetry.aggregate([sample(0, 1500, 2619, 700, 80, 0x20), sample(1, 1600, 2619, 700, 82, 0)], 100)
    got = telemetry.combine_ranks([a, b, telemetry.aggregate([], 100)])
    assert got["sm_clock_mhz_min"] == 1500 and got["temp_c_max"] == 82
    assert got["throttle"] == ["sw_thermal"] and got["sm_clock_mhz_median"] == (1980 + 1550) / 2
    assert got["power_w_mean"] == 650 and got["telemetry_samples"] == 4
    assert got["energy_j_per_token"] == pytest.approx((6.0 + 7.0) / 2)


def test_dry_run_eight_gpu_decomposition_at_the_right_sized_8k(tmp_path):
    # The guide's decomposition on a full node, as issue 9 plans it: same launcher path.
    result = run_sweep(DRY_RUN=1, GPUS=8, SEQLENS=8192, BENCHMARK=REPO / "bench_decompose.py",
                       ZERO_STAGE=2, OFFLOAD_OPTIMIZER=0, GRAD_CHECKPOINT=0, OUT=tmp_path / "d.jsonl")
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert "ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 SEQ_LEN=8192" in line
    assert line.endswith(f"--num_gpus 8 --master_port {line.split('--master_port ')[1].split()[0]} "
                         f"{REPO / 'bench_decompose.py'}")
    assert not (tmp_path / "d.jsonl").exists()


def test_capacity_search_interrupted_keeps_the_fits_of_the_cut_run():
    # As on the 2-GPU H200: seeded by the sweep, the guided run fits 262144 and is then
    # stopped (device-time limit) while probing 270336. The record keeps the fit.
    line = lambda s: 12.6 + 0.00045 * s  # noqa: E731 (GiB at s tokens)
    known = [sweep.Probe(s, True, line(s), 139.8) for s in (8192, 32768, 65536, 131072)]

    def run(lengths):
        raise sweep.Interrupted([sweep.Probe(lengths[0], True, line(lengths[0]), 139.8)])

    found = sweep.find_max_seq_len(run, 8192, 8192, 1048576, known)
    assert found["complete"] is False and found["runs"] == 1
    # The line meets 139.8 GiB at 282667 tokens: the guided run tried 278528 (a multiple of
    # the step below it) first, and that fit is what the cut run leaves.
    assert found["max_fit_seq_len"] == 278528
    assert found["min_fail_seq_len"] is None
    assert found["peak_mem_gib_at_max"] == pytest.approx(line(found["max_fit_seq_len"]))
    whole = sweep.find_max_seq_len(probe_runner(270000, line, 139.8)[0], 8192, 8192, 1048576, known)
    assert whole["complete"] is True
