"""tools/side_by_side.sh, the suite next to the guide's scripts: what it gives each side, checked
with `true` standing in for Python (the runs themselves need a GPU; results/ holds them)."""
import json
import os

from conftest import REPO, run_proc

SCRIPT = str(REPO / "tools" / "side_by_side.sh")


def test_the_guides_scripts_read_the_same_layer_cut_as_the_suite(tmp_path):
    # the guide's bench_decompose.py has no NUM_LAYERS: the cut lives in the config it reads
    out = tmp_path / "out"
    proc = run_proc(["bash", SCRIPT, "decomposition"],
                    {"OUT": str(out), "REF": str(tmp_path), "PYTHON": "true", "REPEAT": "1", "SEQLENS": "8192",
                     "NUM_LAYERS": "2", "MODEL": "llama-3.1-8b"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    config = json.loads((out / "cfg" / "config.json").read_text())
    assert config["num_hidden_layers"] == 2 and config["hidden_size"] == 4096
    assert config["layer_types"] == ["full_attention", "full_attention"]  # the pattern written out, as the suite cuts
    ended = [line.split("end ", 1)[1] for line in (out / "pipeline.log").read_text().splitlines() if " end " in line]
    assert ended == ["decomposition_suite: exit 0", "decomposition_guide: exit 0"]


def test_a_model_the_guides_scripts_cannot_count_is_refused_before_anything_runs(tmp_path):
    proc = run_proc(["bash", SCRIPT, "training"], {"OUT": str(tmp_path / "out"), "REF": str(tmp_path),
                                                   "PYTHON": "true", "MODEL": "qwen3-30b-a3b"}, timeout=60)
    assert proc.returncode == 2 and not (tmp_path / "out").exists()
    assert proc.stderr == ("error: MODEL='qwen3-30b-a3b': the guide's scripts count dense decoders only "
                           "(Llama-like); no side by side for it\n")
    proc = run_proc(["bash", SCRIPT, "training"], {"OUT": str(tmp_path / "out"), "REF": str(tmp_path),
                                                   "PYTHON": "true", "NUM_LAYERS": "33"}, timeout=60)
    assert proc.returncode == 2 and not (tmp_path / "out").exists()
    assert proc.stderr == "error: MODEL='llama-3.1-8b': NUM_LAYERS=33: the model has only 32 layers\n"


def test_the_guides_scripts_get_the_suites_attention_backend_by_transformers_name(tmp_path):
    env = {"DRY_RUN": "1", "OUT": str(tmp_path / "out"), "REPEAT": "1", "SEQLENS": "8192"}
    proc = run_proc(["bash", SCRIPT, "decomposition"], {**env, "ATTN_BACKEND": "sdpa"}, timeout=60)
    suite, guide = proc.stdout.splitlines()
    assert proc.returncode == 0 and "ATTN_BACKEND=sdpa" in suite and " ATTN=sdpa " in guide
    proc = run_proc(["bash", SCRIPT, "decomposition"], {**env, "ATTN_BACKEND": "fa5"}, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ATTN_BACKEND='fa5': not one of auto ")


def test_the_hbm_comparison_runs_the_suite_then_its_do_bench_yardstick_on_the_same_sizes(tmp_path):
    env = {"DRY_RUN": "1", "OUT": str(tmp_path / "out"), "REPEAT": "2", "HBM_SIZES_MIB": "1024 4096"}
    proc = run_proc(["bash", SCRIPT, "hbm"], env, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 4, proc.stderr
    assert all("SIZES_MIB=1024\\ 4096" in line for line in lines)
    assert [line.split(" >> ")[0].split()[-1] for line in lines] == ["bench_hbm.py", "tools/hbm_do_bench.py"] * 2


def test_the_comm_comparison_runs_the_suite_then_its_plain_loop_on_every_gpu_asked(tmp_path):
    env = {"DRY_RUN": "1", "OUT": str(tmp_path / "out"), "REPEAT": "1", "GPUS": "4", "COMM_SIZES_MIB": "64 4096"}
    proc = run_proc(["bash", SCRIPT, "comm"], env, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 2, proc.stderr
    assert all("SIZES_MIB=64\\ 4096 " in line and " deepspeed --num_gpus=4 " in line for line in lines)
    assert [line.split(" >> ")[0].split()[-1] for line in lines] == ["bench_comm.py", "tools/comm_loop.py"]
    proc = run_proc(["bash", SCRIPT, "comm"], {**env, "GPUS": "1"}, timeout=60)
    assert proc.returncode == 2 and proc.stderr == ("error: GPUS='1': the comm comparison needs 2 GPUs or more "
                                                    "(one rank has no link)\n")


def test_only_the_comparisons_with_the_guides_scripts_need_them(tmp_path):
    env = {"OUT": str(tmp_path / "out"), "REF": str(tmp_path / "nowhere"), "PYTHON": "true", "REPEAT": "1"}
    assert run_proc(["bash", SCRIPT, "hbm"], env, timeout=60).returncode == 0
    launcher = tmp_path / "bin" / "deepspeed"  # stands in for the launcher, as `true` does for Python
    launcher.parent.mkdir()
    launcher.write_text("#!/bin/sh\nexit 0\n")
    launcher.chmod(0o755)
    path = f"{launcher.parent}{os.pathsep}{os.environ['PATH']}"
    assert run_proc(["bash", SCRIPT, "comm"], {**env, "GPUS": "2", "PATH": path}, timeout=60).returncode == 0
    proc = run_proc(["bash", SCRIPT, "hbm", "mamf"], env, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith(f"error: REF='{tmp_path / 'nowhere'}': no such folder")


def test_the_torchtitan_comparison_runs_the_suite_per_engine_then_torchtitan_per_length_each_precision(tmp_path):
    env = {"DRY_RUN": "1", "OUT": str(tmp_path / "out"), "REPEAT": "1", "SEQLENS": "8192 16384",
           "ENGINES": "deepspeed fsdp2-compiled", "TITAN_PRECISIONS": "bf16 fp8-tensorwise", "TITAN_PYTHON": "py3"}
    proc = run_proc(["bash", SCRIPT, "torchtitan"], env, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and len(lines) == 8, proc.stderr
    suite = [line for line in lines if line.endswith("./run_sweep.sh >> /dev/null")]
    assert [(line.split("ENGINE=")[1].split()[0], line.split(" PRECISION=")[1].split()[0]) for line in suite] == [
        ("deepspeed", "bf16"), ("fsdp2", "bf16"), ("deepspeed", "fp8-tensorwise"), ("fsdp2", "fp8-tensorwise")]
    assert all("SEQLENS=8192\\ 16384 " in line and " GRAD_CHECKPOINT=0 " in line for line in suite)
    assert [(" COMPILE=1 " in line, " USE_LIGER=auto " in line) for line in suite] == [(False, True), (True, True)] * 2
    titan = [line for line in lines if "tools/titan_train.py" in line]
    assert [line.split(" >> ")[1] for line in titan] == [
        f"{tmp_path}/out/torchtitan_{p}_{s}_r1.log" for p in ("bf16", "fp8-tensorwise") for s in (8192, 16384)]
    assert all(line.startswith("NUM_LAYERS=8 PRECISION=") and " py3 -m torch.distributed.run --standalone "
               "--nproc_per_node 1 " in line and " --training.local_batch_size 1 --training.steps 12 " in line
               for line in titan)
    assert " --training.seq_len 16384 " in titan[1]


def test_the_torchtitan_comparison_refuses_what_torchtitan_cannot_run_before_anything_runs(tmp_path):
    env = {"OUT": str(tmp_path / "out"), "PYTHON": "true", "REPEAT": "1"}
    cases = [({"TITAN_PYTHON": "false"}, "error: TITAN_PYTHON='false': cannot import torchtitan (on the GPU machine: "),
             ({"MODEL": "gemma-3-12b"}, "error: MODEL='gemma-3-12b': the torchtitan comparison trains torchtitan's Llama 3 "),
             ({"GRAD_CHECKPOINT": "1"}, "error: GRAD_CHECKPOINT='1': the torchtitan comparison runs both sides "),
             ({"TITAN_STEPS": "2"}, "error: TITAN_STEPS='2': a whole number > 2"),
             ({"ENGINES": "fsdp2 megatron"}, "error: ENGINES='fsdp2 megatron': 'megatron' is not one of deepspeed fsdp2 "
                                             "fsdp2-compiled")]
    for extra, said in cases:
        proc = run_proc(["bash", SCRIPT, "torchtitan"], {**env, **extra}, timeout=60)
        assert proc.returncode == 2 and proc.stderr.startswith(said), (extra, proc.stderr)
        assert not (tmp_path / "out").exists()


def test_the_torchtitan_comparison_needs_no_guide_scripts_and_keeps_its_own_settings_from_the_suite(tmp_path):
    # a copy of the script beside a stand-in run_sweep.sh that writes down the environment it is given:
    # the suite refuses a variable that looks like one of its settings (ENGINES for ENGINE)
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "tools" / "side_by_side.sh").write_text((REPO / "tools" / "side_by_side.sh").read_text())
    for name in ("configs", "upgrade_bench"):
        (repo / name).symlink_to(REPO / name)
    sweep = repo / "run_sweep.sh"
    sweep.write_text('#!/bin/sh\nenv > "$OUT.env"\n')
    sweep.chmod(0o755)
    out = tmp_path / "out"  # no ../shared/reference beside the copy: the comparison must not ask for it
    env = {"OUT": str(out), "PYTHON": "true", "TITAN_PYTHON": "true", "REPEAT": "1", "SEQLENS": "8192",
           "ENGINES": "deepspeed fsdp2", "TITAN_PRECISIONS": "bf16", "TITAN_STEPS": "3", "TITAN_ATTN": "sdpa"}
    proc = run_proc(["bash", str(repo / "tools" / "side_by_side.sh"), "torchtitan"], env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for engine in ("deepspeed", "fsdp2"):
        given = dict(line.split("=", 1) for line in (out / f"suite_{engine}_bf16.jsonl.env").read_text().splitlines()
                     if "=" in line)
        assert given["ENGINE"] == engine and given["PRECISION"] == "bf16" and given["SEQLENS"] == "8192"
        assert not [name for name in given if name == "ENGINES" or name.startswith("TITAN_")], given
