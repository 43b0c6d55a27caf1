#!/usr/bin/env python3
"""torchtitan's own trainer on the suite's right-sized workload, offline (tools/side_by_side.sh torchtitan).

torchtitan 0.2.2, the newest release that imports on the suite's torch 2.11 (0.3.0 imports
torch.distributed.fsdp.DataParallelMeshDims, and its spmd-types torch.distributed._mesh_layout.
_FlatLayout, which torch 2.11 lacks). Run as a script, this registers a TrainSpec (SPEC) and
starts torchtitan's entry point (torchtitan.train.main) with a command line for the workload,
then the arguments given (which may add to it). The TrainSpec is torchtitan's llama3 spec with
its Llama 3 8B flavor (dim 4096, 32 heads, 8 KV heads, FFN 14336, vocabulary 128256, RoPE
theta 500000: the shapes of configs/llama-3.1-8b.json) cut to its first NUM_LAYERS layers, in
torchtitan's defaults for one GPU (fp32 weights and AdamW, the step under torch.autocast bf16:
its single-device path; FSDP2's mixed precision takes over from 2 GPUs) with these choices,
which match the suite's run beside it:
- random weights (torchtitan's own init), no checkpoint read or written;
- random tokens of the model's vocabulary, one document a sequence, as the suite's benchmark
  trains: no dataset and no tokenizer file, nothing downloaded (a stand-in tokenizer gives
  the flex and varlen masks an end-of-sequence id the tokens never draw);
- no activation checkpointing (the suite's GRAD_CHECKPOINT=0), batch 1;
- PRECISION=bf16, or fp8-* through torchtitan's float8 converter (torchao's recipe of that
  name), every linear but lm_head (torchtitan's `output`), as the suite converts;
- ATTN: torchtitan's attention (sdpa, its 8B flavor's; flex or varlen, its 8B_flex and
  8B_varlen flavors);
- COMPILE=1: torch.compile per block and of the loss (set it here, not with --compile.*, so
  the workload line says what ran);
- a metrics line every step, without color codes.
torchtitan imports at its top two packages this run never calls: HF `datasets` (its text
datasets) and `tensorboard` (for torch.utils.tensorboard's writer). Where they are not
installed (the GPU machine has neither; each pulls tens of MB), a stand-in module that fails if
called takes their place.

Its stdout is torchtitan's log, first a `titan_train: workload {...}` line; tools/titan_log.py
turns it into the suite's records. Launched as torchtitan launches, by torchrun:

    NUM_LAYERS=8 PRECISION=fp8-tensorwise torchrun --standalone --nproc_per_node 1 tools/titan_train.py \\
        --training.seq_len 8192 --training.steps 12 --job.dump_folder OUT/titan
"""
import importlib.util
import json
import os
import sys
import types
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from upgrade_bench import settings  # noqa: E402
from upgrade_bench.faults import BadInput, run_main  # noqa: E402
from upgrade_bench.hardware.precisions import PRECISIONS  # noqa: E402

MODEL = "llama-3.1-8b"   # the suite's preset whose shapes torchtitan's 8B flavors have
FLAVORS = {"sdpa": "8B", "flex": "8B_flex", "varlen": "8B_varlen"}  # torchtitan's models/llama3 flavors
SPEC, FLAVOR = "suite_llama3", "8B"  # the TrainSpec registered here and its one flavor
FLOAT8 = "torchao.float8"  # the precisions torchtitan's float8 converter runs
VARS = [
    settings.Var("NUM_LAYERS", "int", 8, "decoder layers kept, the first ones", min=1, max=32),
    settings.Var("PRECISION", "choice", "bf16", "bf16, or torchao float8 through torchtitan's converter",
                 choices=("bf16",) + tuple(n for n, p in PRECISIONS.items() if p.module == FLOAT8)),
    settings.Var("ATTN", "choice", "sdpa", "torchtitan's attention (its 8B flavors)", choices=tuple(FLAVORS)),
    settings.Var("COMPILE", "bool", True, "torch.compile per block and of the loss (torchtitan's fastest)"),
]


def workload(environ=None):
    """The settings of this run (BadInput for a bad value)."""
    return settings.parse(VARS, environ)


def stand_in(name: str, **attrs) -> types.ModuleType:
    """A module for an import this run never calls: each attribute fails if used."""
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    sys.modules[name] = module
    return module


def unused(what: str):
    def fail(*args, **kwargs):
        raise RuntimeError(f"{what} is not installed (tools/titan_train.py's stand-in): this run must not call it")
    return fail


def stand_ins() -> list[str]:
    """Stand-ins for `datasets` and torch.utils.tensorboard where they are not installed."""
    made = []
    if importlib.util.find_spec("datasets") is None:
        ds = stand_in("datasets", Dataset=type("Dataset", (), {}), load_dataset=unused("datasets"))
        ds.distributed = stand_in("datasets.distributed", split_dataset_by_node=unused("datasets"))
        made.append("datasets")
    if importlib.util.find_spec("tensorboard") is None:
        stand_in("torch.utils.tensorboard", SummaryWriter=unused("tensorboard"))
        made.append("tensorboard")
    return made


def train_spec(s):
    """torchtitan's llama3 TrainSpec with the suite's workload: its 8B flavor for ATTN cut to
    NUM_LAYERS layers (registered as flavor FLAVOR), random tokens, a stand-in tokenizer."""
    from dataclasses import replace

    import torchtitan.models.llama3 as llama3

    args = replace(llama3.llama3_args[FLAVORS[s.ATTN]], n_layers=s.NUM_LAYERS)
    return replace(llama3.get_train_spec(), model_args={FLAVOR: args},
                   build_tokenizer_fn=lambda job_config: _NoTokenizer(args.vocab_size),
                   build_dataloader_fn=partial(random_tokens, vocab_size=args.vocab_size))


def arguments(s) -> list[str]:
    """torchtitan's command line for the workload (the caller's arguments follow and may add)."""
    argv = ["--model.name", SPEC, "--model.flavor", FLAVOR, "--model.hf_assets_path", "",
            "--training.local_batch_size", "1", "--activation_checkpoint.mode", "none",
            "--metrics.log_freq", "1", "--metrics.disable_color_printing"]
    if s.COMPILE:
        argv += ["--compile.enable"]
    recipe = PRECISIONS[s.PRECISION].recipe
    if recipe:
        # torchtitan calls lm_head `output`; the suite leaves it in bf16 too
        argv += ["--model.converters", "quantize.linear.float8", "--quantize.linear.float8.recipe_name", recipe,
                 "--quantize.linear.float8.filter_fqns", "output"]
    return argv


class _NoTokenizer:
    """What torchtitan asks of a tokenizer here: an end-of-sequence id for the flex and varlen
    block-causal masks, one the random tokens never draw (so each sequence is one document)."""

    def __init__(self, vocab_size: int):
        self.eos_id = vocab_size - 1

    encode = decode = unused("a tokenizer")

    def get_vocab_size(self) -> int:
        return self.eos_id + 1


def random_tokens(dp_world_size: int, dp_rank: int, tokenizer, job_config, vocab_size: int, **kwargs):
    """torchtitan's dataloader over uniform random tokens below the end-of-sequence id, a
    sequence per sample, each rank its own stream."""
    import torch
    from torch.utils.data import IterableDataset
    from torchtitan.components.dataloader import ParallelAwareDataloader

    seq_len = job_config.training.seq_len

    class Tokens(IterableDataset):
        def __iter__(self):
            g = torch.Generator().manual_seed(dp_rank)
            while True:
                ids = torch.randint(0, vocab_size - 1, (seq_len + 1,), generator=g)
                yield {"input": ids[:-1]}, ids[1:]

    return ParallelAwareDataloader(Tokens(), dp_rank=dp_rank, dp_world_size=dp_world_size,
                                   batch_size=job_config.training.local_batch_size)


def main(argv) -> int:
    s = workload()
    if importlib.util.find_spec("torchtitan") is None:
        raise BadInput("torchtitan is not importable here (the GPU machine: .gpu/titan-setup.sh, then "
                       "PYTHONPATH=/tmp/site)")
    made = stand_ins()
    print("titan_train: workload " + json.dumps({"model": MODEL, "flavor": FLAVORS[s.ATTN], "num_layers": s.NUM_LAYERS,
                                                 "precision": s.PRECISION, "attn": s.ATTN, "compile": s.COMPILE,
                                                 "stand_ins": made}), flush=True)
    # before torchtitan is imported: its ConfigManager.parse_args takes sys.argv[1:] as a default
    # argument, read when its module loads
    sys.argv = [sys.argv[0], *arguments(s), *argv]
    from torchtitan.protocols.train_spec import register_train_spec
    from torchtitan.train import Trainer, main as titan_main

    register_train_spec(SPEC, train_spec(s))
    titan_main(Trainer)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
