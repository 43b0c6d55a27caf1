"""upgrade_bench.kernels.ranks: bench_comm.py's RANKS through torch's elastic launcher, in this
process: the launch torchrun's flags would make, the rank whose line ends a failed launch, and
the line and exit code of one that said none. (The launch itself runs for real in
tests/test_bench_comm.py.)"""
import json
import signal
from types import SimpleNamespace

from upgrade_bench import faults
from upgrade_bench.kernels import ranks


def test_one_host_meets_on_a_port_the_os_picks_and_several_at_node_0_as_torchruns_flags_would(tmp_path):
    one = ranks.config(8, ranks.Hosts(), 300, str(tmp_path))
    # torchrun --standalone: a c10d rendezvous on localhost:0, a run id of its own
    assert (one.rdzv_backend, one.rdzv_endpoint, one.min_nodes, one.max_nodes, one.nproc_per_node) == (
        "c10d", "localhost:0", 1, 1, 8)
    assert one.max_restarts == 0 and one.rdzv_configs["timeout"] == 300 and one.shutdown_timeout == ranks.GRACE_S
    two = ranks.config(4, ranks.Hosts(2, 1, "gpu01", 29500), 300, str(tmp_path))
    # torchrun --nnodes=2 --node-rank=1 --master-addr=gpu01 --master-port=29500: the static rendezvous
    assert (two.rdzv_backend, two.rdzv_endpoint, two.rdzv_configs) == (
        "static", "gpu01:29500", {"rank": 1, "timeout": 300})
    assert (two.min_nodes, two.max_nodes, two.nproc_per_node, two.run_id) == (2, 2, 4, ranks.RUN_ID)


def failure(tmp_path, rank: int, exitcode: int, timestamp: int, line: str | None = None):
    """A torch ProcessFailure's fields as ranks reads them; `line`: what the rank wrote (faults.say)."""
    path = tmp_path / f"error{rank}.json"
    data = {"message": "<NONE>"}
    path.unlink(missing_ok=True)
    if line is not None:
        data = {"message": line, "timestamp": timestamp}
        path.write_text(json.dumps(data))
    return SimpleNamespace(exitcode=exitcode, timestamp=timestamp, error_file=str(path), error_file_data=data,
                           pid=100 + rank)


def test_the_line_is_the_first_failures_own_not_a_rank_stopped_after_it(tmp_path):
    # rank 1 refused its GPU; the launcher then stopped ranks 0 (its handler: exit 143, its line) and 2 (-15)
    failures = {0: failure(tmp_path, 0, 143, 11, "stopped by SIGTERM: what was written is kept"),
                1: failure(tmp_path, 1, 2, 11, "error: rank 1: LOCAL_RANK=1: this host has 1 GPU(s) visible"),
                2: failure(tmp_path, 2, -signal.SIGTERM, 11)}
    rank, first = ranks.root_cause(failures)
    assert rank == 1 and ranks.said(first).startswith("error: rank 1: LOCAL_RANK=1")
    # two ranks that ended on their own: the one that said why, then the earlier, then the lower
    failures = {0: failure(tmp_path, 0, 1, 10), 1: failure(tmp_path, 1, 2, 12, "error: b"),
                2: failure(tmp_path, 2, 2, 11, "error: c"), 3: failure(tmp_path, 3, 2, 11, "error: d")}
    assert ranks.root_cause(failures)[0] == 2
    # only stopped ranks (a SIGTERM to one rank from outside): the earliest
    failures = {0: failure(tmp_path, 0, -signal.SIGTERM, 12), 1: failure(tmp_path, 1, 143, 11, "stopped by SIGTERM")}
    assert ranks.root_cause(failures)[0] == 1


def test_a_rank_that_said_nothing_is_named_with_how_it_ended_and_its_code_as_a_shell_reports_it(tmp_path):
    killed = failure(tmp_path, 3, -signal.SIGKILL, 10)
    assert ranks.said(killed) is None
    assert ranks.ended(3, killed).startswith("error: rank 3 was ended by SIGKILL without a line of its own (pid 103 on ")
    assert ranks.exit_code(killed.exitcode) == 137 and ranks.exit_code(2) == 2
    assert ranks.ended(0, failure(tmp_path, 0, 1, 10)).startswith("error: rank 0 exited with code 1 without a line")
    assert faults.signal_name(99) == "signal 99"  # a signal without a name is named by number


def test_a_rank_leaves_its_line_for_the_launcher_and_prints_it_only_where_no_launcher_says_it(tmp_path, monkeypatch,
                                                                                             capsys):
    path = tmp_path / "error.json"
    monkeypatch.setenv(faults.ERROR_FILE_ENV, str(path))
    monkeypatch.delenv(faults.SAYS_ENV, raising=False)
    assert faults.stop(faults.BadInput("SIZES_MIB=0: no")) == 2
    assert capsys.readouterr().err == "error: SIZES_MIB=0: no\n"
    assert json.loads(path.read_text())["message"] == "error: SIZES_MIB=0: no"  # torchrun quotes it
    monkeypatch.setenv(faults.SAYS_ENV, "1")  # under RANKS: the launcher says it
    assert faults.interrupted(signal.SIGTERM) == 143 and capsys.readouterr().err == ""
    assert json.loads(path.read_text())["message"] == "stopped by SIGTERM: what was written is kept"
    monkeypatch.setenv(faults.ERROR_FILE_ENV, str(tmp_path / "no" / "such" / "folder"))
    faults.say("error: x")  # an error file that cannot be written costs nothing but itself
