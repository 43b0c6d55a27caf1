"""tools/titan_train.py, torchtitan's trainer on the suite's workload: its settings, its refusal
where torchtitan is not installed, and (where torchtitan 0.2.2 is installed) its command line
and the model it builds against the suite's own count of the same shapes. torchtitan trains on CUDA only: the runs are
the GPU machine's (tools/side_by_side.sh torchtitan)."""
import importlib.util
import json

import pytest

from conftest import REPO, import_script
from upgrade_bench.faults import BadInput
from upgrade_bench.models import architecture, cuts

tool = import_script("tools/titan_train.py")
HAS_TITAN = importlib.util.find_spec("torchtitan") is not None


def test_the_settings_take_the_suites_float8_precisions_and_refuse_the_rest():
    s = tool.workload({"PRECISION": "fp8-tensorwise", "NUM_LAYERS": "8"})
    assert (s.PRECISION, s.NUM_LAYERS, s.ATTN, s.COMPILE) == ("fp8-tensorwise", 8, "sdpa", True)
    with pytest.raises(BadInput, match=r"^PRECISION='mxfp8': expected one of bf16\|fp8-tensorwise\|fp8-rowwise"):
        tool.workload({"PRECISION": "mxfp8"})  # torchtitan's MX converter is another class: not wired here
    with pytest.raises(BadInput, match=r"^NUM_LAYERS='33': "):
        tool.workload({"NUM_LAYERS": "33"})


@pytest.mark.skipif(HAS_TITAN, reason="torchtitan is installed here")
def test_without_torchtitan_the_launcher_says_so_in_one_line(monkeypatch, capsys):
    for name in ("NUM_LAYERS", "PRECISION", "ATTN", "COMPILE"):
        monkeypatch.delenv(name, raising=False)
    assert tool.run_main(tool.main, []) == 2
    assert capsys.readouterr().err.startswith("error: torchtitan is not importable here")


@pytest.mark.skipif(not HAS_TITAN, reason="torchtitan 0.2.2 is not installed here (a GPU machine's package)")
def test_torchtitans_model_is_the_suites_model_and_its_command_line_the_workloads():
    import torch
    from torchtitan.config import ConfigManager

    s = tool.workload({"NUM_LAYERS": "2", "PRECISION": "fp8-tensorwise", "ATTN": "flex"})
    tool.stand_ins()
    spec = tool.train_spec(s)
    config = ConfigManager().parse_args(tool.arguments(s) + ["--training.seq_len", "8192"])
    assert (config.model.name, config.model.flavor, config.training.seq_len) == (tool.SPEC, tool.FLAVOR, 8192)
    assert config.training.local_batch_size == 1 and config.activation_checkpoint.mode == "none"
    assert config.compile.enable and config.metrics.log_freq == 1
    assert config.model.converters == ["quantize.linear.float8"]
    assert (config.quantize.linear.float8.recipe_name, config.quantize.linear.float8.filter_fqns) == (
        "tensorwise", ["output"])
    args = spec.model_args[tool.FLAVOR]
    args.update_from_config(config)
    assert (args.n_layers, args.attn_type, args.vocab_size) == (2, "flex", 128256)
    with torch.device("meta"):
        model = spec.model_cls(args)
    matrices = sum(p.numel() for p in model.parameters() if p.dim() == 2)
    norms = sum(p.numel() for p in model.parameters() if p.dim() == 1)
    suite = architecture.describe(cuts.cut(json.loads((REPO / "configs" / "llama-3.1-8b.json").read_text()), 2).config)
    assert matrices == suite.total_params  # 2 * 218,103,808 + 2 * 525,336,576
    assert norms == (2 * 2 + 1) * 4096
    tokenizer = spec.build_tokenizer_fn(config)
    loader = spec.build_dataloader_fn(dp_world_size=1, dp_rank=0, tokenizer=tokenizer, job_config=config)
    inputs, labels = next(iter(loader))
    assert inputs["input"].shape == labels.shape == (1, 8192)
    assert int(labels.max()) < tokenizer.eos_id == 128255  # one document: the end-of-sequence id never drawn
