"""A model's config.json, every field of every shipped tiny config mutated (its type, nesting,
null) and the file itself (encoding, not an object, nesting past any config, not JSON), through
the one validator (models/config_file.py) as every plan and every process reads it: the sweep's
plan (run_sweep.sh and run_node.sh's training steps, DRY_RUN), a training process's model
(model.load_config, then resolution) and bench_flash_attn.py's shapes. Each ends in a plan or
one line of BadInput naming MODEL, never a traceback."""
import json
import os
import re
import signal
from pathlib import Path

import pytest

import dataclasses

from conftest import REPO, SWEEP_CLEARED
from upgrade_bench.faults import BadInput
from upgrade_bench.hardware import devices
from upgrade_bench.hardware.fingerprint import Device
from upgrade_bench.models import config_file, model
from upgrade_bench import settings
from upgrade_bench.kernels.attention import main as flash_attn
from upgrade_bench.sweep import plan as sweep_plan
from upgrade_bench.training import resolver, variables

TINY = sorted(p for p in (REPO / "configs").glob("tiny*.json"))
DEEP = 40  # past config_file.MAX_DEPTH


def nested(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


# Each field's value replaced by one of another type, a nesting, null.
VALUES = {"a string": "x", "a list": [1], "an object": {"a": 1}, "a nested list": [["full_attention"]],
          "null": None, "a boolean": True, "a negative": -1, "huge": 10**30, "a float": 1.5,
          "nested past any config": nested(DEEP)}


def field_mutations(config: dict):
    for name in config:
        for what, value in VALUES.items():
            yield f"{name} {what}", json.dumps({**config, name: value}).encode()
        if isinstance(config[name], str):  # its text's encoding: a byte no UTF-8 has, a lone surrogate
            marked = json.dumps({**config, name: config[name] + "\x00MARK"}).encode()
            yield f"{name} not UTF-8", marked.replace(b"\\u0000MARK", b"\xff")
            yield f"{name} a lone surrogate", marked.replace(b"\\u0000MARK", b"\\ud800")


def file_mutations(config: dict):
    text = json.dumps(config)
    yield "not UTF-8", text.replace('"', '"\xff', 1).encode("latin-1")
    yield "UTF-16", text.encode("utf-16")
    yield "null", b"null"
    yield "an array", b"[1, 2]"
    yield "a string", b'"config"'
    yield "nested 5000 deep", b"[" * 5000 + b"]" * 5000
    yield "an object nested 5000 deep", b'{"model_type": ' * 5000 + b"1" + b"}" * 5000
    yield "truncated", text[: len(text) // 2].encode()
    yield "a text file", b"hello, this is not a config\n"
    yield "empty", b""


def one_line_naming(err: BadInput, path) -> str:
    line = str(err)
    assert "\n" not in line and line.startswith(f"MODEL='{path}'"), line
    return line


@pytest.fixture
def sweep_plan_of(monkeypatch, tmp_path):
    """sweep_plan_of(model) -> the sweep's DRY_RUN plan (run_node.sh's training steps make the same)."""
    for name in SWEEP_CLEARED | {v.name for v in variables.TRAINING_VARS}:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(devices, "visible_gpus", lambda environ=None: [])
    monkeypatch.setenv("DRY_RUN", "1")
    monkeypatch.setenv("OUT", str(tmp_path / "out.jsonl"))
    monkeypatch.setenv("SEQLENS", "64")
    s = sweep_plan.load_settings([], "doc")
    return lambda path: sweep_plan.prepare(dataclasses.replace(s, MODEL=str(path)))


CPU = resolver.Machine(Device(None), None, 1, frozenset({"eager", "sdpa"}), None)


def training(model_name: str):
    return settings.parse(variables.TRAINING_VARS, {"MODEL": model_name, "SEQ_LEN": "64"})


@pytest.fixture
def node_dry_run(as_script, capsys, monkeypatch, tmp_path):
    """node_dry_run(model) -> (exit code, stderr lines): run_node.sh's DRY_RUN here, on no GPU."""
    from test_run_node import EVERY
    from upgrade_bench import faults
    from upgrade_bench.sweep.node import main as node

    def run(path):
        as_script("run_node.sh", EVERY, {"MODEL": str(path), "DRY_RUN": "1", "NODE_OUT": str(tmp_path / "node")})
        capsys.readouterr()  # what the readers before said (transformers' warnings)
        code = faults.run_main(node.main)
        return code, capsys.readouterr().err.splitlines()
    return run


@pytest.mark.parametrize("preset", TINY, ids=lambda p: p.stem)
def test_every_field_and_the_file_mutated_is_a_plan_or_one_line_in_every_reader(preset, tmp_path, sweep_plan_of,
                                                                                node_dry_run):
    config = json.loads(preset.read_text())
    path = tmp_path / "config.json"
    refused = 0
    cases = list(field_mutations(config)) + list(file_mutations(config))
    for i, (what, data) in enumerate(cases):
        path.write_bytes(data)
        try:
            sweep_plan_of(path)
        except BadInput as err:
            line = one_line_naming(err, path)
            refused += 1
            name, _, how = what.partition(" ")
            kind = config_file.FIELDS.get(name)
            value = VALUES.get(how) if name in config else None
            if kind and value is not None and not config_file.fits(kind, value):
                assert re.search(rf"\b{name}=", line), (what, line)  # the field named
        else:
            assert what.split()[0] in config, what  # a file mutation always refused
        # a training process's model and bench_flash_attn.py's shapes: a sample of the cases
        # (transformers reads each config in milliseconds; the plan above takes them all)
        if i % 13 == 0:
            for read in (lambda: resolver.resolve(training(str(path)), CPU, model.load_config(str(path)), [64]),
                         lambda: flash_attn.layer_shapes(settings.parse(flash_attn.VARS,
                                                                        {"MODEL": str(path), "SEQLENS": "64"}))):
                try:
                    read()
                except BadInput as err:
                    assert "\n" not in str(err) and f"MODEL='{path}'" in str(err), (what, str(err))
        if i == 0 or what in ("null", "a text file"):  # run_node.sh's whole plan, on the examples
            code, err = node_dry_run(path)
            assert code in (0, 2) and (code == 0 or (len(err) == 1 and err[0].startswith("error: MODEL="))), (what, err)
    assert refused >= len(cases) // 2  # most mutations are no config


def test_the_validator_types_every_field_a_reader_takes_and_every_shipped_config_passes():
    # a field a family reader takes (config_int, cfg.get) or the training step's token ids
    # (engine.token_range) without a type in FIELDS would reach its reader unchecked
    sources = [REPO / "upgrade_bench" / "models" / name for name in ("architecture.py", "layers.py")]
    read = {name for src in sources for name in re.findall(r'(?:config_int\(cfg|cfg\.get\()\s*,?\s*"(\w+)"',
                                                             src.read_text())}
    read |= set(re.findall(r'"(\w+_token_id)"', (REPO / "upgrade_bench/training/engine.py").read_text()))
    assert read and read <= set(config_file.FIELDS), read - set(config_file.FIELDS)
    for preset in (REPO / "configs").glob("*.json"):
        assert config_file.read(preset)["model_type"]


@pytest.mark.parametrize("value, line", [
    ({"layer_types": {"0": "full_attention"}}, "layer_types={'0': 'full_attention'}: expected a list of "),
    ({"layer_types": [["full_attention"]] * 2}, "layer_types=[['full_attention'], ['full_attention']]: expected"),
    ({"model_type": ["llama"]}, "model_type=['llama']: expected a string"),
    ({"mlp_only_layers": "0"}, "mlp_only_layers='0': expected a list of layer indices"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings='yes': expected true or false"),
    ({"hidden_size": 64.0}, "hidden_size=64.0: expected an integer from 1 to "),
    ({"rope_scaling": nested(DEEP)}, "rope_scaling=[[[[["),
])
def test_a_field_of_the_wrong_type_is_one_line_naming_it(value, line):
    config = {**json.loads((REPO / "configs" / "tiny.json").read_text()), **value}
    with pytest.raises(BadInput) as err:
        config_file.parse(json.dumps(config).encode())
    assert str(err.value).startswith(line)


def test_a_file_far_larger_than_any_config_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "config.json"
    with open(path, "wb") as f:
        f.truncate(config_file.MAX_BYTES + 1)  # sparse: nothing written, nothing read
    with pytest.raises(BadInput, match=r"^MODEL='.*': 16777217 bytes: no model config is larger than 16 MiB$"):
        model.cheap_config(str(path))


@pytest.fixture
def within_5_s():
    """A read that blocks is a failure after 5 s, not a test that never ends."""
    def blocked(signum, frame):
        raise TimeoutError("still reading after 5 s")
    previous = signal.signal(signal.SIGALRM, blocked)
    signal.setitimer(signal.ITIMER_REAL, 5)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("how", ["named", "linked"])
def test_a_config_path_whose_read_never_ends_is_refused_before_any_read(tmp_path, within_5_s, how):
    # issue 55: MODEL=/proc/kmsg, or a config.json linked to it, blocked the sweep's dry run for
    # good (as root: the kernel's log waits for its next line); the report reads the same way
    if not os.access("/proc/kmsg", os.R_OK):
        pytest.skip("/proc/kmsg cannot be read here (not root)")
    if how == "linked":
        (tmp_path / "config.json").symlink_to("/proc/kmsg")
    name = str(tmp_path) if how == "linked" else "/proc/kmsg"
    with pytest.raises(BadInput) as err:
        model.cheap_config(name)
    assert str(err.value) == (f"MODEL={name!r}: 0 bytes on disk (an empty file, or one the kernel makes up "
                              f"as it is read, as /proc's): a config.json is one JSON object")


@pytest.mark.parametrize("kind", ["empty", "pseudo", "fifo"])
def test_a_config_is_read_only_from_a_regular_file_of_a_bounded_size(tmp_path, within_5_s, kind):
    path = tmp_path / "config.json"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: a plain open() would wait for one for good
    else:
        path = Path("/proc/self/status")  # 0 bytes on disk, text when read
    with pytest.raises(BadInput) as err:
        config_file.read(path)
    assert str(err.value) == ("a named pipe (FIFO), not the regular file a config.json is" if kind == "fifo" else
                              "0 bytes on disk (an empty file, or one the kernel makes up as it is read, as /proc's): "
                              "a config.json is one JSON object")
