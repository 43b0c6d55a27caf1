"""DATA=: a user's tokens feed the training step, a fresh window each step (training/data.py,
engine.Batches): the formats read (nanoGPT's flat uint16, Megatron-LM's .bin with its .idx),
each bad file one line before any model is built (in the plans too), and the header's record."""
import struct
import types

import numpy as np
import pytest

from upgrade_bench.faults import BadInput
from upgrade_bench.models import model
from upgrade_bench.training import data, engine, resolver
from test_resolver import CPU, training


def nanogpt(path, ids, dtype=np.uint16):
    np.asarray(ids, dtype=dtype).tofile(path)  # what nanoGPT's prepare.py does
    return str(path)


def megatron(prefix, ids, code=4, dtype=np.int32):
    np.asarray(ids, dtype=dtype).tofile(f"{prefix}.bin")
    with open(f"{prefix}.idx", "wb") as f:  # Megatron-LM's index header: magic, version, dtype code
        f.write(data.MEGATRON_MAGIC + struct.pack("<Q", 1) + struct.pack("<B", code) + b"\0" * 16)
    return f"{prefix}.bin"


def test_a_nanogpt_and_a_megatron_file_are_read_with_their_dtypes(tmp_path):
    flat = data.open_tokens(nanogpt(tmp_path / "train.bin", range(100)))
    assert (flat.dtype, flat.count) == ("uint16", 100) and flat.describe() == "nanoGPT-style flat uint16, 100 tokens"
    wide = data.open_tokens(megatron(tmp_path / "corpus_text_document", range(70000, 70100)))
    assert (wide.dtype, wide.count) == ("int32", 100) and "Megatron-LM .bin (int32, from its .idx)" in wide.describe()
    assert data.window(wide, 0, 2, 5, 100000).tolist() == [list(range(70000, 70005)), list(range(70005, 70010))]


@pytest.mark.parametrize("make, line", [
    (lambda d: str(d / "missing.bin"), r"^DATA='.*missing.bin': no such file; give a file of token ids"),
    (lambda d: str(d), r"^DATA='.*': a folder; give a file of token ids"),
    (lambda d: (d / "odd.bin").write_bytes(b"\1\2\3") and str(d / "odd.bin"),
     r"^DATA='.*odd.bin': 3 bytes, not a whole number of uint16 token ids \(2 bytes each\)$"),
    (lambda d: (d / "empty.bin").write_bytes(b"") or str(d / "empty.bin"), r"0 bytes, .*: the file is empty$"),
    (lambda d: megatron(d / "f", range(10), code=7, dtype=np.float32),
     r"its index names dtype code 7, not token ids"),
    (lambda d: (nanogpt(d / "g.bin", range(10)), (d / "g.idx").write_bytes(b"not megatron"))[0],
     r"g.idx' beside it is not a Megatron-LM index"),
])
def test_a_file_that_holds_no_tokens_is_one_line(tmp_path, make, line):
    with pytest.raises(BadInput, match=line):
        data.open_tokens(make(tmp_path))


def test_too_short_for_one_step_is_refused_and_too_short_for_all_steps_is_a_warning(tmp_path):
    tokens = data.open_tokens(nanogpt(tmp_path / "t.bin", range(300)))
    with pytest.raises(BadInput, match=r"300 tokens, fewer than one step takes at SEQ_LEN 256 and BATCH_SIZE 2 "
                                       r"\(512\)$"):
        data.check_length(tokens, 2, [64, 256], 12)
    [warning] = data.check_length(tokens, 1, [64, 128], 3)  # 3 x 128 > 300: later steps repeat
    assert "feed fewer than the 3 steps at SEQ_LEN 128: later steps there see the file's tokens again" in warning


def test_each_step_reads_its_own_window_and_an_id_past_the_vocabulary_is_refused(tmp_path):
    tokens = data.open_tokens(nanogpt(tmp_path / "t.bin", range(40)))
    steps = [data.window(tokens, i, 1, 16, 1024)[0].tolist() for i in range(3)]
    assert steps[0] == list(range(16)) and steps[1] == list(range(16, 32))
    assert steps[2] == list(range(7, 23))  # 40 tokens hold two windows: the third starts over
    bad = data.open_tokens(nanogpt(tmp_path / "b.bin", [5] * 16 + [2000] * 16))
    data.window(bad, 0, 1, 16, 1024)
    with pytest.raises(BadInput, match=r"token id 2000 in the window of step 1, outside the model's vocabulary "
                                       r"of 1024: tokens of another tokenizer\?"):
        data.window(bad, 1, 1, 16, 1024)


def test_the_steps_batches_are_fresh_with_data_and_one_repeated_batch_without(tmp_path):
    import torch

    path = nanogpt(tmp_path / "t.bin", np.arange(4000) % 1000)
    s = types.SimpleNamespace(BATCH_SIZE=2, PACKED_DOC_LEN=32, SEED=0)
    config = types.SimpleNamespace(vocab_size=1024, bos_token_id=None, eos_token_id=None, pad_token_id=None)

    def rc(tokens):
        resolved = types.SimpleNamespace(train=s, tokens=tokens, cut=types.SimpleNamespace(config=config))
        return types.SimpleNamespace(resolved=resolved, device=torch.device("cpu"))

    fresh = engine.Batches(rc(data.open_tokens(path)), 64)
    first, second = fresh.step(0), fresh.step(1)
    assert first["input_ids"][0, :3].tolist() == [0, 1, 2] and second["input_ids"][0, :3].tolist() == [128, 129, 130]
    assert first["labels"][0, 32].item() == -100  # packed as random batches are
    repeated = engine.Batches(rc(None), 64)
    assert repeated.step(0) is repeated.step(5)


def test_the_plan_and_the_process_check_data_and_record_it(tmp_path):
    missing = training(MODEL="tiny", DATA=str(tmp_path / "none.bin"))
    with pytest.raises(BadInput, match=r"^DATA='.*none.bin': no such file"):
        resolver.resolve(missing, CPU, model.cheap_config("tiny"), [64])  # what the sweep and node plans call
    path = nanogpt(tmp_path / "t.bin", range(1000))
    resolved = resolver.resolve(training(MODEL="tiny", DATA=path), CPU, model.cheap_config("tiny"), [64])
    assert resolved.tokens.count == 1000 and resolved.config()["DATA"] == path
    assert "DATA" not in resolver.resolve(training(MODEL="tiny"), CPU, model.cheap_config("tiny"), [64]).config()


def test_the_sweep_gives_each_process_data_by_its_absolute_path(tmp_path, monkeypatch):
    import io

    from conftest import SWEEP_CLEARED
    from upgrade_bench.hardware import devices
    from upgrade_bench.sweep import plan as sweep_plan

    for name in SWEEP_CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])
    nanogpt(tmp_path / "t.bin", range(1000))
    monkeypatch.chdir(tmp_path)  # the processes run in the repository, not here
    for key, value in {"MODEL": "tiny", "DATA": "t.bin", "SEQLENS": "64", "DRY_RUN": "1",
                       "OUT": str(tmp_path / "o.jsonl")}.items():
        monkeypatch.setenv(key, value)
    plan = sweep_plan.prepare(sweep_plan.load_settings([], "doc"))
    out = io.StringIO()
    sweep_plan.dry_run(plan, [64], out)
    assert plan.config["DATA"] == str(tmp_path / "t.bin") and f"DATA={tmp_path / 't.bin'}" in out.getvalue()
