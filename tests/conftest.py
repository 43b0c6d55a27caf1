"""Shared test helpers: run a suite script for real as a subprocess (or a sweep of it on two
ranks under the DeepSpeed launcher) and read its JSONL, or run its main in this process; a
small disk that fills up."""
import errno
import importlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from upgrade_bench import faults
from upgrade_bench.training import extensions, variables
from upgrade_bench.log.records import read_lines
from upgrade_bench.sweep import plan as sweep_plan

# One thread per torch process: pyproject.toml runs two workers on two cores, and many tests start
# processes of their own (a launcher and its ranks), so an op spread over both cores only waits
# for the others, with OpenMP's threads spinning meanwhile (a quarter of a tiny benchmark run's
# CPU time). Set before any test module imports torch; every process a test starts inherits it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# A suite started in the background of a non-interactive shell (`setsid nohup bash .ci/run &`)
# inherits SIGINT ignored, in its xdist workers too, and so would every script a test starts:
# Python keeps an inherited SIG_IGN, so the Ctrl-C tests' SIGINT would be dropped and the script run
# on. A terminal's Ctrl-C reaches a foreground process, whose SIGINT is not ignored: that is what
# they test, so this process (and what it starts) gets Python's default.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
# DeepSpeed's JIT-built ops in this checkout's cache whatever the shell says: built once for all of
# its runs, never over another clone's builds, never behind another checkout's stale lock.
os.environ["TORCH_EXTENSIONS_DIR"] = str(extensions.checkout_cache())

# The tiny preset on CPU with the cheapest DeepSpeed config; tests override what they test.
TINY_FAST = {"MODEL": "tiny", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0",
             "STEPS": "2", "WARMUP_STEPS": "1", "SEQ_LEN": "64"}


# What a sweep reads from the environment: a sweep test sets what it needs, nothing leaks in.
SWEEP_CLEARED = {v.name for v in sweep_plan.VARS + variables.TRAINING_VARS} | {
    "RUN_ID", "CUDA_VISIBLE_DEVICES", "DS_ENV_FILE", "PYTORCH_CUDA_ALLOC_CONF"}


def script_env(extra: dict, cleared=()) -> dict:
    """This process's environment less a launched rank's variables and `cleared`, plus `extra`."""
    # The allocator setting is part of a run's recorded config: tests set it themselves.
    dropped = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "PYTORCH_CUDA_ALLOC_CONF", *cleared}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def parse_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def command(args) -> list:
    """`python <args>` for a script of the repo named by a string; a list is a whole command."""
    return args if isinstance(args, list) else [sys.executable, str(REPO / args)]


def run_proc(args, env: dict, timeout: int = 600, cwd=REPO, cleared=()) -> subprocess.CompletedProcess:
    """Run command(args) to its end in script_env(env, cleared); every test's subprocess."""
    return subprocess.run(command(args), env=script_env(env, cleared), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


@pytest.fixture
def start_proc():
    """start_proc(args, env, cwd=REPO, cleared=()) -> Popen: run_proc's process, started and
    left running, for a test that reads its output as it comes and signals it; killed when
    the test ends if it is still running (a failed test leaves nothing behind)."""
    started = []

    def start(args, env: dict, cwd=REPO, cleared=()) -> subprocess.Popen:
        started.append(subprocess.Popen(command(args), env=script_env(env, cleared), stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=cwd))
        return started[-1]
    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def run_script(args, env: dict, timeout: int = 600, cwd=REPO):
    """(returncode, records on stdout, stderr) of run_proc."""
    proc = run_proc(args, env, timeout, cwd)
    return proc.returncode, parse_jsonl(proc.stdout), proc.stderr


@pytest.fixture
def as_script(monkeypatch):
    """as_script(name, variables, env): this process as `python name` with no arguments sees
    it, where of the script's `variables` only `env`'s are set; for running its main here."""
    def setup(name: str, variables, env: dict):
        for var in variables:
            monkeypatch.delenv(var.name, raising=False)
        for key, value in env.items():
            monkeypatch.setenv(key, str(value))
        monkeypatch.setattr(sys, "argv", [name])
    return setup


@pytest.fixture
def main_in_process(as_script, capsys):
    """main_in_process(module, env) -> (exit code, records on stdout, stderr): a script's main
    (module: import_script's) run here through faults.run_main, as `python name` with `env`."""
    def run(module, env: dict):
        as_script(module.SCRIPT, module.VARS, env)
        code = faults.run_main(module.main)
        out = capsys.readouterr()
        records, skipped = read_lines(out.out.splitlines())
        assert skipped == 0
        return code, records, out.err
    return run


# Each top-level Python script is a shim of its wing's main module.
SCRIPT_MODULES = {"benchmark.py": "upgrade_bench.training.benchmark_main",
                  "bench_decompose.py": "upgrade_bench.training.decompose_main",
                  "bench_flash_attn.py": "upgrade_bench.kernels.attention.main",
                  "mamf-finder.py": "upgrade_bench.kernels.mamf.main", "bench_hbm.py": "upgrade_bench.kernels.hbm.main",
                  "bench_comm.py": "upgrade_bench.kernels.comm.main", "check_capabilities.py": "upgrade_bench.capability.main",
                  "plot_results.py": "upgrade_bench.report.main"}


def import_script(name: str):
    """A script of the repo as a module, its main() not run: a top-level script's wing module, a
    tool by its path."""
    if name in SCRIPT_MODULES:
        return importlib.import_module(SCRIPT_MODULES[name])
    spec = importlib.util.spec_from_file_location(name.replace("-", "_").removesuffix(".py"), REPO / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN_SWEEP = REPO / "run_sweep.sh"


def sweep_env(**extra) -> dict:
    """What a sweep test's process gets over script_env: this interpreter, the repository, and
    `extra`; none of the sweep's and the benchmark's variables of this environment."""
    return {"PYTHON": sys.executable, "PYTHONPATH": str(REPO), **{k: str(v) for k, v in extra.items()}}


def run_sweep(timeout=300, **extra):
    return run_proc([str(RUN_SWEEP)], sweep_env(**extra), timeout, cleared=SWEEP_CLEARED)


def swept(result: subprocess.CompletedProcess, out: Path) -> types.SimpleNamespace:
    """A sweep run that succeeded: result (run_sweep.sh's CompletedProcess), out (its OUT) and
    records (OUT's, every line one), log (the benchmark's own output)."""
    assert result.returncode == 0, result.stderr[-3000:]
    return types.SimpleNamespace(result=result, out=out, records=records(out), log=out.with_suffix(".log").read_text())


def records(path) -> list[dict]:
    """Every record of a JSON-lines file, each line one (none skipped)."""
    with open(path) as f:
        recs, skipped = read_lines(f)
    assert skipped == 0
    return recs


FAKE_BENCHMARK = r'''
"""Fake benchmark.py: the records and exit codes run_sweep reads, none of the work.
FAKE_OOM_ABOVE=N / FAKE_OOM_AT=N: oom error record, exit 3. DECOMPOSE=N: a decomposition record
after each summary. FAKE_CRASH_AT=N: traceback on
stderr, exit 1, no record. FAKE_HANG_AT=N: start a grandchild `sleep`, write its pid to
FAKE_PID_FILE (whole: the test may read it at any moment), hang. FAKE_PEAK="a b":
peak_mem_gib = a + b * seq_len. FAKE_HBM: the header's hardware.hbm_gib; FAKE_CONFIG: its
config (JSON); FAKE_HEADER: more header fields (JSON). FAKE_RUNS: one line per process (its SEQ_LEN). FAKE_REJECT=1: refuse the
configuration as benchmark.py does (one line, exit 2). FAKE_STALE_LOCK=path: stop on a stale build lock
there as benchmark.py does (one line, exit 5). FAKE_WARN: a start-up warning. A record that cannot be appended to
OUTPUT ends it as in benchmark.py (one line, exit 4); FAKE_DISK_BYTES: OUTPUT's folder is a
disk of that size (where no small tmpfs can be mounted)."""
import errno, json, os, subprocess, sys, time, uuid
from upgrade_bench.log.records import append_line

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
if env.get("FAKE_WARN"):
    sys.stderr.write(f"warning: {env['FAKE_WARN']}\n")
if env.get("FAKE_STALE_LOCK"):
    sys.stderr.write(f"error: a stale build lock at {env['FAKE_STALE_LOCK']} (5 min old, and no process holds it)\n")
    sys.exit(5)
if env.get("FAKE_REJECT"):
    sys.stderr.write("error: ZERO_STAGE=5: expected an integer >= 0 and <= 3\n")
    sys.exit(2)
hbm = float(env["FAKE_HBM"]) if env.get("FAKE_HBM") else None
config = json.loads(env.get("FAKE_CONFIG") or '{"MODEL": "fake"}')
write("header", config={**config, "SEQ_LEN": seq_lens}, hardware={"hbm_gib": hbm},
      **json.loads(env.get("FAKE_HEADER") or "{}"))
a, b = [float(x) for x in env["FAKE_PEAK"].split()] if env.get("FAKE_PEAK") else (None, None)
for s in seq_lens:
    if env.get("FAKE_HANG_AT") == str(s):
        child = subprocess.Popen(["sleep", "600"])
        with open(env["FAKE_PID_FILE"] + ".part", "w") as f:
            f.write(str(child.pid))
        os.rename(env["FAKE_PID_FILE"] + ".part", env["FAKE_PID_FILE"])  # whole, or not there
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
    if int(env.get("DECOMPOSE") or 0):
        write("decomposition", seq_len=s, profile_steps=int(env["DECOMPOSE"]), wall_step_ms=10.0)
'''


@pytest.fixture
def fake(tmp_path):
    """FAKE_BENCHMARK as a file, for run_sweep.sh's BENCHMARK."""
    path = tmp_path / "fake_benchmark.py"
    path.write_text(FAKE_BENCHMARK)
    return path


# Real runs of benchmark.py, each read by tests of test_benchmark.py and test_run_sweep.py (an
# xdist_group of the fixture's name keeps them on the worker that made it).

# A world of one (GPUS=1: run_sweep.sh starts plain `python benchmark.py`), ZeRO-2, one process
# for three lengths: MEM_DEBUG's probes and DECOMPOSE's split at 64 and 128, then 1M tokens with
# eager attention, a 1 TiB score matrix the CPU allocator refuses at once on any machine: a real
# OOM, its record and exit 3.
ONE_RANK = {"MODEL": "tiny", "ATTN_BACKEND": "eager", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0",
            "GRAD_CHECKPOINT": "0", "STEPS": "3", "WARMUP_STEPS": "1", "PEAK_TFLOPS": "2.5", "MEM_DEBUG": "1",
            "DECOMPOSE": "1", "GPUS": "1", "REUSE_PROCESS": "1", "SEQLENS": "128 64 1048576"}


@pytest.fixture(scope="session")
def one_rank(tmp_path_factory):
    out = tmp_path_factory.mktemp("one_rank") / "sweep.jsonl"
    return swept(run_sweep(600, OUT=out, **ONE_RANK), out)


# The guide's default config (ZeRO-3, activation checkpointing, AdamW offloaded to DeepSpeed's
# CPU Adam) on two CPU ranks under the DeepSpeed launcher, one process for two lengths, its
# linears in emulated FP8 (torchao's swap must survive ZeRO-3's partitioning and its hooks).
GUIDE_TWO_RANKS = {"MODEL": "tiny", "STEPS": "2", "WARMUP_STEPS": "1", "PEAK_TFLOPS": "1", "GPUS": "2",
                   "REUSE_PROCESS": "1", "SEQLENS": "128 64", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                   "PRECISION": "fp8-tensorwise"}

# Each Python process of that run says on stderr if Python finalizes it; each rank's stdout, as
# the launcher hands it on, is also copied to rank<RANK>.stdout beside this file.
WATCH_EACH_PROCESS = """import atexit, os, sys
atexit.register(lambda: sys.stderr.write(f"finalized: {os.path.basename(sys.argv[0])}\\n"))
if sys.argv[0].endswith("benchmark.py"):
    import subprocess
    tee = subprocess.Popen(["tee", os.path.join(os.path.dirname(__file__), f"rank{os.environ['RANK']}.stdout")],
                           stdin=subprocess.PIPE)
    os.dup2(tee.stdin.fileno(), 1)
    tee.stdin.close()
"""


@pytest.fixture(scope="session")
def guide_two_ranks(tmp_path_factory):
    """swept's fields, and rank_stdout: what each rank wrote to its stdout."""
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(WATCH_EACH_PROCESS)
    out = tmp_path_factory.mktemp("guide_two_ranks") / "sweep.jsonl"
    result = run_sweep(600, OUT=out, PYTHONPATH=site, **GUIDE_TWO_RANKS)
    for port in re.findall(r"--master_port (\d+)", result.stderr):  # another one if the first was taken
        remove_shm_segments(int(port))
    return types.SimpleNamespace(**vars(swept(result, out)),
                                 rank_stdout=[(site / f"rank{rank}.stdout").read_text() for rank in (0, 1)])


def remove_shm_segments(port: int) -> None:
    """What DeepSpeed's CPU comm op leaves in /dev/shm: it maps a 66 MB segment per rank of
    ranks launched on one host, named after the rendezvous port, and never unlinks it."""
    for path in Path("/dev/shm").glob(f"deepspeed_allreduce_buffer_{os.getuid()}_*_{port}_*"):
        path.unlink(missing_ok=True)


# A small disk, as in issue 15: a few dozen records fill it.
SMALL_DISK_BYTES = 64 * 1024


def capped_write(root: Path, capacity_bytes: int, real_write=os.write):
    """os.write, except that files under `root` share `capacity_bytes`, as on a disk that
    size: a write past it is cut short, the next one raises ENOSPC."""
    def write(fd, data):
        if not os.readlink(f"/proc/self/fd/{fd}").startswith(f"{root}/"):
            return real_write(fd, data)
        room = capacity_bytes - sum(f.stat().st_size for f in root.iterdir())
        if room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, bytes(data[:room]))
    return write


def mount_tmpfs(path: Path, options: str) -> bool:
    """Mount a tmpfs at `path` if this machine lets us (root with CAP_SYS_ADMIN), else False."""
    try:
        return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)],
                              capture_output=True).returncode == 0
    except FileNotFoundError:  # no mount(8)
        return False


def unmount(path: Path) -> None:
    """Undo mount_tmpfs."""
    subprocess.run(["umount", str(path)], check=True)


@pytest.fixture(params=["tmpfs", "injected"])
def small_disk(request, tmp_path, monkeypatch):
    """A folder on a SMALL_DISK_BYTES disk: a real tmpfs where one can be mounted (skipped
    otherwise), or os.write with ENOSPC injected once the folder holds that much."""
    path = tmp_path / "disk"
    path.mkdir()
    if request.param == "injected":
        monkeypatch.setattr(os, "write", capped_write(path, SMALL_DISK_BYTES))
        yield path
        return
    if not mount_tmpfs(path, f"size={SMALL_DISK_BYTES}"):
        pytest.skip("no tmpfs can be mounted here")
    try:
        yield path
    finally:
        unmount(path)
