"""bench_flash_attn.py and upgrade_bench.kernels.attention.kernels, on CPU.

FLOP counts against hand-computed numbers, discovery with faked imports and capabilities,
the script run for real with torch's CPU SDPA kernels (its main in-process; a subprocess for
the exit code), and test-double backends registered in-process: a wrong kernel must come out
ok: false, a kernel that refuses GQA gets K/V repeated, an OOM at a long sequence is a record
and the run goes on.
"""
import importlib
import io
import math
import types
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from upgrade_bench import settings
from conftest import REPO, run_proc
from upgrade_bench.kernels.attention import bench as attn_bench
from upgrade_bench import faults
from upgrade_bench.hardware import fingerprint
from upgrade_bench.models import flops
from upgrade_bench.kernels.attention import kernels as ak
from upgrade_bench.kernels.attention.adapters import BHSD
from upgrade_bench.kernels.attention.backends import KERNELS, Backend
from upgrade_bench.hardware.fingerprint import Device
from upgrade_bench.log.records import read_lines
from upgrade_bench.kernels.attention import main as bench


TINY = {"NHEADS": "4", "NHEADS_KV": "2", "HEAD_DIM": "16"}
sdpa_math = KERNELS["sdpa-math"].run


# --- FLOP counts -----------------------------------------------------------------------------

def shape(**kw):
    base = dict(batch=1, seq_len=1024, heads=32, kv_heads=8, head_dim=128, causal=True)
    return ak.AttentionShape(**{**base, **kw})


def test_flops_causal_gqa_8b_heads():
    # 4 * 1 * 1024^2 * 32 * 128 / 2 = 8,589,934,592
    assert shape().flops("fwd") == 8_589_934_592
    assert shape().flops("bwd") == 21_474_836_480      # 2.5x
    assert shape().flops("fwd_bwd") == 30_064_771_072  # 3.5x
    # GQA shares K/V, not work: the count depends on the query heads only.
    assert shape(kv_heads=32).flops("fwd") == shape(kv_heads=1).flops("fwd") == 8_589_934_592


def test_flops_non_causal_and_batch():
    # 4 * 2 * 1000^2 * 4 * 64 = 2,048,000,000 (no halving)
    assert shape(batch=2, seq_len=1000, heads=4, kv_heads=4, head_dim=64, causal=False).flops("fwd") \
        == 2_048_000_000


def test_flops_packed_documents():
    # seq 10 in documents of 4: 4, 4, 2 -> sum len^2 = 36; batch 2 -> 72; fwd = 4 * 72 / 2
    packed = shape(batch=2, seq_len=10, heads=1, kv_heads=1, head_dim=1, doc_len=4)
    assert packed.flops("fwd") == 144
    assert packed.flops("fwd_bwd") == 504
    # 32K in 8K documents: a quarter of the dense work
    assert shape(seq_len=32768, doc_len=8192).flops("fwd") * 4 == shape(seq_len=32768).flops("fwd")


def test_flops_to_tflops_matches_the_probe():
    # The H200 probe: FA4 fwd 650.5 TFLOPS at 32K causal 32 heads x 128 = 13.52 ms per call.
    work = shape(seq_len=32768).flops("fwd")
    assert work == 8_796_093_022_208
    assert flops.tflops(work, 13.522) == pytest.approx(650.5, rel=1e-3)


# --- pure helpers ----------------------------------------------------------------------------

def test_check_shape_is_small_and_keeps_packing():
    big = shape(batch=4, seq_len=32768, doc_len=8192)
    small = ak.check_shape(big)
    assert (small.batch, small.seq_len, small.doc_len) == (2, 512, 200)
    assert (small.heads, small.kv_heads, small.head_dim, small.causal) == (32, 8, 128, True)
    assert ak.check_shape(shape(doc_len=64)).doc_len == 64
    assert ak.check_shape(shape()).doc_len == 0


def test_doc_offsets_and_mask():
    assert ak.doc_offsets(2, 10, 4) == [0, 4, 8, 10, 14, 18, 20]
    assert ak.doc_offsets(1, 8, 0) == [0, 8]
    allowed = ak.attention_mask(5, 3, True, torch.float32, "cpu") == 0
    expected = torch.tensor([[1, 0, 0, 0, 0],
                             [1, 1, 0, 0, 0],
                             [1, 1, 1, 0, 0],
                             [0, 0, 0, 1, 0],
                             [0, 0, 0, 1, 1]], dtype=torch.bool)
    assert torch.equal(allowed, expected)
    both_ways = ak.attention_mask(5, 3, False, torch.float32, "cpu") == 0
    assert torch.equal(both_ways, expected | expected.T)


def test_judge_scales_by_the_reference_and_nan_fails():
    errors = {"out": (0.01, 3.0), "dq": (0.05, 10.0), "dk": (0.0, 1.0), "dv": (0.0, 1.0)}
    fwd = ak.judge(errors, ("out",), 2e-2)
    assert fwd["max_abs_err"] == 0.01 and fwd["max_rel_err"] == pytest.approx(0.01 / 3) and fwd["ok"]
    both = ak.judge(errors, ("out", "dq"), 2e-2)
    assert both["max_abs_err"] == 0.05 and both["max_rel_err"] == pytest.approx(0.005)
    assert not ak.judge({"out": (0.07, 3.0)}, ("out",), 2e-2)["ok"]
    nan = ak.judge({"out": (float("nan"), 1.0), "dq": (0.0, 1.0)}, ("out", "dq"), 2e-2)
    assert nan["ok"] is False and math.isnan(nan["max_abs_err"])


# --- discovery -------------------------------------------------------------------------------

NOTHING_MISSING = {name: None for name in KERNELS}
HOPPER, BLACKWELL, AMPERE, VOLTA, CPU = (Device(c) for c in ((9, 0), (10, 0), (8, 0), (7, 0), None))


def names(chosen):
    return [n for n, _ in chosen]


def test_all_on_hopper_blackwell_ampere_and_cpu():
    problems = {**NOTHING_MISSING, "fa2": "flash-attn is not installed"}
    sdpa = ["sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "sdpa-math", "flex"]  # flex: torch's, sm_80+
    hopper = ak.discover(["all"], KERNELS, HOPPER, problems, packed=False)
    assert names(hopper) == ["fa3", "fa4"] + sdpa and all(r is None for _, r in hopper)
    assert names(ak.discover(["all"], KERNELS, BLACKWELL, problems, False)) == ["fa4"] + sdpa
    ampere = ak.discover(["all"], KERNELS, AMPERE, NOTHING_MISSING, False)
    assert names(ampere) == ["fa2"] + sdpa
    assert names(ak.discover(["all"], KERNELS, VOLTA, NOTHING_MISSING, False)) == \
        ["sdpa-efficient", "sdpa-math"]  # no flex before sm_80
    assert names(ak.discover(["all"], KERNELS, CPU, NOTHING_MISSING, False)) == \
        ["sdpa-flash", "sdpa-math"]
    # MI300X reports (9, 4) under ROCm: no Hopper kernels, no cuDNN
    mi300x = ak.discover(["all"], KERNELS, Device((9, 4), is_hip=True), NOTHING_MISSING, False)
    assert names(mi300x) == ["fa2", "sdpa-flash", "sdpa-efficient", "sdpa-math"]


def test_auto_is_what_training_picks_and_cudnn():
    # Hopper with FA3 and FA4: training's auto takes FA3; without FA3, FA4
    assert names(ak.discover(["auto"], KERNELS, HOPPER, NOTHING_MISSING, False)) == ["fa3", "sdpa-cudnn"]
    no_fa3 = {**NOTHING_MISSING, "fa3": "flash-attn-3 is not installed"}
    assert names(ak.discover(["auto"], KERNELS, HOPPER, no_fa3, False)) == ["fa4", "sdpa-cudnn"]
    # no flash package at all: training runs sdpa, whose kernel for causal bf16 is torch's flash
    none = {**NOTHING_MISSING, "fa3": "x", "fa4": "x", "fa2": "x"}
    assert names(ak.discover(["auto"], KERNELS, AMPERE, none, False)) == ["sdpa-flash", "sdpa-cudnn"]
    assert names(ak.discover(["auto"], KERNELS, CPU, NOTHING_MISSING, False)) == ["sdpa-flash"]


def test_windows_and_sinks_pick_the_kernels_that_take_them():
    no_fa3 = {**NOTHING_MISSING, "fa3": "flash-attn-3 is not installed"}
    windowed = ak.discover(["all"], KERNELS, HOPPER, no_fa3, False, window=True)
    assert names(windowed) == ["fa4", "fa2", "sdpa-efficient", "sdpa-math", "flex"]
    sinks = ak.discover(["auto"], KERNELS, HOPPER, no_fa3, False, window=True, sinks=True)
    assert sinks == [("fa4", None)]
    every = ak.discover(["all"], KERNELS, HOPPER, no_fa3, False, window=True, sinks=True)
    assert names(every) == ["fa4", "flex"]
    # nothing auto picks takes sinks on CPU: the reasons become the records
    on_cpu = dict(ak.discover(["auto"], KERNELS, CPU, NOTHING_MISSING, False, sinks=True))
    assert "takes no attention sinks; sinks run on fa4/flex" in on_cpu["sdpa-flash"]
    named = dict(ak.discover(["sdpa-cudnn"], KERNELS, HOPPER, NOTHING_MISSING, False, window=True))
    assert "no sliding window" in named["sdpa-cudnn"]


def test_auto_times_what_the_models_own_training_would_use():
    # gpt-oss: transformers refuses FA3 and SDPA for its sinks, so training takes FA4, else flex
    gpt_oss = bench.family_refusals(settings.parse(bench.VARS, {"MODEL": "tiny-gpt-oss"}))
    assert set(gpt_oss) == {"sdpa", "fa3", "fa2"}
    no_fa4 = {**NOTHING_MISSING, "fa4": "flash-attn-4 is not installed"}
    layer = dict(window=True, sinks=True)
    assert names(ak.discover(["auto"], KERNELS, HOPPER, no_fa4, False, **layer, refused=gpt_oss)) == ["flex"]
    assert names(ak.discover(["auto"], KERNELS, HOPPER, NOTHING_MISSING, False, **layer, refused=gpt_oss)) == ["fa4"]
    assert bench.family_refusals(settings.parse(bench.VARS, {"NHEADS": "32", "NHEADS_KV": "8", "HEAD_DIM": "128",
                                                             "MODEL": "tiny-gpt-oss"})) == {}
    # on CPU its training runs eager, whose computation is the math kernel's
    assert names(ak.discover(["auto"], KERNELS, CPU, NOTHING_MISSING, False, refused=gpt_oss)) == ["sdpa-math"]
    assert names(ak.discover(["auto"], KERNELS, CPU, NOTHING_MISSING, False)) == ["sdpa-flash"]  # sdpa's


def test_named_backends_keep_their_reason():
    problems = {**NOTHING_MISSING, "fa2": "flash-attn is not installed: pip install ..."}
    chosen = dict(ak.discover(["fa3", "fa2", "sdpa-math"], KERNELS, BLACKWELL, problems, False))
    assert "sm_100" in chosen["fa3"] and "Hopper" in chosen["fa3"]
    assert chosen["fa2"] == problems["fa2"]
    assert chosen["sdpa-math"] is None
    on_cpu = dict(ak.discover(["fa4", "sdpa-efficient"], KERNELS, CPU, NOTHING_MISSING, False))
    assert on_cpu == {"fa4": "fa4 needs a CUDA GPU", "sdpa-efficient": "sdpa-efficient needs a CUDA GPU"}


def test_packed_documents_exclude_mask_less_sdpa_kernels():
    every = ak.discover(["all"], KERNELS, HOPPER, NOTHING_MISSING, packed=True)
    assert names(every) == ["fa3", "fa4", "fa2", "sdpa-efficient", "sdpa-math", "flex"]
    named = dict(ak.discover(["sdpa-cudnn"], KERNELS, HOPPER, NOTHING_MISSING, packed=True))
    assert "document mask" in named["sdpa-cudnn"]


def test_import_probes_with_faked_packages(monkeypatch):
    versions = {"flash-attn-4": "4.0.0b36", "flash-attn": "1.0.9"}
    monkeypatch.setattr(fingerprint, "package_version", versions.get)
    fake_cute = types.SimpleNamespace(flash_attn_varlen_func=object())

    def fake_import(module):
        if module == "flash_attn.cute":
            return fake_cute
        raise ImportError(f"No module named {module!r}")

    monkeypatch.setattr(importlib, "import_module", fake_import)
    problems = ak.import_problems(KERNELS)
    assert problems["fa4"] is None
    assert problems["fa3"].startswith("flash-attn-3 is not installed")
    assert problems["fa2"].startswith("flash-attn 1.0.9 is not 2.x")
    assert problems["sdpa-math"] is None
    monkeypatch.setattr(importlib, "import_module", lambda m: types.SimpleNamespace())
    assert "import flash_attn.cute failed" in ak.import_problems(KERNELS)["fa4"]


# --- the correctness check -------------------------------------------------------------------

def test_check_repeat_kv_reduces_grads_per_kv_head():
    small = ak.AttentionShape(1, 64, 4, 2, 16, True)
    result = ak.check(KERNELS["sdpa-math"], small, torch.bfloat16, "cpu", "repeat_kv", 0)
    assert result.backward_error is None
    verdict = ak.judge(result.errors, ("out", "dq", "dk", "dv"), ak.TOLERANCE["bf16"])
    assert verdict["ok"], result.errors


def _gqa_refusing(q, k, v, a):
    if a.enable_gqa:
        raise RuntimeError("No available kernel. Aborting execution.")
    return sdpa_math(q, k, v, a)


def test_check_backend_falls_back_to_repeated_kv():
    double = Backend("no-gqa", run=_gqa_refusing, layout=BHSD, cpu=True)
    mode, result = ak.check_backend(double, ak.AttentionShape(1, 64, 4, 2, 16, True), torch.bfloat16, "cpu", 0)
    assert mode == "repeat_kv"
    assert ak.judge(result.errors, ("out", "dq", "dk", "dv"), 2e-2)["ok"]


# --- the script, in-process with test doubles ------------------------------------------------

@pytest.fixture
def run_main(main_in_process):
    """run_main(**env) -> (exit code, records, stderr): the script's main in this process."""
    return lambda **env: main_in_process(bench, {**TINY, "ITERS": "2", "WARMUP": "1", **env})


def _ignores_causal(q, k, v, a):
    return F.scaled_dot_product_attention(q, k, v, enable_gqa=a.enable_gqa)


class _BrokenBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("backward kernel exploded")


def _broken_backward(q, k, v, a):
    return _BrokenBackward.apply(sdpa_math(q, k, v, a))


def test_wrong_backend_is_reported_not_ok(monkeypatch, run_main):
    monkeypatch.setitem(KERNELS, "wrong", Backend("wrong", run=_ignores_causal, layout=BHSD, cpu=True))
    code, records, err = run_main(BACKENDS="wrong sdpa-math", SEQLENS="32")
    points = {(r["backend"], r["pass"]): r for r in records if r["kind"] == "attention"}
    for pass_ in bench.PASSES:
        wrong, right = points["wrong", pass_], points["sdpa-math", pass_]
        assert wrong["status"] == "ok" and wrong["ok"] is False and wrong["max_rel_err"] > 0.1
        assert right["ok"] is True and right["max_rel_err"] < 0.01
    assert code == 1
    assert "!" in err  # the table marks the failed check


def test_backward_failure_is_a_record_and_forward_still_timed(monkeypatch, run_main):
    monkeypatch.setitem(KERNELS, "no-bwd", Backend("no-bwd", run=_broken_backward, layout=BHSD, cpu=True))
    code, records, _ = run_main(BACKENDS="no-bwd", SEQLENS="32")
    points = {r["pass"]: r for r in records if r["kind"] == "attention"}
    assert points["fwd"]["status"] == "ok" and points["fwd"]["ok"] is True
    assert points["fwd"]["tflops"] > 0
    for pass_ in ("bwd", "fwd_bwd"):
        assert points[pass_]["status"] == "error"
        assert "backward kernel exploded" in points[pass_]["reason"]
    assert code == 1


def test_backend_refusing_the_inputs_is_unavailable(monkeypatch, run_main):
    def refuses(q, k, v, a):
        raise RuntimeError("No available kernel. Aborting execution.")

    monkeypatch.setitem(KERNELS, "refuses", Backend("refuses", run=refuses, layout=BHSD, cpu=True))
    code, records, _ = run_main(BACKENDS="refuses sdpa-math", SEQLENS="32",
                                PASSES="fwd")
    (refused,) = [r for r in records if r.get("backend") == "refuses"]
    assert refused["status"] == "unavailable" and "No available kernel" in refused["reason"]
    assert [r["status"] for r in records if r.get("backend") == "sdpa-math"] == ["ok"]
    assert code == 0


def test_a_run_that_measured_nothing_exits_2_with_one_line_naming_why(run_main):
    # issue 46: every backend unavailable here, and exit 0
    code, records, err = run_main(BACKENDS="fa4", SEQLENS="32", PASSES="fwd")
    assert code == 2 and [r["status"] for r in records if r["kind"] == "attention"] == ["unavailable"]
    assert err.splitlines()[-1] == ("error: nothing measured (BACKENDS=fa4): fa4: fa4 needs a CUDA GPU; choose "
                                    "BACKENDS that run here (--help)")


def test_oom_at_a_long_sequence_is_a_record_and_the_run_goes_on(monkeypatch, run_main):
    def oom_at_128(q, k, v, a):
        if q.shape[2] == 128:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")
        return sdpa_math(q, k, v, a)

    monkeypatch.setitem(KERNELS, "oomy", Backend("oomy", run=oom_at_128, layout=BHSD, cpu=True))
    code, records, err = run_main(BACKENDS="oomy", SEQLENS="32 128 64")
    status = {(r["seq_len"], r["pass"]): r["status"] for r in records if r["kind"] == "attention"}
    assert status == {(n, p): "oom" if n == 128 else "ok" for n in (32, 128, 64) for p in bench.PASSES}
    assert code == 0  # OOM is a result, not a failure
    assert "oom" in err


def test_inputs_that_cannot_fit_this_device_are_refused_before_any_work(monkeypatch, run_main):
    monkeypatch.setattr(attn_bench, "memory_bytes", lambda device: 2**30)  # a 1 GiB device
    for allocates in ("check_backend", "random_inputs"):
        monkeypatch.setattr(ak, allocates, lambda *args: pytest.fail("allocated"))
    code, records, err = run_main(HEAD_DIM="1000000", SEQLENS="1024")
    assert code == 2 and records == []
    # q, k, v, out, dout, dq, dk, dv: the check's float64 reference of 512 tokens (512 * 1e6 *
    # 4 * (4 + 2) * 8 bytes) outweighs the 1024-token point's bf16 (1024 * 1e6 * 4 * 6 * 2 bytes)
    assert err == ("error: NHEADS=4, NHEADS_KV=2, HEAD_DIM=1000000, BATCH=1: the inputs alone need "
                   "91.6 GiB, more than the 1.0 GiB this device has\n")


def test_a_long_point_that_cannot_fit_is_an_oom_record_without_allocating(monkeypatch, run_main):
    monkeypatch.setattr(attn_bench, "memory_bytes", lambda device: 2**30)
    # 4M tokens of 4+2 heads x 16 need 3 GiB for their inputs; 32 tokens fit.
    code, records, _ = run_main(BACKENDS="sdpa-math", SEQLENS="32 4194304", PASSES="fwd")
    status = {r["seq_len"]: (r["status"], r["reason"]) for r in records if r["kind"] == "attention"}
    assert code == 0 and status[32] == ("ok", None)
    assert status[4194304] == ("oom", "the inputs alone need 3.0 GiB, more than the 1.0 GiB this device has")


def test_named_unavailable_backend_and_packed_documents(run_main):
    code, records, _ = run_main(BACKENDS="fa4 sdpa-flash sdpa-math",
                                PACKED_DOC_LEN="16", SEQLENS="40", PASSES="fwd bwd", DTYPE="fp16")
    assert code == 0
    by_backend = {}
    for r in records[1:]:
        by_backend.setdefault(r["backend"], []).append(r)
    (fa4,) = by_backend["fa4"]
    assert fa4["status"] == "unavailable" and fa4["reason"] == "fa4 needs a CUDA GPU"
    (flash,) = by_backend["sdpa-flash"]
    assert flash["status"] == "unavailable" and "document mask" in flash["reason"]
    math_points = by_backend["sdpa-math"]
    assert [r["pass"] for r in math_points] == ["fwd", "bwd"]
    for r in math_points:
        assert r["status"] == "ok" and r["ok"] is True and r["packed_doc_len"] == 16
        assert "block-diagonal" in r["note"]
    # 40 tokens in documents of 16: 16^2 + 16^2 + 8^2 = 576; fwd = 4 * 576 * 4 * 16 / 2
    assert math_points[0]["tflop"] * 1e12 == pytest.approx(73_728)


def test_a_model_that_cannot_be_loaded_names_the_explicit_heads_way_out():
    with pytest.raises(faults.BadInput, match=r"^MODEL='/nonexistent': not a preset .*; or set NHEADS, "
                                              r"NHEADS_KV and HEAD_DIM$"):
        bench.layer_shapes(settings.parse(bench.VARS, {"MODEL": "/nonexistent", "SEQLENS": "64"}))


def test_a_config_no_model_has_is_one_line(tmp_path):
    # issue 38: a million layers printed nothing for minutes
    import json

    config = {**json.loads((REPO / "configs" / "tiny.json").read_text()), "num_hidden_layers": 10**6}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(faults.BadInput, match="num_hidden_layers=1000000: no model has more than 4096 layers"):
        bench.layer_shapes(settings.parse(bench.VARS, {"MODEL": str(tmp_path), "SEQLENS": "64"}))


# --- the script for real -----------------------------------------------------------------------

# No sustained windows: a CPU's timings test the plumbing, and 12 points of 0.7 s add up.
CPU_TIMING = {"ITERS": "3", "WARMUP": "1", "WARMUP_MS": "0", "TIME_MS": "0"}


def run_script(tmp_path, **env):
    proc = run_proc("bench_flash_attn.py", {**CPU_TIMING, **env}, timeout=120, cwd=tmp_path,
                    cleared={var.name for var in bench.VARS})
    records, skipped = read_lines(proc.stdout.splitlines())
    assert skipped == 0
    return proc, records


SCHEMA = {"backend", "seq_len", "pass", "ms", "ms_min", "ms_max", "iters", "tflops", "batch", "heads",
          "kv_heads", "head_dim", "causal", "dtype", "packed_doc_len", "ok", "max_abs_err", "status",
          "reason"}


def test_all_on_cpu_runs_sdpa_flash_and_math_from_the_model_preset(tmp_path, as_script, capsys):
    # main in this process: the real kernels, the model preset's shape; the process boundary
    # (exit code, stdout alone) is test_bad_input_exits_2_with_one_line's
    out = tmp_path / "attn.jsonl"
    as_script("bench_flash_attn.py", bench.VARS, {**CPU_TIMING, "MODEL": "tiny", "SEQLENS": "32 64",
                                                  "OUTPUT": out, "BACKENDS": "all"})
    code = faults.run_main(bench.main)
    printed = capsys.readouterr()
    records, skipped = read_lines(printed.out.splitlines())
    assert code == 0 and skipped == 0, printed.err
    header, *points = records
    assert header["kind"] == "header" and header["config"]["NHEADS"] == 4
    assert header["backends"] == {"full_attention": {"sdpa-flash": "available", "sdpa-math": "available"}}
    assert len(points) == 2 * 2 * 3
    for r in points:
        assert r["kind"] == "attention" and SCHEMA <= set(r)
        assert r["status"] == "ok" and r["ok"] is True and r["max_abs_err"] < 0.05
        assert (r["heads"], r["kv_heads"], r["head_dim"], r["batch"]) == (4, 2, 16, 1)
        assert r["iters"] == 3 and r["ms_min"] <= r["ms"] <= r["ms_max"] and r["tflops"] > 0
        assert r["gqa"] == "native" and r["causal"] is True and r["dtype"] == "bf16"
    assert {(r["backend"], r["seq_len"], r["pass"]) for r in points} == {
        (b, n, p) for b in ("sdpa-flash", "sdpa-math") for n in (32, 64) for p in bench.PASSES}
    assert out.read_text().splitlines() == printed.out.splitlines()
    assert "sdpa-math" in printed.err and "TFLOPS" in printed.err
    # a line per point, numbered, with the time left
    progress = [line for line in printed.err.splitlines() if line.startswith("[")]
    assert len(progress) == 12 and progress[0].startswith("[1/12] full_attention sdpa-flash fwd 32: ")
    assert progress[-1].startswith("[12/12] full_attention sdpa-math fwd_bwd 64: ") and "0m00s left" in progress[-1]


def test_bad_input_exits_2_with_one_line(tmp_path):
    proc, records = run_script(tmp_path, BACKENDS="fa9")
    assert proc.returncode == 2 and records == []
    assert proc.stderr == "error: BACKENDS='fa9': expected auto, all or a list of " + "|".join(KERNELS) + "\n"


@pytest.mark.parametrize("env, needle", [
    ({"PASSES": "fwd back"}, "PASSES='fwd back'"),
    ({"NHEADS": "5"}, "NHEADS=5"),
    ({"PACKED_DOC_LEN": "64", "SEQLENS": "64 128"}, "PACKED_DOC_LEN=64"),
    ({"DTYPE": "fp8"}, "DTYPE='fp8'"),
    ({"NHEADS": "0", "MODEL": "/nonexistent/model"}, "MODEL='/nonexistent/model'"),
])
def test_every_bad_input_is_one_line_and_exit_2_before_any_record(as_script, capsys, env, needle):
    as_script("bench_flash_attn.py", bench.VARS, {**TINY, **env})
    code = faults.run_main(bench.main)
    out = capsys.readouterr()
    assert code == 2 and out.out == ""
    assert needle in out.err and len(out.err.strip().splitlines()) == 1


def test_the_table_shows_a_cpus_small_figures_and_what_could_not_run():
    point = {"kind": "attention", "backend": "sdpa-math", "pass": "fwd", "seq_len": 1024, "status": "ok",
             "ok": True, "tflops": 0.00123}
    records = [point, {**point, "pass": "bwd", "ok": False, "tflops": 812.34},
               {**point, "seq_len": 2048, "status": "oom", "tflops": None},
               {"kind": "attention", "backend": "fa4", "pass": None, "status": "unavailable",
                "reason": "fa4 needs a CUDA GPU"}]
    lines = attn_bench.format_table(records).splitlines()
    assert lines[1].split() == ["backend", "pass", "1K", "2K"]
    assert lines[2].split() == ["sdpa-math", "fwd", "0.00123", "oom"]
    assert lines[3].split() == ["sdpa-math", "bwd", "812!", "-"]
    assert lines[-1] == "fa4: fa4 needs a CUDA GPU"


# --- a model's own layers: windows, sinks, MLA dims, Gated DeltaNet ----------------------------

def test_the_window_band_by_hand():
    # 5 tokens, a window of 2: each query sees itself and the one before it
    allowed = (ak.attention_mask(5, 0, True, torch.float32, "cpu", window=2) == 0).int().tolist()
    assert allowed == [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]
    # inside packed documents of 3: the band restarts at each document
    packed = (ak.attention_mask(5, 3, True, torch.float32, "cpu", window=2) == 0).int().tolist()
    assert packed[3] == [0, 0, 0, 1, 0] and packed[2] == [0, 1, 1, 0, 0]


def test_the_reference_with_sinks_by_hand():
    # q = 0: every score is 0, so each row weighs its visible values equally, and the sink's
    # e^sink joins the denominator: out_i = sum_{j<=i} v_j / (e^sink + i + 1)
    s = ak.AttentionShape(1, 3, 2, 2, 4, True, sinks=True)
    q, k = torch.zeros(1, 3, 2, 4), torch.randn(1, 3, 2, 4)
    v = torch.arange(24, dtype=torch.float32).reshape(1, 3, 2, 4)
    out, _grads = ak.reference(q, k, v, torch.ones(1, 3, 2, 4), s)
    sinks = ak.sink_logits(2, "cpu").double()
    for i in range(3):
        for h in range(2):
            expected = v[0, :i + 1, h].double().sum(0) / (math.exp(sinks[h]) + i + 1)
            assert torch.allclose(out[0, i, h], expected)


def test_each_distinct_layer_of_a_model_is_a_shape():
    def env(model: str, **extra):
        return settings.parse(bench.VARS, {"SEQLENS": "64", "MODEL": model, **extra})

    gpt_oss = bench.layer_shapes(env("gpt-oss-20b"))
    assert [attn_bench.layer_label(x) for x in gpt_oss] == ["sliding_attention(w=128, sinks)",
                                                            "full_attention(sinks)"]
    assert (gpt_oss[0].heads, gpt_oss[0].kv_heads, gpt_oss[0].head_dim) == (64, 8, 64)
    gemma = bench.layer_shapes(env("gemma-3-12b"))
    assert [(x.layer, x.window, x.head_dim) for x in gemma] == [("sliding_attention", 1024, 256),
                                                                ("full_attention", 0, 256)]
    mla = bench.layer_shapes(env("deepseek-v3"))
    assert [attn_bench.layer_label(x) for x in mla] == ["full_attention(qk 192, v 128)"]
    hybrid = bench.layer_shapes(env("qwen3-next-80b-a3b"))
    assert [(x.layer, x.heads, x.kv_heads, x.head_dim, x.v_dim) for x in hybrid] == [
        ("linear_attention", 32, 16, 128, 128), ("full_attention", 16, 2, 256, 256)]
    with pytest.raises(faults.BadInput, match="linear-attention layers.*CAUSAL=1 and PACKED_DOC_LEN=0"):
        bench.layer_shapes(env("qwen3-next-80b-a3b", PACKED_DOC_LEN="16"))
    granite = bench.layer_shapes(env("granite-4.0-h-small"))  # heads, groups, d_state, head dim
    assert [(x.layer, x.heads, x.kv_heads, x.head_dim, x.v_dim) for x in granite] == [
        ("mamba2", 128, 1, 128, 64), ("full_attention", 32, 8, 128, 128)]


def test_the_gated_deltanet_check_against_transformers_torch_recurrence():
    # the check's plumbing with the torch recurrence as the "kernel": errors are rounding only;
    # a kernel that forgets the decay g is caught
    from upgrade_bench.kernels.attention import linear as linear_kernels
    from transformers.models.qwen3_next.modeling_qwen3_next import torch_chunk_gated_delta_rule

    def torch_kernel(q, k, v, g, beta, a):
        return torch_chunk_gated_delta_rule(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)[0]

    shape = ak.AttentionShape(1, 64, 2, 1, 16, True, layer="linear_attention")
    good = replace(linear_kernels.FLA, run=torch_kernel)
    mode, result = linear_kernels.check(good, shape, torch.float32, "cpu", 0)
    assert mode == "gva" and result.backward_error is None
    assert ak.judge(result.errors, ("out", "dq", "dk", "dv"), 2e-2)["ok"]
    no_decay = replace(good, run=lambda q, k, v, g, beta, a: torch_kernel(q, k, v, g * 0, beta, a))
    _mode, bad = linear_kernels.check(no_decay, shape, torch.float32, "cpu", 0)
    assert not ak.judge(bad.errors, ("out",), 2e-2)["ok"]
    assert shape.flops("fwd") == 8 * 64 * 2 * 16 * 16  # tokens x value heads x dk x dv, 8 each (Megatron-LM)


def test_a_hybrid_and_a_windowed_model_on_cpu(as_script, capsys, tmp_path):
    # Gemma 3's window runs as a band on sdpa-math and passes the check; Qwen3-Next's Gated
    # DeltaNet layer gets its kernel's record, unavailable here with why; Granite's Mamba-2
    # layer one saying no kernel of its kind is timed
    # the header's heads: one count where every layer has it (4 / 2 x 16), else the settings'
    # 0s, as Granite's Mamba-2 layer has 8 heads beside its attention's 4
    shared, own = {"NHEADS": 4, "NHEADS_KV": 2, "HEAD_DIM": 16}, {"NHEADS": 0, "NHEADS_KV": 0, "HEAD_DIM": 0}
    for name, layers, dims in (("tiny-gemma3", {"sliding_attention", "full_attention"}, shared),
                               ("tiny-qwen3-next", {"linear_attention", "full_attention"}, shared),
                               ("tiny-granite-hybrid", {"mamba2", "full_attention"}, own)):
        out = tmp_path / f"{name}.jsonl"
        as_script("bench_flash_attn.py", bench.VARS, {"MODEL": name, "BACKENDS": "sdpa-math", "SEQLENS": "48",
                                                      "PASSES": "fwd_bwd", "ITERS": 1, "WARMUP": 1,
                                                      "WARMUP_MS": 0, "TIME_MS": 0, "OUTPUT": out})
        assert faults.run_main(bench.main) == 0, capsys.readouterr().err
        header, *points = read_lines(out.read_text().splitlines())[0]
        assert {r["layer"] for r in points} == layers
        assert {k: header["config"][k] for k in dims} == dims
        for r in points:
            if r["layer"] == "linear_attention":
                assert r["backend"] == "fla" and r["status"] == "unavailable" and "CUDA GPU" in r["reason"]
            elif r["layer"] == "mamba2":
                assert (r["backend"], r["status"]) == ("mamba-ssm", "unavailable")
                assert r["reason"].startswith("no Mamba-2 kernel is timed here")
            else:
                assert r["status"] == "ok" and r["ok"] is True, r
        window = [r for r in points if r["layer"] == "sliding_attention"]
        if window:
            assert window[0]["window"] == 32 and "band mask" in window[0]["note"]
            # the band's FLOPs: 48*32 - 32^2/2 pairs, fwd+bwd 2*pairs*H*(d+d) + 2*pairs*H*(3d+2d)
            pairs = 48 * 32 - 32**2 / 2
            assert window[0]["tflop"] * 1e12 == pytest.approx(2 * pairs * 4 * 16 * (2 + 5))


def test_the_table_keeps_a_models_layers_apart():
    point = {"kind": "attention", "backend": "fa4", "pass": "fwd", "seq_len": 8192, "status": "ok", "ok": True,
             "layer": "sliding_attention", "window": 128, "sinks": True, "head_dim": 64, "v_head_dim": 64}
    records = [{**point, "tflops": 113.0}, {**point, "layer": "full_attention", "window": 0, "tflops": 506.0},
               {"kind": "attention", "backend": "sdpa-cudnn", "pass": None, "status": "unavailable",
                "layer": "full_attention", "sinks": True, "reason": "no sinks"}]
    lines = attn_bench.format_table(records).splitlines()
    assert lines[1].split() == ["layer", "backend", "pass", "8K"]
    assert lines[2].split() == ["sliding_attention(w=128,", "sinks)", "fa4", "fwd", "113"]
    assert lines[3].split() == ["full_attention(sinks)", "fa4", "fwd", "506"]
    assert lines[-1] == "full_attention(sinks) sdpa-cudnn: no sinks"


def test_the_time_left_counts_each_points_floor_and_calls():
    # 3 points of 1, 1 and 10 TFLOP; floors 0.2 + 0.5 s, 1 + 3 + 10 calls each
    s = settings.parse(bench.VARS, {"WARMUP_MS": "200", "TIME_MS": "500", "WARMUP": "3", "ITERS": "10"})
    out = io.StringIO()
    progress = attn_bench.Progress([1e12, 1e12, 10e12], s, out)
    assert progress.left_s() is None  # no speed seen yet
    progress.point("first", tflops=100.0)  # 100 TFLOPS: 10 ms a TFLOP a call
    assert progress.left_s() == pytest.approx(0.7 + 14 * 0.01 + 0.7 + 14 * 0.1)
    progress.point("second", tflops=None)  # an OOM: the speed seen stays
    assert progress.left_s() == pytest.approx(0.7 + 14 * 0.1)
    assert out.getvalue().startswith("[1/3] first  (0m00s in, ~0m03s left)")
    # a point known not to fit (None) is recorded without running: it costs nothing
    assert attn_bench.points_s([1e12, None], 0.7, 14, 100.0) == pytest.approx(0.7 + 14 * 0.01)
