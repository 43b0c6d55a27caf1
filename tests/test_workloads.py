"""Named workloads (training/workloads.py): each row parses and plans as its own settings, a
setting set explicitly wins, `auto` picks by the GPUs, and the name reaches each process and header."""
import pytest

from upgrade_bench import settings
from upgrade_bench.faults import BadInput
from upgrade_bench.hardware import devices
from upgrade_bench.models import model
from upgrade_bench.sweep import plan as sweep_plan
from upgrade_bench.training import variables, workloads


@pytest.mark.parametrize("name", list(workloads.WORKLOADS))
def test_every_row_is_settings_the_sweep_takes_and_a_model_at_hand(name):
    row = workloads.WORKLOADS[name]
    table = sweep_plan.VARS + sweep_plan.PASSED
    s = settings.parse(table, {"WORKLOAD": name})
    known = {v.name for v in table}
    assert set(row.settings) <= known  # no key is a setting no script has
    for key, raw in row.settings.items():
        var = next(v for v in table if v.name == key)
        assert getattr(s, key) == settings.parse_value(var, raw)
    assert model.cheap_problem(s.MODEL) is None and row.doc


def test_a_setting_set_explicitly_wins_over_the_workloads():
    s = settings.parse(variables.TRAINING_VARS, {"WORKLOAD": "right-sized-8b", "NUM_LAYERS": "4"})
    assert (s.NUM_LAYERS, s.ZERO_STAGE, s.OFFLOAD_OPTIMIZER, s.GRAD_CHECKPOINT) == (4, 2, False, False)
    none = settings.parse(variables.TRAINING_VARS, {})
    assert (none.WORKLOAD, none.NUM_LAYERS, none.ZERO_STAGE, none.OFFLOAD_OPTIMIZER) == ("none", 0, 3, True)
    with pytest.raises(BadInput, match="WORKLOAD='right-sized': expected one of"):
        settings.parse(variables.TRAINING_VARS, {"WORKLOAD": "right-sized"})


def test_auto_runs_the_right_sized_cut_on_fewer_gpus_than_the_guides_configuration():
    assert [workloads.auto_name(n) for n in (0, 1, 4, 7, 8, 16)] == [
        "none", "right-sized-8b", "right-sized-8b", "right-sized-8b", "guide-long-context", "guide-long-context"]
    assert workloads.auto_name(1, model_set=True) == "none"  # MODEL set: that model with each setting's default


def test_the_sweep_resolves_auto_and_passes_the_name_to_each_process(monkeypatch):
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))])
    for name in [v.name for v in sweep_plan.VARS + sweep_plan.PASSED]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DRY_RUN", "1")
    monkeypatch.setenv("ATTN_BACKEND", "sdpa")
    s = sweep_plan.load_settings([], "")
    assert (s.WORKLOAD, s.NUM_LAYERS, s.SEQLENS) == ("right-sized-8b", 8, [8192, 32768])
    plan = sweep_plan.prepare(s)
    env, _, _ = plan.command([8192], False)
    assert env["WORKLOAD"] == "right-sized-8b"
    assert "WORKLOAD" not in plan.config or plan.config["WORKLOAD"] == "right-sized-8b"
    monkeypatch.setenv("GPUS", "8")
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [devices.Gpu("NVIDIA H200", 139.8, (9, 0))] * 8)
    assert sweep_plan.load_settings([], "").WORKLOAD == "guide-long-context"
