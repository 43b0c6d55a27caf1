"""bench_hbm.py and upgrade_bench.kernels.hbm, on CPU.

The formulas against hand-computed numbers; each op doing the work its bytes count; the
script's main run for real in this process on tiny host buffers (a subprocess for the exit
code), its records checked against the schema; bad input refused before any work; a size that
cannot fit and an op that raises are records, not crashes; the report's bandwidth table.
"""
import json
import signal
import time

import pytest
import torch

from conftest import run_proc
from upgrade_bench.hardware import bandwidth
from upgrade_bench.kernels.attention import bench as attn_bench
from upgrade_bench.kernels.hbm import bench as hbm
from upgrade_bench.log import checks
from upgrade_bench.log.records import read_lines
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.page import details as detail_tables, markdown
from upgrade_bench.report.read import series
from upgrade_bench.kernels.hbm import main as bench

MIB = 2**20
# No sustained windows: a CPU's timings test the plumbing, not the memory.
CPU_TIMING = {"ITERS": "3", "WARMUP": "1", "WARMUP_MS": "0", "TIME_MS": "0"}


# --- the formulas ------------------------------------------------------------------------------

def test_bytes_moved_counts_what_each_op_must_read_and_write():
    assert hbm.bytes_moved("copy", 512 * MIB) == 1_073_741_824  # read 512 MiB + write 512 MiB
    assert hbm.bytes_moved("read", 512 * MIB) == 536_870_912
    assert hbm.bytes_moved("write", 512 * MIB) == 536_870_912
    assert hbm.allocated_bytes("copy", MIB) == 2 * MIB and hbm.allocated_bytes("read", MIB) == MIB
    with pytest.raises(ValueError, match="'triad'"):
        hbm.bytes_moved("triad", MIB)


def test_gb_per_s_is_decimal_as_the_datasheets_are():
    assert bandwidth.gb_per_s(4_800_000_000, 1.0) == pytest.approx(4800.0)   # 4.8e9 B in 1 ms: 4.8 TB/s
    assert bandwidth.gb_per_s(2**30, 1000.0) == pytest.approx(1.073741824)   # a GiB a second is 1.07 GB/s
    # copy of 8 GiB (16 GiB moved) in 4 ms: 17179869184 B / 0.004 s = 4294.97 GB/s
    assert bandwidth.gb_per_s(hbm.bytes_moved("copy", 8192 * MIB), 4.0) == pytest.approx(4294.967296)
    assert bandwidth.gb_per_s(MIB, 0.0) is None


def test_the_datasheet_figure_is_the_gpu_tables_and_none_for_an_unknown_gpu():
    assert bandwidth.datasheet_gb_per_s("NVIDIA H200") == (4800.0, "H200 SXM")
    assert bandwidth.datasheet_gb_per_s("NVIDIA B200") == (8000.0, "B200 SXM")
    assert bandwidth.datasheet_gb_per_s("NVIDIA GB300") == (8000.0, "GB300")  # its own row, not the B300's
    assert bandwidth.datasheet_gb_per_s("NVIDIA GB400") == (None, None)  # no row: never another GPU's figure
    assert bandwidth.datasheet_gb_per_s(None) == (None, None)
    assert bandwidth.share_of_datasheet(4000.0, 4800.0) == pytest.approx(0.8333333)
    assert bandwidth.share_of_datasheet(4000.0, None) is None and bandwidth.share_of_datasheet(None, 4800.0) is None


def point(op, mib, gbps, status="ok", share=None):
    return {"op": op, "buffer_mib": mib, "gb_per_s": gbps, "status": status, "share_of_datasheet": share}


def test_the_best_of_each_op_skips_failed_points_and_keeps_copy_first():
    records = [point("write", 512, 3000.0), point("copy", 512, 3900.0), point("copy", 2048, 4100.0),
               point("copy", 8192, None, "oom"), point("read", 512, 4300.0), point("read", 2048, None, "error")]
    best = bandwidth.best_by_op(records)
    assert list(best) == ["copy", "read", "write"]
    assert (best["copy"]["buffer_mib"], best["read"]["buffer_mib"]) == (2048, 512)
    assert bandwidth.best_by_op([point("copy", 512, None, "oom")]) == {}


def test_the_table_and_the_headline():
    records = [point("copy", 512, 3900.0, share=3900 / 4800), point("copy", 2048, 4100.0, share=4100 / 4800),
               point("read", 512, None, "oom"), point("read", 2048, 4300.5, share=4300.5 / 4800)]
    lines = hbm.format_table(records).splitlines()
    assert lines[1].split() == ["op", "512", "MiB", "2048", "MiB"]
    assert lines[2].split() == ["copy", "3900", "4100"] and lines[3].split() == ["read", "oom", "4300"]
    assert hbm.headline(records, 4800.0, "table:H200 SXM").splitlines() == [
        "best copy: 4100 GB/s at 2048 MiB, 85.4% of the 4800 GB/s datasheet (table:H200 SXM)",
        "best read: 4300 GB/s at 2048 MiB, 89.6% of the 4800 GB/s datasheet (table:H200 SXM)"]
    unknown = hbm.headline(records, None, None).splitlines()
    assert unknown[0] == "best copy: 4100 GB/s at 2048 MiB" and unknown[-1].startswith("share of the datasheet: null")
    assert hbm.headline([point("copy", 512, None, "oom")], None, None) == "no point was measured"


def test_each_op_does_the_work_its_bytes_count():
    copied = hbm.make_call("copy", MIB, "cpu")()  # the destination: a whole buffer of random data
    assert copied.numel() * copied.element_size() == MIB and 0 < copied.min() < copied.max() < 1
    total = hbm.make_call("read", MIB, "cpu")()   # one scalar: the sum of the whole buffer
    assert total.dim() == 0 and total.item() == pytest.approx(MIB / 4 * 0.5, rel=0.02)
    filled = hbm.make_call("write", MIB, "cpu")()
    assert filled.numel() * filled.element_size() == MIB and bool((filled == 1.0).all())


# --- the script, in-process ----------------------------------------------------------------------

@pytest.fixture
def run_main(main_in_process):
    """run_main(**env) -> (exit code, records, stderr): the script's main in this process."""
    return lambda **env: main_in_process(bench, {**CPU_TIMING, "SIZES_MIB": "1 2", **env})


def test_a_cpu_run_writes_a_record_per_size_and_op_as_the_schema_declares(run_main, tmp_path):
    out = tmp_path / "hbm.jsonl"
    code, records, err = run_main(OUTPUT=out)
    assert code == 0, err
    header, *points = records
    assert header["kind"] == "header" and header["config"]["SIZES_MIB"] == [1, 2]
    assert "no GPU: CPU wall-clock timings, for testing the script only" in header["warnings"]
    assert any("share_of_datasheet is null" in w for w in header["warnings"])
    assert [(r["op"], r["buffer_mib"]) for r in points] == [(op, n) for n in (1, 2) for op in hbm.OPS]
    for r in points:
        assert r["kind"] == "hbm" and checks.field_problem(r) is None
        assert set(r) - {"log_file"} <= set(checks.DECLARED["hbm"])  # what the reader adds aside
        assert r["status"] == "ok" and r["reason"] is None and r["iters"] == 3 and r["warmup_iters"] == 1
        assert r["bytes_moved"] == r["buffer_mib"] * MIB * (2 if r["op"] == "copy" else 1)
        assert 0 < r["ms_min"] <= r["ms"] <= r["ms_max"]
        assert r["gb_per_s"] == pytest.approx(r["bytes_moved"] / (r["ms"] / 1e3) / 1e9)
        assert r["datasheet_gb_per_s"] is None and r["share_of_datasheet"] is None
        assert r["timing"] == "host clock (no GPU)"
    assert read_lines(out.read_text().splitlines()) == (records, 0)  # OUTPUT holds what stdout printed
    progress = [line for line in err.splitlines() if line.startswith("[")]
    assert len(progress) == 6 and progress[0].startswith("[1/6] copy 1 MiB: ") and " GB/s, " in progress[0]
    assert progress[-1].startswith("[6/6] write 2 MiB: ") and "left)" in progress[-1]
    assert "GB/s (decimal) at the median call" in err and "best copy: " in err


def test_the_exit_code_of_bad_input_in_a_real_process(tmp_path):
    proc = run_proc("bench_hbm.py", {"OPS": "copy foo"}, timeout=60, cwd=tmp_path,
                    cleared={var.name for var in bench.VARS})
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "error: OPS='copy foo': expected a list of copy|read|write\n"


@pytest.mark.parametrize("env, needle", [
    ({"SIZES_MIB": "0"}, "SIZES_MIB='0'"),
    ({"SIZES_MIB": "1 two"}, "SIZES_MIB='1 two'"),
    ({"OPS": "foo"}, "OPS='foo'"),
    ({"OPS": ","}, "OPS=''"),
    ({"ITERS": "0"}, "ITERS='0'"),
    ({"TIME_MS": "inf"}, "TIME_MS='inf'"),
])
def test_every_bad_input_is_one_line_and_exit_2_before_any_record(run_main, monkeypatch, env, needle):
    monkeypatch.setattr(hbm, "make_call", lambda *args: pytest.fail("allocated"))
    code, records, err = run_main(**env)
    assert code == 2 and records == []
    assert needle in err and len(err.strip().splitlines()) == 1


def test_a_smallest_size_that_cannot_fit_this_device_is_refused_before_any_work(run_main, monkeypatch):
    monkeypatch.setattr(attn_bench, "memory_bytes", lambda device: 2**30)  # a 1 GiB device
    monkeypatch.setattr(hbm, "make_call", lambda *args: pytest.fail("allocated"))
    code, records, err = run_main(SIZES_MIB="2048 1024")  # copy of 1 GiB holds 2 GiB
    assert code == 2 and records == []
    assert err == "error: SIZES_MIB=1024: the inputs alone need 2.0 GiB, more than the 1.0 GiB this device has\n"
    hbm.check_fits([1024, 2048], ["read", "write"], 2**30)  # they hold one buffer: 1 GiB fits


def test_a_larger_size_that_cannot_fit_is_an_oom_record_without_allocating(run_main, monkeypatch):
    monkeypatch.setattr(attn_bench, "memory_bytes", lambda device: 3 * MIB)
    made = []
    real = hbm.make_call
    monkeypatch.setattr(hbm, "make_call", lambda op, nbytes, device: made.append((op, nbytes)) or real(op, nbytes, device))
    code, records, err = run_main()
    status = {(r["op"], r["buffer_mib"]): r["status"] for r in records[1:]}
    assert status == {("copy", 1): "ok", ("read", 1): "ok", ("write", 1): "ok",
                      ("copy", 2): "oom", ("read", 2): "ok", ("write", 2): "ok"}
    assert ("copy", 2 * MIB) not in made and code == 0  # OOM is a result, not a failure
    (oom,) = [r for r in records[1:] if r["status"] == "oom"]
    assert oom["reason"].startswith("the inputs alone need") and oom["gb_per_s"] is None
    assert "[4/6] copy 2 MiB: oom (the inputs alone need" in err


def test_on_cpu_the_buffers_fit_half_of_what_the_host_has_free_now(run_main, monkeypatch, tmp_path):
    # issue 46: the node's hbm step on a 24 GiB laptop held 8 GiB buffers (the copy: 16.9 GB
    # resident) against the host's whole RAM, and the OOM killer ended it
    from upgrade_bench.hardware import fingerprint

    (tmp_path / "meminfo").write_text("MemTotal:       24641536 kB\nMemAvailable:   10485760 kB\n")  # 10 GiB free
    assert fingerprint.host_free_bytes(str(tmp_path / "meminfo"), str(tmp_path / "none")) == 10 * 2**30
    (tmp_path / "memory.max").write_text(f"{12 * 2**30}\n")
    (tmp_path / "memory.current").write_text(f"{8 * 2**30}\n")  # the container has 4 GiB of room
    assert fingerprint.host_free_bytes(str(tmp_path / "meminfo"), str(tmp_path)) == 4 * 2**30
    (tmp_path / "memory.max").write_text("max\n")
    assert fingerprint.host_free_bytes(str(tmp_path / "meminfo"), str(tmp_path)) == 10 * 2**30
    monkeypatch.setattr(fingerprint, "host_free_bytes", lambda: 10 * 2**30)
    assert attn_bench.memory_bytes(torch.device("cpu")) == 5 * 2**30
    code, records, err = run_main(SIZES_MIB="1 8192", OPS="copy read")  # the defaults' largest
    assert code == 0 and [(r["op"], r["buffer_mib"], r["status"]) for r in records[1:]] == [
        ("copy", 1, "ok"), ("read", 1, "ok"), ("copy", 8192, "oom"), ("read", 8192, "oom")]
    assert records[3]["reason"] == "the inputs alone need 16.0 GiB, more than the 5.0 GiB this device has"


@pytest.mark.parametrize("error, status, exit_code", [
    (RuntimeError("reduction kernel exploded"), "error", 1),
    (torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 MiB"), "oom", 0),
])
def test_an_op_that_raises_while_timed_is_a_record_and_the_run_goes_on(run_main, monkeypatch, error, status,
                                                                       exit_code):
    real = hbm.make_call

    def failing(op, nbytes, device):
        call = real(op, nbytes, device)
        if op != "read":
            return call
        calls = []

        def timed():  # the first (untimed) call runs; the next, inside the timing, raises
            calls.append(1)
            if len(calls) > 1:
                raise error
            return call()
        return timed

    monkeypatch.setattr(hbm, "make_call", failing)
    code, records, err = run_main()
    points = records[1:]
    assert [r["status"] for r in points if r["op"] == "read"] == [status, status]
    assert all(r["status"] == "ok" for r in points if r["op"] != "read") and len(points) == 6
    read = next(r for r in points if r["op"] == "read")
    assert read["reason"] == f"{type(error).__name__}: {error}" and read["gb_per_s"] is None
    assert code == exit_code
    assert "best copy: " in err and "best read" not in err


# --- the report ---------------------------------------------------------------------------------

def test_the_report_shows_each_gpus_best_bandwidth_and_its_share_of_the_datasheet(run_main):
    _code, cpu_run, _err = run_main()
    # hand-made H200 records (not a measurement): run a 3900 and 4100 GB/s copy, 4300 read, no
    # write; run b a better read (4400) and a worse copy: each run its own row, never mixed
    def rec(kind, run_id="a", **fields):
        return {"kind": kind, "schema": 1, "script": "bench_hbm.py", "run_id": run_id, "time": 0.0, **fields}
    h200 = [rec("header", hardware={"gpu_name": "NVIDIA H200"}, config={}),
            rec("hbm", op="copy", buffer_mib=512, status="ok", gb_per_s=3900.0),
            rec("hbm", op="copy", buffer_mib=2048, status="ok", gb_per_s=4100.0),
            rec("hbm", op="read", buffer_mib=512, status="ok", gb_per_s=4300.0),
            rec("hbm", op="write", buffer_mib=512, status="oom", gb_per_s=None),
            rec("header", "b", hardware={"gpu_name": "NVIDIA H200"}, config={}),
            rec("hbm", "b", op="copy", buffer_mib=512, status="ok", gb_per_s=3000.0),
            rec("hbm", "b", op="read", buffer_mib=512, status="ok", gb_per_s=4400.0)]
    a = comparisons.analyse(series.load(json.loads(json.dumps(cpu_run + h200))), baseline="H200 SXM")
    table = detail_tables.bandwidth_markdown(a).splitlines()
    assert table[2] == "| GPU | copy GB/s | read GB/s | write GB/s | datasheet TB/s | copy / datasheet | source |"
    assert table[4] == "| H200 SXM | 4100.0 | 4300.0 | - | 4.8 | 85.4% | measured, run a |"  # 4100 / 4800
    assert table[5] == "| H200 SXM | 3000.0 | 4400.0 | - | 4.8 | 62.5% | measured, run b |"
    best = bandwidth.best_by_op(cpu_run[1:])
    assert table[6].startswith(f"| no GPU | {best['copy']['gb_per_s']:.1f} |")
    assert table[6].endswith(f"| - | - | measured, run {cpu_run[0]['run_id']} |")
    assert "## Memory bandwidth (HBM)" in markdown.render(a)


def test_ctrl_c_ends_a_real_run_with_130_and_one_line_and_whole_records(start_proc, tmp_path):
    # issue 38: a KeyboardInterrupt traceback and exit -2. 100000 copies of 64 MiB: minutes,
    # stopped in the first point once the header is in the file
    out = tmp_path / "hbm.jsonl"
    proc = start_proc("bench_hbm.py", {**CPU_TIMING, "SIZES_MIB": "64", "OPS": "copy", "ITERS": "100000",
                                       "OUTPUT": str(out)}, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not (out.exists() and out.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert err.splitlines()[-1] == "stopped by Ctrl-C: what was written is kept"
    recs, skipped = read_lines(out.read_text().splitlines())
    assert skipped == 0 and [r["kind"] for r in recs] == ["header"]
