"""check_capabilities.py: classification, the memory rule, topology parsing, the side-by-side
table, the probes themselves where torch has CPU kernels, and the script run for real on CPU."""
import json

import pytest
import torch

from conftest import run_proc
from upgrade_bench.kernels.attention import backends as attn_backends
from upgrade_bench import faults
from upgrade_bench.hardware import fingerprint, precisions
from upgrade_bench.capability import health
from upgrade_bench.capability import verdicts as caps
from upgrade_bench.faults import BadInput
from upgrade_bench.capability import probes
from upgrade_bench.report.read import series
from upgrade_bench.report.page.capabilities import capability_table
from upgrade_bench.capability import main as capabilities

HOPPER = fingerprint.Device((9, 0))
BLACKWELL = fingerprint.Device((10, 0))
AMPERE = fingerprint.Device((8, 0))
NO_GPU = fingerprint.Device(None)
MI300X = fingerprint.Device((9, 4), is_hip=True)


# ---- gate + classification, with fake probes ---------------------------------------------

def test_capability_below_the_format_need_is_hardware_and_the_probe_does_not_run():
    calls = []
    verdict = caps.evaluate("matmul:nvfp4:block16", HOPPER, lambda: calls.append(1))
    assert verdict.status == "unsupported_hardware"
    assert "sm_100" in verdict.detail and "sm_90" in verdict.detail
    assert calls == []
    fp8 = caps.evaluate("matmul:fp8_e4m3:tensorwise", AMPERE, lambda: calls.append(1))
    assert fp8.status == "unsupported_hardware" and "sm_89" in fp8.detail and "sm_80" in fp8.detail
    assert calls == []


def test_a_failing_probe_on_capable_hardware_is_the_stack():
    def probe():
        raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED when calling cublasLtMatmul\nsecond line")

    verdict = caps.evaluate("matmul:nvfp4:block16", BLACKWELL, probe)
    assert verdict.status == "unsupported_stack"
    assert verdict.detail == ("RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED when calling cublasLtMatmul "
                              "second line")


def test_a_dtype_missing_from_torch_is_the_stack():
    def probe():
        return torch.float4_e9m9_x7  # no such dtype in any torch

    verdict = caps.evaluate("matmul:nvfp4:block16", BLACKWELL, probe)
    assert verdict.status == "unsupported_stack" and verdict.detail.startswith("AttributeError")


def test_a_passing_probe_is_ok_with_its_detail_and_value():
    passed = caps.Passed("ran", {"max_rel_err": 0.001})
    verdict = caps.evaluate("matmul:fp8_e4m3:rowwise", HOPPER, lambda: passed)
    assert verdict == caps.Verdict("ok", "ran", {"max_rel_err": 0.001})


def test_wrong_results_and_oom_are_errors_not_missing_features():
    wrong = caps.evaluate("matmul:bf16", HOPPER, lambda: caps.check_close(
        torch.ones(4), torch.full((4,), 2.0), 1e-2, "bf16 matmul"))
    assert wrong.status == "error" and "wrong result" in wrong.detail and "0.5" in wrong.detail

    def oom():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    assert caps.evaluate("memory:usable", HOPPER, oom).status == "error"


def test_warnings_raised_by_a_refused_call_explain_it():
    import warnings

    def probe():
        warnings.warn("Flash attention requires sm80 or newer")
        raise RuntimeError("No available kernel. Aborting execution.")

    verdict = caps.evaluate("attention:sdpa-efficient", HOPPER, probe)
    assert verdict.status == "unsupported_stack"
    assert "No available kernel" in verdict.detail and "requires sm80" in verdict.detail


def test_no_gpu_is_unavailable_before_anything_else():
    assert caps.evaluate("matmul:fp16", NO_GPU, lambda: 1 / 0) == caps.Verdict("unavailable", "no GPU")
    fa3, fa4 = attn_backends.BACKENDS["fa3"], attn_backends.BACKENDS["fa4"]
    assert caps.attention_gate(fa4, NO_GPU, None) == caps.Verdict("unavailable", "no GPU")
    missing = caps.attention_gate(fa3, HOPPER, None)
    assert missing.status == "unavailable" and "flash-attn-3 is not installed" in missing.detail
    assert "./install.sh --force fa3" in missing.detail
    assert caps.attention_gate(fa4, HOPPER, "4.0.0b36") is None


def test_an_attention_backend_outside_its_architectures_is_hardware_and_not_run():
    fa3 = attn_backends.BACKENDS["fa3"]
    on_blackwell = caps.attention_gate(fa3, BLACKWELL, "3.0.0")
    assert on_blackwell.status == "unsupported_hardware"
    assert on_blackwell.detail == "fa3 does not run on sm_100: FA3 runs on Hopper (sm_90) only (not run)"
    assert caps.attention_gate(fa3, HOPPER, "3.0.0") is None
    # ROCm's (9, 4) is no Hopper: fa3 is NVIDIA's; torch's own kernels run there but cuDNN's
    assert caps.attention_gate(fa3, MI300X, "3.0.0").status == "unsupported_hardware"
    assert caps.attention_gate(attn_backends.BACKENDS["sdpa-cudnn"], MI300X, "2.13").status == \
        "unsupported_hardware"
    assert caps.attention_gate(attn_backends.BACKENDS["sdpa-flash"], MI300X, "2.13") is None


def test_a_verdict_only_takes_the_five_answers():
    with pytest.raises(ValueError, match="maybe"):
        caps.Verdict("maybe", "")


def test_rocm_is_never_gated_by_the_nvidia_capability():
    assert caps.gate("matmul:mxfp8:block32", MI300X) is None
    assert caps.gate("matmul:mxfp8:block32", HOPPER).status == "unsupported_hardware"


# ---- the probes, run for real where torch has CPU kernels ----------------------------------

@pytest.mark.parametrize("make", [
    lambda: probes.matmul_dense("bf16", "cpu"),
    lambda: probes.matmul_fp8("e4m3", "tensorwise", "cpu"),
    lambda: probes.matmul_fp8("e5m2", "tensorwise", "cpu"),
    lambda: probes.matmul_fp8("e4m3", "rowwise", "cpu"),
], ids=["bf16", "fp8_e4m3_tensorwise", "fp8_e5m2_tensorwise", "fp8_e4m3_rowwise"])
def test_matmul_probes_pass_on_cpu_kernels(make):
    result = make()
    assert isinstance(result, caps.Passed) and result.value["max_rel_err"] < probes.BF16_RTOL


def test_tf32_probe_notices_when_tf32_did_not_run():
    # CPU matmul ignores allow_tf32: the probe must not call that TF32.
    with pytest.raises(caps.NotEngaged, match="TF32 not engaged"):
        probes.matmul_tf32("cpu")
    assert torch.backends.cuda.matmul.allow_tf32 is False  # restored


def test_sdpa_math_attention_probe_checks_fwd_and_bwd_against_the_reference():
    result = probes.attention("sdpa-math", "cpu", torch.__version__)
    assert result.value["out_max_abs_err"] < probes.ATTN_OUT_ATOL
    assert result.value["grad_max_rel_err"] < probes.ATTN_GRAD_RTOL


def test_fp4_packing_puts_the_even_element_in_the_low_nibble():
    codes = torch.tensor([[2, 7, 0, 15]], dtype=torch.uint8)  # 1.0, 6.0, 0.0, -6.0
    assert probes.pack_e2m1(codes).tolist() == [[0x72, 0xF0]]
    assert [probes.E2M1_VALUES[c] for c in (2, 7, 15)] == [1.0, 6.0, -6.0]


def test_block_scaled_operands_have_the_shapes_torch_checks():
    # torch: scale numel = round_up(rows, 128) * round_up(ceil(K / block), 4)
    assert probes.blocked_scale_numel(128, 128, 32) == 128 * 4
    assert probes.blocked_scale_numel(128, 128, 16) == 128 * 8
    assert probes.blocked_scale_numel(129, 40, 16) == 256 * 4
    a, b, a_ref, b_ref, scale_a, scale_b, _ = probes.block_scaled_operands("nvfp4", "cpu")
    assert a.dtype == torch.float4_e2m1fn_x2 and a.shape == (128, 64)
    assert scale_a.dtype == torch.float8_e4m3fn and scale_a.shape == (1024,)
    low = a.view(torch.uint8) & 15
    assert torch.equal(torch.tensor(probes.E2M1_VALUES)[low.long()], a_ref[:, 0::2])
    a, _, _, _, scale_a, _, _ = probes.block_scaled_operands("mxfp8", "cpu")
    assert a.dtype == torch.float8_e4m3fn and scale_a.dtype == torch.float8_e8m0fnu
    assert scale_a.shape == (512,)


# ---- memory rule of thumb and capacity records --------------------------------------------

def test_max_seq_len_estimate_follows_the_guide():
    # (141 - 12.6) / 0.00043 = 298604.65; 125.3 GiB is the guide's 256K point
    assert caps.estimate_max_seq_len(141) == 298604
    assert caps.estimate_max_seq_len(125.3) == 262093
    assert caps.estimate_max_seq_len(10) == 0
    v = caps.max_seq_len_verdict("NVIDIA H200", None, 139, 140.4)
    assert v.value == caps.estimate_max_seq_len(139) and v.detail.startswith("estimate")
    assert "12.6 GiB" in v.detail and "0.00043" in v.detail
    by_total = caps.max_seq_len_verdict("NVIDIA H200", None, None, 140.4)
    assert by_total.value == caps.estimate_max_seq_len(140.4) and "total HBM" in by_total.detail


def _log():
    return [
        {"kind": "header", "run_id": "h", "hardware": {"gpu_name": "NVIDIA H200"}},
        {"kind": "capacity", "run_id": "h", "max_fit_seq_len": 262144, "min_fail_seq_len": 294912,
         "peak_mem_gib_at_max": 124.5, "seq_len_step": 32768},
        {"kind": "header", "run_id": "b", "hardware": {"gpu_name": "NVIDIA B200"}},
        {"kind": "capacity", "run_id": "b", "max_fit_seq_len": 360448, "min_fail_seq_len": 393216},
    ]


def test_a_capacity_record_of_this_gpu_beats_the_estimate():
    v = caps.max_seq_len_verdict("NVIDIA H200", _log(), 139, 140.4)
    assert v.value == 262144 and v.detail.startswith("measured") and "294912" in v.detail
    assert caps.max_seq_len_verdict("NVIDIA B200", _log(), 178, 179).value == 360448
    other = caps.max_seq_len_verdict("NVIDIA GB200", _log(), 180, 184)
    assert other.detail.startswith("estimate") and "no capacity record for NVIDIA GB200" in other.detail
    assert caps.max_seq_len_verdict(None, _log(), None, None).status == "unavailable"
    headerless = [{"kind": "capacity", "run_id": "x", "max_fit_seq_len": 196608}]
    v = caps.max_seq_len_verdict("NVIDIA H200", headerless, 139, 140.4)
    assert v.value == 196608 and "does not say which GPU" in v.detail
    assert caps.max_seq_len_verdict("NVIDIA H200", _log() + headerless, 139, 140.4).value == 262144


# ---- topology ------------------------------------------------------------------------------

TOPO_2GPU = """\
\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tPIX\t0-55,112-167\t0\t\tN/A
GPU1\tNV18\t X \tSYS\t0-55,112-167\t0\t\tN/A
NIC0\tPIX\tSYS\t X

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def test_topo_matrix_parsing_keeps_gpu_pairs_only():
    assert caps.parse_topo_matrix(TOPO_2GPU) == (2, {"0-1": "NV18"})
    assert caps.parse_topo_matrix("") == (0, {})
    one = "\x1b[4m\tGPU0\tCPU Affinity\tNUMA Affinity\x1b[0m\nGPU0\t X \t0-31\t0\n"
    assert caps.parse_topo_matrix(one) == (1, {})
    four = ("\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\n"
            "GPU0\t X \tNV4\tSYS\tSYS\t0-15\nGPU1\tNV4\t X \tSYS\tSYS\t0-15\n"
            "GPU2\tSYS\tSYS\t X \tNV4\t16-31\nGPU3\tSYS\tSYS\tNV4\t X \t16-31\n")
    assert caps.parse_topo_matrix(four) == (4, {"0-1": "NV4", "0-2": "SYS", "0-3": "SYS",
                                                 "1-2": "SYS", "1-3": "SYS", "2-3": "NV4"})


def test_topology_summary():
    pairs = {"0-1": "NV18", "0-2": "SYS", "1-2": "SYS"}
    assert caps.summarize_topology(3, pairs, [18, 18, 0]) == (
        "3 GPUs; GPU pairs: 2x SYS, 1x NV18; 0/18 NVLink links active per GPU")
    assert caps.summarize_topology(1, {}, [18]) == "1 GPU, no GPU pairs; 18 NVLink links active per GPU"
    assert caps.summarize_topology(2, {"0-1": "PHB"}, []).endswith("no active NVLink")


# ---- the side-by-side table ---------------------------------------------------------------

def _cap(item, status, value=None, detail="", run_id="h"):
    return {"kind": "capability", "run_id": run_id, "item": item, "category": item.split(":")[0],
            "status": status, "detail": detail, "value": value}


def _by_gpu(records) -> dict:
    """{gpu: {item: record}} as the report reads a mix of logs."""
    return {name: gpu.capabilities for name, gpu in series.load(records).gpus.items() if gpu.capabilities}


def test_side_by_side_table_highlights_what_only_one_gpu_can_do():
    records = [
        {"kind": "header", "run_id": "h", "hardware": {"gpu_name": "NVIDIA H200"}},
        _cap("matmul:bf16", "ok"),
        _cap("matmul:nvfp4:block16", "unsupported_hardware"),
        _cap("attention:fa3", "ok"),
        _cap("memory:max_seq_len", "ok", 298604, "estimate: ..."),
        {"kind": "header", "run_id": "b", "hardware": {"gpu_name": "NVIDIA B200"}},
        _cap("matmul:bf16", "ok", run_id="b"),
        _cap("matmul:nvfp4:block16", "ok", {"max_rel_err": 0.002}, run_id="b"),
        _cap("attention:fa3", "unsupported_stack", run_id="b"),
        _cap("memory:max_seq_len", "ok", 360448, "measured: ...", run_id="b"),
        _cap("memory:hbm", "ok", 178.4, run_id="b"),
        _cap("interconnect:nccl", "ok", "2.27.5"),
        _cap("interconnect:nccl", "ok", "2.28.3", run_id="b"),
    ]
    by_gpu = _by_gpu(records)
    assert list(by_gpu) == ["H200 SXM", "B200 SXM"]
    table = capability_table(by_gpu)
    lines = table.splitlines()
    assert lines[0] == "| item | H200 SXM | B200 SXM | difference |"
    row = {line.split("|")[1].strip(): line for line in lines[2:]}
    assert row["**matmul:nvfp4:block16**"] == (
        "| **matmul:nvfp4:block16** | unsupported_hardware | **ok** | ◀ ok only on B200 SXM |")
    assert row["**attention:fa3**"].endswith("| ◀ ok only on H200 SXM |")
    assert row["matmul:bf16"] == "| matmul:bf16 | ok | ok |  |"
    assert row["memory:max_seq_len"] == "| memory:max_seq_len | ok · ~298,604 | ok · 360,448 |  |"
    # an item one log lacks is shown as missing and is not a difference
    assert row["memory:hbm"] == "| memory:hbm | – | ok · 178.4 |  |"
    assert row["interconnect:nccl"] == "| interconnect:nccl | ok · 2.27.5 | ok · 2.28.3 |  |"
    assert len(lines) == 2 + 6


def test_items_logged_under_the_old_sdpa_spellings_share_a_row_with_todays():
    # results/h200x2_capabilities.jsonl was written before the backend table: attention:sdpa_cudnn.
    old = ["attention:sdpa_cudnn", "attention:sdpa_efficient", "attention:sdpa_flash", "attention:sdpa_math"]
    now = [series.current_capability({"item": i})["item"] for i in old]
    assert now == ["attention:sdpa-cudnn", "attention:sdpa-efficient", "attention:sdpa-flash", "attention:sdpa-math"]
    assert {i.partition(":")[2] for i in now} <= set(attn_backends.KERNELS)  # today's backend table
    for unchanged in ("attention:sdpa-math", "attention:fa3", "matmul:fp8_e4m3:rowwise", "attention:not_a_backend"):
        assert series.current_capability({"item": unchanged})["item"] == unchanged
    records = [{"kind": "header", "run_id": "h", "hardware": {"gpu_name": "NVIDIA H200"}},
               _cap("attention:sdpa_cudnn", "ok"),
               {"kind": "header", "run_id": "b", "hardware": {"gpu_name": "NVIDIA B200"}},
               _cap("attention:sdpa-cudnn", "ok", run_id="b")]
    by_gpu = _by_gpu(records)
    assert {gpu: list(items) for gpu, items in by_gpu.items()} == {
        "H200 SXM": ["attention:sdpa-cudnn"], "B200 SXM": ["attention:sdpa-cudnn"]}
    assert capability_table(by_gpu).splitlines()[2:] == ["| attention:sdpa-cudnn | ok | ok |  |"]

# ---- the script, for real, on CPU ----------------------------------------------------------

def _run(tmp_path, **env):
    return run_proc("check_capabilities.py", env, timeout=120, cwd=tmp_path)


def test_cpu_run_writes_a_header_and_a_valid_record_per_item(tmp_path, as_script, capsys, monkeypatch):
    # main in this process, every probe for real; the process boundary (exit code, nothing on
    # stdout) is the real process's of test_bad_settings_stop_before_any_work_in_one_line
    script = capabilities
    out = tmp_path / "caps.jsonl"
    capacity = tmp_path / "sweep.jsonl"
    capacity.write_text("\n".join(json.dumps(r) for r in _log()) + "\n")
    monkeypatch.chdir(tmp_path)
    as_script("check_capabilities.py", script.VARS, {"OUTPUT": out, "CAPACITY_LOG": capacity, "NOTES": "ci"})
    code = faults.run_main(script.main)
    done = capsys.readouterr()
    assert code == 0, done.err
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records == [json.loads(line) for line in done.out.splitlines()]
    header, rest = records[0], records[1:]
    assert header["kind"] == "header" and header["notes"] == "ci"
    assert header["config"]["CAPACITY_LOG"] == str(capacity) and header["software"]["torch"]
    assert {r["kind"] for r in rest} == {"capability"}
    assert all(r["run_id"] == header["run_id"] for r in rest)
    items = [r["item"] for r in rest]
    assert len(items) == len(set(items)) == 28
    assert {r["category"] for r in rest} == {"dtype", "attention", "memory", "interconnect", "health"}
    assert [i for i in items if i.startswith("health:")] == list(health.FAULTS)  # each skipped in one line below
    trains = {"matmul:fp8_e4m3:tensorwise": "fp8-tensorwise", "matmul:fp8_e4m3:rowwise": "fp8-rowwise|fp8-rowwise-gw-hp",
              "matmul:mxfp8:block32": "mxfp8", "matmul:nvfp4:block16": "nvfp4"}
    for r in rest:
        assert set(r) >= {"item", "category", "status", "detail", "value"}
        detail = "no GPU" + (f"; would train PRECISION={trains[r['item']]}" if r["item"] in trains else "")
        nvfp4 = precisions.library_problem(precisions.PRECISIONS["nvfp4"], precisions.module_found)
        if r["item"] == "matmul:nvfp4:block16" and nvfp4:  # a torchao without its recipe: not named as trained
            detail = f"no GPU; not PRECISION={nvfp4}"
        assert (r["status"], r["detail"], r["value"]) == ("unavailable", detail, None), r
        assert r["probe_s"] >= 0
    assert "matmul:fp8_e4m3:tensorwise" in items and "attention:fa4" in items
    assert "memory:max_seq_len" in done.err and "status" in done.err


def test_bad_settings_stop_before_any_work_in_one_line(tmp_path):
    missing = _run(tmp_path, CAPACITY_LOG=str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and missing.stdout == ""
    [line] = missing.stderr.splitlines()
    assert line.startswith("error: CAPACITY_LOG=") and "nope.jsonl" in line


def test_a_bad_value_is_one_line_and_exit_2(as_script, capsys):
    script = capabilities
    as_script("check_capabilities.py", script.VARS, {"MEMORY_PROBE_S": "0"})
    assert faults.run_main(script.main) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith("error: MEMORY_PROBE_S='0': expected ")
    assert out.err.count("\n") == 1


@pytest.mark.parametrize("content, problem", [
    (b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "not UTF-8 JSON lines (invalid start byte at byte 0)"),
    ('{"kind": "capacity"}\n'.encode("utf-16"), "not UTF-8 JSON lines (invalid start byte at byte 0)"),
    (None, "not a regular file"),  # a folder
])
def test_a_capacity_log_that_is_no_text_log_is_bad_input(tmp_path, content, problem):
    path = tmp_path / "capacity.jsonl"
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    with pytest.raises(BadInput) as err:
        capabilities.load_capacity_log(str(path))
    assert str(err.value) == f"CAPACITY_LOG={str(path)!r}: {problem}"


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")  # CPU: the reference, meant
@pytest.mark.parametrize("name", ["flex", "sdpa-math"])
def test_the_attention_probe_calls_each_kernel_causal_as_the_benchmark_does(name):
    """The probe's call (layout, K/V repeated, make_args' causal BlockMask for flex) against
    its fp32 reference, forward on CPU (FlexAttention has no CPU backward; the GPU run has)."""
    s = probes.ATTN_SHAPE
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(s["batch"], s["seq"], h, s["head_dim"], generator=g)
               for h in (s["heads"], s["kv_heads"], s["kv_heads"]))
    out = probes.attention_function(name)(q, k, v)
    assert out.shape == q.shape
    assert (out - probes.reference_attention(q, k, v)).abs().max().item() < 1e-4  # fp32 in, fp32 out


def test_a_format_names_only_the_precisions_the_installed_library_trains():
    # issue 46: "would train PRECISION=nvfp4" where benchmark.py refuses nvfp4 (torchao without its recipe)
    from upgrade_bench.capability import main as capabilities

    no_nvfp4 = lambda dist, module: not module.endswith("nvfp4_training")  # noqa: E731
    verdict = capabilities.with_precisions("matmul:nvfp4:block16", caps.Verdict("ok", "1234 TFLOPS"), no_nvfp4)
    assert verdict.detail.startswith("1234 TFLOPS; not PRECISION=nvfp4: torchao ") and "trains" not in verdict.detail
    assert verdict.detail.endswith("has no torchao.prototype.mx_formats.nvfp4_training (no nvfp4 training "
                                   "recipe there)")
    verdict = capabilities.with_precisions("matmul:nvfp4:block16", caps.Verdict("ok", "1234 TFLOPS"), lambda d, m: True)
    assert verdict.detail == "1234 TFLOPS; trains PRECISION=nvfp4"
    verdict = capabilities.with_precisions("matmul:fp8_e4m3:rowwise", caps.Verdict("unavailable", "no GPU"), no_nvfp4)
    assert verdict.detail == "no GPU; would train PRECISION=fp8-rowwise|fp8-rowwise-gw-hp"


# ---- health: NVML's readings judged (the readings themselves need a GPU) ---------------------

def test_health_fault_rules_name_the_gpu_and_what_is_wrong():
    gpus = [{"power_limit_w": 700.0, "default_power_limit_w": 700.0, "pcie_busy": True, "pcie_gen": 5,
             "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16, "remapped_rows": (0, 0, 0, 0),
             "throttle": ["sw_power_cap"], "app_sm_clock_mhz": 1980, "default_app_sm_clock_mhz": 1980},
            {"power_limit_w": 450.0, "default_power_limit_w": 700.0, "pcie_busy": True, "pcie_gen": 4,
             "pcie_width": 8, "pcie_gen_max": 5, "pcie_width_max": 16, "ecc_uncorrected_volatile": 2,
             "remapped_rows": (3, 1, 1, 0), "throttle": ["hw_slowdown"], "app_sm_clock_mhz": 1410,
             "default_app_sm_clock_mhz": 1980},
            {"pcie_busy": False, "pcie_gen": 1, "pcie_width": 16, "pcie_gen_max": 5, "pcie_width_max": 16,
             "remapped_rows": None, "retired_pages_pending": 1}]
    assert health.power_limit_faults(gpus) == ["GPU 1: power limit 450 W, below its default 700 W"]
    assert health.pcie_faults(gpus) == ["GPU 1: PCIe link at Gen4 x8 under load, of Gen5 x16"]  # GPU 2 idle: gen not judged
    assert health.ecc_faults(gpus) == ["GPU 1: 2 uncorrected ECC errors since boot"]
    assert health.memory_row_faults(gpus) == ["GPU 1: a row remap pending (1 uncorrectable rows): reset the GPU",
                                              "GPU 2: retired pages pending: reset the GPU"]
    assert health.clock_faults(gpus) == ["GPU 1: hw_slowdown now",
                                         "GPU 1: application SM clock 1410 MHz, below its default 1980 MHz"]


def test_a_health_item_says_what_nvml_could_not_read_and_its_faults_reach_the_node_check():
    from upgrade_bench.report.node import health as node_health

    gpus = [{"power_limit_w": 500.0, "default_power_limit_w": 700.0}]
    answer = health.verdict_of("health:power_limit", gpus, ["default_power_limit_w", "pcie_gen"])
    assert answer.detail == ("GPU 0: power limit 500 W, below its default 700 W "
                             "(not readable here: default_power_limit_w)")
    assert answer.value["gpus"] == [{"power_limit_w": 500.0, "default_power_limit_w": 700.0}]
    fine = health.verdict_of("health:ecc", [{"ecc_uncorrected_volatile": 0}], [])
    assert fine.detail == "1 GPU(s), nothing wrong" and fine.value["faults"] == []
    record = {"status": "ok", "value": answer.value}
    assert node_health.capability_faults({"health:power_limit": record}) == answer.value["faults"]
