"""run_node.sh: the node's plan and estimate before anything starts, each step's record,
resume by marker, and a failed step that does not stop the next."""
import os
import sys

import pytest

from conftest import REPO, SWEEP_CLEARED, run_proc
from upgrade_bench import faults
from upgrade_bench.models import flops, model
from upgrade_bench.sweep import node, sweep_plan


def test_the_plan_and_its_estimate_before_anything_runs(tmp_path, as_script, capsys):
    as_script("run_node.sh", node.VARS + sweep_plan.VARS + sweep_plan.PASSED,
              {"MODEL": "tiny", "SEQLENS": "64 128", "DRY_RUN": "1", "NODE_OUT": str(tmp_path / "node")})
    assert faults.run_main(node.main) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[node]")]
    planned = [n for n in node.STEPS if n != "comm"]  # no GPU: no link to measure
    assert [line.split(":")[0] for line in lines[:-1]] == [f"[node] {i}. {n}" for i, n in enumerate(planned, 1)]
    assert lines[-1].startswith("[node] estimated ") and "no GPU (a CPU try-out)" in lines[-1]
    assert not (tmp_path / "node").exists()  # a dry run writes nothing


def test_a_model_that_is_no_model_is_refused_before_the_plan(as_script, capsys):
    as_script("run_node.sh", node.VARS + sweep_plan.VARS + sweep_plan.PASSED, {"MODEL": "llama3", "DRY_RUN": "1"})
    assert faults.run_main(node.main) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: MODEL='llama3': not a preset") and "[node]" not in err


def test_estimates_by_hand_on_an_h200():
    spec = model.spec(model.load_config("llama-3.1-8b", 8))
    train = {"MODEL": "llama-3.1-8b", "NUM_LAYERS": 8, "SEQLENS": [8192], "GRAD_CHECKPOINT": False,
             "WARMUP_STEPS": 2, "STEPS": 10}
    s = {"NODE_OUT": "o", "SKIP": [], "ATTN_SEQLENS": [8192, 32768], "DECOMPOSE_SEQLENS": [8192]}
    steps = {st.name: st for st in node.plan(s, train, spec, 1, 989.0, "python", "fa3")}
    # Llama's one layer kind (32 heads of 128), causal: fwd 2*s^2*H*d, bwd 5*s^2*H*d, fwd_bwd
    # 7*s^2*H*d FLOPs; each point 0.7 s of windows and 7 calls (1 + 1 warm-up + 5) at half the
    # peak, for two backends, after a 28 s start.
    calls_s = sum(7 * k * n * n * 32 * 128 / (0.5 * 989e12) for n in (8192, 32768) for k in (2, 5, 7))
    assert steps["attention"].estimate_s == pytest.approx(28 + 2 * (6 * 0.7 + calls_s))
    step_s = node.training_step_s(spec, 8192, 989.0, False)
    assert step_s == flops.step_flops(spec, 1, 8192).hardware / (989e12 * 0.35)
    # start-up: 20 s, 10 s per billion weights (8 layers of the 8B: 2.80B with both embeddings),
    # and a 10 s first step
    start = 20 + 10 * 2.80 + 10
    assert steps["sweep"].estimate_s == pytest.approx(start + 12 * step_s, abs=0.05)
    assert steps["decomposition"].estimate_s == pytest.approx(start + 15 * step_s, abs=0.05)
    assert steps["sweep"].env == {"OUT": "o/sweep.jsonl", "RESUME": "1"}
    assert list(steps) == [n for n in node.STEPS if n != "comm"]  # one GPU: bench_comm.py would refuse it
    # bench_hbm.py after mamf-finder.py, its records in the node's folder, its constant estimate
    assert (steps["hbm"].argv[1:], steps["hbm"].env) == ([str(REPO / "bench_hbm.py")], {"OUTPUT": "o/hbm.jsonl"})
    assert steps["hbm"].estimate_s == node.HBM_S and list(steps).index("hbm") == list(steps).index("mamf") + 1
    assert [st.name for st in node.plan({**s, "SKIP": ["mamf", "sweep"]}, train, spec, 1, 989.0, "python", "fa3")] == \
        ["capabilities", "hbm", "attention", "decomposition"]
    # on two GPUs bench_comm.py after bench_hbm.py, under the decomposition's launcher
    two = {st.name: st for st in node.plan(s, train, spec, 2, 989.0, "python", "fa3")}
    assert list(two) == list(node.STEPS) and two["comm"].estimate_s == node.COMM_S
    assert two["comm"].argv == two["decomposition"].argv[:-1] + [str(REPO / "bench_comm.py")]
    assert two["comm"].argv[:5] == ["python", "-m", "deepspeed.launcher.runner", "--num_gpus", "2"]
    assert two["comm"].env == {"OUTPUT": "o/comm.jsonl"}
    # a backend that compiles in the first step (flex: 80 s) replaces the 10 s of it, per process
    flex = {st.name: st for st in node.plan(s, train, spec, 1, 989.0, "python", "flex")}
    assert flex["sweep"].estimate_s - steps["sweep"].estimate_s == pytest.approx(80 - 10)


def test_steps_run_in_turn_a_failure_is_a_record_and_a_rerun_skips_what_is_done(tmp_path):
    out = tmp_path / "node"
    out.mkdir()
    from upgrade_bench.log.records import RecordWriter, read_lines

    def step(name, code):
        return node.Step(name, [sys.executable, "-c", f"import sys; sys.stderr.write('{name}\\n'); sys.exit({code})"],
                         {}, 1.0, f"{name}.jsonl")

    said = []
    writer = RecordWriter("run_node.sh", str(out / "node.jsonl"))
    assert node.run([step("capabilities", 0), step("mamf", 1), step("attention", 0)], out, writer, said.append) == 1
    assert (out / "mamf.log").read_text() == "mamf\n"
    records = read_lines((out / "node.jsonl").read_text().splitlines())[0]
    assert [(r["step"], r["exit_code"]) for r in records] == [("capabilities", 0), ("mamf", 1), ("attention", 0)]
    assert sorted(p.name for p in out.glob(".done-*")) == [".done-attention", ".done-capabilities"]
    said.clear()
    assert node.run([step("capabilities", 0), step("mamf", 0), step("attention", 0)], out, writer, said.append) == 0
    assert said[0] == "[node] 1/3 capabilities: done in an earlier run, skipped"
    assert said[1].startswith("[node] 2/3 mamf: starting") and said[-1].endswith("skipped")


def test_a_step_sees_neither_the_node_commands_settings_nor_anothers():
    environ = {"NODE_OUT": "o", "SKIP": "", "SEQLENS": "8192", "GPUS": "1", "MODEL": "tiny", "PATH": "/bin"}
    decomposition = node.Step("decomposition", ["x"], {"SEQ_LEN": "8192"}, None, "d.jsonl")
    sweep = node.Step("sweep", ["x"], {"OUT": "s.jsonl"}, None, "s.jsonl")
    # bench_decompose.py given SEQLENS warned "did you mean SEQ_LEN?" (an H200 node run)
    assert node.step_environ(environ, decomposition) == {"MODEL": "tiny", "PATH": "/bin", "SEQ_LEN": "8192"}
    assert node.step_environ(environ, sweep) == {"SEQLENS": "8192", "GPUS": "1", "MODEL": "tiny",
                                                 "PATH": "/bin", "OUT": "s.jsonl"}


def test_the_slurm_batch_script_runs_run_node_sh_on_the_allocation(tmp_path):
    # The batch script's own part: the allocation's GPUs and nodes in the environment, then
    # the submit folder's run_node.sh, its exit code passed on. run_node.sh itself is tested
    # above; here a stand-in in a submit folder says what it was given.
    repo, bin_dir = tmp_path / "repo", tmp_path / "bin"
    (repo / "slurm").mkdir(parents=True)
    bin_dir.mkdir()
    (repo / "slurm" / "nodes.sh").symlink_to(REPO / "slurm" / "nodes.sh")
    stand_in = 'echo "GPUS=$GPUS MASTER_ADDR=$MASTER_ADDR HOSTFILE=$HOSTFILE"; exit 3'
    scontrol = '[[ "$*" == "show hostnames gpu[01-02]" ]] && printf "gpu01\\ngpu02\\n"'
    for path, text in ((repo / "run_node.sh", stand_in), (bin_dir / "scontrol", scontrol)):
        path.write_text(f"#!/usr/bin/env bash\n{text}\n")
        path.chmod(0o755)
    env = {"SLURM_JOB_NODELIST": "gpu[01-02]", "SLURM_JOB_ID": "42", "SLURM_GPUS_ON_NODE": "4",
           "SLURM_SUBMIT_DIR": str(repo), "TMPDIR": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = run_proc(["bash", str(REPO / "slurm" / "run_node.sbatch")], env, 60,
                      cleared=SWEEP_CLEARED | {"MASTER_PORT"})
    hostfile = tmp_path / "run_node-hostfile.42"
    assert (result.returncode, result.stdout) == (3, f"GPUS=4 MASTER_ADDR=gpu01 HOSTFILE={hostfile}\n"), result.stderr
    assert hostfile.read_text() == "gpu01 slots=4\ngpu02 slots=4\n"
