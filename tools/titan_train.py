#!/usr/bin/env python3
"""torchtitan's own trainer on the suite's right-sized workload, offline (tools/side_by_side.sh torchtitan).

torchtitan 0.3.0 configures a run with a Python function (`--module M --config F`: F() returns
its Trainer.Config), then its command line overrides fields. This file is both: run as a
script it starts torchtitan's entry point (torchtitan.train.main) with `--module titan_train
--config suite_llama3` and the arguments given, and torchtitan imports it back for
`suite_llama3`, which is torchtitan's own Llama 3 8B flavor (dim 4096, 32 heads, 8 KV heads,
FFN 14336, vocabulary 128256, RoPE theta 500000: the shapes of configs/llama-3.1-8b.json),
cut to its first NUM_LAYERS layers, in torchtitan's defaults for one GPU (fp32 weights under
FSDP2's bf16 mixed precision, CUDA graphs, chunked loss, AdamW) with these choices, which
match the suite's run beside it:
- random weights (torchtitan's own init), no checkpoint read or written;
- random tokens of the model's vocabulary, one document a sequence (positions 0..S-1, so the
  block-causal mask is the causal one), as the suite's benchmark trains: no dataset and no
  tokenizer file, nothing downloaded (a stand-in tokenizer is built and never called);
- no activation checkpointing (the suite's GRAD_CHECKPOINT=0);
- PRECISION=bf16, or fp8-* through torchtitan's Float8LinearConverter (torchao), every linear
  but lm_head, as the suite converts; tensorwise is passed as torchao's recipe name (0.3.0's
  CLI lists only the rowwise recipes, its converter takes any name torchao knows);
- ATTN: torchtitan's attention backend (flex, its Llama 3 default; flex_flash: FlexAttention's
  FA4 path, Hopper and newer; varlen);
- COMPILE=1: torch.compile per block and of the loss (set it here, not with --compile.*, so
  the workload line says what ran);
- a metrics line every step, without color codes.
torchtitan imports at its top two packages this run never calls: HF `datasets` (its text
datasets, for validation) and `tensorboard` (for torch.utils.tensorboard's writer). Where they
are not installed (the GPU machine has neither; each pulls tens of MB), a stand-in module that
fails if called takes their place.

Its stdout is torchtitan's log, first a `titan_train: workload {...}` line; tools/titan_log.py
turns it into the suite's records. Launched as torchtitan launches, by torchrun:

    NUM_LAYERS=8 PRECISION=fp8-tensorwise torchrun --standalone --nproc_per_node 1 tools/titan_train.py \\
        --training.seq_len 8192 --training.local_batch_size 1 --training.steps 12 --dump_folder OUT/titan
"""
import importlib.util
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from upgrade_bench import settings  # noqa: E402
from upgrade_bench.faults import BadInput, run_main  # noqa: E402
from upgrade_bench.hardware.precisions import PRECISIONS  # noqa: E402

MODEL = "llama-3.1-8b"   # the suite's preset whose shapes torchtitan's flavor below has
FLAVOR = "8B"            # torchtitan's models/llama3 flavor of Llama 3.1 8B
FLOAT8 = "torchao.float8"  # the precisions torchtitan's Float8LinearConverter runs
VARS = [
    settings.Var("NUM_LAYERS", "int", 8, "decoder layers kept, the first ones", min=1, max=32),
    settings.Var("PRECISION", "choice", "bf16", "bf16, or torchao float8 through torchtitan's converter",
                 choices=("bf16",) + tuple(n for n, p in PRECISIONS.items() if p.module == FLOAT8)),
    settings.Var("ATTN", "choice", "flex", "torchtitan's attention backend", choices=("flex", "flex_flash", "varlen")),
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


def suite_llama3():
    """torchtitan's Trainer.Config for the suite's workload (torchtitan calls it: `--config suite_llama3`)."""
    from dataclasses import replace

    from torchtitan.components.loss import ChunkedLossWrapper, CrossEntropyLoss
    from torchtitan.components.metrics import MetricsProcessor
    from torchtitan.components.optimizer import default_adamw
    from torchtitan.components.quantization import Float8LinearConverter
    from torchtitan.config import CompileConfig, TrainingConfig
    from torchtitan.models.common.config_utils import decoder_vocab_size
    from torchtitan.models.llama3 import model_registry
    from torchtitan.trainer import Trainer

    s = workload()
    spec = model_registry(FLAVOR, attn_backend=s.ATTN)
    spec.model.layers = spec.model.layers[:s.NUM_LAYERS]
    recipe = PRECISIONS[s.PRECISION].recipe
    if recipe:
        converter = Float8LinearConverter.Config(recipe_name=recipe, filter_fqns=["lm_head"],
                                                 model_compile_enabled=s.COMPILE)
        spec = replace(spec, model=converter.build().convert(spec.model))
    vocab = decoder_vocab_size(spec)
    data = _data_classes()
    return Trainer.Config(
        model_spec=spec,
        hf_assets_path="",  # nothing read: the stand-in tokenizer takes no file
        tokenizer=data.NoTokenizer.Config(),
        dataloader=data.RandomTokens.Config(vocab_size=vocab),
        loss=ChunkedLossWrapper.Config(loss_fn=CrossEntropyLoss.Config(global_vocab_size=vocab)),
        optimizer=default_adamw(lr=3e-4),
        training=TrainingConfig(local_batch_size=1, seq_len=8192, steps=12),
        compile=CompileConfig(enable=s.COMPILE),
        activation_checkpoint=None,
        metrics=MetricsProcessor.Config(log_freq=1, disable_color_printing=True),
    )


def _data_classes():
    """The random-token dataloader and the stand-in tokenizer, torchtitan Configurables (built
    lazily: they subclass torchtitan's classes)."""
    from dataclasses import dataclass

    import torch
    from torch.utils.data import IterableDataset
    from torchtitan.components.dataloader import ParallelAwareDataloader
    from torchtitan.components.tokenizer import BaseTokenizer

    class NoTokenizer(BaseTokenizer):
        """The tokenizer torchtitan builds before its dataloader; random tokens need none."""

        @dataclass(kw_only=True, slots=True)
        class Config(BaseTokenizer.Config):
            pass

        def __init__(self, config, *, tokenizer_path: str = ""):
            super().__init__()

        encode = decode = get_vocab_size = unused("a tokenizer")

    class Tokens(IterableDataset):
        def __init__(self, vocab: int, seq_len: int, seed: int):
            self.vocab, self.seq_len, self.seed = vocab, seq_len, seed

        def __iter__(self):
            g = torch.Generator().manual_seed(self.seed)
            positions = torch.arange(self.seq_len)
            while True:
                ids = torch.randint(0, self.vocab, (self.seq_len + 1,), generator=g)
                yield {"input": ids[:-1], "positions": positions}, ids[1:]

    class RandomTokens(ParallelAwareDataloader):
        """Uniform random tokens of the model's vocabulary, a sequence per sample, each rank its own."""

        @dataclass(kw_only=True, slots=True)
        class Config(ParallelAwareDataloader.Config):
            vocab_size: int = 128256

        def __init__(self, config, *, dp_world_size: int, dp_rank: int, tokenizer, seq_len: int,
                     local_batch_size: int, snapshot_every_n_steps: int | None = None, **kwargs):
            super().__init__(Tokens(config.vocab_size, seq_len, seed=dp_rank), dp_rank=dp_rank,
                             dp_world_size=dp_world_size, batch_size=local_batch_size)

    return types.SimpleNamespace(NoTokenizer=NoTokenizer, RandomTokens=RandomTokens)


def main(argv) -> int:
    s = workload()
    if importlib.util.find_spec("torchtitan") is None:
        raise BadInput("torchtitan is not importable here (the GPU machine: .gpu/titan-setup.sh, then "
                       "PYTHONPATH=/tmp/titan-site)")
    made = stand_ins()
    print("titan_train: workload " + json.dumps({"model": MODEL, "flavor": FLAVOR, "num_layers": s.NUM_LAYERS,
                                                 "precision": s.PRECISION, "attn": s.ATTN, "compile": s.COMPILE,
                                                 "stand_ins": made}), flush=True)
    from torchtitan import train

    sys.argv = [sys.argv[0], "--module", "titan_train", "--config", "suite_llama3", *argv]
    train.main()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))
