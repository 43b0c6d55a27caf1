"""Shared test helpers: run a suite script for real as a subprocess and read its JSONL."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The tiny preset on CPU with the cheapest DeepSpeed config; tests override what they test.
TINY_FAST = {"MODEL": "tiny", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "GRAD_CHECKPOINT": "0",
             "STEPS": "2", "WARMUP_STEPS": "1", "SEQ_LEN": "64"}


def script_env(extra: dict) -> dict:
    # The allocator setting is part of a run's recorded config: tests set it themselves.
    dropped = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "PYTORCH_CUDA_ALLOC_CONF")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def parse_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_proc(args, env: dict, timeout: int = 600, cwd=REPO) -> subprocess.CompletedProcess:
    """`python <args>` (a script of the repo) or a launcher command, in script_env(env)."""
    cmd = args if isinstance(args, list) else [sys.executable, str(REPO / args)]
    return subprocess.run(cmd, env=script_env(env), capture_output=True, text=True,
                          timeout=timeout, cwd=cwd)


def run_script(args, env: dict, timeout: int = 600, cwd=REPO):
    """(returncode, records on stdout, stderr) of run_proc."""
    proc = run_proc(args, env, timeout, cwd)
    return proc.returncode, parse_jsonl(proc.stdout), proc.stderr


def launcher() -> str:
    """The deepspeed launcher of this interpreter's environment (a venv need not be on PATH)."""
    beside = Path(sys.executable).parent / "deepspeed"
    return str(beside) if beside.exists() else shutil.which("deepspeed")


@pytest.fixture
def run():
    return run_script
