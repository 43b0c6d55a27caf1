"""The training engines a training-step script can run (ENGINE), each a small module behind one
interface: `build(rc, mark)` returns (engine, keep-alive), and the engine takes a step as
DeepSpeed's does: `engine(**batch)` is the forward (the model's outputs, `.loss` among them),
`engine.backward(loss)` and `engine.step()` (gradient clipping at 1.0, AdamW, gradients zeroed).
The one step loop (training/engine.py) times, records and decomposes either alike.

This module holds what resolution needs without torch: the engines, what each is, and the
settings each cannot take (resolver.resolve refuses them in one line before anything starts).
"""
DEFAULT = "deepspeed"
ENGINES = {
    "deepspeed": "DeepSpeed ZeRO (the guide's), under DeepSpeed's launcher",
    "fsdp2": ("torch's FSDP2: fully_shard per decoder block and the root, bf16 compute with fp32 gradient "
              "reduction and sharded fp32 master weights, torch's AdamW (fused on a GPU), under torchrun; on one GPU "
              "without Liger torchtitan's single-device path: fp32 weights, the forward under bf16 autocast, nothing sharded"),
}


def single_device(engine: str, world_size: int, use_liger: bool) -> bool:
    """Whether FSDP2 takes torchtitan's single-device path, nothing sharded (engines/fsdp2.py says
    why): one GPU without Liger. A run's identity records it (SINGLE_DEVICE): before it, FSDP2
    sharded a world of one too."""
    return engine == "fsdp2" and world_size == 1 and not use_liger


def help_text() -> str:
    return "training engine: " + "; ".join(f"{name} = {what}" for name, what in ENGINES.items())


def refusal(train) -> str | None:
    """Why the training settings `train` cannot run on their ENGINE, in one line, or None.

    ZERO_STAGE and OFFLOAD_OPTIMIZER are DeepSpeed's words. FSDP2 shards the optimizer state and
    the gradients always; ZERO_STAGE=3 reshards each block's weights after its forward (ZeRO-3),
    2 keeps them gathered until its backward (FSDP's reshard_after_forward=False, which its
    docs liken to ZeRO-2); it has no stage that keeps gradients or weights whole, so 0 and 1 are
    refused rather than run as something else. FSDP2's CPUOffloadPolicy moves the weights and
    gradients to the host with the optimizer and steps there: not DeepSpeed's optimizer offload,
    so OFFLOAD_OPTIMIZER=1 is refused, not mapped onto it.
    """
    if train.ENGINE == "fsdp2":
        if train.ZERO_STAGE < 2:
            return (f"ZERO_STAGE={train.ZERO_STAGE} with ENGINE=fsdp2: FSDP2 always shards the optimizer state "
                    f"and gradients (ZERO_STAGE=2: weights gathered from forward to backward; 3: resharded "
                    f"after each block's forward); use ZERO_STAGE=2 or 3")
        if train.OFFLOAD_OPTIMIZER:
            return ("OFFLOAD_OPTIMIZER=1 with ENGINE=fsdp2: FSDP2's CPU offload moves the weights and gradients "
                    "to the host too, not DeepSpeed's optimizer alone; use OFFLOAD_OPTIMIZER=0 (or ENGINE=deepspeed)")
    elif train.COMPILE:
        return (f"COMPILE=1 with ENGINE={train.ENGINE}: compiling each decoder block is FSDP2's (DeepSpeed's "
                f"hooks sit on those modules); use ENGINE=fsdp2 or COMPILE=0")
    return None


def build(rc, mark=None):
    """(engine, keep-alive) of the run `rc` resolved, on its ENGINE."""
    from . import deepspeed, fsdp2  # each imports torch and its library inside build

    return {"deepspeed": deepspeed, "fsdp2": fsdp2}[rc.resolved.train.ENGINE].build(rc, mark)
