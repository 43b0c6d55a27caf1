"""Model families through benchmark.py and bench_decompose.py for real, on CPU with tiny
presets: the records carry the family's layer mix and FLOPs counted its way.

One family per new code path (a process costs ~6 s of imports, and the suite has 2 minutes):
MoE with hybrid linear attention (qwen3_next, also through bench_decompose) and MoE with
windows and sinks on eager attention (gpt_oss). Qwen3-MoE, Gemma 3 and DeepSeek-V3 differ
from these only in what architecture.describe reads, which test_flops checks against torch's
counter."""
import pytest

from conftest import TINY_FAST, run_script
from upgrade_bench import flops, model

FAMILIES = {"tiny-gpt-oss": {"sliding_attention": 1, "full_attention": 1},
            "tiny-qwen3-next": {"linear_attention": 3, "full_attention": 1}}


@pytest.mark.parametrize("preset", FAMILIES)
def test_benchmark_runs_each_new_path(preset):
    code, recs, err = run_script("benchmark.py", {**TINY_FAST, "MODEL": preset, "STEPS": "1"})
    assert code == 0, err
    header, summary = recs[0], recs[-1]
    assert header["layer_mix"] == FAMILIES[preset] and summary["kind"] == "summary"
    expected = flops.step_flops(model.spec(model.load_config(preset)), 1, 64)
    assert summary["model_tflop_per_step"] == pytest.approx(expected.model / 1e12)
    assert summary["attn_flop_share"] == pytest.approx(expected.attn_share)
    # gpt-oss has no SDPA path in transformers: auto takes eager and says why.
    assert header["attn_backend"] == ("eager" if preset == "tiny-gpt-oss" else "sdpa")


def test_bench_decompose_runs_the_hybrid_moe():
    preset = "tiny-qwen3-next"  # linear_mixer FLOPs and the MoE routing part in one run
    code, recs, err = run_script("bench_decompose.py", {**TINY_FAST, "MODEL": preset, "TIME_STEPS": "1",
                                                          "PROFILE_STEPS": "1", "WARMUP_STEPS": "0"})
    assert code == 0, err
    rec = recs[-1]
    assert rec["kind"] == "decomposition" and set(rec["buckets"]) == {"attention", "linear_mixer", "gemm", "other"}
    spec = model.spec(model.load_config(preset))
    assert rec["buckets"]["linear_mixer"]["tflop"] == pytest.approx(flops.step_flops(spec, 1, 64).linear / 1e12)
    assert "moe_routing" in rec["buckets"]["other"]
