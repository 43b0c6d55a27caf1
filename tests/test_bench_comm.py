"""bench_comm.py and upgrade_bench.hardware.comm, on CPU.

nccl-tests' byte counts and bus-bandwidth factors against hand-computed numbers; the script
for real on two gloo ranks on two "hosts" (NNODES=2 on this one, node 0 on a port the OS
picked), every op, its records checked against the schema and its arithmetic by hand; bad
input refused in one line before any process group, and under RANKS before any rank starts;
RANKS for real where the process boundary is the point (a rank's refusal, a SIGTERM: one line);
in this process on a world of one, a failed allocation, a failed collective and Ctrl-C as
records and exit codes.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch

from conftest import REPO, import_script, parse_jsonl, script_env
from upgrade_bench.hardware import collectives
from upgrade_bench.kernels.comm import bench as comm
from upgrade_bench.kernels import ranks as local_ranks
from upgrade_bench.kernels.ranks import free_port
from upgrade_bench.faults import BadInput
from upgrade_bench.interrupts import Interrupted
from upgrade_bench.log import checks, records
from upgrade_bench.kernels.comm import main as bench
from upgrade_bench.report import main as plot_results

MIB = 2**20
# No sustained windows: a CPU's timings test the plumbing, not a link.
CPU_TIMING = {"ITERS": "2", "WARMUP": "1", "WARMUP_MS": "0", "TIME_MS": "0"}


# --- the formulas ------------------------------------------------------------------------------

def test_sizes_are_nccl_tests_whole_array_each_ranks_part_rounded_to_16_bytes():
    assert collectives.op_bytes("all_reduce", 4 * MIB, 8) == 4_194_304        # the buffer itself
    assert collectives.part_bytes("all_gather", 4 * MIB, 8) == 524_288        # 4 MiB / 8
    assert collectives.op_bytes("all_to_all", 4 * MIB, 8) == 4_194_304
    # 1 MiB over 3 ranks: 349525.33 bytes, down to 16 bytes: 349520, so S = 3 x 349520
    assert collectives.part_bytes("reduce_scatter", MIB, 3) == 349_520
    assert collectives.op_bytes("reduce_scatter", MIB, 3) == 1_048_560
    assert collectives.op_bytes("all_reduce", MIB, 3) == 1_048_576              # nothing to split
    # what one rank holds: all_reduce in place; a gather's part in, the whole out; the reverse
    assert collectives.buffer_bytes("all_reduce", 8 * MIB, 4) == (8 * MIB, 0)
    assert collectives.buffer_bytes("all_gather", 8 * MIB, 4) == (2 * MIB, 8 * MIB)
    assert collectives.buffer_bytes("reduce_scatter", 8 * MIB, 4) == (8 * MIB, 2 * MIB)
    assert collectives.allocated_bytes("all_to_all", 8 * MIB, 4) == 16 * MIB
    with pytest.raises(ValueError, match="'broadcast'"):
        collectives.part_bytes("broadcast", MIB, 2)


def test_bus_bandwidth_by_nccl_tests_factors():
    assert collectives.bus_factor("all_reduce", 2) == 1.0 and collectives.bus_factor("all_reduce", 8) == 1.75  # 2*7/8
    assert [collectives.bus_factor(op, 8) for op in ("all_gather", "reduce_scatter", "all_to_all")] == [0.875] * 3
    assert collectives.bus_factor("all_gather", 2) == 0.5
    # 4 GiB all_reduce on 8 ranks in 20 ms: 4294967296 B / 0.02 s = 214.748 GB/s; x 1.75 = 375.81
    alg = collectives.algbw_gbps(collectives.op_bytes("all_reduce", 4096 * MIB, 8), 20.0)
    assert alg == pytest.approx(214.7483648) and collectives.busbw_gbps("all_reduce", alg, 8) == pytest.approx(375.8096384)
    # 1 GiB all_gather on 8 ranks in 3 ms: 357.914 GB/s algbw, x 7/8 = 313.175 busbw
    alg = collectives.algbw_gbps(collectives.op_bytes("all_gather", 1024 * MIB, 8), 3.0)
    assert collectives.busbw_gbps("all_gather", alg, 8) == pytest.approx(313.1747563)
    assert collectives.algbw_gbps(MIB, 0.0) is None and collectives.busbw_gbps("all_to_all", None, 8) is None


def test_the_link_is_the_gpu_tables_one_direction_and_none_for_an_unknown_gpu():
    assert collectives.link_gbps("NVIDIA H200") == (450.0, "H200 SXM")    # NVLink 4: 900 duplex, 450 each way
    assert collectives.link_gbps("NVIDIA B200") == (900.0, "B200 SXM")
    assert collectives.link_gbps("NVIDIA H100 PCIe") == (None, None)      # no link figure in the table
    assert collectives.link_gbps(None) == (None, None)
    assert collectives.share_of_link(370.0, 450.0) == pytest.approx(0.8222222)
    assert collectives.share_of_link(370.0, None) is None and collectives.share_of_link(None, 450.0) is None


def test_multicast_goes_off_where_unset_and_a_users_own_setting_is_kept_with_a_warning():
    environ = {"NCCL_DEBUG": "WARN", "PATH": "/bin"}
    seen, warnings = comm.multicast_env(environ)
    assert environ["NCCL_NVLS_ENABLE"] == "0" and environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] == "1"
    assert seen == {"NCCL_DEBUG": "WARN", "NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1",
                    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"} and warnings == []
    seen, warnings = comm.multicast_env({"NCCL_NVLS_ENABLE": "1"})
    assert seen["NCCL_NVLS_ENABLE"] == "1" and len(warnings) == 1 and warnings[0].startswith("NCCL_NVLS_ENABLE=1")


def point(op, mib, busbw, status="ok"):
    return {"op": op, "size_mib": mib, "busbw_gbps": busbw, "status": status, "ranks": 8, "share_of_link": None}


def test_the_table_and_headline_take_each_ops_best_size_and_say_what_failed():
    records_ = [point("all_to_all", 64, 300.0), point("all_reduce", 64, 350.0), point("all_reduce", 4096, 372.0),
                point("all_gather", 4096, None, "oom")]
    assert list(collectives.best_by_op(records_)) == ["all_reduce", "all_to_all"]
    table = comm.format_table(records_).splitlines()
    assert table[2].split() == ["all_reduce", "350", "372"] and table[3].split() == ["all_gather", "-", "oom"]
    best = comm.headline(records_, None, None).splitlines()[0]
    assert best == "best all_reduce: busbw 372 GB/s at 4096 MiB on 8 ranks"
    records_[2]["share_of_link"] = collectives.share_of_link(372.0, 450.0)
    assert comm.headline(records_, 450.0, "table:H200 SXM").splitlines()[0] == (
        "best all_reduce: busbw 372 GB/s at 4096 MiB on 8 ranks, 82.7% of the 450 GB/s link per direction "
        "(table:H200 SXM)")


# --- two gloo ranks, for real ------------------------------------------------------------------

def two_hosts(env: dict) -> list:
    """bench_comm.py on two hosts of one rank each, as on two machines (here both on this one):
    [(exit code, stdout, stderr)] of node 0 and node 1."""
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, str(REPO / "bench_comm.py")], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=script_env({**env, "NNODES": "2", "NODE_RANK": str(n), "RANKS": "1",
                                              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port}))
             for n in (0, 1)]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        done.append((p.returncode, out, err))
    return done


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("comm") / "comm.jsonl"
    (code0, out0, err0), (code1, out1, err1) = two_hosts(
        {**CPU_TIMING, "SIZES_MIB": "1 3 1048576", "OUTPUT": str(out), "NCCL_DEBUG": "WARN"})
    return code0, parse_jsonl(out0), err0, code1, out1, err1, out


def test_two_gloo_ranks_on_two_hosts_time_every_op_by_nccl_tests_arithmetic(run):
    code0, recs, err0, code1, out1, err1, out = run
    assert (code0, code1) == (0, 0), err0 + err1
    assert out1 == "" and err1 == ""  # rank 0 writes and speaks; no launcher's log line on either host
    assert recs == parse_jsonl(out.read_text())  # stdout and OUTPUT: the same lines
    assert all(checks.write_problem(r) is None for r in recs)
    header, points = recs[0], recs[1:]
    assert header["kind"] == "header" and header["comm_env"]["NCCL_NVLS_ENABLE"] == "0"
    assert header["comm_env"]["NCCL_DEBUG"] == "WARN" and "TORCH_SYMM_MEM_DISABLE_MULTICAST" in header["comm_env"]
    assert [(r["size_mib"], r["op"]) for r in points] == [(n, op) for n in (1, 3, 1048576) for op in collectives.OPS]
    for r in points[:8]:
        assert r["status"] == "ok" and r["ranks"] == 2 and r["size_bytes"] == r["size_mib"] * MIB
        assert r["iters"] == 2 and r["ms_min"] <= r["ms"] <= r["ms_max"]
        # algbw = S / t; busbw = algbw x 2(n-1)/n = algbw for all_reduce, x (n-1)/n = algbw / 2 for the rest
        assert r["algbw_gbps"] == pytest.approx(r["size_bytes"] / (r["ms"] / 1e3) / 1e9)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * (1.0 if r["op"] == "all_reduce" else 0.5))
        assert r["share_of_link"] is None and r["link_gbps"] is None  # no GPU, no link figure
    # 1 TiB cannot fit: a record per op, nothing allocated, nothing timed
    assert all(r["status"] == "oom" and r["ms"] is None and "more than" in r["reason"] for r in points[8:])
    progress = [line for line in err0.splitlines() if line.startswith("[")]
    assert [line.split(":")[0] for line in progress] == ["[4/12] 1 MiB", "[8/12] 3 MiB", "[12/12] 1048576 MiB"]
    assert "best all_reduce: busbw" in err0 and err0.count("warning: ") == 2  # no GPU; no link figure


# --- bad input ---------------------------------------------------------------------------------

@pytest.mark.parametrize("env, says", [
    ({}, "error: WORLD_SIZE=1: a collective needs two ranks or more, one per GPU: RANKS=N .venv/bin/python "
         "bench_comm.py starts them"),
    # issue 46: a message about memory; exit 2 with nothing on stderr; RANKS under a launcher
    ({"WORLD_SIZE": "99999999999"}, "error: WORLD_SIZE=99999999999: more ranks than any cluster has GPUs; expected "
                                    "at most 1048576"),
    ({"WORLD_SIZE": "2", "RANK": "5", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
     "error: RANK=5: expected below WORLD_SIZE=2, as a launcher sets it"),
    ({"WORLD_SIZE": "2", "RANKS": "2"}, "error: RANKS=2 with RANK/WORLD_SIZE set: a launcher started this process"),
    ({"RANKS": "1"}, "error: RANKS=1: a collective needs two ranks or more, one per GPU; expected 2 or more (1 with "
                     "NNODES of 2 or more"),
    ({"RANKS": "0.5"}, "error: RANKS='0.5': expected 0 or an integer >= 1 and <= 1024"),
    # issue 55: RANKS across hosts, each setting checked before any rank starts
    ({"NNODES": "2"}, "error: NNODES=2 without RANKS: set RANKS (the ranks on each host) too"),
    ({"RANKS": "8", "NNODES": "2", "NODE_RANK": "2"}, "error: NODE_RANK=2: expected below NNODES=2"),
    ({"RANKS": "8", "NNODES": "2", "MASTER_PORT": "29500"}, "error: MASTER_ADDR='', MASTER_PORT='29500': expected "
                                                             "rank 0's host"),
    ({"RANKS": "1024", "NNODES": "1048576", "MASTER_ADDR": "h", "MASTER_PORT": "1"},
     "error: RANKS=1024 x NNODES=1048576: more ranks than any cluster has GPUs"),
    ({"WORLD_SIZE": "2", "RANK": "two"}, "error: RANK='two': expected a whole number >= 0"),
    ({"WORLD_SIZE": "2", "OPS": "all_reduce broadcast"}, "error: OPS='all_reduce broadcast': expected a list of "
                                                         "all_reduce|all_gather|reduce_scatter|all_to_all"),
    ({"WORLD_SIZE": "2", "SIZES_MIB": "0"}, "error: SIZES_MIB='0': expected space- or comma-separated integers >= 1"),
    ({"WORLD_SIZE": "2", "MASTER_PORT": "29500"}, "error: MASTER_ADDR='', MASTER_PORT='29500': expected rank 0's host"),
    ({"WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "70000"}, "error: MASTER_ADDR='h', MASTER_PORT='70000'"),
    ({"WORLD_SIZE": "2", "SIZES_MIB": "1048576", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"},
     "error: SIZES_MIB=1048576: the inputs alone need 2048.0 GiB"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_process_group(env, says, main_in_process, monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(torch.distributed, "init_process_group", lambda *a, **k: pytest.fail("started"))
    monkeypatch.setattr(local_ranks, "launch", lambda *a, **k: pytest.fail("ranks started"))
    code, recs, err = main_in_process(bench, env)
    assert code == 2 and recs == [] and err.startswith(says) and err.count("\n") == 1, err


def test_cpu_ranks_past_the_hosts_memory_are_named_as_ranks_sharing_it(main_in_process, monkeypatch):
    from upgrade_bench.hardware import fingerprint

    for name in ("RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(fingerprint, "host_free_bytes", lambda: 8 * 2**30)
    code, recs, err = main_in_process(bench, {"WORLD_SIZE": "100000", "MASTER_ADDR": "h", "MASTER_PORT": "1",
                                              "SIZES_MIB": "1"})
    assert code == 2 and err.endswith("(this host's free memory shared by WORLD_SIZE=100000 CPU ranks)\n"), err


def test_a_rendezvous_nothing_answers_is_one_line_naming_the_address_after_the_stated_wait(monkeypatch):
    # issue 46: 631 s and 63 lines of C++ frames
    with socket.socket() as held:  # bound, not listening: a connection there is refused
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        environ = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        started = time.monotonic()
        problem = bench.rendezvous_problem(environ, 1, 0.5)
        assert 0.5 <= time.monotonic() - started < 10
        assert problem.startswith(f"nothing answered at MASTER_ADDR=127.0.0.1 MASTER_PORT={port} within 0.5 s (")
        assert bench.rendezvous_problem(environ, 0, 0.5) is None  # rank 0 hosts the store: nothing to reach
        assert bench.rendezvous_problem({**environ, "TORCHELASTIC_USE_AGENT_STORE": "True"}, 0, 0.5)  # torchrun's
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        environ = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(listening.getsockname()[1])}
        assert bench.rendezvous_problem(environ, 1, 5) is None

    def unknown(*args):
        raise socket.gaierror(-2, "Name or service not known")
    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    assert bench.rendezvous_problem({"MASTER_ADDR": "gpu01", "MASTER_PORT": "29500"}, 1, 60) == (
        "MASTER_ADDR=gpu01 MASTER_PORT=29500: no such host ([Errno -2] Name or service not known); expected rank "
        "0's host")


def test_a_master_addr_no_host_has_is_refused_at_once_by_every_rank_rank_0_too(monkeypatch):
    # issue 55: rank 0 hosts the store without looking MASTER_ADDR up, and waited for ranks that
    # could never find it (past 360 s) though the docstring says an unknown host fails at once
    def unknown(*args):
        raise socket.gaierror(-2, "Name or service not known")
    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    started = time.monotonic()
    for rank in (0, 1):
        assert bench.rendezvous_problem({"MASTER_ADDR": "gpu01.invalid", "MASTER_PORT": "29500"}, rank, 300) == (
            "MASTER_ADDR=gpu01.invalid MASTER_PORT=29500: no such host ([Errno -2] Name or service not known); "
            "expected rank 0's host")
    assert time.monotonic() - started < 5


def test_ranks_across_hosts_refuse_a_master_addr_no_host_has_at_once_before_any_rank_starts(main_in_process,
                                                                                          monkeypatch):
    # issue 55: under torchrun its own rendezvous waited past 360 s for it, before any rank ran
    def unknown(*args):
        raise socket.gaierror(-2, "Name or service not known")
    monkeypatch.setattr(socket, "getaddrinfo", unknown)
    monkeypatch.setattr(local_ranks, "launch", lambda *a, **k: pytest.fail("ranks started"))
    started = time.monotonic()
    code, recs, err = main_in_process(bench, {"RANKS": "8", "NNODES": "2", "NODE_RANK": "1",
                                              "MASTER_ADDR": "gpu01.invalid", "MASTER_PORT": "29500"})
    assert time.monotonic() - started < 5
    assert (code, recs, err) == (2, [], "error: node 1 of NNODES=2: MASTER_ADDR=gpu01.invalid MASTER_PORT=29500: no "
                                        "such host ([Errno -2] Name or service not known); expected rank 0's host\n")


def test_a_host_that_finds_nothing_at_node_0_says_so_in_one_line_after_the_stated_wait(main_in_process,
                                                                                     monkeypatch):
    # torch's store client retries with C++ frames on stderr: the launcher asks in Python first
    monkeypatch.setattr(bench, "TIMEOUT_S", 0.5)
    monkeypatch.setattr(local_ranks, "launch", lambda *a, **k: pytest.fail("ranks started"))
    with socket.socket() as held:  # bound, not listening: node 0 not started
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        code, recs, err = main_in_process(bench, {"RANKS": "8", "NNODES": "2", "NODE_RANK": "1",
                                                  "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    assert (code, recs) == (2, []) and err.count("\n") == 1
    assert err.startswith(f"error: node 1 of NNODES=2: nothing answered at MASTER_ADDR=127.0.0.1 MASTER_PORT={port} "
                          f"within 0.5 s ("), err


def test_ranks_starts_the_ranks_itself_and_a_ranks_refusal_is_one_line_without_a_launcher_traceback(tmp_path):
    # issue 55: under torchrun its agent's log lines and its ChildFailedError traceback follow the line
    proc = subprocess.run([sys.executable, str(REPO / "bench_comm.py")], cwd=REPO, text=True, capture_output=True,
                          timeout=120, env=script_env({"RANKS": "2", "SIZES_MIB": "1048576", **CPU_TIMING}))
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr.startswith("error: SIZES_MIB=1048576: the inputs alone need") and proc.stderr.count("\n") == 1


def test_a_sigterm_to_ranks_stops_every_rank_and_ends_in_one_line_with_every_record_whole(tmp_path):
    # issue 55: under torchrun a Ctrl-C ended in its SignalException traceback
    err_path = tmp_path / "stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, str(REPO / "bench_comm.py")], cwd=REPO, text=True,
                                stdout=subprocess.PIPE, stderr=err,
                                env=script_env({"RANKS": "2", "SIZES_MIB": " ".join(["1"] * 2000), "OPS": "all_reduce",
                                                "ITERS": "2", "WARMUP": "1", "WARMUP_MS": "0", "TIME_MS": "0"}))
        deadline = time.monotonic() + 60
        while "[" not in err_path.read_text() and time.monotonic() < deadline:  # the first size measured
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    said = err_path.read_text().splitlines()
    assert proc.returncode == 143, said
    assert said[-1] == "stopped by SIGTERM: what was written is kept" and not any("Traceback" in s for s in said)
    assert all(line.startswith(("warning: ", "[")) for line in said[:-1]), said  # no launcher's line
    recs = parse_jsonl(out)  # every line whole
    assert recs[0]["kind"] == "header" and 1 <= len(recs) - 1 < 2000


def test_a_ctrl_c_while_node_0_waits_for_the_other_hosts_ends_at_once_in_one_line(tmp_path):
    # torch's rendezvous waits inside C++ (node 0's store, up to 5 minutes), where no Python handler
    # runs: the launch sat out the wait after a Ctrl-C (the review of issue 55's fix)
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "bench_comm.py")], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=script_env({"NNODES": "2", "NODE_RANK": "0", "RANKS": "1", "SIZES_MIB": "1",
                                            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # node 0's store listens: the hosts are meeting
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)  # not the rendezvous's 5 minutes
    assert (proc.returncode, out, err) == (130, "", "stopped by Ctrl-C: what was written is kept\n")


def test_another_rank_says_nothing_of_the_bad_input_local_rank_0_reports_but_leaves_it_for_its_launcher(
        main_in_process, monkeypatch, tmp_path):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(tmp_path / "error.json"))
    code, recs, err = main_in_process(bench, {"WORLD_SIZE": "16", "LOCAL_RANK": "1", "OPS": "broadcast"})
    assert (code, recs, err) == (2, [], "")
    assert json.loads((tmp_path / "error.json").read_text())["message"].startswith("error: OPS='broadcast'")
    # local rank 0 of another host (RANK 8) says it on its own console
    code, recs, err = main_in_process(bench, {"WORLD_SIZE": "16", "RANK": "8", "LOCAL_RANK": "0", "OPS": "broadcast"})
    assert (code, err.count("\n")) == (2, 1) and err.startswith("error: OPS='broadcast'")


# --- failures and Ctrl-C, in this process on a world of one ------------------------------------

@pytest.fixture
def world_of_one(monkeypatch, capsys):
    """main() as rank 0 of 2, its process group a gloo world of one in this process (so every
    collective returns at once), its records on pytest's stdout."""
    real = torch.distributed.init_process_group

    def init(*args, **kwargs):
        real("gloo", store=torch.distributed.HashStore(), rank=0, world_size=1)
    monkeypatch.setattr(torch.distributed, "init_process_group", init)
    monkeypatch.setattr(records, "claim_stdout", lambda: sys.stdout)
    for name, value in comm.MULTICAST_OFF.items():  # as the scripts set them, but undone after the test
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")  # read by nothing: the process group is this one
    monkeypatch.setenv("MASTER_PORT", "29500")
    yield
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def test_a_failed_allocation_is_a_record_and_a_failed_collective_the_last(world_of_one, main_in_process, monkeypatch):
    real = comm.make_call

    def make_call(op, size_bytes, ranks, device):
        if op == "all_gather":
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if op == "all_to_all" and size_bytes == 2 * MIB:
            return lambda: (_ for _ in ()).throw(RuntimeError("NCCL error: remote process exited"))
        return real(op, size_bytes, ranks, device)

    monkeypatch.setattr(comm, "make_call", make_call)
    code, recs, err = main_in_process(bench, {**CPU_TIMING, "WORLD_SIZE": "2", "SIZES_MIB": "1 2 4"})
    points = [(r["size_mib"], r["op"], r["status"]) for r in recs[1:]]
    assert code == 1 and points == [
        (1, "all_reduce", "ok"), (1, "all_gather", "oom"), (1, "reduce_scatter", "ok"), (1, "all_to_all", "ok"),
        (2, "all_reduce", "ok"), (2, "all_gather", "oom"), (2, "reduce_scatter", "ok"), (2, "all_to_all", "error")]
    assert recs[-1]["reason"] == "RuntimeError: NCCL error: remote process exited" and recs[-1]["ms"] is None
    assert "4 MiB" not in err  # nothing ran after the failed collective
    assert err.splitlines()[-1] == ("error: all_to_all at 2 MiB failed (RuntimeError: NCCL error: remote process "
                                    "exited): the ranks may be out of step, so the run ends there; every record so "
                                    "far is written")


def test_ctrl_c_keeps_every_record_so_far_and_exits_130_in_one_line(world_of_one, main_in_process, monkeypatch):
    real, seen = comm.measure, []

    def measure(op, size_mib, b):
        if len(seen) == 2:
            raise Interrupted(signal.SIGINT)
        seen.append(op)
        return real(op, size_mib, b)

    monkeypatch.setattr(comm, "measure", measure)
    before = signal.getsignal(signal.SIGINT)
    code, recs, err = main_in_process(bench, {**CPU_TIMING, "WORLD_SIZE": "2", "SIZES_MIB": "1"})
    assert code == 130 and [r["op"] for r in recs[1:]] == ["all_reduce", "all_gather"]
    assert err.splitlines()[-1] == "stopped by Ctrl-C: what was written is kept"
    assert signal.getsignal(signal.SIGINT) is before  # the handlers put back


# --- the report: an Interconnect table per node, and the forecast's interconnect ratio ------------

def rec(kind, run_id, gpu=None, **fields):
    out = {"kind": kind, "schema": 1, "script": "bench_comm.py", "run_id": run_id, "time": 0.0, **fields}
    return {**out, "hardware": {"gpu_name": gpu, "gpu_count": 8}, "config": {}} if kind == "header" else out


def busbw(run_id, op, mib, gbps, ranks=8, link=450.0, status="ok"):
    return rec("comm", run_id, op=op, size_mib=mib, size_bytes=mib * MIB, ranks=ranks, status=status,
               busbw_gbps=gbps if status == "ok" else None, link_gbps=link)


# Hand-made records (not measurements): an 8-GPU H200 node, and a B200 node at 2.0x its all_reduce
# and 1.8x its all_gather at 4 GiB; the B200's 1 MiB point and the H200's 64 MiB one have no match.
H200_NODE = [rec("header", "h", "NVIDIA H200"), busbw("h", "all_reduce", 64, 300.0),
             busbw("h", "all_reduce", 4096, 370.0), busbw("h", "all_gather", 4096, 350.0),
             busbw("h", "all_to_all", 4096, None, status="oom")]
B200_NODE = [rec("header", "b", "NVIDIA B200"), busbw("b", "all_reduce", 1, 100.0, link=900.0),
             busbw("b", "all_reduce", 4096, 740.0, link=900.0), busbw("b", "all_gather", 4096, 630.0, link=900.0)]


def test_the_report_shows_each_nodes_best_busbw_and_its_share_of_the_link():
    from upgrade_bench.report.compare import comparisons
    from upgrade_bench.report.page import details as detail_tables, markdown
    from upgrade_bench.report.read import series
    a = comparisons.analyse(series.load(H200_NODE + B200_NODE), baseline="H200 SXM")
    table = detail_tables.interconnect_markdown(a).splitlines()
    assert table[2] == ("| GPU | ranks | all_reduce GB/s | all_gather GB/s | reduce_scatter GB/s | all_to_all GB/s | "
                        "link GB/s | all_reduce / link | source |")
    assert table[4] == "| H200 SXM | 8 | 370.0 | 350.0 | - | - | 450.0 | 82.2% | measured, run h |"  # 370 / 450
    assert table[5] == "| B200 SXM | 8 | 740.0 | 630.0 | - | - | 900.0 | 82.2% | measured, run b |"
    assert "## Interconnect" in markdown.render(a)
    assert detail_tables.interconnect_markdown(comparisons.analyse(series.load(H200_NODE[:1]))) == ""


def test_the_interconnect_ratio_is_measured_call_for_call_where_both_gpus_have_comm_records():
    from upgrade_bench.report.forecast import comm as forecast_comm, model as forecast_model
    from upgrade_bench.report.read import series
    measured = forecast_comm.measured_comm(series.load(H200_NODE + B200_NODE), "H200 SXM", "B200 SXM")
    assert (measured.mid, measured.low, measured.high) == (pytest.approx(1.9), pytest.approx(1.8), 2.0)
    assert measured.source == ("bus bandwidth measured here on both GPUs (bench_comm.py: all_gather, all_reduce on 8 "
                               "ranks, 2 op x size points of 64 MiB and up)")
    assert forecast_comm.measured_comm(series.load(H200_NODE), "H200 SXM", "B200 SXM") is None
    two_ranks_ = [r if r["kind"] == "header" else {**r, "ranks": 2} for r in B200_NODE]
    assert forecast_comm.measured_comm(series.load(H200_NODE + two_ranks_), "H200 SXM", "B200 SXM") is None
    h200, b200 = (collectives.gpus.lookup(g) for g in ("NVIDIA H200", "NVIDIA B200"))
    hw = forecast_model.hardware_ratios(h200, b200, comm=measured)
    assert hw["comm"] is measured and (hw["fixed"].low, hw["fixed"].high) == (1.0, 2.0)
    assert hw["fixed"].source.endswith(f"up to the interconnect ratio ({measured.source})")
    # a candidate node whose links measure slower (a degraded link): the fixed part may slow down too
    slower = forecast_model.hardware_ratios(h200, b200, comm=forecast_model.Ratio(0.5, 0.4, 0.6, "measured"))["fixed"]
    assert (slower.mid, slower.low, slower.high) == (1.0, 0.4, 1.0)
    datasheet = forecast_model.hardware_ratios(h200, b200)["fixed"].source
    assert datasheet.endswith("up to the interconnect ratio (NVLink 1800 / 900 GB/s (datasheets))")


def test_the_forecast_page_says_which_interconnect_ratio_it_used(tmp_path, monkeypatch):
    import json

    from upgrade_bench.report.figures import draw as figures
    monkeypatch.setattr(figures, "write_all", lambda a, out_dir, opener=open: [])
    # a 2-GPU H200 sweep: its length-independent time (host and exposed ZeRO communication) is `fixed`
    sweep = [{"kind": "header", "schema": 1, "script": "benchmark.py", "run_id": "t", "time": 1.0,
              "hardware": {"gpu_name": "NVIDIA H200", "gpu_count": 2, "hbm_gib": 141}, "attn_backend": "fa3",
              "config": {"MODEL": "llama-3.1-8b", "ZERO_STAGE": 3, "world_size": 2}}]
    sweep += [{"kind": "summary", "schema": 1, "script": "benchmark.py", "run_id": "t", "seq_len": n, "step_ms": ms,
               "tflops_per_gpu": 25.0 * n / ms, "model_tflop_per_step": n / 40, "attn_flop_share": share,
               "peak_mem_gib": 40.0, "batch_size": 1}
              for n, ms, share in ((8192, 300.0, 0.1), (16384, 650.0, 0.18), (32768, 1500.0, 0.3))]

    def page(*logs):
        path = tmp_path / "in.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for one in logs for r in one))
        assert plot_results.main([str(path), "--forecast", "B200", "--out", str(tmp_path / "out")]) == 0
        return (tmp_path / "out" / "report.md").read_text()
    assert "up to the interconnect ratio (bus bandwidth measured here on both GPUs (bench_comm.py" in \
        page(sweep, H200_NODE, B200_NODE)
    assert "up to the interconnect ratio (NVLink 1800 / 900 GB/s (datasheets))" in page(sweep, H200_NODE)


# --- the yardstick: tools/comm_loop.py, the GPU machine's plain torch.distributed loop ----------

def test_the_yardstick_counts_bytes_as_the_suite_does_by_its_own_arithmetic():
    loop = import_script("tools/comm_loop.py")
    for ranks in (2, 3, 8):
        for op in collectives.OPS:
            size, inp, out = loop.nccl_tests_bytes(op, 5 * MIB, ranks)
            assert size == collectives.op_bytes(op, 5 * MIB, ranks) and (inp, out) == collectives.buffer_bytes(op, 5 * MIB, ranks)
    assert loop.bus_bandwidth("all_reduce", 100.0, 8) == 175.0 and loop.bus_bandwidth("all_to_all", 100.0, 8) == 87.5


def test_the_yardstick_runs_every_op_and_prints_a_json_line_each(world_of_one, as_script, capsys):
    loop = import_script("tools/comm_loop.py")
    as_script("comm_loop.py", loop.VARS, {"SIZES_MIB": "1 2", "WARMUP": "1", "ITERS": "2"})
    assert loop.main() == 0
    lines = parse_jsonl(capsys.readouterr().out)
    assert [(r["size_mib"], r["op"]) for r in lines] == [(n, op) for n in (1, 2) for op in collectives.OPS]
    for r in lines:  # a world of one: nothing crosses a link, so busbw is 0 whatever the time
        assert r["ranks"] == 1 and r["size_bytes"] == r["size_mib"] * MIB and r["busbw_gbps"] == 0.0
        assert r["algbw_gbps"] == pytest.approx(r["size_bytes"] / (r["ms"] / 1e3) / 1e9)


def test_nccl_transports_are_read_from_its_info_lines(tmp_path):
    from upgrade_bench.kernels.comm import transport as nccl_transport

    lines = ["vm:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
             "vm:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
             "vm:1:2 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0",
             "vm:1:2 [0] NCCL INFO Channel 00 : 0[0] -> 2[2] via SHM/direct/direct",
             "vm:1:2 [0] NCCL INFO Connected all rings"]
    assert nccl_transport.transports(lines) == ["P2P/CUMEM", "NET/Socket", "SHM/direct"]
    env = {}
    folder = nccl_transport.ask(env)
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_FILE"].startswith(folder)
    with open(env["NCCL_DEBUG_FILE"].replace("%p", "42"), "w") as f:
        f.write("\n".join(lines))
    assert nccl_transport.read(folder) == ["P2P/CUMEM", "NET/Socket", "SHM/direct"]
    nccl_transport.forget(folder)
    assert not os.path.exists(folder) and nccl_transport.read(folder) is None
    assert nccl_transport.ask({"NCCL_DEBUG": "WARN"}) is None  # the user's own is left alone


def test_a_missing_master_address_says_who_sets_it_under_nnodes_too():
    with pytest.raises(BadInput, match=r"^MASTER_ADDR='', MASTER_PORT='x': expected rank 0's host and a port from 1 to "
                                       r"65535 \(set by the launcher, or by you on each host with NNODES\)$"):
        bench.master_address({"MASTER_PORT": "x"})
