"""tools/titan_train.py, torchtitan's trainer on the suite's workload: its settings, its refusal
where torchtitan is not installed, and (where torchtitan 0.3.0 is installed) the model it builds
against the suite's own count of the same shapes. torchtitan trains on CUDA only: the runs are
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
    assert (s.PRECISION, s.NUM_LAYERS, s.ATTN, s.COMPILE) == ("fp8-tensorwise", 8, "flex", True)
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


@pytest.mark.skipif(not HAS_TITAN, reason="torchtitan 0.3.0 is not installed here (a GPU machine's package)")
def test_torchtitans_model_is_the_suites_model(monkeypatch):
    import torch
    from torchtitan.config import ConfigManager

    monkeypatch.setenv("NUM_LAYERS", "2")
    monkeypatch.setenv("PRECISION", "bf16")
    monkeypatch.syspath_prepend(str(REPO / "tools"))
    tool.stand_ins()
    config = ConfigManager().parse_args(["--module", "titan_train", "--config", "suite_llama3",
                                         "--training.seq_len", "8192"])
    assert config.training.seq_len == 8192 and config.training.local_batch_size == 1
    assert config.activation_checkpoint is None and config.compile.enable
    with torch.device("meta"):
        model = config.model_spec.model.build()
    matrices = sum(p.numel() for p in model.parameters() if p.dim() == 2)
    norms = sum(p.numel() for p in model.parameters() if p.dim() == 1)
    suite = architecture.describe(cuts.cut(json.loads((REPO / "configs" / "llama-3.1-8b.json").read_text()), 2).config)
    assert matrices == suite.total_params  # 2 * 218,103,808 + 2 * 525,336,576
    assert norms == (2 * 2 + 1) * 4096
    loader = config.dataloader.build(dp_world_size=1, dp_rank=0, tokenizer=None, seq_len=16, local_batch_size=1)
    inputs, labels = next(iter(loader))
    assert inputs["input"].shape == labels.shape == (1, 16) and int(labels.max()) < 128256
    assert inputs["positions"].tolist() == [list(range(16))]
