"""The attention backend table: the auto rule per GPU and vendor, explicit requests, and every
consumer (settings, the training step, the kernel benchmark, check_capabilities, the
README, install.sh) reading the same names."""
import re
import sys
import types

import pytest
import torch

from upgrade_bench import settings
from conftest import REPO, run_proc
from upgrade_bench.kernels.attention import adapters as attn_adapters, backends as attn_backends
from upgrade_bench.training import variables
from upgrade_bench.kernels.attention.backends import BACKENDS, KERNELS, TRAINING, resolve
from upgrade_bench.faults import BadInput
from upgrade_bench.hardware import fingerprint
from upgrade_bench.hardware.fingerprint import Device
from upgrade_bench.kernels.attention import main as bench_flash_attn
from upgrade_bench.capability import main as capabilities

ALL = set(TRAINING)
HOPPER, BLACKWELL, AMPERE, CPU = Device((9, 0)), Device((10, 0)), Device((8, 0)), Device(None)
MI300X = Device((9, 4), is_hip=True)  # gfx942: ROCm's (9, 4) is no Hopper
MI250X = Device((9, 0), is_hip=True)  # gfx90a: nor is ROCm's (9, 0)


@pytest.mark.parametrize("device, installed, expected", [
    (HOPPER, ALL, "fa3"),
    (HOPPER, {"fa4", "sdpa", "eager"}, "fa4"),
    (HOPPER, {"sdpa", "eager"}, "sdpa"),
    (BLACKWELL, ALL, "fa4"),
    (BLACKWELL, {"fa3", "sdpa", "eager"}, "sdpa"),
    (Device((12, 0)), ALL, "sdpa"),  # consumer Blackwell: no FA4 path
    (AMPERE, ALL, "sdpa"),
    (CPU, ALL, "sdpa"),
    (MI300X, ALL, "sdpa"),
    (MI250X, ALL, "sdpa"),
])
def test_auto_rule_per_gpu_and_vendor(device, installed, expected):
    assert resolve("auto", device, installed)[0] == expected


def test_auto_says_what_it_passed_over():
    assert resolve("auto", HOPPER, ALL) == ("fa3", "auto on sm_90: fa3")
    assert resolve("auto", BLACKWELL, {"sdpa", "eager"}) == (
        "sdpa", "auto on sm_100: sdpa (fa3 does not run on sm_100: FA3 runs on Hopper (sm_90) only; "
                "fa4 is not installed)")
    assert resolve("auto", MI300X, ALL)[1].startswith("auto on gfx94: sdpa (fa3 does not run on AMD GPUs")


def test_an_explicit_backend_that_cannot_run_fails_with_the_reason_or_the_install_hint():
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa4 is not installed: .*install.sh --force fa4$"):
        resolve("fa4", HOPPER, {"sdpa", "eager"})
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa3 needs a CUDA GPU; on CPU use sdpa or eager$"):
        resolve("fa3", CPU, ALL)
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa3 does not run on sm_100: .*Hopper"):
        resolve("fa3", BLACKWELL, ALL)
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa3 does not run on AMD GPUs \(gfx94, ROCm\)"):
        resolve("fa3", MI300X, ALL)
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa2 does not run on sm_75: FA2 needs Ampere"):
        resolve("fa2", Device((7, 5)), ALL)
    assert resolve("sdpa", CPU, {"sdpa"}) == ("sdpa", "requested")
    assert resolve("fa2", MI300X, ALL) == ("fa2", "requested")  # its ROCm build


def test_an_explicit_backend_imports_only_its_own_package(monkeypatch):
    checked = []
    monkeypatch.setattr(attn_backends, "import_problem", lambda b: checked.append(b.name))
    assert attn_backends.installed("sdpa") == {"sdpa"} and checked == ["sdpa"]
    checked.clear()
    assert attn_backends.installed("fa4") == {"fa4"} and checked == ["fa4"]
    checked.clear()
    assert attn_backends.installed() == {"fa3", "fa4", "sdpa", "flex", "eager"}
    assert checked == ["fa3", "fa4", "sdpa", "flex", "eager"]  # the auto candidates, then the family fallbacks


def test_a_package_of_the_wrong_release_or_that_fails_to_import_is_a_problem(monkeypatch):
    fa2 = BACKENDS["fa2"].package
    monkeypatch.setattr(attn_backends.fingerprint, "package_version", {"flash-attn": "1.0.9"}.get)
    assert attn_backends.package_problem(fa2).startswith("flash-attn 1.0.9 is not 2.x: install flash-attn 2.x")
    monkeypatch.setattr(attn_backends.fingerprint, "package_version", {"flash-attn": "2.8.3"}.get)

    def broken(module):
        raise OSError("libcudart.so.13: cannot open shared object file")

    monkeypatch.setattr(attn_backends.importlib, "import_module", broken)
    assert attn_backends.package_problem(fa2) == ("import flash_attn failed: OSError: libcudart.so.13: "
                                                  "cannot open shared object file")
    assert attn_backends.import_problem(BACKENDS["sdpa-math"]) is None


def test_the_flash_adapter_calls_the_packages_dense_and_varlen_api(monkeypatch):
    varlen = []
    package = types.SimpleNamespace(  # FA4 returns (out, lse); FA3 3.x returns out
        flash_attn_func=lambda q, k, v, causal: (q * 2 if causal else q, "lse"),
        flash_attn_varlen_func=lambda q, k, v, **kw: varlen.append((q.shape, kw)) or q + 1)
    monkeypatch.setitem(sys.modules, "fake_flash_attn", package)
    run = attn_adapters.flash("fake_flash_attn")
    q = torch.ones(2, 4, 3, 8)  # (b, s, h, d)
    assert torch.equal(run(q, q, q, attn_adapters.Args(causal=True)), q * 2)
    offsets = torch.tensor([0, 4, 8], dtype=torch.int32)
    out = run(q, q, q, attn_adapters.Args(causal=True, cu_seqlens=offsets, max_doc_len=4))
    assert torch.equal(out, q + 1)  # back in (b, s, h, d)
    [(shape, kw)] = varlen
    assert shape == (8, 3, 8) and kw == {"cu_seqlens_q": offsets, "cu_seqlens_k": offsets,
                                         "max_seqlen_q": 4, "max_seqlen_k": 4, "causal": True}


def test_flex_trains_on_a_gpu_only_and_never_under_auto():
    assert resolve("flex", HOPPER, {"flex"}) == ("flex", "requested")
    assert resolve("flex", AMPERE, {"flex"})[0] == "flex"
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=flex needs a CUDA GPU; on CPU use sdpa or eager$"):
        resolve("flex", CPU, ALL)
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=flex does not run on sm_75: FlexAttention's Triton"):
        resolve("flex", Device((7, 5)), ALL)
    assert attn_backends.installed("flex") == {"flex"}  # part of torch: nothing to install
    assert all(resolve("auto", d, ALL)[0] != "flex" for d in (HOPPER, BLACKWELL, AMPERE, CPU))


FLEX_SHAPES = {  # the check's shapes (attn_kernels.check_shape): tile edges off block boundaries
    "causal GQA": dict(causal=True),
    "packed documents": dict(causal=True, doc_len=200),
    "window and sinks": dict(causal=True, window=160, sinks=True),
    "documents, window and sinks": dict(causal=True, doc_len=200, window=160, sinks=True),
    "not causal": dict(causal=False),
    "MLA's value dim": dict(causal=True, v_head_dim=48),
}


@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")  # CPU: the reference, meant
@pytest.mark.parametrize("extra", FLEX_SHAPES.values(), ids=FLEX_SHAPES)
def test_flex_computes_the_models_mask_and_sinks(extra):
    """The BlockMask and the sink renormalisation against the float64 reference, forward: on CPU
    FlexAttention runs its unfused reference (no backward there; the GPU check covers it)."""
    from upgrade_bench.kernels.attention import kernels as attn_kernels

    shape = attn_kernels.AttentionShape(2, attn_kernels.CHECK_SEQ_LEN, 4, 2, 64, **extra)
    gen = torch.Generator().manual_seed(3)
    dims = [(4, 64), (2, 64), (2, shape.v_dim), (4, shape.v_dim)]
    q, k, v, dout = (torch.randn(2, shape.seq_len, h, d, generator=gen).bfloat16() for h, d in dims)
    ref, _ = attn_kernels.reference(q, k, v, dout, shape)
    flex = BACKENDS["flex"]
    args = attn_kernels.make_args(flex, shape, torch.bfloat16, "cpu", "native")
    out = flex.run(*(t.transpose(1, 2) for t in (q, k, v)), args).transpose(1, 2)
    error = (out.double() - ref).abs().max().item() / max(1.0, ref.abs().max().item())
    assert error < attn_kernels.TOLERANCE["bf16"]
    if extra.get("doc_len") or extra.get("window"):  # more blocks skipped than causality's alone
        causal = attn_kernels.block_mask(shape.seq_len, 0, True, 0, "cpu")
        assert args.block_mask.sparsity() > causal.sparsity() == 37.5  # 6 of 4 x 4 blocks


# ---- every consumer reads the table ---------------------------------------------------------

def test_training_names_are_settings_choices_and_transformers_implementations():
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    (var,) = [v for v in variables.TRAINING_VARS if v.name == "ATTN_BACKEND"]
    assert var.choices == ("auto", "fa3", "fa4", "fa2", "sdpa", "eager", "flex")
    assert list(TRAINING) == list(var.choices[1:])
    for backend in TRAINING.values():
        assert backend.hf_name == "eager" or backend.hf_name in ALL_ATTENTION_FUNCTIONS.valid_keys()
    assert "auto = the first of fa3 > fa4 > sdpa" in var.help


def test_kernel_names_are_the_benchmarks_and_the_capability_items():
    assert list(KERNELS) == ["fa3", "fa4", "fa2", "sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "sdpa-math",
                             "flex"]
    bench = bench_flash_attn
    bench.validate(settings.parse(bench.VARS, {"BACKENDS": " ".join(KERNELS), "PASSES": "fwd", "SEQLENS": "8"}),
                   KERNELS)
    (var,) = [v for v in bench.VARS if v.name == "BACKENDS"]
    assert var.help.endswith(" ".join(KERNELS))
    order = [b.name for b in capabilities.ATTENTION_ORDER]
    assert sorted(order) == sorted(KERNELS)
    assert order[:4] == ["sdpa-cudnn", "sdpa-flash", "sdpa-efficient", "sdpa-math"]  # torch's own first
    assert all(b.run and b.layout for b in KERNELS.values())


def test_each_family_refuses_the_backends_transformers_cannot_train_it_with():
    """Family.refuses against transformers' own flags, so a new release that adds or drops a
    path shows here: _supports_sdpa, _supports_flex_attn, and a flash backend outside a model's
    _compatible_flash_implementations (transformers would swap in another kernel)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from upgrade_bench.models import architecture

    for model_type, family in architecture.FAMILIES.items():
        cls = getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type])
        flash = cls._compatible_flash_implementations
        expected = {name for name, flag in (("sdpa", "_supports_sdpa"), ("flex", "_supports_flex_attn"))
                    if not getattr(cls, flag)} | {
            b.name for b in TRAINING.values() if b.hf_name.startswith("flash_attention")
            and (not cls._supports_flash_attn or (flash is not None and b.hf_name not in flash))}
        assert set(family.refuses) == expected, model_type
    assert set(architecture.FAMILIES["gpt_oss"].refuses) == {"sdpa", "fa3", "fa2"}
    assert set(architecture.FAMILIES["qwen3_next"].refuses) == {"flex"}


GPT_OSS = {"sdpa": "no SDPA path", "fa3": "a hub kernel", "fa2": "a hub kernel"}


@pytest.mark.parametrize("device, installed, expected", [
    (HOPPER, ALL, "fa4"),                 # FA3 refused: the next candidate
    (HOPPER, ALL - {"fa4"}, "flex"),      # every candidate refused or missing: the fallback
    (BLACKWELL, ALL, "fa4"),
    (AMPERE, ALL, "flex"),
    (Device((7, 5)), ALL, "eager"),       # no flex before sm_80
    (CPU, ALL, "eager"),
])
def test_auto_passes_over_what_the_family_refuses(device, installed, expected):
    assert resolve("auto", device, installed, GPT_OSS)[0] == expected


def test_a_refused_backend_by_name_says_why_and_what_else_trains_it():
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa3: a hub kernel; here use fa4, eager or flex$"):
        resolve("fa3", HOPPER, ALL, GPT_OSS)
    # on CPU only what runs there and the family takes: never a backend refused or GPU-only
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=sdpa: no SDPA path; here use eager$"):
        resolve("sdpa", CPU, ALL, GPT_OSS)
    with pytest.raises(BadInput, match=r"^ATTN_BACKEND=fa4 needs a CUDA GPU; on CPU use eager$"):
        resolve("fa4", CPU, ALL, GPT_OSS)
    assert resolve("fa4", HOPPER, ALL, GPT_OSS) == ("fa4", "requested")
    assert resolve("auto", HOPPER, ALL - {"fa4"}, GPT_OSS)[1] == (
        "auto on sm_90: flex (fa3 is refused: a hub kernel; fa4 is not installed; sdpa is refused: no SDPA path)")
    assert resolve("auto", HOPPER, ALL, {"flex": "no path"})[0] == "fa3"  # a refusal auto never reaches


def test_the_configuration_page_lists_the_tables_names():
    readme = (REPO / "docs" / "configuration.md").read_text()  # the README links it
    assert "one of auto\\|" + "\\|".join(TRAINING) + " |" in readme
    assert "a list of " + " ".join(KERNELS) + " |" in readme


def test_header_versions_name_each_backend_with_its_own_package(monkeypatch):
    installed = {"flash-attn-4": "4.0.0b36", "flash-attn": "2.8.3"}
    monkeypatch.setattr(fingerprint, "package_version", installed.get)
    assert attn_backends.versions() == {"fa3": None, "fa4": "4.0.0b36", "fa2": "2.8.3"}


# ---- install.sh -----------------------------------------------------------------------------

INSTALL_SH = (REPO / "install.sh").read_text()


def install_sh_choice(compute_capability: str) -> str:
    """install.sh's own line, run as it runs: the system Python, standard library only."""
    (code,) = re.findall(r"-E -S -c '([^']*install_choice[^']*)'", INSTALL_SH)
    done = run_proc([sys.executable, "-E", "-S", "-c", code, compute_capability], {}, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("compute_capability, package", [
    ("9.0", "fa3"), ("10.0", "fa4"), ("10.3", "fa4"), ("8.0", "none"), ("8.9", "none"), ("12.0", "none"),
])
def test_install_sh_installs_what_auto_picks(compute_capability, package):
    assert install_sh_choice(compute_capability) == package
    major, minor = map(int, compute_capability.split("."))
    picked = resolve("auto", Device((major, minor)), set(BACKENDS))[0]
    assert package == (picked if BACKENDS[picked].package else "none")


def test_install_sh_can_install_every_package_it_chooses_or_is_forced_to():
    forced = re.search(r'case "\$force" in ""\|([\w|]+)\)', INSTALL_SH).group(1).split("|")
    hinted = [b.name for b in BACKENDS.values() if b.package and "./install.sh --force" in b.package.install_hint]
    assert sorted(forced) == sorted(hinted + ["none"])
    for name in hinted:
        arm = re.search(rf"^  {name}\) .*?;;", INSTALL_SH, re.M | re.S).group(0)
        assert f'"{BACKENDS[name].package.distribution}' in arm
