"""Model configs before any work: sizes no model can have, architectures the FLOP count does
not cover, PACKED_DOC_LEN=1, and a hub id that is neither cached nor reachable; each refused
in one line (faults.BadInput -> exit 2)."""
import json
import socket

import pytest
import torch
from huggingface_hub import constants
from transformers import CONFIG_MAPPING, AutoConfig

from conftest import REPO
from upgrade_bench.training import engine, run_config, variables
from upgrade_bench.models import architecture, model
from upgrade_bench import settings
from upgrade_bench.faults import BadInput

TINY = json.loads((REPO / "configs" / "tiny.json").read_text())
PROXIES = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def training(**env) -> dict:
    base = {"MODEL": "tiny", "ZERO_STAGE": "2", "OFFLOAD_OPTIMIZER": "0", "SEQ_LEN": "64"}
    return settings.parse(variables.TRAINING_VARS, {**base, **{k: str(v) for k, v in env.items()}})


def saved(tmp_path, config: dict) -> str:
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


@pytest.mark.parametrize("changes, problem", [
    ({"num_hidden_layers": -1}, "num_hidden_layers=-1: expected an integer from 1 to 2147483647"),
    ({"hidden_size": 0}, "hidden_size=0: expected an integer from 1 to 2147483647"),
    ({"intermediate_size": 0}, "intermediate_size=0: expected an integer from 1 to 2147483647"),
    # hostile sizes: refused in a line, never counted for minutes or planned for 10^19 hours
    ({"num_hidden_layers": 10**6}, "num_hidden_layers=1000000: no model has more than 4096 layers"),
    ({"hidden_size": 10**200}, f"hidden_size={10**200}: expected an integer from 1 to 2147483647"),
    ({"model_type": "mistral", "sliding_window": 10**20},
     "sliding_window=100000000000000000000: expected an integer from 1 to 2147483647"),
    ({"hidden_size": 2**20, "intermediate_size": 2**24, "head_dim": 2**18},
     "1.12e+14 parameters: sizes no model has (at most 1e+14)"),  # 2 x (3 x 2^40 + 3 x 2^44)
    ({"num_key_value_heads": 3}, "num_attention_heads=4 is not a multiple of num_key_value_heads=3"),
])
def test_sizes_no_model_can_have_are_refused(tmp_path, changes, problem):
    path = saved(tmp_path, {**TINY, **changes})
    with pytest.raises(BadInput) as err:
        run_config.resolve_here(training(MODEL=path, NUM_LAYERS=1))
    assert str(err.value) == f"MODEL={path!r}: {problem}"


def test_architectures_the_flop_count_does_not_cover_are_refused(tmp_path):
    bert = CONFIG_MAPPING["bert"](hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                                  num_attention_heads=4, vocab_size=1024).to_dict()
    with pytest.raises(BadInput, match=r"model type 'bert' is not one the FLOP count covers: "
                                         + ", ".join(architecture.FAMILIES)):
        run_config.resolve_here(training(MODEL=saved(tmp_path, bert)))
    # A window is counted now (the causal band), not refused: Mistral windows every layer.
    windowed = {**TINY, "model_type": "mistral", "sliding_window": 32}
    spec = run_config.resolve_here(training(MODEL=saved(tmp_path, windowed))).resolved.cut.counted
    assert spec.mix() == {"sliding_attention": 2} and spec.layers[0].mixer.window == 32


def test_a_document_of_one_token_is_refused_as_every_label_would_be_masked():
    with pytest.raises(BadInput, match="PACKED_DOC_LEN=1: a document needs at least 2 tokens"):
        run_config.resolve_here(training(PACKED_DOC_LEN=1))
    for doc_len, predicted in ((1, 0), (2, 4)):  # 8 tokens: what the loss can learn from
        batch = engine.make_batch(1, 8, doc_len, (0, 50), torch.device("cpu"), torch.Generator().manual_seed(0))
        assert int((batch["labels"][0, 1:] != -100).sum()) == predicted  # labels shift by one
    assert run_config.resolve_here(training(PACKED_DOC_LEN=2)).resolved.train.PACKED_DOC_LEN == 2


# ---------------------------------------------------------------- a hub id, online or not

UNCACHED = "upgrade-bench-tests/never-cached"


@pytest.fixture
def hub(monkeypatch):
    """AutoConfig.from_pretrained that records every call and never reaches a network: a
    download (no local_files_only) returns the tiny config."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    real, calls = AutoConfig.from_pretrained, []

    def from_pretrained(name, **kwargs):
        calls.append(kwargs)
        return real(name, **kwargs) if kwargs.get("local_files_only") else real(str(model.PRESETS["tiny"]))

    monkeypatch.setattr(AutoConfig, "from_pretrained", from_pretrained)
    return calls


def test_an_uncached_hub_id_fails_at_once_when_the_hub_cannot_be_reached(hub, monkeypatch):
    with socket.socket() as closed:  # bound, not listening: connections to it are refused
        closed.bind(("127.0.0.1", 0))
        monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:%d" % closed.getsockname()[1])
        with pytest.raises(BadInput, match=rf"MODEL='{UNCACHED}': not a preset .* cached hub id, "
                                              r"and the hub cannot be reached to fetch it \(127.0.0.1:"):
            model.load_config(UNCACHED)
    assert hub == [{"local_files_only": True}]  # the cache only: no download, no retries


def test_hf_hub_offline_is_honoured_without_a_probe(hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(model, "hub_unreachable", lambda endpoint: pytest.fail("probed while offline"))
    with pytest.raises(BadInput, match="HF_HUB_OFFLINE is set"):
        model.load_config(UNCACHED)
    assert hub == [{"local_files_only": True}]


def test_an_uncached_hub_id_is_fetched_when_the_hub_answers(hub, monkeypatch):
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:%d" % listening.getsockname()[1])
        assert model.load_config(UNCACHED).model_type == "llama"
    assert hub == [{"local_files_only": True}, {}]  # the cache, then a download


def test_the_hub_probe_goes_through_the_proxy_the_environment_names(monkeypatch):
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)
    assert model.hub_unreachable("https://hub.invalid", timeout_s=1)  # .invalid never resolves
    with socket.socket() as proxy:
        proxy.bind(("127.0.0.1", 0))
        proxy.listen()
        monkeypatch.setenv("https_proxy", "http://127.0.0.1:%d" % proxy.getsockname()[1])
        assert model.hub_unreachable("https://hub.invalid", timeout_s=1) is None
