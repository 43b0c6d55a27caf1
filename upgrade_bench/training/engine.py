"""The training step both benchmark.py and bench_decompose.py time: DeepSpeed setup, batches
of random tokens or of the user's (DATA), dense or document-packed, one fwd + bwd + optimizer step, and a script's main
around them (run_script). What runs is resolved first, in run_config.py.
"""
import os
import re
import sys
import time

from ..models import flops, layers, model
from ..kernels.attention import backends as attn_backends
from ..kernels import timing
from . import data, extensions, low_precision, memory
from .run_config import RunConfig, header_fields, resolve_here, zero3_moe
from ..faults import NonFiniteLoss, WriteFailed, error_fields, exit_code_for
from ..settings import Settings


def sanitize_arch_list(value: str) -> str:
    """TORCH_CUDA_ARCH_LIST without 'a'/'f' suffixes ('9.0a' -> '9.0').

    DeepSpeed's JIT op builder cannot parse them, and 9.0a is common on Hopper boxes that
    built FA3. The ops it builds (CPU/fused Adam) use no arch-specific instructions.
    """
    return re.sub(r"(\d+\.\d+)[af]\b", r"\1", value)


def prepare_process_env(environ=os.environ) -> None:
    """Environment fixes that must precede importing DeepSpeed; single-process defaults (a
    world of one has no rendezvous, so no MASTER_ADDR/MASTER_PORT: see build_engine)."""
    if environ.get("TORCH_CUDA_ARCH_LIST"):
        environ["TORCH_CUDA_ARCH_LIST"] = sanitize_arch_list(environ["TORCH_CUDA_ARCH_LIST"])
    if "RANK" not in environ:  # run as plain `python script.py`: a world of one
        environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")


def deepspeed_config(s: Settings, on_gpu: bool) -> dict:
    """The DeepSpeed config for one point of the guide's sweep."""
    # The guide's ZeRO settings, every stage. overlap_comm also puts ZeRO-2's gradient
    # reduction buffers on DeepSpeed's side stream, in the caching allocator's pool of that
    # stream: on the 8-layer H200 run at 8K, without it the default stream's pool needed an
    # extra 10.4 GiB segment and peaked 5.2 GiB higher (67.7 vs 62.5 GiB reserved).
    zero = {"stage": s.ZERO_STAGE, "overlap_comm": True, "contiguous_gradients": True}
    if s.OFFLOAD_OPTIMIZER:
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": on_gpu}
    config = {
        "train_micro_batch_size_per_gpu": s.BATCH_SIZE,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 1.0,
        "bf16": {"enabled": True},
        "zero_optimization": zero,
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    if s.OFFLOAD_OPTIMIZER or on_gpu:
        # DeepSpeed's own AdamW: CPU Adam when offloaded, fused Adam on the GPU (as the guide).
        config["optimizer"] = {"type": "AdamW", "params": {
            "lr": 1e-5, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.0}}
    else:
        config["zero_allow_untested_optimizer"] = True
    return config


def build_engine(rc: RunConfig, mark=None):
    """(DeepSpeed engine, hf_ds_config keep-alive) with the model built as resolved."""
    import deepspeed
    import torch

    on_gpu = rc.device.type == "cuda"
    if on_gpu:
        torch.cuda.set_device(rc.device)
    backend = "nccl" if on_gpu else "gloo"
    if rc.resolved.world_size == 1:
        # A world of one needs no rendezvous: an in-process store, not a TCP port that another
        # run on the host may hold. DeepSpeed then takes the initialized process group as it is.
        torch.distributed.init_process_group(backend, store=torch.distributed.HashStore(), rank=0,
                                             world_size=1)
    deepspeed.init_distributed(dist_backend=backend, verbose=False)
    ds_config = deepspeed_config(rc.resolved.train, on_gpu)
    keep_alive = None
    if rc.resolved.train.ZERO_STAGE == 3:
        from transformers.integrations import HfDeepSpeedConfig

        keep_alive = HfDeepSpeedConfig(ds_config)  # must outlive model construction
    if rc.resolved.use_liger:
        model.apply_liger(rc.resolved.cut.config.model_type, rc.resolved.liger_swiglu)
    torch.manual_seed(rc.resolved.train.SEED)
    net = model.build(rc.resolved.cut.config, attn_backends.BACKENDS[rc.resolved.backend].hf_name, rc.weights,
                      rc.weights_path, rc.device, torch.bfloat16)
    model.bind_mixer_kernels(net, rc.resolved.cut.config.model_type)  # as rc.mixer_kernels says
    if rc.resolved.precision.low:  # after the model is built, before DeepSpeed flattens or partitions it
        converted = low_precision.convert(net, rc.resolved.precision, emulate=not on_gpu, experts=rc.resolved.train.FP8_EXPERTS)
        planned = rc.low_precision["converted_linears"], rc.low_precision["converted_experts"]
        if converted != planned:  # the header said otherwise: a programming error, not a measurement
            raise AssertionError(f"(linears, experts modules) converted to {rc.resolved.precision.name}: {converted}, "
                                 f"the header says {planned}")
    if zero3_moe(rc):
        # ZeRO-3 otherwise gathers each expert's weights as the router reaches it, one
        # all-gather per expert and layer; a leaf module is gathered whole, once.
        deepspeed.utils.set_z3_leaf_modules(net, model.moe_block_classes(net))
    if rc.resolved.train.GRAD_CHECKPOINT:
        net.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    net.train()
    if mark:
        mark("model_built")
    optimizer = None
    if "optimizer" not in ds_config:
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-5, betas=(0.9, 0.95))
    engine, *_ = deepspeed.initialize(model=net, optimizer=optimizer, config=ds_config,
                                      model_parameters=None if optimizer else net.parameters())
    if mark:
        mark("engine_ready")
    return engine, keep_alive


def token_range(hf_config) -> tuple[int, int]:
    """[low, high) of the random tokens: clear of the special tokens at either end of the
    vocabulary. Llama-3's start at bos=128000 of 128,256, below them; DeepSeek-V3's (bos 0,
    eos 1) and Gemma 3's (pad 0, eos 1, bos 2) sit at the bottom, above them (a ceiling at the
    first special id drew no token at all there, or only 0)."""
    vocab = hf_config.vocab_size
    ids = [getattr(hf_config, name, None) for name in ("bos_token_id", "eos_token_id", "pad_token_id")]
    ids = [i for x in ids for i in (x if isinstance(x, list) else [x]) if isinstance(i, int) and 0 <= i < vocab]
    low = max([i + 1 for i in ids if i < vocab // 2], default=0)
    high = min([i for i in ids if i >= vocab // 2], default=vocab)
    return low, high


def make_batch(batch: int, seq_len: int, doc_len: int, tokens: tuple, device, generator) -> dict:
    """Random tokens in [tokens[0], tokens[1]); with doc_len, documents packed into each sequence."""
    import torch

    return packed_batch(torch.randint(*tokens, (batch, seq_len), generator=generator), doc_len, device)


def packed_batch(ids, doc_len: int, device) -> dict:
    """A step's batch of token ids (batch, seq_len); with doc_len, documents packed into each sequence.

    Packed documents are told apart by position_ids that restart at 0: transformers' flash
    paths run varlen attention from them, and its SDPA path builds the block-diagonal mask
    from them (only with use_cache=False, hence that flag). The first token of each document
    after the first gets label -100, so no loss term crosses a document boundary.
    """
    import torch

    seq_len = ids.shape[1]
    ids = ids.to(device)
    labels = ids.clone()
    positions = torch.cat([torch.arange(n) for n in flops.doc_lengths(seq_len, doc_len)])
    if doc_len:
        starts = torch.nonzero(positions == 0).flatten()[1:]
        labels[:, starts.to(device)] = -100
    position_ids = positions.unsqueeze(0).expand(ids.shape[0], -1).to(device)
    return {"input_ids": ids, "labels": labels, "position_ids": position_ids, "use_cache": False}


class Batches:
    """Each step's batch at one length: without DATA one batch of random tokens every step (a
    speed measurement: the tokens do not change the step's work); with DATA the step's own
    window of the user's tokens (training/data.py), fresh each step, so the loss means training."""

    def __init__(self, rc: RunConfig, seq_len: int):
        import torch

        s, self.tokens = rc.resolved.train, rc.resolved.tokens
        self.train, self.seq_len, self.device, self.config = s, seq_len, rc.device, rc.resolved.cut.config
        self.fixed = None if self.tokens else make_batch(
            s.BATCH_SIZE, seq_len, s.PACKED_DOC_LEN, token_range(self.config), rc.device,
            torch.Generator().manual_seed(s.SEED + seq_len))

    def step(self, index: int) -> dict:
        if self.fixed is not None:
            return self.fixed
        import torch

        s = self.train
        ids = data.window(self.tokens, index, s.BATCH_SIZE, self.seq_len, self.config.vocab_size)
        return packed_batch(torch.from_numpy(ids), s.PACKED_DOC_LEN, self.device)


def prepare_point(rc: RunConfig, seq_len: int):
    """(Batches, StepFlops) for one sequence length, with the peak-memory counters reset.

    The allocator's cache is left as it is, as a training run leaves it: emptying it before
    the first step threw away the blocks DeepSpeed's set-up had freed, which a training
    step reuses for its activations, and cost 9.4 GiB more reserved at the 8-layer 8K point
    on the H200 (71.9 vs 62.5 GiB, the guide's script). A point after a shorter one starts
    with that point's blocks cached: they count in its peak only if it cannot reuse them.
    """
    s = rc.resolved.train
    batches = Batches(rc, seq_len)
    memory.reset_point_counters(rc.device)
    return batches, flops.step_flops(rc.resolved.cut.counted, s.BATCH_SIZE, seq_len, s.PACKED_DOC_LEN,
                                     s.GRAD_CHECKPOINT)


def precision_fields(rc: RunConfig, model_flops: float, tokens: int) -> dict:
    """A point's low-precision share of its model FLOPs and the step time its formats allow
    at the GPU table's published MAMF (null where the table has no MAMF of the format)."""
    from ..hardware import fingerprint, gpus

    converted = rc.low_precision["converted_params"] if rc.low_precision else 0
    share = flops.low_precision_share(converted, tokens, model_flops)
    spec = gpus.lookup(fingerprint.gpu_name())
    mamf_bf16 = spec and spec.mamf_tflops("bf16")
    mamf_low = spec and spec.mamf_tflops(rc.resolved.precision.peak_dtype) if rc.resolved.precision.low else mamf_bf16
    if not (mamf_bf16 and mamf_low):
        return {"low_precision_flop_share": share, "precision_bound_ms": None, "precision_bound_source": None}
    return {"low_precision_flop_share": share,
            "precision_bound_ms": flops.precision_bound_ms(model_flops, share, mamf_low, mamf_bf16),
            "precision_bound_source": f"table:{spec.name}"}


def train_step(engine, batch: dict, mark=None):
    """One fwd + bwd + optimizer step; returns the loss tensor."""
    loss = engine(**batch).loss
    if mark:
        mark("forward")
    engine.backward(loss)
    if mark:
        mark("backward")
    engine.step()
    if mark:
        mark("step")
    return loss


def timed_step(eng, batch: dict, device, mark=None) -> tuple[float, float]:
    """(wall ms, loss) of one synchronized step; a NaN/inf loss raises NonFiniteLoss.

    Host clock around a step that starts and ends with a device sync: a training step
    ends in a host sync anyway (the loss is read), so events would add nothing here.
    """
    import math
    import time

    timing.sync(device)
    start = time.perf_counter()
    loss = train_step(eng, batch, mark).item()  # waits for the step's device work
    timing.sync(device)
    step_ms = (time.perf_counter() - start) * 1e3
    if not math.isfinite(loss):
        raise NonFiniteLoss(f"loss is {loss}")
    return step_ms, loss


def gather_objects(obj) -> list:
    """obj from every rank (all ranks must call); [obj] in a world of one."""
    import torch.distributed as dist

    if not (dist.is_initialized() and dist.get_world_size() > 1):
        return [obj]
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def run_script(script: str, variables, doc: str, run_point) -> int:
    """main() of a training-step script: settings, header, engine, run_point per SEQ_LEN.

    run_point(engine, rc, writer, seq_len, earlier_points, debug) writes the script's records
    (earlier_points: lengths this process ran before this one, whose cached blocks shape its
    peak memory; debug: a memory.Debug under MEM_DEBUG=1, else None).
    Any failure becomes one `error` record and the exit code a sweep reads (3 = OOM); bad
    settings raise BadInput before anything starts.
    """
    from ..log import records
    from .. import settings

    s = settings.load(variables, doc)
    stdout = records.claim_stdout()
    prepare_process_env()
    rc = resolve_here(s)
    writer = records.RecordWriter(script, s.OUTPUT, enabled=rc.rank == 0, stream=stdout)
    writer.write("header", **header_fields(rc))
    if rc.rank == 0:
        for warning in rc.warnings:
            sys.stderr.write(f"warning: {warning}\n")
    debug = memory.Debug(rc, writer) if s.MEM_DEBUG else None
    seq_len = None
    try:
        say_rank0(rc, "start-up: building the model and the DeepSpeed engine (minutes for an 8B "
                      "model on a node; a first run also builds DeepSpeed's Adam op) ...")
        notice = extensions.waiting_notice()
        if notice:
            say_rank0(rc, notice)
        started = time.monotonic()
        eng, _keep_alive = build_engine(rc, debug.mark if debug else None)
        attends = any(kind in layers.QUADRATIC for kind in rc.resolved.cut.counted.mix())  # a Mamba-only cut has none
        say_rank0(rc, started_text(time.monotonic() - started, s.SEQ_LEN, rc.resolved.backend if attends else None,
                                     rc.resolved.precision.low and rc.device.type == "cuda",
                                     any(v != layers.TORCH_FALLBACK for v in (rc.mixer_kernels or {}).values()),
                                     rc.resolved.liger_moe))
        for earlier_points, seq_len in enumerate(s.SEQ_LEN):
            run_point(eng, rc, writer, seq_len, earlier_points, debug)
    except WriteFailed:
        raise  # no record can say so: faults.run_main makes it one line and an exit code
    except Exception as err:  # one record per failure, then an exit code the sweep reads
        fields = error_fields(err)
        writer.write("error", seq_len=seq_len, config=rc.header_config(), **fields)
        if rc.rank == 0:
            sys.stderr.write(f"error: {fields['error']} at seq_len {seq_len}: {fields['message']}\n")
            if fields["error"] == "oom":
                sys.stderr.write(f"hint: {oom_hint(rc.resolved.train)}\n")
        shut_down_distributed(clean=False)
        return exit_code_for(err)
    shut_down_distributed(clean=True)
    return 0


def oom_hint(train) -> str:
    """The guide's ways out of an out-of-memory point, cheapest first, of those not already in force
    (`train`: the run's training settings): a hint to set what is set is no hint."""
    layers = train.NUM_LAYERS
    ways = ([f"cut the model to fewer layers (NUM_LAYERS={8 if not layers or layers > 8 else max(1, layers // 2)})"]
            if layers != 1 else [])
    ways += ["checkpoint activations (GRAD_CHECKPOINT=1)"] if not train.GRAD_CHECKPOINT else []
    ways += ["offload the optimizer (OFFLOAD_OPTIMIZER=1)"] if not train.OFFLOAD_OPTIMIZER else []
    ways += ["shard it over more GPUs (" + ("ZERO_STAGE=3 with " if train.ZERO_STAGE < 3 else "")
             + "deepspeed --num_gpus=N)"]
    return "to fit, " + ", ".join(ways[:-1]) + (" or " if len(ways) > 1 else "") + ways[-1]


# What a run's first step at each length spends compiling where a hybrid's fast kernels run:
# flash-linear-attention's and mamba-ssm's are Triton kernels, compiled and autotuned per shape
# on first use: 132 s for 4 layers of Qwen3-Next on a fresh H200, 82 s for Granite's; with the
# tuning cached, the next Qwen3-Next process ran 8K and 32K in 33 s (results/h200-experts-9/).
# Triton keeps compiled kernels in its cache directory, autotune picks only when asked.
MIXER_FIRST_STEP = ("the linear mixers' Triton kernels compile and autotune (1-2 minutes on a cold "
                    "cache; TRITON_CACHE_AUTOTUNING=1 keeps the tuning for later runs)")
# Liger's fused MoE tunes its Triton kernels once per process (the costs: sweep/node/cost.LIGER_MOE_*).
LIGER_MOE_FIRST_STEP = ("Liger's fused MoE autotunes its Triton kernels, once per process (minutes "
                        "with nothing compiled; USE_LIGER=0 runs transformers' own experts instead)")


def started_text(startup_s: float, seq_lens: list, backend: str | None, compiles_precision: bool = False,
                 compiles_mixers: bool = False, tunes_liger_moe: bool = False) -> str:
    """The line between start-up and the first step: what it took, what comes, and what the
    attention backend's, the precision's, the linear mixers' and Liger's fused MoE's first step
    spends compiling or tuning (a minute of silence otherwise looks like a hang)."""
    first_step = "; ".join(filter(None, [attn_backends.BACKENDS[backend].first_step if backend else "",
                                         low_precision.FIRST_STEP if compiles_precision else "",
                                         MIXER_FIRST_STEP if compiles_mixers else "",
                                         LIGER_MOE_FIRST_STEP if tunes_liger_moe else ""]))
    return (f"start-up done in {startup_s:.0f} s; measuring seq_len {' '.join(map(str, seq_lens))}"
            + (f"; in each first step {first_step}" if first_step else ""))


def say_rank0(rc: RunConfig, message: str) -> None:
    if rc.rank == 0:
        sys.stderr.write(f"{message}\n")
        sys.stderr.flush()


def shut_down_distributed(clean: bool) -> None:
    """Leave the process group so no rank's exit tears the TCP store from under another.

    After a clean run every rank reaches the barrier, so rank 0, which hosts the store, exits
    last; after a failure another rank may never arrive, so no barrier then.
    """
    import torch.distributed as dist

    if not dist.is_initialized():
        return
    if clean and dist.get_world_size() > 1:
        dist.barrier()
    dist.destroy_process_group()


def leave(code: int):
    """End a training-step script's process with `code`, without Python's finalization.

    DeepSpeed keeps references to its process groups past destroy_process_group, so their
    gloo worker and transport threads (and rank 0's TCP store) still run when the interpreter
    finalizes. A worker that then lets go of the last reference to a tensor Python owns (a
    ZeRO-3 parameter carries Python attributes) must take the GIL, and once finalization has
    begun that ends in std::terminate: "terminate called without an active exception",
    SIGABRT, exit 250 through the launcher, now and then, after every record was written.
    The barrier of shut_down_distributed narrows that window but cannot close it: a worker
    lets go of a finished collective just after the barrier is passed. os._exit ends those
    threads with the process. Every record is out by then (each is flushed as written).
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
