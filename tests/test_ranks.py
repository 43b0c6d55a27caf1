"""upgrade_bench.kernels.ranks: bench_comm.py's RANKS through torch's elastic launcher, in this
process: the launch torchrun's flags would make, the rank whose line ends a failed launch, and
the line and exit code of one that said none. (The launch itself runs for real in
tests/test_bench_comm.py.)"""
import json
import sys
from pathlib import Path
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


def test_a_rank_that_said_its_error_and_was_then_stopped_in_its_teardown_is_still_the_first(tmp_path):
    # a full disk: rank 0 said why (exit 4), then its teardown outlived rank 1's failed collective and
    # the launcher's SIGTERM ended it; rank 1's line (a peer gone) came after rank 0's
    first = failure(tmp_path, 0, -signal.SIGTERM, 11, "error: cannot append to x.jsonl (No space left on device)")
    first.error_file_data.update(said_at=11.2, exit_code=faults.EXIT_WRITE_FAILED)
    path = tmp_path / "error0.json"
    path.write_text(json.dumps(first.error_file_data))
    second = failure(tmp_path, 1, 1, 11, "error: all_gather at 2 MiB failed (Connection closed by peer)")
    second.error_file_data.update(said_at=11.6, exit_code=faults.EXIT_ERROR)
    (tmp_path / "error1.json").write_text(json.dumps(second.error_file_data))
    rank, cause = ranks.root_cause({0: first, 1: second})
    assert rank == 0 and ranks.code(cause) == faults.EXIT_WRITE_FAILED  # its own code, not the SIGTERM's 143
    # the later line first in rank order: the earlier said_at still wins
    assert ranks.root_cause({0: second, 1: first})[1] is first


CRASH = """import os, signal, sys, time
from upgrade_bench import faults
if os.environ["RANK"] == "1":  # killed from outside (the OOM killer): no line of its own
    open(sys.argv[1], "w").close()
    os.kill(os.getpid(), signal.SIGKILL)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
time.sleep(0.2)  # its peer gone: the collective it waited in fails, and it says so, then is stopped
faults.say("error: all_reduce at 1 MiB failed (Connection reset by peer)", code=faults.EXIT_ERROR)
os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_rank_killed_from_outside_is_the_line_not_the_peer_whose_collective_failed_after_it(tmp_path, monkeypatch,
                                                                                            capsys):
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    monkeypatch.setenv("PYTHONPATH", str(Path(ranks.__file__).parents[2]))
    code = ranks.launch([sys.executable, str(script), str(tmp_path / "gone")], 2, ranks.Hosts(), 60)
    err = capsys.readouterr().err
    assert err.startswith("error: rank 1 was ended by SIGKILL without a line of its own"), err
    assert code == 137


def test_a_rank_stopped_from_outside_is_the_line_not_its_peers_failed_collective_after_it(tmp_path):
    # kill -TERM of rank 0 alone: it said so (143); rank 1's collective then failed (exit 1)
    stop = failure(tmp_path, 0, 143, 11, "stopped by SIGTERM: what was written is kept")
    stop.error_file_data.update(said_at=11.1, exit_code=143)
    (tmp_path / "error0.json").write_text(json.dumps(stop.error_file_data))
    peer = failure(tmp_path, 1, 1, 11, "error: all_gather at 2 MiB failed (Connection reset by peer)")
    peer.error_file_data.update(said_at=11.3, exit_code=1)
    (tmp_path / "error1.json").write_text(json.dumps(peer.error_file_data))
    rank, cause = ranks.root_cause({0: stop, 1: peer})
    assert rank == 0 and ranks.code(cause) == 143
    # the launcher's SIGKILL to a rank that outlived its SIGTERM (GRACE_S after) is not the cause
    hung = failure(tmp_path, 2, -signal.SIGKILL, 11 + ranks.GRACE_S)
    assert ranks.root_cause({1: peer, 2: hung})[0] == 1
    assert ranks.root_cause({1: peer, 2: failure(tmp_path, 2, -signal.SIGKILL, 11)})[0] == 2  # the OOM killer's
