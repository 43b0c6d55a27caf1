"""upgrade_bench.faults: how a failure becomes one line and the exit code a sweep reads."""
import os
import signal
import subprocess
import sys

import pytest
import torch

from conftest import REPO, import_script
from upgrade_bench import faults
from upgrade_bench.faults import BadInput
from upgrade_bench.interrupts import Interrupted


def test_run_main_makes_a_write_failure_one_line_and_exit_4(capsys):
    def main():
        raise faults.WriteFailed("cannot append to /x (No space left on device): stopped")

    assert faults.run_main(main) == faults.EXIT_WRITE_FAILED == 4
    assert capsys.readouterr().err == "error: cannot append to /x (No space left on device): stopped\n"


def test_run_main_makes_bad_input_one_line_and_exit_2_and_passes_everything_else_on(capsys):
    def main(name):
        raise BadInput(f"{name}='x': expected an integer")

    assert faults.run_main(main, "STEPS") == faults.EXIT_BAD_INPUT == 2
    assert capsys.readouterr().err == "error: STEPS='x': expected an integer\n"
    assert faults.run_main(lambda: 0) == 0
    with pytest.raises(KeyError):  # a bug is no bad input: its traceback stays
        faults.run_main(lambda: {}["x"])


def test_oom_classification():
    assert faults.is_oom(torch.OutOfMemoryError("CUDA out of memory"))
    assert faults.is_oom(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried"))
    assert not faults.is_oom(RuntimeError("shape mismatch"))
    assert faults.exit_code_for(torch.OutOfMemoryError("x")) == 3
    assert faults.exit_code_for(ValueError("x")) == 1


def test_the_cpu_allocators_own_refusal_is_an_oom():
    # What a point too long for the host raises on a CPU run. 2^60 bytes is past any 64-bit
    # address space, so it is refused at once on every machine, whatever it overcommits.
    with pytest.raises(RuntimeError) as refused:
        torch.empty(2**60, dtype=torch.uint8)
    fields = faults.error_fields(refused.value)
    assert fields["error"] == "oom" and faults.exit_code_for(refused.value) == 3


@pytest.mark.parametrize("script", ["plot_results.py", "mamf-finder.py"])
@pytest.mark.parametrize("argv", [["--no-such-flag"], ["--out"]])  # unknown; a value missing
def test_a_bad_flag_is_one_line_and_exit_2(script, argv, capsys):
    # faults.Parser: argparse's usage errors are bad input like any other, not its usage text
    assert faults.run_main(import_script(script).main, argv) == faults.EXIT_BAD_INPUT
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("error: ") and err.endswith("(see --help)\n")


SCRIPTS = ["benchmark.py", "bench_decompose.py", "bench_flash_attn.py", "bench_hbm.py", "check_capabilities.py",
           "mamf-finder.py", "plot_results.py"]


@pytest.mark.parametrize("script", SCRIPTS)
def test_a_python_without_the_projects_packages_is_told_the_way_in_one_line(script):
    # `python -S` leaves site-packages out: a Python without torch, deepspeed or matplotlib,
    # as `python3 script` is outside the venv install.sh made
    proc = subprocess.run([sys.executable, "-S", str(REPO / script), "--help"], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "./install.sh" in proc.stderr and f".venv/bin/python {script}" in proc.stderr


@pytest.mark.parametrize("signum, line", [(signal.SIGINT, "stopped by Ctrl-C"), (signal.SIGTERM, "stopped by SIGTERM")])
def test_an_interrupt_is_one_line_and_128_plus_the_signal(signum, line, capsys):
    def main():
        raise Interrupted(signum) if signum == signal.SIGTERM else KeyboardInterrupt

    assert faults.run_main(main) == 128 + signum
    assert capsys.readouterr().err == f"{line}: what was written is kept\n"


@pytest.mark.parametrize("script", ["run_node.sh", "run_sweep.sh"])
def test_a_shell_script_on_a_python_without_the_projects_packages_says_so_before_any_work(script, tmp_path):
    # PYTHON (or the python3 they fall back on without .venv) lacking the stack: one line
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("MODEL", "OUT", "NODE_OUT", "DRY_RUN")}
    proc = subprocess.run([str(REPO / script)], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**env, "PYTHON": str(python), "MODEL": "tiny", "OUT": str(tmp_path / "o.jsonl")
                               if script == "run_sweep.sh" else ""})
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr.count("\n") == 1 and f"then ./{script} again: it picks .venv/bin/python" in proc.stderr
    assert sorted(tmp_path.iterdir()) == [python]
