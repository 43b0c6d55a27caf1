"""A user's own tokens for the training step (DATA=): a file of token ids, read a fresh window
per step, so a loss compared between precisions is a convergence test rather than how fast a
model memorises one repeated batch of random tokens (report/compare/precision.py).

The formats accepted are the flat binaries the common trainers write:
- nanoGPT's `train.bin` / `val.bin` (data/*/prepare.py): token ids as uint16, no header;
- a Megatron-LM indexed dataset's `.bin` (tools/preprocess_data.py): token ids back to back in
  the dtype its `.idx` beside it names (uint16 below a 65,500-token vocabulary, int32 above);
  the document boundaries in the `.idx` are not read: steps take consecutive tokens, as
  nanoGPT's do.
A file is checked before any model is built (`open_tokens`, `check_length`: missing, not a whole
number of ids, too short for one step), each in one line; a window's ids past the model's
vocabulary are refused as the window is read (`window`). Step i of a point reads the i-th window
of BATCH_SIZE x SEQ_LEN tokens from the file's start whatever the SEED, so runs of two precisions
or two seeds train on the same tokens; a file shorter than the point's steps starts over, said in
a warning. Nothing here imports torch (the plans check DATA too).
"""
import os
import struct
from dataclasses import dataclass

from ..faults import BadInput

MEGATRON_MAGIC = b"MMIDIDX\x00\x00"  # the .idx header, then version <Q and the dtype's code <B
# Megatron-LM's DType codes (megatron/core/datasets/indexed_dataset.py) of integer dtypes.
MEGATRON_DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 8: "uint16"}
ITEM_BYTES = {"uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8}
NANOGPT_DTYPE = "uint16"


@dataclass(frozen=True)
class Tokens:
    path: str
    dtype: str     # numpy's name of the ids' type
    count: int     # token ids in the file
    source: str    # how the file was read, for the header

    def describe(self) -> str:
        """The header's words: 'nanoGPT train.bin (uint16), 9,035,582,198 tokens'."""
        return f"{self.source}, {self.count:,} tokens"


def megatron_dtype(bin_path: str) -> str | None:
    """The dtype a Megatron-LM `.idx` beside `bin_path` names, or None where there is no such
    file; BadInput for an .idx that is not Megatron's or names no integer type."""
    idx = os.path.splitext(bin_path)[0] + ".idx"
    if not os.path.isfile(idx):
        return None
    try:
        with open(idx, "rb") as f:
            head = f.read(len(MEGATRON_MAGIC) + 9)
    except OSError as err:
        raise BadInput(f"DATA={bin_path!r}: its index {idx!r} cannot be read ({err.strerror or err})") from None
    if len(head) < len(MEGATRON_MAGIC) + 9 or not head.startswith(MEGATRON_MAGIC):
        raise BadInput(f"DATA={bin_path!r}: {idx!r} beside it is not a Megatron-LM index (no MMIDIDX header)")
    code = head[-1]
    if code not in MEGATRON_DTYPES:
        raise BadInput(f"DATA={bin_path!r}: its index names dtype code {code}, not token ids (integer codes: "
                       f"{', '.join(f'{c} {n}' for c, n in MEGATRON_DTYPES.items())})")
    return MEGATRON_DTYPES[code]


def open_tokens(path: str) -> Tokens:
    """The token file DATA names, checked for what its size can say; BadInput for what it cannot be."""
    if not os.path.isfile(path):
        what = "a folder" if os.path.isdir(path) else "no such file"
        raise BadInput(f"DATA={path!r}: {what}; give a file of token ids (nanoGPT's train.bin, or a "
                       f"Megatron-LM dataset's .bin)")
    dtype = megatron_dtype(path)
    source = f"Megatron-LM .bin ({dtype}, from its .idx)" if dtype else f"nanoGPT-style flat {NANOGPT_DTYPE}"
    dtype = dtype or NANOGPT_DTYPE
    try:
        size = os.path.getsize(path)
    except OSError as err:
        raise BadInput(f"DATA={path!r}: cannot be read ({err.strerror or err})") from None
    item = ITEM_BYTES[dtype]
    if size == 0 or size % item:
        raise BadInput(f"DATA={path!r}: {size} bytes, not a whole number of {dtype} token ids ({item} bytes each)"
                       + ("" if size else ": the file is empty"))
    return Tokens(path, dtype, size // item, source)


def check_length(tokens: Tokens, batch_size: int, seq_lens: list, steps: int) -> list:
    """BadInput where the file holds fewer tokens than one step of the longest length; the
    warnings of lengths whose steps it cannot all feed fresh (those start over)."""
    longest = max(seq_lens)
    if tokens.count < batch_size * longest:
        raise BadInput(f"DATA={tokens.path!r}: {tokens.count:,} tokens, fewer than one step takes at SEQ_LEN "
                       f"{longest} and BATCH_SIZE {batch_size} ({batch_size * longest:,})")
    short = [n for n in sorted(seq_lens) if tokens.count < steps * batch_size * n]
    if not short:
        return []
    return [f"DATA={tokens.path!r}: {tokens.count:,} tokens feed fewer than the {steps} steps at SEQ_LEN "
            f"{', '.join(map(str, short))}: later steps there see the file's tokens again"]


def window(tokens: Tokens, step: int, batch_size: int, seq_len: int, vocab: int):
    """Step `step`'s token ids, a numpy array (batch_size, seq_len): the step-th window of the
    file, starting over where it runs out; BadInput for an id outside [0, vocab)."""
    import numpy as np

    size = batch_size * seq_len
    start = (step * size) % (tokens.count - size + 1)
    ids = np.memmap(tokens.path, dtype=tokens.dtype, mode="r", offset=start * ITEM_BYTES[tokens.dtype],
                    shape=(size,))
    ids = np.array(ids, dtype=np.int64).reshape(batch_size, seq_len)
    low, high = int(ids.min()), int(ids.max())
    if low < 0 or high >= vocab:
        raise BadInput(f"DATA={tokens.path!r}: token id {high if high >= vocab else low} in the window of step "
                       f"{step}, outside the model's vocabulary of {vocab}: tokens of another tokenizer?")
    return ids
