"""A model's config (the HF `config.json`), read and checked in one place: every plan (the
sweep's, the node's) and every process (benchmark.py, bench_flash_attn.py) reads a file
through `read` and describes a model only after `check` (architecture.describe calls it), so a
hostile config is refused in one line naming the field, never a traceback deep in a reader.

`FIELDS` types each field a family reader takes (models/architecture.py, models/layers.py)
and the training step's token ids (training/engine.token_range); a field absent or null is
the reader's default. Ranges beyond the type (a head count dividing another, a layer count a
model can have) stay with the readers, which know the family.
"""
import json
import os
import stat

from ..faults import BadInput
from ..paths import file_kind
from .layers import MAX_INT, Cfg

# HF config.json files are a few KiB (the largest multimodal ones tens of KiB); a file far past
# that is no config, and reading it whole would cost the memory it claims.
MAX_BYTES = 16 * 2**20
# HF configs nest a few levels (text_config > rope_scaling > ...); past this it is not a config,
# and deeper still Python's JSON reader and every walk over it run out of stack.
MAX_DEPTH = 32

COUNT, COUNT0, BOOL, TEXT, INDICES, LAYER_TYPES, HEAD_DIM, TOKEN_IDS = (
    "count", "count0", "bool", "text", "indices", "layer_types", "head_dim", "token_ids")
EXPECTED = {
    COUNT: f"an integer from 1 to {MAX_INT}",
    COUNT0: f"an integer from 0 to {MAX_INT}",
    BOOL: "true or false",
    TEXT: "a string",
    INDICES: f"a list of layer indices (integers from 0 to {MAX_INT})",
    LAYER_TYPES: "a list of layer kinds (strings; each family's own words are checked by its reader)",
    HEAD_DIM: f"an integer from 1 to {MAX_INT} or \"auto\"",
    TOKEN_IDS: f"a token id (an integer from 0 to {MAX_INT}) or a list of them",
}
FIELDS = {
    "model_type": TEXT,
    **dict.fromkeys((
        "num_hidden_layers", "hidden_size", "vocab_size", "intermediate_size", "num_attention_heads",
        "num_key_value_heads", "head_dim", "sliding_window", "sliding_window_pattern", "moe_intermediate_size",
        "num_experts_per_tok", "decoder_sparse_step", "full_attention_interval", "n_routed_experts",
        "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank", "q_lora_rank",
        "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
        "linear_conv_kernel_dim", "mamba_n_heads", "mamba_n_groups", "mamba_d_state", "mamba_expand",
        "mamba_d_conv", "shared_intermediate_size"), COUNT),
    **dict.fromkeys(("num_experts", "num_local_experts", "first_k_dense_replace", "n_shared_experts",
                     "shared_expert_intermediate_size", "max_window_layers"), COUNT0),
    **dict.fromkeys(("use_sliding_window", "tie_word_embeddings"), BOOL),
    "mlp_only_layers": INDICES,
    "layer_types": LAYER_TYPES,
    "mamba_d_head": HEAD_DIM,
    **dict.fromkeys(("bos_token_id", "eos_token_id", "pad_token_id"), TOKEN_IDS),
}


JSON_NAMES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _int_in(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= MAX_INT


def fits(kind: str, value) -> bool:
    """Whether `value` (not None) is of `kind`."""
    if kind in (COUNT, COUNT0):
        return _int_in(value, 1 if kind == COUNT else 0)
    if kind == BOOL:
        return isinstance(value, bool)
    if kind == TEXT:
        return isinstance(value, str)
    if kind == INDICES:
        return isinstance(value, (list, tuple)) and all(_int_in(v, 0) for v in value)
    if kind == LAYER_TYPES:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    if kind == HEAD_DIM:
        return value == "auto" or _int_in(value, 1)
    return _int_in(value, 0) or isinstance(value, (list, tuple)) and all(_int_in(v, 0) for v in value)


def shown(value, limit: int = 240) -> str:
    """A value for the line that refuses it: its repr, cut short (a field may hold megabytes)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check(config) -> None:
    """BadInput, naming the field, for a config (a transformers config or a config.json mapping)
    whose fields the suite reads are not of their type, or a mapping nested past MAX_DEPTH."""
    if isinstance(config, dict):
        for name, value in config.items():
            check_depth(value, name)
    cfg = Cfg(config)
    for name, kind in FIELDS.items():
        value = cfg.get(name)
        if value is not None and not fits(kind, value):
            raise BadInput(f"{name}={shown(value)}: expected {EXPECTED[kind]}")


def check_depth(value, name: str) -> None:
    """BadInput for the field `name` nested deeper than MAX_DEPTH (walked without recursion)."""
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [child for v in level if isinstance(v, (dict, list))
                 for child in (v.values() if isinstance(v, dict) else v)]
        if not level:
            return
    raise BadInput(f"{name}={shown(value, 40)}: nested deeper than {MAX_DEPTH} levels, as no model config is")


def check_size(size_bytes: int) -> None:
    if size_bytes > MAX_BYTES:
        raise BadInput(f"{size_bytes} bytes: no model config is larger than {MAX_BYTES // 2**20} MiB")


def parse(data: bytes) -> dict:
    """A config.json's bytes as a checked mapping; BadInput saying what it is instead."""
    check_size(len(data))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"not UTF-8 text (byte 0x{data[err.start]:02x} at offset {err.start}): "
                       f"a config.json is JSON in UTF-8") from None
    try:
        config = json.loads(text)
    except RecursionError:
        raise BadInput("nested deeper than Python's JSON reader goes, as no model config is") from None
    except ValueError as err:
        raise BadInput(f"not JSON ({err}): a config.json is one JSON object") from None
    if not isinstance(config, dict):
        what = "null" if config is None else f"{JSON_NAMES.get(type(config), 'value')} ({shown(config, 40)})"
        raise BadInput(f"a JSON {what}, not the JSON object a config.json is")
    check(config)
    return config


def read(path) -> dict:
    """The checked config in the file at `path` (a link followed); BadInput for what it cannot be.

    Only a regular file is read, and only as many bytes as it holds on disk, checked against
    MAX_BYTES first: a FIFO (no writer) or a device would wait or stream for good, and so would
    a file the kernel makes up as it is read (/proc/kmsg waits for the kernel's next line), which
    says 0 bytes; a config of 0 bytes is none either way. Opened without waiting (O_NONBLOCK),
    so the open itself cannot block on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        raise BadInput(f"cannot be read ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)  # of the file opened, not of a name that may change meanwhile
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{file_kind(info.st_mode)}, not the regular file a config.json is")
        if info.st_size == 0:
            raise BadInput("0 bytes on disk (an empty file, or one the kernel makes up as it is read, as /proc's): "
                           "a config.json is one JSON object")
        check_size(info.st_size)
        try:
            data = f.read(info.st_size)
        except OSError as err:
            raise BadInput(f"cannot be read ({err.strerror or err})") from None
    return parse(data)
