"""Planning a sweep (upgrade_bench.sweep.sweep_plan), in-process: commands, devices, resume, the
results file, every bad input; and that planning, DRY_RUN included, never imports torch."""
import io
import shlex
import sys
import types
from pathlib import Path

import pytest

from conftest import REPO, SWEEP_CLEARED, run_proc
from upgrade_bench.hardware import devices
from upgrade_bench.sweep import launch, plan as sweep_plan
from upgrade_bench.faults import BadInput


@pytest.fixture
def environ(monkeypatch):
    """A clean environment for the sweep's settings (os.environ itself: the sweep reads it)."""
    for name in SWEEP_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])  # whatever this machine has
    return monkeypatch


def plan_of(environ, **env):
    for key, value in env.items():
        environ.setenv(key, str(value))
    return sweep_plan.prepare(sweep_plan.load_settings([], "doc"))


def dry_run(environ, **env) -> list[str]:
    plan = plan_of(environ, DRY_RUN=1, **env)
    out = io.StringIO()
    sweep_plan.dry_run(plan, sweep_plan.pending(plan.s.SEQLENS, {}), out)
    return out.getvalue().splitlines()


# ---------------------------------------------------------------- pure rules

def test_launch_commands():
    py, script = "/venv/bin/python", "/repo/benchmark.py"
    assert launch.launch_argv(py, script, 1, "", "", None, None) == [py, "-u", script]
    assert launch.launch_argv(py, script, 2, "", "", 12345, None) == [
        py, "-u", "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port", "12345", script]
    assert launch.launch_argv(py, script, 0, "/h", "n1", None, None) == [
        py, "-u", "-m", "deepspeed.launcher.runner", "--hostfile", "/h", "--master_addr", "n1", script]
    assert launch.launch_argv(py, script, 2, "", "", 1, "localhost:2,3")[4:6] == ["--include", "localhost:2,3"]


def test_visible_devices_go_to_include_not_num_gpus():
    assert launch.select_devices(None, 2) == (None, None)
    assert launch.select_devices("2,3,5", 2) == ("localhost:2,3", "")
    assert launch.select_devices("0,1", 8) == (None, None)  # DRY_RUN GPUS=8 on a 2-GPU node
    assert launch.select_devices("GPU-abc,GPU-def", 1) == (None, "GPU-abc")
    with pytest.raises(ValueError, match="indices"):
        launch.select_devices("GPU-abc,GPU-def", 2)


def test_hostfile_parsing():
    assert launch.parse_hostfile("# nodes\nn1 slots=8\n\nn2 slots = 4 # spare\n") == [("n1", 8), ("n2", 4)]
    for bad in ("n1", "n1 slots=0", "n1 gpus=8", ""):
        with pytest.raises(ValueError):
            launch.parse_hostfile(bad)


def test_gpus_above_visible_is_refused_only_where_it_can_be_checked():
    assert "only 2 GPU" in launch.gpus_problem(8, 2, dry_run=False, multi_node=False, cpu_count=2)
    assert launch.gpus_problem(8, 2, dry_run=True, multi_node=False, cpu_count=2) is None
    assert launch.gpus_problem(8, 2, dry_run=False, multi_node=True, cpu_count=2) is None
    assert launch.gpus_problem(2, 0, dry_run=False, multi_node=False, cpu_count=2) is None  # CPU ranks
    assert launch.gpus_problem(1000, 0, dry_run=False, multi_node=False, cpu_count=2) == \
        "GPUS=1000: no GPU here, so 1000 CPU ranks, on 2 cores; use at most 2"
    assert launch.gpus_problem(2, 2, dry_run=False, multi_node=False, cpu_count=2) is None


def test_resume_skips_summaries_of_the_same_run_identity():
    config = {"MODEL": "m", "STEPS": 10, "WARMUP_STEPS": 2, "SEQ_LEN": [1], "OUTPUT": "a", "NOTES": "x"}
    recs = [{"kind": "header", "run_id": "a", "config": config},
            {"kind": "summary", "run_id": "a", "seq_len": 8192},
            {"kind": "header", "run_id": "b", "config": {**config, "STEPS": 1, "WARMUP_STEPS": 0}},  # a probe
            {"kind": "summary", "run_id": "b", "seq_len": 32768},
            {"kind": "header", "run_id": "c", "config": {**config, "MODEL": "other"}},
            {"kind": "summary", "run_id": "c", "seq_len": 65536},
            {"kind": "header", "run_id": "d", "config": {**config, "SEED": 3, "STEPS": 5}},  # same workload
            {"kind": "summary", "run_id": "d", "seq_len": 16384},
            {"kind": "summary", "run_id": "gone", "seq_len": 4096}]  # its header was lost
    now = {**config, "SEQ_LEN": [8192, 32768], "OUTPUT": "b", "NOTES": ""}
    asked = [4096, 8192, 16384, 32768, 65536]
    assert set(sweep_plan.done_summaries(recs, now, asked)) == {8192, 16384}
    assert set(sweep_plan.done_summaries(recs, now, [8192])) == {8192}  # only lengths asked for
    assert sweep_plan.pending([65536, 8192, 32768, 8192], {8192: {}}) == [32768, 65536]
    assert sweep_plan.process_plan([1, 2], reuse=True) == [[1, 2]]
    assert sweep_plan.process_plan([1, 2], reuse=False) == [[1], [2]]


def test_with_decompose_a_point_is_done_only_with_its_decomposition():
    # run_node's decomposition step is a sweep with DECOMPOSE=N, which the run identity ignores:
    # 128 stopped between its summary and its decomposition, or a sweep without DECOMPOSE ran it
    recs = [{"kind": "header", "run_id": "a", "config": {"MODEL": "m", "DECOMPOSE": 3}},
            {"kind": "summary", "run_id": "a", "seq_len": 64}, {"kind": "decomposition", "run_id": "a", "seq_len": 64},
            {"kind": "summary", "run_id": "a", "seq_len": 128}]
    assert set(sweep_plan.done_summaries(recs, {"MODEL": "m"}, [64, 128])) == {64, 128}
    assert set(sweep_plan.done_summaries(recs, {"MODEL": "m"}, [64, 128], decomposed=True)) == {64}


def test_output_file_naming(tmp_path):
    names = ["nvidia-h200_fa4_20260101-000000.jsonl", "nvidia-h200_fa4_20260102-000000.jsonl",
             "nvidia-b200_fa4_20260103-000000.jsonl"]
    new = sweep_plan.resolve_out("", str(tmp_path), "nvidia-h200", "fa4", "20260105-120000", False, names)
    assert new == str(tmp_path / "nvidia-h200_fa4_20260105-120000.jsonl")
    resumed = sweep_plan.resolve_out("", str(tmp_path), "nvidia-h200", "fa4", "20260105-120000", True, names)
    assert resumed == str(tmp_path / "nvidia-h200_fa4_20260102-000000.jsonl")
    assert sweep_plan.resolve_out(str(tmp_path / "x.jsonl"), "r", "g", "b", "t", True, names) == str(tmp_path / "x.jsonl")
    assert sweep_plan.slug("NVIDIA H200") == "nvidia-h200" and sweep_plan.slug(None) == "cpu"


# ---------------------------------------------------------------- the GPUs, from NVML

class FakeNvml:
    """pynvml's calls the device probe makes, over two H200s."""
    class NVMLError(Exception):
        pass

    nvmlMemory_v2 = 2
    uuids = ["GPU-aaa", "GPU-bbb"]

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return len(self.uuids)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid not in self.uuids:
            raise self.NVMLError("not found")
        return self.uuids.index(uuid)

    def nvmlDeviceGetName(self, handle):
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        assert version == self.nvmlMemory_v2  # v1 has no `reserved`
        return types.SimpleNamespace(total=150_754_820_096, reserved=645_922_816)

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return 9, 0


@pytest.mark.parametrize("visible, count", [(None, 2), ("1", 1), ("GPU-bbb,0", 2), ("", 0), ("-1", 0),
                                            ("0,7,1", 1), ("GPU-zzz", 0)])
def test_visible_gpus_follow_cuda_visible_devices(visible, count):
    environ = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
    seen = devices.visible_gpus(environ, FakeNvml())
    assert len(seen) == count
    assert all(g == devices.Gpu("NVIDIA H200", 139.8, (9, 0)) for g in seen)
    hardware = devices.hardware(seen)
    assert (hardware["gpu_count"], hardware["gpu_name"]) == (count, "NVIDIA H200" if count else None)


def test_without_nvml_no_gpu_is_seen():
    class Missing(FakeNvml):
        def nvmlInit(self):
            raise OSError("NVML Shared Library Not Found")

    assert devices.visible_gpus({}, Missing()) == []
    assert devices.hardware([])["compute_capability"] is None


# ---------------------------------------------------------------- planning a run

def test_a_cpu_sweep_writes_under_the_ignored_folder_unless_out_says(environ, tmp_path):
    plan = plan_of(environ, SEQLENS=64, MODEL="tiny")
    assert Path(plan.out).parent == REPO / sweep_plan.CPU_OUT
    assert Path(plan.out).name.startswith("cpu_sdpa_") and plan.log_path.endswith(".log")
    assert plan.gpus == 1 and plan.hardware["gpu_name"] is None
    assert plan.config["USE_LIGER"] is False and plan.config["world_size"] == 1
    assert "no GPU: USE_LIGER=auto resolved to off" in plan.warnings
    assert plan_of(environ, OUT=f"{tmp_path}/").out.startswith(f"{tmp_path}/cpu_sdpa_")
    environ.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))])
    on_gpu = plan_of(environ, OUT="", USE_LIGER="0", ATTN_BACKEND="sdpa")
    assert Path(on_gpu.out).parent == REPO / "results" and Path(on_gpu.out).name.startswith("nvidia-h200_sdpa_")
    assert on_gpu.resolved.peak_tflops == 989 and on_gpu.hardware["hbm_gib"] == 139.8


def test_the_cpu_sweep_install_sh_suggests_is_the_tiny_model_into_the_ignored_folder(environ):
    line = next(line.strip() for line in (REPO / "install.sh").read_text().splitlines()
                if line.strip().startswith("tiny_sweep="))
    *assignments, command = shlex.split(shlex.split(line.split("=", 1)[1])[0])
    assert command == "./run_sweep.sh"
    plan = plan_of(environ, **dict(a.split("=", 1) for a in assignments))
    assert plan.s.MODEL == "tiny" and plan.s.SEQLENS == [64, 128]
    assert Path(plan.out).parent == REPO / sweep_plan.CPU_OUT


def test_dry_run_eight_gpus_on_a_smaller_machine(environ, tmp_path):
    # By default each length is a fresh process, as a training job starts (its peak memory
    # would otherwise depend on the lengths before it).
    lines = dry_run(environ, GPUS=8, SEQLENS="8192 32768", OUT=tmp_path / "x.jsonl")
    assert [line.split()[0] for line in lines] == ["SEQ_LEN=8192", "SEQ_LEN=32768"]  # one per point
    assert all("deepspeed.launcher.runner --num_gpus 8 --master_port" in line for line in lines)
    capacity = dry_run(environ, GPUS=8, FIND_MAX_SEQLEN=1, SEQLENS=131072, OUT=tmp_path / "c.jsonl")
    *probes, last = capacity
    assert [line.split()[0] for line in probes] == [
        "SEQ_LEN=131072", "SEQ_LEN=262144", "SEQ_LEN=524288", "SEQ_LEN=1048576"]
    assert all("STEPS=1 WARMUP_STEPS=0" in line for line in probes)
    assert last == "# the ladder stops at its first length that does not fit; later probes depend on where that is"
    one = dry_run(environ, GPUS=8, FIND_MAX_SEQLEN=1, REUSE_PROCESS=1, SEQLENS=131072, OUT=tmp_path / "c.jsonl")
    assert one[0].startswith("SEQ_LEN='131072 262144 524288 1048576' OUTPUT=")
    [shared] = dry_run(environ, GPUS=8, FIND_MAX_SEQLEN=0, REUSE_PROCESS=1, SEQLENS="8192 32768",
                       OUT=tmp_path / "x.jsonl")
    assert shared.startswith("SEQ_LEN='8192 32768' OUTPUT=")
    assert not list(tmp_path.iterdir())


def test_dry_run_eight_gpu_decomposition_at_the_right_sized_8k(environ, tmp_path):
    # The guide's decomposition on a full node, as issue 9 plans it: same launcher path.
    [line] = dry_run(environ, GPUS=8, SEQLENS=8192, BENCHMARK="bench_decompose.py", ZERO_STAGE=2,
                     OFFLOAD_OPTIMIZER=0, GRAD_CHECKPOINT=0, OUT=tmp_path / "d.jsonl")
    assert "ZERO_STAGE=2 OFFLOAD_OPTIMIZER=0 GRAD_CHECKPOINT=0 SEQ_LEN=8192" in line
    port = line.split("--master_port ")[1].split()[0]
    assert line.endswith(f"--num_gpus 8 --master_port {port} {REPO / 'bench_decompose.py'}")


def test_dry_run_multi_node_prints_the_launcher_command_and_runs_nothing(environ, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 slots=8\nnode2 slots=8  # second node\n")
    out = tmp_path / "mn.jsonl"
    environ.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    line, *shown_env = dry_run(environ, GPUS=8, HOSTFILE=hostfile, MASTER_ADDR="node1", MASTER_PORT=29555,
                               SEQLENS="32768 8192", OUT=out, STEPS=3, ZERO_STAGE=3, REUSE_PROCESS=1)
    assert f"-m deepspeed.launcher.runner --hostfile {hostfile} --master_addr node1 --num_gpus 8 " \
           f"--master_port 29555 {REPO / 'benchmark.py'}" in line
    assert line.startswith("STEPS=3 ZERO_STAGE=3 SEQ_LEN='8192 32768' OUTPUT=")
    # Other nodes get the variables through DeepSpeed's env file, not the inherited environment;
    # a dry run shows its lines and writes no file.
    assert "DS_ENV_FILE='(a temporary file of the lines below)'" in line
    lines = [shown.removeprefix("#   ") for shown in shown_env]
    assert {"STEPS=3", "ZERO_STAGE=3", "SEQ_LEN=8192 32768", f"OUTPUT={out}",
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"} <= set(lines)
    assert not out.exists() and list(tmp_path.iterdir()) == [hostfile]
    plan = plan_of(environ, OUT="")
    assert plan.multi_node and plan.config["world_size"] == 16  # what the benchmark's header will say
    assert Path(plan.out).parent == REPO / "results"  # the GPUs are on the hosts, not here


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("env, names", [
    ({"SEQLENS": "8192 abc"}, "SEQLENS"),
    ({"SEQLENS": "0"}, "SEQLENS"),
    ({"SEQLENS": "-8192"}, "SEQLENS"),
    ({"ZERO_STAGE": "4"}, "ZERO_STAGE"),
    ({"SEQ_LEN": "8192"}, "SEQLENS"),
    ({"OUTPUT": "x.jsonl"}, "OUT"),
    ({"FIND_MAX_SEQLEN": "1", "MAX_SEQLEN_LIMIT": "1"}, "MAX_SEQLEN_LIMIT=1: below SEQLEN_STEP (8192) or the "
                                                        "smallest SEQLENS (8192)"),
    ({"FIND_MAX_SEQLEN": "1", "DECOMPOSE": "3"}, "DECOMPOSE=3 with FIND_MAX_SEQLEN=1: a capacity probe"),
    ({"HOSTFILE": "/nonexistent/hosts"}, "HOSTFILE"),
    ({"HOSTFILE": "HOSTS"}, "HOSTFILE='HOSTS'"),
    ({"BENCHMARK": "nope.py"}, "BENCHMARK"),
    ({"BENCHMARK": "/bin/sh"}, "BENCHMARK='/bin/sh': not a Python script (.py)"),
    ({"OUT": "FILE/sub/out.jsonl"}, "OUT"),
    ({"OUT": "/proc/sweep.jsonl"}, "OUT='/proc/sweep.jsonl': cannot write there (no file can be created in /proc"),
    ({"OUT": "/proc/"}, "cannot write there (no file can be created in /proc"),
    ({"USE_LIGER": "1"}, "USE_LIGER=1"),
    ({"ATTN_BACKEND": "fa3"}, "ATTN_BACKEND=fa3 needs a CUDA GPU"),
    ({"CUDA_VISIBLE_DEVICES": "GPU-a,GPU-b", "GPUS": "2"}, "CUDA_VISIBLE_DEVICES"),
])
def test_bad_input_is_one_line_before_anything_starts(environ, tmp_path, env, names):
    (tmp_path / "FILE").write_text("a file, not a folder")
    (tmp_path / "HOSTS").write_text("node1 gpus=8\n")
    environ.chdir(tmp_path)
    with pytest.raises(BadInput) as err:
        plan_of(environ, **{"OUT": tmp_path / "o.jsonl", **{k: v.replace("FILE", str(tmp_path / "FILE"))
                                                          for k, v in env.items()}})
    assert names in str(err.value) and "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == [tmp_path / "FILE", tmp_path / "HOSTS"]


def test_a_config_no_model_has_is_one_line_before_any_process(environ, tmp_path):
    # issue 38: a million layers printed nothing for minutes (each layer tested against the list)
    import json

    config = {**json.loads((REPO / "configs" / "tiny.json").read_text()), "num_hidden_layers": 10**6}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(BadInput, match=r"^MODEL='.*': num_hidden_layers=1000000: no model has more than 4096 layers$"):
        plan_of(environ, MODEL=tmp_path, OUT=tmp_path / "o.jsonl", DRY_RUN=1)


def test_gpus_above_what_this_node_sees(environ, tmp_path):
    environ.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))] * 2)
    with pytest.raises(BadInput, match="GPUS=8: only 2 GPU"):
        plan_of(environ, GPUS=8, USE_LIGER=0, OUT=tmp_path / "o.jsonl")
    assert plan_of(environ, DRY_RUN=1).gpus == 8  # a dry run for a bigger node


def test_a_capacity_search_with_nothing_to_search_is_refused_and_a_sweep_ignores_the_limit(environ):
    environ.setenv("MAX_SEQLEN_LIMIT", "8192")
    environ.setenv("FIND_MAX_SEQLEN", "1")
    assert sweep_plan.load_settings([], "doc").MAX_SEQLEN_LIMIT == 8192  # one probe is a search
    environ.setenv("FIND_MAX_SEQLEN", "0")
    environ.setenv("MAX_SEQLEN_LIMIT", "1")
    assert sweep_plan.load_settings([], "doc").MAX_SEQLEN_LIMIT == 1


# ---------------------------------------------------------------- the script

def test_run_sweep_sh_dry_run_prints_commands_and_imports_no_torch(tmp_path):
    # As run_sweep.sh runs it, plus a look at what planning imported.
    # One GPU and SDPA: the same command on any machine, and no flash package to import; a
    # low precision's library is looked for in its file list, not imported (torchao imports torch).
    run = {"DRY_RUN": "1", "SEQLENS": "64 128", "OUT": str(tmp_path / "o.jsonl"), "GPUS": "1",
           "ATTN_BACKEND": "sdpa", "REUSE_PROCESS": "1", "PRECISION": "fp8-tensorwise"}
    code = ("import sys; from upgrade_bench.sweep import runner; code = runner.main(); "
            "sys.stderr.write(f'imported: {sorted(m for m in (\"torch\", \"transformers\") if m in sys.modules)}\\n'); "
            "sys.exit(code)")
    proc = run_proc([sys.executable, "-c", code], run, timeout=60, cleared=SWEEP_CLEARED)
    assert proc.returncode == 0, proc.stderr
    [line] = proc.stdout.splitlines()
    assert line.startswith("PRECISION=fp8-tensorwise ATTN_BACKEND=sdpa SEQ_LEN='64 128' OUTPUT=")
    assert line.endswith(f"-u {REPO / 'benchmark.py'}")
    assert proc.stderr.splitlines()[-1] == "imported: []"
    assert not list(tmp_path.iterdir())


def test_bad_input_in_a_real_process_is_one_line_exit_2(tmp_path):
    proc = run_proc([str(REPO / "run_sweep.sh")], {"SEQLENS": "8192 abc", "OUT": str(tmp_path / "o.jsonl")},
                    timeout=60, cleared=SWEEP_CLEARED)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["error: SEQLENS='8192 abc': expected space- or comma-separated "
                                        "integers >= 1 and <= 2147483647"]
    assert not list(tmp_path.iterdir())


def test_help_lists_the_sweep_and_benchmark_variables(capsys):
    with pytest.raises(SystemExit) as done:
        sweep_plan.load_settings(["--help"], "the doc")
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith("the doc")
    for name in ("SEQLENS", "POINT_TIMEOUT", "FIND_MAX_SEQLEN", "HOSTFILE", "ZERO_STAGE", "MODEL"):
        assert f"  {name} " in out
    assert "  SEQ_LEN " not in out and "  OUTPUT " not in out
    assert "default: benchmark.py]" in out  # no machine's path


def test_the_plan_names_the_backend_the_models_family_trains_with(environ, tmp_path):
    # gpt-oss: transformers refuses SDPA (its sinks), and flex needs a GPU: the children train
    # eager, and the file name, the sweep's header and RESUME must say so too
    plan = plan_of(environ, MODEL="tiny-gpt-oss", OUT=tmp_path, DRY_RUN=1)
    assert plan.backend == "eager" and "_eager_" in plan.out
    assert plan_of(environ, MODEL="tiny", OUT=tmp_path, DRY_RUN=1).backend == "sdpa"
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=sdpa: transformers has no SDPA path for its sinks"):
        plan_of(environ, MODEL="tiny-gpt-oss", ATTN_BACKEND="sdpa", OUT=tmp_path, DRY_RUN=1)


def test_a_models_type_is_read_without_transformers(tmp_path):
    from upgrade_bench.models import model

    assert model.cheap_model_type("gpt-oss-20b") == "gpt_oss"  # a preset
    (tmp_path / "config.json").write_text('{"model_type": "qwen3_next"}')
    assert model.cheap_model_type(str(tmp_path)) == "qwen3_next"  # a folder
    (tmp_path / "config.json").write_text('["not", "an", "object"]')
    with pytest.raises(BadInput, match=r"^MODEL='.*': a JSON array \(\['not', 'an', 'object'\]\), not the JSON object"):
        model.cheap_model_type(str(tmp_path))
    assert model.cheap_model_type("no-such-org/no-such-model") is None  # not cached: the child says
