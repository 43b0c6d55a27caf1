"""upgrade_bench.kernels.ranks: the suite's own start of local ranks (bench_comm.py's RANKS=N),
with tiny Python children: each rank's variables, the exit code of the first that failed, the
others stopped once one failed, a SIGTERM passed on."""
import json
import signal
import subprocess
import sys
import time

from conftest import REPO, script_env
from upgrade_bench.kernels import ranks

WRITE_ENV = ("import json, os, sys; json.dump({k: os.environ.get(k) for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', "
             "'MASTER_ADDR', 'MASTER_PORT', 'RANKS')}, open(sys.argv[1] + os.environ['RANK'], 'w'))")


def test_each_rank_gets_the_launchers_variables_and_one_port(tmp_path):
    code = ranks.launch([sys.executable, "-c", WRITE_ENV, str(tmp_path / "rank")], 3,
                        {"PATH": "/usr/bin:/bin", "RANKS": "3"}, unset=("RANKS",))
    seen = [json.loads((tmp_path / f"rank{r}").read_text()) for r in range(3)]
    assert code == 0 and [(s["RANK"], s["WORLD_SIZE"], s["LOCAL_RANK"]) for s in seen] == [
        ("0", "3", "0"), ("1", "3", "1"), ("2", "3", "2")]
    assert {(s["MASTER_ADDR"], s["MASTER_PORT"]) for s in seen} == {("127.0.0.1", seen[0]["MASTER_PORT"])}
    assert all(s["RANKS"] is None for s in seen)  # a rank is no launcher


def test_the_first_failure_is_the_exit_code_and_the_ranks_left_waiting_are_stopped(tmp_path):
    # rank 1 fails at once; rank 0 would wait on it forever, as in a collective
    child = "import os, sys, time; r = int(os.environ['RANK']); sys.exit(2) if r == 1 else time.sleep(600)"
    started = time.monotonic()
    assert ranks.launch([sys.executable, "-c", child], 2, {"PATH": "/usr/bin:/bin"}, grace_s=0.5) == 2
    assert time.monotonic() - started < 30


def test_a_sigterm_to_the_launcher_goes_on_to_each_rank(tmp_path):
    launcher = ("import sys; from upgrade_bench.kernels import ranks; sys.exit(ranks.launch([sys.executable, '-c', "
                "'import signal, sys, time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(143)); "
                "open(sys.argv[1] + \"\" , \"a\").write(\"up\\\\n\"); time.sleep(600)', sys.argv[1]], 2))")
    ready = tmp_path / "up"
    proc = subprocess.Popen([sys.executable, "-c", launcher, str(ready)], cwd=REPO, env=script_env({}))
    deadline = time.monotonic() + 30
    while (not ready.exists() or len(ready.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
