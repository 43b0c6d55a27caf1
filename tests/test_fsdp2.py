"""ENGINE=fsdp2 on CPU (gloo): a world of one in this process, two ranks under torchrun through
run_sweep.sh; the records, resume and a failed point as under DeepSpeed, and how it is launched."""
import io
import json
import types

import pytest

from conftest import TINY_FAST, parse_jsonl, records as records_of, run_sweep
from upgrade_bench import faults, settings
from upgrade_bench.log import records, runs
from upgrade_bench.sweep import launch
from upgrade_bench.training import benchmark_main as benchmark
from upgrade_bench.training import engines, variables

# A launched rank's variables, set for the in-process run only (as_script restores them).
WORLD_OF_ONE = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1"}


def kinds(recs) -> list:
    return [r["kind"] for r in recs]


@pytest.fixture
def main(as_script, monkeypatch, capsys):
    """main(env) -> (exit code, records, stderr): benchmark.py's main in this process, a world
    of one, through faults.run_main as its __main__ runs it; its records read from its stdout."""
    def run(env):
        as_script("benchmark.py", variables.TRAINING_VARS, {**WORLD_OF_ONE, **env})
        stdout = io.StringIO()
        monkeypatch.setattr(records, "claim_stdout", lambda: stdout)
        code = faults.run_main(benchmark.main)
        return code, parse_jsonl(stdout.getvalue()), capsys.readouterr().err
    return run


def test_a_world_of_one_trains_checkpointed_blocks_and_its_oom_is_a_record(main):
    # Two lengths in one process: 64 trains (each block behind checkpoint_wrapper), then 1M
    # tokens with eager attention, a 1 TiB score matrix the allocator refuses at once: exit 3.
    env = {**TINY_FAST, "ENGINE": "fsdp2", "ATTN_BACKEND": "eager", "GRAD_CHECKPOINT": "1",
           "SEQ_LEN": "64 1048576", "DECOMPOSE": "1", "PEAK_TFLOPS": "1"}
    code, recs, err = main(env)
    assert code == 3, err
    assert kinds(recs) == ["header", "step", "step", "step", "summary", "decomposition", "error"]
    header, summary, split, error = recs[0], recs[4], recs[5], recs[6]
    assert header["engine"] == "fsdp2" and header["config"]["ENGINE"] == "fsdp2"
    assert "COMPILE" not in header["config"]  # off, the default: recorded only when on, as older logs
    assert "start-up: building the model and the fsdp2 engine" in err and "Adam op" not in err
    assert summary["world_size"] == 1 and summary["hfu"] > summary["mfu"]  # the blocks' forward recomputed
    assert all(isinstance(r["loss"], float) for r in recs[1:4])
    assert split["total"]["ms"] == pytest.approx(summary["step_ms"])  # the step just timed, split
    assert (error["error"], error["seq_len"], error["config"]["ENGINE"]) == ("oom", 1048576, "fsdp2")
    assert err.splitlines()[-1].startswith("hint: ") and "(ZERO_STAGE=3)" in err and "OFFLOAD" not in err


def test_a_world_of_one_shards_nothing_and_runs_its_forward_under_bf16_autocast(as_script):
    # torchtitan's single-device path: fp32 weights the optimizer steps (no DTensor shards, no
    # bf16 copy), the forward's matmuls in bf16 under autocast; the sharded path is two ranks'.
    import torch
    from torch.distributed.tensor import DTensor

    from upgrade_bench.training import engine, run_config

    as_script("benchmark.py", variables.TRAINING_VARS, {**WORLD_OF_ONE, **TINY_FAST, "ENGINE": "fsdp2",
                                                        "ATTN_BACKEND": "eager"})
    rc = run_config.resolve_here(settings.load(variables.TRAINING_VARS, benchmark.__doc__))
    assert rc.header_config()["SINGLE_DEVICE"] is True  # the run's identity says which path ran
    try:
        eng, _ = engine.build_engine(rc)
        params = list(eng.module.parameters())
        assert not any(isinstance(p, DTensor) for p in params) and {p.dtype for p in params} == {torch.float32}
        batches, _ = engine.prepare_point(rc, 64)
        out = eng(**batches.step(0))
        assert out.logits.dtype == torch.bfloat16 and out.loss.dtype == torch.float32
        eng.backward(out.loss)
        eng.step()
        assert all(p.grad is None for p in params)  # stepped, then zeroed
    finally:
        engine.shut_down_distributed(clean=True)


@pytest.mark.parametrize("env, message", [
    ({}, "OFFLOAD_OPTIMIZER=1 with ENGINE=fsdp2: FSDP2's CPU offload moves the weights and gradients"),
    ({"OFFLOAD_OPTIMIZER": "0", "ZERO_STAGE": "1"}, "ZERO_STAGE=1 with ENGINE=fsdp2: FSDP2 always shards"),
    ({"ENGINE": "deepspeed", "COMPILE": "1"}, "COMPILE=1 with ENGINE=deepspeed: compiling each decoder block is FSDP2's"),
])
def test_what_an_engine_cannot_run_is_one_line_before_the_header(main, env, message):
    code, recs, err = main({"MODEL": "tiny", "ENGINE": "fsdp2", **env})
    assert code == 2 and recs == []
    assert err.strip().splitlines() == [f"error: {err.strip().removeprefix('error: ')}"] and message in err


def test_fsdp2_maps_zero_2_and_3_and_refuses_what_it_has_no_word_for():
    def refusal(**env):
        return engines.refusal(settings.parse(variables.TRAINING_VARS, {k: str(v) for k, v in env.items()}))
    assert refusal(ENGINE="fsdp2", OFFLOAD_OPTIMIZER=0, ZERO_STAGE=3) is None
    assert refusal(ENGINE="fsdp2", OFFLOAD_OPTIMIZER=0, ZERO_STAGE=2, COMPILE=1) is None
    assert refusal(ENGINE="fsdp2", OFFLOAD_OPTIMIZER=0, ZERO_STAGE=0).startswith("ZERO_STAGE=0 with ENGINE=fsdp2")
    assert refusal() is None and refusal(ZERO_STAGE=0) is None  # DeepSpeed's, every stage


def test_the_engine_is_part_of_a_runs_identity_and_an_old_log_ran_deepspeed():
    old = {"MODEL": "llama-3.1-8b", "ZERO_STAGE": 2}  # a header from before ENGINE existed
    assert runs.identity_difference(old, {**old, "ENGINE": "deepspeed", "COMPILE": False}) is None
    assert runs.identity_difference(old, {**old, "ENGINE": "fsdp2"}) == 'ENGINE=unset there, "fsdp2" asked'
    assert runs.identity_difference({**old, "ENGINE": "fsdp2"}, {**old, "ENGINE": "fsdp2", "COMPILE": True}) == \
        'COMPILE=unset there, true asked'


# ---------------------------------------------------------------- the launcher

def test_torchrun_launches_fsdp2_on_one_node_and_pdsh_starts_it_on_each_of_several():
    py, script = "/venv/bin/python", "/repo/benchmark.py"
    run = [py, "-u", "-m", "torch.distributed.run"]
    assert launch.torchrun_argv(py, script, 1, [], "", None, [], "/repo") == [py, "-u", script]  # a world of one
    assert launch.torchrun_argv(py, script, 4, [], "", None, [], "/repo") == [
        *run, "--nnodes", "1", "--nproc-per-node", "4", "--standalone", script]  # torchrun finds a free port
    assert launch.torchrun_argv(py, script, 4, [], "", 29600, [], "/repo")[-3:] == ["--master-port", "29600", script]
    argv = launch.torchrun_argv(py, script, 8, [("n1", 8), ("n2", 8)], "", None, ["SEQ_LEN=8192", "NOTES=a b"], "/repo")
    assert argv[:6] == ["pdsh", "-S", "-f", "1024", "-w", "n1,n2"] and len(argv) == 7
    assert argv[6] == ("export SEQ_LEN=8192; export 'NOTES=a b'; cd /repo; /venv/bin/python -u -m torch.distributed.run "
                       "--nnodes 2 --nproc-per-node 8 --node-rank %n --master-addr n1 --master-port 29500 "
                       "/repo/benchmark.py")
    assert launch.torchrun_hosts_problem([("n1", 8), ("n2", 4)], 0).startswith("HOSTFILE: slots 4, 8 differ")
    assert launch.torchrun_hosts_problem([("n1", 8), ("n2", 4)], 4) is None


def test_torchrun_keeps_the_chosen_gpus_visible_where_deepspeeds_launcher_needs_include():
    assert launch.select_devices("2,3,5", 2, "fsdp2") == (None, "2,3")
    assert launch.select_devices("GPU-a,GPU-b", 2, "fsdp2") == (None, "GPU-a,GPU-b")  # UUIDs too
    assert launch.select_devices("2,3,5", 2) == ("localhost:2,3", "")


def test_a_ranks_exit_code_is_read_from_torchruns_summary():
    # torchrun ends with 1 whatever its ranks ended with; its summary names their codes, the root cause's last
    tail = ["[1]:", "  exitcode  : 2 (pid: 11)", "Root Cause (first observed failure):", "[0]:",
            "  exitcode  : 3 (pid: 10) "]
    assert launch.rank_exit_code(1, tail) == 3
    assert launch.rank_exit_code(1, ["Traceback (most recent call last):"]) == 1  # torchrun's own failure
    assert launch.rank_exit_code(0, tail) == 0 and launch.rank_exit_code(-15, tail) == -15


# ---------------------------------------------------------------- two ranks under torchrun

# run_sweep.sh with two CPU ranks under torchrun: the guide's ZeRO-3 words (every block resharded
# after its forward) with activation checkpointing, the linears in emulated FP8 tensorwise
# (float8 all-gather), one process for 64 and 128, then 1M tokens: an OOM on both ranks.
TWO_RANKS = {"ENGINE": "fsdp2", "MODEL": "tiny", "OFFLOAD_OPTIMIZER": "0", "ATTN_BACKEND": "eager",
             "PRECISION": "fp8-tensorwise", "STEPS": "2", "WARMUP_STEPS": "1", "PEAK_TFLOPS": "1",
             "DECOMPOSE": "1", "GPUS": "2", "REUSE_PROCESS": "1", "SEQLENS": "128 64 1048576"}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("fsdp2_two_ranks") / "sweep.jsonl"
    result = run_sweep(300, OUT=out, **TWO_RANKS)
    assert result.returncode == 0, result.stderr[-3000:]  # an OOM is a point's result, not the sweep's failure
    return types.SimpleNamespace(result=result, out=out, records=records_of(out))


@pytest.mark.xdist_group("fsdp2_two_ranks")
def test_two_ranks_under_torchrun_write_the_same_records_as_deepspeeds(two_ranks):
    ran = [r for r in two_ranks.records if r["script"] == "benchmark.py"]
    assert kinds(ran) == ["header"] + (["step"] * 3 + ["summary", "decomposition"]) * 2 + ["error"]
    header = ran[0]
    assert header["engine"] == "fsdp2" and header["config"]["ZERO_STAGE"] == 3
    assert header["config"]["GRAD_CHECKPOINT"] is True and header["z3_leaf_moe_blocks"] is False
    assert header["low_precision"]["converted_linears"] == 14  # every linear but lm_head, in float8
    summaries = [r for r in ran if r["kind"] == "summary"]
    assert [s["seq_len"] for s in summaries] == [64, 128] and {s["world_size"] for s in summaries} == {2}
    assert all(s["hfu"] > s["mfu"] for s in summaries)
    # each rank's all-gathers and reduce-scatters are collectives: `comm`, outside the compute split
    split = [r for r in ran if r["kind"] == "decomposition"]
    assert all(r["comm_kernel_ms_per_step"] > 0 for r in split)
    comm = {k["name"] for r in split for k in r["top_kernels"] if k["bucket"] == "comm"}
    # FSDP's own collectives among the step's top kernels (top_kernels is a cut of them: on a loaded
    # CPU one of the two can fall below it; the comm time above counts both)
    assert comm & {"c10d::_allgather_base_", "c10d::_reduce_scatter_base_"}
    assert "-m torch.distributed.run --nnodes 1 --nproc-per-node 2 --standalone " in two_ranks.result.stderr


@pytest.mark.xdist_group("fsdp2_two_ranks")
def test_an_oom_on_both_ranks_is_the_points_record_and_the_ranks_exit_code(two_ranks):
    [error] = [r for r in two_ranks.records if r["kind"] == "error"]
    assert (error["error"], error["seq_len"]) == ("oom", 1048576)
    [sweep] = [r for r in two_ranks.records if r["kind"] == "sweep"]
    assert sweep["points_ok"] == 2 and sweep["points_failed"] == 1
    assert sweep["processes"][0]["exit_code"] == 3  # torchrun said 1; its ranks said 3


@pytest.mark.xdist_group("fsdp2_two_ranks")
def test_resume_skips_the_engines_points_and_another_engine_runs_them_again(two_ranks):
    settings_asked = {**TWO_RANKS, "SEQLENS": "64 128"}
    again = run_sweep(120, OUT=two_ranks.out, RESUME=1, **settings_asked)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "resuming: seq_len 64 128 already done with this config" in again.stderr, again.stderr[-2000:]
    on_deepspeed = run_sweep(120, OUT=two_ranks.out, RESUME=1, DRY_RUN=1, **{**settings_asked, "ENGINE": "deepspeed"})
    assert on_deepspeed.returncode == 0, on_deepspeed.stderr[-2000:]
    lines = on_deepspeed.stdout.splitlines()
    [line] = lines  # one process (REUSE_PROCESS=1) for 64 and 128 anew
    assert "SEQ_LEN='64 128'" in line and "-m deepspeed.launcher.runner --num_gpus 2 " in line
    ran = [json.loads(line) for line in two_ranks.out.read_text().splitlines()]
    assert [r["kind"] for r in ran if r["script"] == "benchmark.py"].count("header") == 1  # no process since
