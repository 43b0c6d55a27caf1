"""benchmark.py: real runs on the CPU with the tiny preset (DeepSpeed, gloo) for what only a
real run shows, and its main in this process for how bad input and a failing point end a run."""
import io
import json
import os
import sys
import types
from pathlib import Path

import pytest
import torch

from conftest import REPO, TINY_FAST, parse_jsonl, run_proc
from upgrade_bench.training import engine, variables
from upgrade_bench import faults, settings
from upgrade_bench.log import records
from upgrade_bench.hardware import fingerprint
from upgrade_bench.training import benchmark_main as benchmark



def kinds(records):
    return [r["kind"] for r in records]


# ---------------------------------------------------------------- real runs

# A world of one (plain `python benchmark.py`): conftest's one_rank, one sweep process for three
# lengths (ZeRO-2, MEM_DEBUG's probes, DECOMPOSE), the last an OOM (test_run_sweep reads it).

def of_the_benchmark(run) -> list:
    return [r for r in run.records if r["script"] == "benchmark.py"]


@pytest.mark.xdist_group("one_rank")
def test_zero2_two_seqlens_in_one_process(one_rank):
    ran = of_the_benchmark(one_rank)
    recs = [r for r in ran if r["kind"] not in ("memory", "memory_snapshot", "decomposition")]
    assert kinds(recs) == ["header"] + ["step"] * 4 + ["summary"] + ["step"] * 4 + ["summary"] + ["error"]
    # a line per step on the terminal, as each step ends
    lines = [line for line in one_rank.log.splitlines() if line.startswith("seq_len ")]
    assert [line.split(":")[0] for line in lines] == [
        f"seq_len {n} step {i}/4" + (" (warm-up)" if i == 1 else "") for n in (64, 128) for i in range(1, 5)]
    assert all(" ms, " in line and " TFLOPS/GPU" in line for line in lines)
    header = recs[0]
    assert header["attn_backend"] == "eager" and header["weights"] == "random"
    assert header["config"]["ZERO_STAGE"] == 2 and header["config"]["USE_LIGER"] is False
    assert "PYTORCH_CUDA_ALLOC_CONF" not in header["config"]  # default allocator: as older logs
    assert header["software"]["torch"] and header["software"]["deepspeed"]
    assert header["peak_tflops"] == 2.5 and header["peak_source"] == "PEAK_TFLOPS"
    assert len({r["run_id"] for r in ran}) == 1
    steps = [r for r in recs if r["kind"] == "step" and r["seq_len"] == 64]
    assert [s["warmup"] for s in steps] == [True, False, False, False]
    summary = [r for r in recs if r["kind"] == "summary"][0]
    timed = sorted(s["step_ms"] for s in steps[1:])
    assert summary["step_ms"] == timed[1] and summary["steps"] == 3  # median of the timed steps
    assert summary["tflops_per_gpu"] == pytest.approx(summary["model_tflop_per_step"] / (summary["step_ms"] / 1e3))
    assert summary["mfu"] == pytest.approx(summary["tflops_per_gpu"] / 2.5)
    assert summary["hfu"] == pytest.approx(summary["mfu"])  # no checkpointing: no recompute
    assert summary["tokens_per_s_per_gpu"] == pytest.approx(64 / (summary["step_ms"] / 1e3))
    assert summary["peak_mem_gib"] is None  # no GPU: no reserved-memory figure
    assert summary["telemetry_samples"] == 0 and summary["sm_clock_mhz_median"] is None


@pytest.mark.xdist_group("one_rank")
def test_mem_debug_writes_staged_probes(one_rank):
    # The engine's two stages, then each point's first step (not the OOM's: it ends in its
    # forward); one snapshot.
    stages = [(r["stage"], r["rank"]) for r in one_rank.records if r["kind"] == "memory"]
    assert stages == [(stage, 0) for stage in ["model_built", "engine_ready"] + ["forward", "backward", "step"] * 2]
    [snapshot] = [r for r in one_rank.records if r["kind"] == "memory_snapshot"]
    assert snapshot["path"] is None  # CPU: none


# The guide's default config on two CPU ranks under the DeepSpeed launcher: conftest's
# guide_two_ranks, one run of run_sweep.sh, which these tests and test_run_sweep's read.

@pytest.mark.xdist_group("guide_two_ranks")
def test_the_guides_default_config_runs_on_cpu(guide_two_ranks):
    recs = of_the_benchmark(guide_two_ranks)
    [header] = [r for r in recs if r["kind"] == "header"]
    config = header["config"]
    assert (config["ZERO_STAGE"], config["OFFLOAD_OPTIMIZER"], config["GRAD_CHECKPOINT"]) == (3, True, True)
    summaries = [r for r in recs if r["kind"] == "summary"]
    assert len(summaries) == 2
    assert all(summary["hfu"] > summary["mfu"] for summary in summaries)  # recompute counted in HFU only


@pytest.mark.xdist_group("guide_two_ranks")
def test_stdout_is_pure_jsonl_under_the_launcher(guide_two_ranks):
    # DeepSpeed and its JIT builds print to stdout, on every rank; the records must stay
    # parseable alone: rank 0's stdout holds them and nothing else, rank 1's nothing.
    rank0, rank1 = guide_two_ranks.rank_stdout
    assert [json.loads(line)["kind"] for line in rank0.splitlines()] == (
        ["header"] + (["step"] * 3 + ["summary"]) * 2)
    assert rank1 == ""
    # and OUTPUT holds exactly what stdout showed (the sweep's own records besides)
    assert rank0.splitlines() == [line for line in guide_two_ranks.out.read_text().splitlines()
                                  if json.loads(line)["script"] == "benchmark.py"]


@pytest.mark.xdist_group("guide_two_ranks")
def test_zero3_under_the_deepspeed_launcher_two_ranks(guide_two_ranks):
    recs = of_the_benchmark(guide_two_ranks)
    assert kinds(recs).count("header") == 1  # rank 0 alone writes
    summary = recs[-1]
    assert summary["kind"] == "summary" and summary["world_size"] == 2
    config = recs[0]["config"]
    assert config["ZERO_STAGE"] == 3
    # It moves peak memory, so it is part of the config that RESUME and the report compare.
    assert config["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    # FP8 under ZeRO-3 on two ranks: every linear but lm_head converted (no size threshold when
    # emulated), the share of FLOPs they ran, a finite loss beside its mean
    assert config["PRECISION"] == "fp8-tensorwise" and recs[0]["precision"] == "fp8-tensorwise"
    assert recs[0]["low_precision"]["converted_linears"] == 14 and recs[0]["low_precision"]["kept_linears"] == {"lm_head": 1}
    assert summary["seq_len"] == 128 and summary["low_precision_flop_share"] == pytest.approx(42 / 82)
    assert summary["loss_mean"] == pytest.approx(summary["loss"], abs=0.01)


@pytest.mark.xdist_group("guide_two_ranks")
def test_ranks_leave_without_python_finalization(guide_two_ranks):
    # DeepSpeed keeps the process groups' gloo threads running past destroy_process_group; a
    # rank that finalized Python under them could abort (engine.leave). The launcher's two
    # processes finalize as usual: they show the check would see a rank that did.
    finalized = [line.split(": ", 1)[1] for line in guide_two_ranks.log.splitlines() if line.startswith("finalized: ")]
    assert sorted(finalized) == ["launch.py", "runner.py"]


def test_bad_input_in_a_real_process_is_one_line_and_exit_2():
    # The last check before any work: torch, transformers and the model config are loaded by
    # then, and nothing they print may reach stdout or add a line.
    proc = run_proc("benchmark.py", {**TINY_FAST, "PACKED_DOC_LEN": "64"}, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "error: PACKED_DOC_LEN=64: must be shorter than every sequence length (shortest 64), or 0 for dense sequences"]


def test_help_lists_every_variable():
    proc = run_proc([sys.executable, str(REPO / "benchmark.py"), "--help"], {}, timeout=60)
    assert proc.returncode == 0
    for var in variables.TRAINING_VARS:
        assert f"  {var.name} " in proc.stdout


# ---------------------------------------------------------------- main, in this process

class Engine:
    """A DeepSpeed engine's face to a training step: the loss a step gives, or what its
    backward raises."""

    def __init__(self, loss=1.0, backward=None):
        self.loss, self.raises = loss, backward

    def __call__(self, **batch):
        return types.SimpleNamespace(loss=torch.tensor(self.loss))

    def backward(self, loss):
        if self.raises:
            raise self.raises

    def step(self):
        pass


@pytest.fixture
def main(as_script, monkeypatch, capsys):
    """main(env, engine=None) -> (exit code, records, stderr): benchmark.py's main in this
    process on TINY_FAST and `env`, through faults.run_main as its __main__ runs it. The
    DeepSpeed engine is `engine`; without one the test fails if the run gets that far."""
    def run(env, eng=None):
        as_script("benchmark.py", variables.TRAINING_VARS, {**TINY_FAST, "RANK": "0", "WORLD_SIZE": "1", **env})
        stdout = io.StringIO()
        monkeypatch.setattr(records, "claim_stdout", lambda: stdout)

        def build_engine(rc, mark):
            if eng is None:
                pytest.fail("bad input reached the engine")
            return eng, None
        monkeypatch.setattr(engine, "build_engine", build_engine)
        code = faults.run_main(benchmark.main)
        return code, parse_jsonl(stdout.getvalue()), capsys.readouterr().err
    return run


@pytest.mark.parametrize("env, message", [
    ({"SEQ_LEN": "abc"}, "SEQ_LEN='abc': expected"),
    ({"ZERO_STAGE": "5"}, "ZERO_STAGE='5': expected an integer >= 0 and <= 3"),
    ({"STEPS": "0"}, "STEPS='0': expected an integer >= 1"),
    ({"ATTN_BACKEND": "flash"}, "ATTN_BACKEND='flash': expected one of auto|fa3|fa4|fa2|sdpa|eager"),
    ({"USE_LIGER": "1"}, "USE_LIGER=1: Liger kernels need a GPU"),
    ({"ATTN_BACKEND": "fa4"}, "ATTN_BACKEND=fa4 needs a CUDA GPU"),
    ({"MODEL": "/nonexistent/model"}, "MODEL='/nonexistent/model': not a preset"),
    ({"NUM_LAYERS": "9"}, "NUM_LAYERS=9: the model has only 2 layers"),
    ({"MODEL": str(REPO / "tests")}, "not a preset"),
    ({"PACKED_DOC_LEN": "64"}, "PACKED_DOC_LEN=64: must be shorter than every sequence length"),
    ({"MODEL": "llama-3.1-8b", "WEIGHTS": "pretrained", "MODEL_DIR": "/nonexistent"},
     "WEIGHTS=pretrained: no *.safetensors"),
    # hostile round 5: beyond torch's 64-bit sizes, each was an exception after start-up (exit 1)
    ({"SEQ_LEN": "99999999999999999999"}, "SEQ_LEN='99999999999999999999': expected space- or comma-separated "
                                          "integers >= 1 and <= 2147483647"),
    ({"BATCH_SIZE": "99999999999999999999"}, "BATCH_SIZE='99999999999999999999': expected an integer >= 1 and <= "),
])
def test_bad_input_is_one_line_and_exit_2(main, env, message):
    code, recs, err = main(env)
    assert code == 2 and recs == []
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err


def test_an_out_of_memory_step_is_an_error_record_and_exit_3(main):
    oom = torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected)")
    code, recs, err = main({"SEQ_LEN": "64 128"}, Engine(backward=oom))
    assert code == 3
    assert kinds(recs) == ["header", "error"]  # the first point ends the run
    error = recs[-1]
    assert error["error"] == "oom" and error["exception"] == "OutOfMemoryError"
    assert "injected" in error["message"] and error["seq_len"] == 64
    assert error["config"]["ZERO_STAGE"] == 2
    assert err.splitlines()[-2].startswith("error: oom at seq_len 64: CUDA out of memory")
    # what would fit, not PyTorch's text alone, of what is not in force (ZeRO-2 here)
    assert err.splitlines()[-1].startswith("hint: to fit, ") and "ZERO_STAGE=3 with" in err.splitlines()[-1]


def test_the_out_of_memory_hint_never_proposes_a_setting_already_in_force():
    train = settings.parse(variables.TRAINING_VARS, {"WORKLOAD": "right-sized-8b"})
    assert engine.oom_hint(train) == (
        "to fit, cut the model to fewer layers (NUM_LAYERS=4), checkpoint activations (GRAD_CHECKPOINT=1), offload "
        "the optimizer (OFFLOAD_OPTIMIZER=1) or shard it over more GPUs (ZERO_STAGE=3 with deepspeed --num_gpus=N)")
    guide = settings.parse(variables.TRAINING_VARS, {"WORKLOAD": "guide-long-context"})
    assert engine.oom_hint(guide) == ("to fit, cut the model to fewer layers (NUM_LAYERS=8) or shard it over more "
                                      "GPUs (deepspeed --num_gpus=N)")


def test_an_fsdp2_out_of_memory_hint_names_its_own_ways_out():
    train = settings.parse(variables.TRAINING_VARS, {"WORKLOAD": "right-sized-8b", "ENGINE": "fsdp2"})
    assert engine.oom_hint(train) == (
        "to fit, cut the model to fewer layers (NUM_LAYERS=4), checkpoint activations (GRAD_CHECKPOINT=1), reshard "
        "each block's weights after its forward (ZERO_STAGE=3) or shard over more GPUs (torchrun --nproc-per-node=N)")


@pytest.mark.parametrize("precision, message", [
    ("nvfp4", "PRECISION=nvfp4: torchao"),  # no NVFP4 training recipe in the pinned torchao
    ("fp8-typo", "PRECISION='fp8-typo': expected one of bf16|fp8-tensorwise|fp8-rowwise")])
def test_a_precision_that_cannot_run_is_refused_before_the_model_is_built(main, precision, message):
    code, recs, err = main({"PRECISION": precision})
    assert code == 2 and recs == [] and len(err.strip().splitlines()) == 1 and message in err


def test_nonfinite_loss_is_an_error(main):
    code, recs, err = main({}, Engine(loss=float("nan")))
    assert code == 1
    assert kinds(recs) == ["header", "error"] and recs[-1]["error"] == "diverged"  # the sweep's table says so too


def test_each_point_knows_how_many_lengths_its_process_ran_before_it(as_script, monkeypatch):
    # The count, not the length's first place in SEQ_LEN: a length run twice is two points.
    as_script("benchmark.py", variables.TRAINING_VARS, {**TINY_FAST, "SEQ_LEN": "64 128 64", "RANK": "0",
                                                       "WORLD_SIZE": "1"})
    monkeypatch.setattr(records, "claim_stdout", io.StringIO)
    monkeypatch.setattr(engine, "build_engine", lambda rc, mark: (None, None))
    seen = []
    code = faults.run_main(engine.run_script, "benchmark.py", variables.TRAINING_VARS, "doc",
                           lambda eng, rc, writer, seq_len, earlier, debug: seen.append((seq_len, earlier)))
    assert code == 0 and seen == [(64, 0), (128, 1), (64, 2)]


def test_a_full_disk_ends_the_run_in_one_line_and_exit_4_with_every_record_whole(small_disk, as_script,
                                                                                  monkeypatch, capsys):
    # benchmark.py's own path (settings, header, points, run_main), in-process; the engine is
    # not built: the point writes step records until the disk is full.
    out = small_disk / "log.jsonl"
    as_script("benchmark.py", variables.TRAINING_VARS, {**TINY_FAST, "OUTPUT": out, "RANK": "0", "WORLD_SIZE": "1"})
    monkeypatch.setattr(records, "claim_stdout", io.StringIO)
    monkeypatch.setattr(engine, "build_engine", lambda rc, mark: (None, None))

    def run_point(eng, rc, writer, seq_len, earlier_points, debug):
        for step in range(10_000):
            writer.write("step", seq_len=seq_len, step=step, loss=0.1)

    code = faults.run_main(engine.run_script, "benchmark.py", variables.TRAINING_VARS, "doc", run_point)
    assert code == 4
    assert capsys.readouterr().err.splitlines()[-1].startswith(
        f"error: cannot append to {out} (No space left on device): stopped at this 'step' record")
    text = out.read_text()
    recs, skipped = records.read_lines(text.splitlines())
    assert text.endswith("\n") and skipped == 0 and recs[0]["kind"] == "header"


def test_a_model_that_cannot_fit_this_machine_is_refused_before_it_starts(as_script, capsys, monkeypatch):
    # the README's defaults on a CPU machine: the 8B's weights, gradients and Adam state alone
    # are 120 GiB; before this check the host's OOM killer ended the point after 482 s
    from upgrade_bench.models import peak_memory
    from upgrade_bench.training import memory

    problem = memory.fit_problem("llama-3.1-8b", 8_030_000_000, 3, 1, True, None, 24 * 2**30)
    assert problem.startswith("MODEL=llama-3.1-8b (8B parameters) needs at least 120 GiB for its weights, "
                              "gradients and Adam state (16 bytes a parameter); this machine has 24.0 GiB and "
                              "no GPU: try MODEL=tiny")
    # one H200: ZeRO-2 without offload holds 2 + 2 + 12 bytes a parameter on the one GPU
    assert peak_memory.state_bytes(1_000_000_000, 2, 1, False) == (16e9, 0.0)
    assert peak_memory.state_bytes(1_000_000_000, 3, 8, False) == (2e9, 0.0)
    assert peak_memory.state_bytes(1_000_000_000, 2, 8, True) == (2.25e9, 12e9)  # bf16 weights whole, grads an eighth
    one_h200 = 141 * 2**30
    assert "ZeRO-2 on 1 GPU(s)" in memory.fit_problem("x", 10_000_000_000, 2, 1, False, one_h200, 2**40)
    assert memory.fit_problem("x", 8_030_000_000, 3, 8, True, one_h200, 2**40) is None
    as_script("benchmark.py", benchmark.VARS, {"MODEL": "llama-3.1-8b", "SEQ_LEN": "64"})
    monkeypatch.setattr(fingerprint, "host_ram_bytes", lambda: 24 * 2**30)  # this machine's size, whatever runs the test
    assert faults.run_main(benchmark.main) == 2
    err = capsys.readouterr()
    assert err.out == "" and "needs at least 120 GiB" in err.err and len(err.err.strip().splitlines()) == 1


def test_a_lock_no_build_holds_is_stale_at_any_age_and_a_held_one_is_live(tmp_path):
    # a build killed mid-way (SIGKILL) leaves <root>/<py>_cpu/<op>/lock; every later run waited
    # on it: for ten minutes by the age rule, for good while anything compiled on the machine
    import os

    from upgrade_bench.training import extensions

    lock = tmp_path / "py311_cpu" / "deepspeed_shm_comm" / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    now = lock.stat().st_mtime
    assert extensions.stale_locks(tmp_path, now + 1, extensions.open_here()) == [(lock, 1)]  # killed a second ago
    fd = os.open(lock, os.O_RDONLY)  # as torch's FileBaton holds it while it builds
    try:
        assert extensions.stale_locks(tmp_path, now + 3600, extensions.open_here()) == []
    finally:
        os.close(fd)
    # on a network filesystem another node's build cannot be seen: a build's time is trusted
    assert extensions.stale_locks(tmp_path, now + 60, set(), network=lambda lock: True) == []
    assert extensions.stale_locks(tmp_path, now + 3600, set(), network=lambda lock: True) == [(lock, 3600)]
    assert extensions.stale_locks(tmp_path / "none", now, set()) == []
    assert extensions.filesystem_type(tmp_path) not in extensions.NETWORK_FS | {""}


def test_the_scan_of_open_files_passes_over_processes_that_end_while_it_looks(tmp_path, monkeypatch):
    # issue 55: a process that exited mid-scan made listing its /proc/<pid>/fd raise
    # FileNotFoundError, and the point failed (1 call in 300 under light churn)
    import errno
    import os
    import re

    from upgrade_bench.training import extensions

    real_scandir = os.scandir

    def churn(path="."):  # every other process ends between the listing of /proc and its fd folder
        match = re.fullmatch(r"/proc/(\d+)/fd", os.fspath(path))
        if match and int(match.group(1)) != os.getpid():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
        return real_scandir(path)
    monkeypatch.setattr(os, "scandir", churn)
    with open(tmp_path / "held", "w"):
        assert str(tmp_path / "held") in extensions.open_here()


def test_where_the_adam_op_is_built_is_found_without_torch(tmp_path):
    from upgrade_bench.training import extensions

    assert extensions.cache_root({"TORCH_EXTENSIONS_DIR": "/x/ext"}) == Path("/x/ext")
    # the checkout's own cache, then a folder for this Python and torch's CUDA build (CPU here), as
    # torch's default cache names it
    accelerator = f"cu{torch.version.cuda.replace('.', '')}" if torch.version.cuda else "cpu"
    here = f"py{sys.version_info.major}{sys.version_info.minor}{sys.abiflags}_{accelerator}"
    assert extensions.cache_root({}) == REPO / ".cache" / "torch_extensions" / here
    assert extensions.cache_root({"TORCH_EXTENSIONS_DIR": ""}) == extensions.cache_root({})
    assert extensions.version_folder("cuda: Optional[str] = '13.0'\nhip = None\n", (3, 12), "") == "py312_cu130"
    assert extensions.version_folder("cuda = '12.8'\nhip: Optional[str] = '6.4.1'\n", (3, 11), "") == "py311_rocm641"
    environ = {"TORCH_EXTENSIONS_DIR": ""}
    extensions.use_checkout_cache(environ)
    assert environ == {"TORCH_EXTENSIONS_DIR": str(extensions.checkout_cache())}
    extensions.use_checkout_cache(environ := {"TORCH_EXTENSIONS_DIR": "/mine"})
    assert environ == {"TORCH_EXTENSIONS_DIR": "/mine"}
    # a build for another Python or CUDA is not this one's
    for folder in ("py27_cu100", here):
        (tmp_path / folder / "fused_adam").mkdir(parents=True)
    (tmp_path / "py27_cu100" / "fused_adam" / "fused_adam.so").touch()
    assert not extensions.is_built("fused_adam", tmp_path / here)
    (tmp_path / here / "fused_adam" / "fused_adam.so").touch()
    assert extensions.is_built("fused_adam", tmp_path / here)
    assert not extensions.is_built("cpu_adam", tmp_path / here)
    assert extensions.adam_op(True) == "cpu_adam" and extensions.adam_op(False) == "fused_adam"


def test_a_stale_lock_of_another_checkout_stops_nothing(monkeypatch, tmp_path):
    from upgrade_bench.training import extensions

    # torch's default cache (~/.cache/torch_extensions) holds a lock a killed build left there
    lock = tmp_path / ".cache" / "torch_extensions" / "py311_cpu" / "cpu_adam" / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR")
    monkeypatch.setattr(extensions, "RECHECK_S", 0)
    extensions.use_checkout_cache()  # what a training process does before DeepSpeed builds anything
    assert os.environ["TORCH_EXTENSIONS_DIR"] == str(extensions.checkout_cache())
    assert extensions.stale_lock_problem() is None
    # the same lock where this run builds stops it
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(lock.parent.parent.parent))
    assert f"a stale build lock at {lock}" in extensions.stale_lock_problem()


def test_a_stale_lock_stops_the_run_before_its_header(as_script, capsys, monkeypatch, tmp_path):
    from upgrade_bench.training import extensions

    lock = tmp_path / "py311_cpu" / "cpu_adam" / "lock"
    lock.parent.mkdir(parents=True)
    lock.write_text("")  # killed just now: no build holds it
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(extensions, "RECHECK_S", 0)
    as_script("benchmark.py", benchmark.VARS, TINY_FAST)
    assert faults.run_main(benchmark.main) == faults.EXIT_ENVIRONMENT  # the machine's fault, not the input's
    err = capsys.readouterr()
    assert err.out == "" and f"a stale build lock at {lock} (0 min old, and no process holds it" in err.err
    assert f"rm {lock}" in err.err and len(err.err.strip().splitlines()) == 1


@pytest.mark.xdist_group("one_rank")
def test_decompose_splits_each_point_just_timed(one_rank):
    # DECOMPOSE=1: after each summary, its decomposition, over the summary's own timed steps
    order = [r["kind"] for r in one_rank.records if r["kind"] in ("summary", "decomposition")]
    assert order == ["summary", "decomposition"] * 2
    summaries = {r["seq_len"]: r for r in one_rank.records if r["kind"] == "summary"}
    for dec in (r for r in one_rank.records if r["kind"] == "decomposition"):
        assert dec["profile_steps"] == 1 and dec["time_steps"] == 3
        assert dec["wall_step_ms"] == pytest.approx(summaries[dec["seq_len"]]["step_ms"])
        assert {"attention", "gemm"} <= set(dec["buckets"])


class Recording(Engine):
    """An Engine that keeps the first token of each step's batch."""

    def __init__(self):
        super().__init__()
        self.firsts = []

    def __call__(self, **batch):
        self.firsts.append(batch["input_ids"][0, 0].item())
        return super().__call__(**batch)


def test_data_feeds_each_step_fresh_tokens_and_the_header_records_it(main, tmp_path):
    import numpy as np

    path = tmp_path / "train.bin"
    np.arange(1000, dtype=np.uint16).tofile(path)  # nanoGPT's train.bin
    eng = Recording()
    code, recs, err = main({"SEQ_LEN": "64", "STEPS": "3", "WARMUP_STEPS": "1", "DATA": str(path)}, eng)
    assert code == 0, err
    assert eng.firsts == [0, 64, 128, 192]  # a window per step, warm-up included
    header = recs[0]
    assert header["config"]["DATA"] == str(path) and header["data"] == "nanoGPT-style flat uint16, 1,000 tokens"
    code, recs, err = main({"SEQ_LEN": "2048", "DATA": str(path)})
    assert code == 2 and recs == [] and "DATA=" in err and "fewer than one step takes at SEQ_LEN 2048" in err
