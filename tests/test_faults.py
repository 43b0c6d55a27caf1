"""upgrade_bench.faults: how a failure becomes one line and the exit code a sweep reads."""
import pytest
import torch

from conftest import import_script
from upgrade_bench import faults
from upgrade_bench.faults import BadInput


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
