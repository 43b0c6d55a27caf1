"""Model families through benchmark.py and bench_decompose.py for real, on CPU with tiny
presets: the records carry the family's layer mix and FLOPs counted its way.

A process costs ~6 s of imports and the suite has 2 minutes, so the scripts run on the one
preset that has every new part (MoE, linear attention, full attention): the tiny Qwen3-Next;
benchmark.py also on the tiny Granite 4.0-H, whose Mamba-2 layers transformers builds and
runs its own way (mixer kernels read from module globals, all or none).
Every family's model runs fwd+bwd in-process in test_flops (against torch's FLOP counter);
gpt-oss's attention backend rule is checked in-process below."""
import pytest

from conftest import TINY_FAST, run_script
from upgrade_bench.training import run_config, variables
from upgrade_bench.models import flops, model
from upgrade_bench import settings
from upgrade_bench.faults import BadInput

FAMILIES = {"tiny-qwen3-next": {"linear_attention": 3, "full_attention": 1},
            "tiny-granite-hybrid": {"mamba2": 3, "full_attention": 1}}  # Mamba-2 + MoE


@pytest.mark.parametrize("preset", FAMILIES)
def test_benchmark_runs_each_new_path(preset):
    code, recs, err = run_script("benchmark.py", {**TINY_FAST, "MODEL": preset, "STEPS": "1"})
    assert code == 0, err
    header, summary = recs[0], recs[-1]
    assert header["layer_mix"] == FAMILIES[preset] and summary["kind"] == "summary"
    expected = flops.step_flops(model.spec(model.load_config(preset)), 1, 64)
    assert summary["model_tflop_per_step"] == pytest.approx(expected.model / 1e12)
    assert summary["attn_flop_share"] == pytest.approx(expected.attn_share)
    assert header["attn_backend"] == "sdpa"


def test_gpt_oss_takes_eager_under_auto_and_refuses_sdpa_by_name():
    # transformers has no SDPA path for gpt-oss's sinks: auto takes eager and says why.
    base = {**TINY_FAST, "MODEL": "tiny-gpt-oss"}
    rc = run_config.resolve(settings.parse(variables.TRAINING_VARS, base))
    assert rc.backend == "eager" and "no sdpa path for 'gpt_oss'" in rc.backend_why
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=sdpa: transformers has no sdpa path for model "
                                       r"type 'gpt_oss'; use eager or a flash backend \(fa3, fa4\)$"):
        run_config.resolve(settings.parse(variables.TRAINING_VARS, {**base, "ATTN_BACKEND": "sdpa"}))


def test_bench_decompose_runs_the_hybrid_moe():
    preset = "tiny-qwen3-next"  # linear_mixer FLOPs and the MoE routing part in one run
    code, recs, err = run_script("bench_decompose.py", {**TINY_FAST, "MODEL": preset, "TIME_STEPS": "1",
                                                          "PROFILE_STEPS": "1", "WARMUP_STEPS": "0"})
    assert code == 0, err
    rec = recs[-1]
    assert rec["kind"] == "decomposition" and set(rec["buckets"]) == {"attention", "linear_mixer", "gemm", "other"}
    spec = model.spec(model.load_config(preset))
    assert rec["buckets"]["linear_mixer"]["tflop"] == pytest.approx(flops.step_flops(spec, 1, 64).linear / 1e12)
    assert rec["buckets"]["other"]["moe_routing"]["ms"] > 0  # the router's aten::topk
