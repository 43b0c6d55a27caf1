"""Shared test helpers: run a suite script for real as a subprocess (or under the DeepSpeed
launcher) and read its JSONL, or run its main in this process; a small disk that fills up."""
import errno
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from upgrade_bench import settings
from upgrade_bench.sweep import sweep_plan
from upgrade_bench.sweep.child_process import PORT_ATTEMPTS, PORT_TAKEN, free_port

# One thread per torch process: pytest.ini runs two workers on two cores, and many tests start
# processes of their own (a launcher and its ranks), so an op spread over both cores only waits
# for the others, with OpenMP's threads spinning meanwhile (a quarter of a tiny benchmark run's
# CPU time). Set before any test module imports torch; every process a test starts inherits it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent

# The tiny preset on CPU with the cheapest DeepSpeed config; tests override what they test.
TINY_FAST = {"MODEL": "tiny", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0",
             "STEPS": "2", "WARMUP_STEPS": "1", "SEQ_LEN": "64"}


# What a sweep reads from the environment: a sweep test sets what it needs, nothing leaks in.
SWEEP_CLEARED = {v.name for v in sweep_plan.VARS + settings.TRAINING_VARS} | {
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


def import_script(name: str):
    """A script of the repo as a module, its main() not run."""
    spec = importlib.util.spec_from_file_location(name.replace("-", "_").removesuffix(".py"), REPO / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launcher() -> list[str]:
    """The deepspeed launcher as a module of this interpreter, as run_sweep.sh starts it
    (sweep_plan.launch_argv). Not the venv's `deepspeed` script: its #! line names the
    interpreter by the path the venv was created at, so its ranks would see other include
    paths than this process's and DeepSpeed's JIT ops would be rebuilt for each in turn."""
    return [sys.executable, "-m", "deepspeed.launcher.runner"]


def run_launched(args: list, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    """run_proc of `deepspeed --master_port P <args>` on a free port (not the launcher's
    29500, which other runs on the host use), again on another one if it was taken."""
    for _ in range(PORT_ATTEMPTS):
        port = free_port()
        try:
            proc = run_proc([*launcher(), "--master_port", str(port), *args], env, timeout)
        finally:
            remove_shm_segments(port)
        if PORT_TAKEN not in proc.stderr:
            break
    return proc


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
