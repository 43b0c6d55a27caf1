"""Model families through benchmark.py for real, on CPU with tiny presets: the records carry the
family's layer mix, FLOPs counted its way, and a step decomposition with its linear mixers and
MoE routing apart.

A process costs ~12 s of imports and the suite has 2 minutes, so one process on the one preset
that has every new part (MoE, linear attention, full attention): the tiny Qwen3-Next, with
DECOMPOSE=1 (bench_decompose.py's profiled split of the step just timed, in the same process;
bench_decompose.py itself runs end to end in test_bench_decompose); benchmark.py also on the
tiny Granite 4.0-H, whose Mamba-2 layers transformers builds and runs its own way (mixer kernels
read from module globals, all or none). Every family's model runs fwd+bwd in-process in
test_flops (against torch's FLOP counter); gpt-oss's attention backend rule is checked
in-process below."""
import pytest

from conftest import TINY_FAST, run_script
from upgrade_bench.training import run_config, variables
from upgrade_bench.models import flops, model
from upgrade_bench import settings
from upgrade_bench.faults import BadInput

PRESET, LAYER_MIX = "tiny-qwen3-next", {"linear_attention": 3, "full_attention": 1}


@pytest.fixture(scope="module")
def hybrid_moe():
    code, recs, err = run_script("benchmark.py", {**TINY_FAST, "MODEL": PRESET, "STEPS": "1", "DECOMPOSE": "1"})
    assert code == 0, err
    return recs


def assert_counted_its_way(header: dict, summary: dict, preset: str, layer_mix: dict) -> None:
    """The run's header names the preset's layer mix and its summary the FLOPs of its family's count."""
    assert header["layer_mix"] == layer_mix and summary["kind"] == "summary"
    expected = flops.step_flops(model.spec(model.load_config(preset)), 1, 64)
    assert summary["model_tflop_per_step"] == pytest.approx(expected.model / 1e12)
    assert summary["attn_flop_share"] == pytest.approx(expected.attn_share)


@pytest.mark.xdist_group("families_hybrid_moe")
def test_benchmark_runs_each_new_path(hybrid_moe):
    header, summary = hybrid_moe[0], next(r for r in hybrid_moe if r["kind"] == "summary")
    assert_counted_its_way(header, summary, PRESET, LAYER_MIX)
    assert header["attn_backend"] == "sdpa"


def test_benchmark_runs_the_mamba2_hybrid():
    preset = "tiny-granite-hybrid"  # Mamba-2 + MoE
    code, recs, err = run_script("benchmark.py", {**TINY_FAST, "MODEL": preset, "STEPS": "1"})
    assert code == 0, err
    assert_counted_its_way(recs[0], recs[-1], preset, {"mamba2": 3, "full_attention": 1})


def test_gpt_oss_takes_eager_under_auto_on_cpu_and_refuses_sdpa_by_name():
    # transformers has no SDPA path for gpt-oss's sinks: auto passes it over; on CPU neither
    # FA4 nor flex runs, so eager, and the header's why says each step.
    base = {**TINY_FAST, "MODEL": "tiny-gpt-oss"}
    rc = run_config.resolve_here(settings.parse(variables.TRAINING_VARS, base))
    assert rc.resolved.backend == "eager"
    assert rc.resolved.backend_why == (
        "auto on cpu: eager (fa3 is refused: transformers would swap in the hub kernel kernels-community/"
        "vllm-flash-attn3 for its sinks (model type 'gpt_oss'); fa4 needs a CUDA GPU; sdpa is refused: "
        "transformers has no SDPA path for its sinks (model type 'gpt_oss'); flex needs a CUDA GPU)")
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=sdpa: transformers has no SDPA path for its sinks \(model "
                                       r"type 'gpt_oss'\); here use eager$"):
        run_config.resolve_here(settings.parse(variables.TRAINING_VARS, {**base, "ATTN_BACKEND": "sdpa"}))


@pytest.mark.xdist_group("families_hybrid_moe")
def test_the_hybrid_moe_step_decomposes_with_its_linear_mixers_and_routing(hybrid_moe):
    rec = hybrid_moe[-1]  # linear_mixer FLOPs and the MoE routing part in one run
    assert rec["kind"] == "decomposition" and set(rec["buckets"]) == {"attention", "linear_mixer", "gemm", "other"}
    spec = model.spec(model.load_config(PRESET))
    assert rec["buckets"]["linear_mixer"]["tflop"] == pytest.approx(flops.step_flops(spec, 1, 64).linear / 1e12)
    assert rec["buckets"]["other"]["moe_routing"]["ms"] > 0  # the router's aten::topk


def test_packed_documents_warn_where_a_linear_mixers_state_crosses_them():
    base = {**TINY_FAST, "SEQ_LEN": "64", "PACKED_DOC_LEN": "16"}
    warned = [w for w in run_config.resolve_here(settings.parse(variables.TRAINING_VARS, {**base, "MODEL": PRESET})).warnings
              if w.startswith("PACKED_DOC_LEN=16: ")]
    assert warned == ["PACKED_DOC_LEN=16: documents are told apart by position_ids, which attention reads; the "
                      "3 linear_attention layers get no document boundaries from transformers, so their state "
                      "runs across documents (step time and FLOPs as timed, not a separated run)"]
    dense = run_config.resolve_here(settings.parse(variables.TRAINING_VARS, {**base, "MODEL": "tiny"}))
    assert not any(w.startswith("PACKED_DOC_LEN") for w in dense.warnings)
