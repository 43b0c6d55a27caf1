"""ENGINE=fsdp2: torch's FSDP2 around the model, applied as torchtitan applies it.

In a world of one there is nothing to shard, and torchtitan applies no FSDP there: the fp32
weights are the ones the optimizer steps, and the step runs under torch.autocast in bf16 (its
single-device path). FSDP2 on one rank would still copy every block's weights into a bf16
buffer each step and every gradient into an fp32 one, collectives of one rank: compiled without
Liger on an H100 (the right-sized 8-layer Llama, 8K), 483.7 TFLOPS/GPU at 49.8 GiB on this path,
444.9 at 69.8 GiB sharded (results/h100-stacks-12). Not with Liger: its kernels take the weights
as stored, fp32 here, outside autocast (356.4 against 432.5 sharded, eager), so with Liger on a
world of one is sharded as below. Checkpointing, compilation and float8 (without its float8
all-gather) apply on either path.

From two ranks each decoder block, then the root (embeddings, final norm, lm_head), is `fully_shard`ed: their
fp32 weights (the master copy), fp32 gradients and torch's AdamW state live sharded over the
ranks; a block's weights are all-gathered in bf16 as its forward starts (MixedPrecisionPolicy's
param_dtype) and its gradients reduce-scattered in fp32 (reduce_dtype) as its backward ends:
NCCL all-gather and reduce-scatter kernels, which the decomposition counts as `comm`. Per block,
innermost first: activation checkpointing (torch's checkpoint_wrapper, GRAD_CHECKPOINT), then
torch.compile (COMPILE), then fully_shard, so FSDP2's hooks stay outside the compiled graph.
Float8 (PRECISION=fp8-*) converts the linears before sharding; a tensorwise recipe all-gathers
their weights in float8 (torchao's enable_fsdp_float8_all_gather), its scales computed for all
weights at once after each optimizer step, as torchtitan does.

COMPILE=1 compiles the loss too where transformers computes it (USE_LIGER=0): the logits' fp32
upcast and the cross-entropy fused, as torchtitan compiles its loss; Liger's fused linear
cross-entropy is its own kernel.
"""
from . import common, single_device
from ...kernels.attention import backends as attn_backends


def decoder_blocks(net):
    """The model's decoder layers: the ModuleList named `layers` (model.layers in every family)."""
    import torch

    for name, module in net.named_modules():
        if isinstance(module, torch.nn.ModuleList) and name.split(".")[-1] == "layers":
            return module
    raise AssertionError(f"{type(net).__name__} has no ModuleList of decoder layers named 'layers'")


def attention_outside_compile(backend: str) -> None:
    """Run a flash package's attention eagerly inside compiled blocks: its kernels are already
    compiled (FA4's CuTe DSL JIT included) and dynamo has nothing to fuse there; it would
    trace into the package's Python instead. SDPA and FlexAttention compile as torch ops."""
    import torch
    from transformers import AttentionInterface

    hf_name = attn_backends.BACKENDS[backend].hf_name
    if hf_name.startswith("flash_attention"):  # the models look their attention up here at each call
        AttentionInterface.register(hf_name, torch.compiler.disable(AttentionInterface()[hf_name]))


class Engine:
    """The FSDP2-sharded model and its optimizer, stepped as DeepSpeed's engine is."""

    def __init__(self, module, optimizer, float8_scales: bool, autocast_device: str | None):
        self.module, self.optimizer, self.float8_scales = module, optimizer, float8_scales
        self.autocast_device = autocast_device  # a world of one: the forward under bf16 autocast

    def __call__(self, **batch):
        if self.autocast_device is None:
            return self.module(**batch)
        import torch

        with torch.autocast(self.autocast_device, dtype=torch.bfloat16):
            return self.module(**batch)

    def backward(self, loss) -> None:
        loss.backward()

    def step(self) -> None:
        import torch

        torch.nn.utils.clip_grad_norm_(self.module.parameters(), 1.0)  # DeepSpeed's gradient_clipping
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if self.float8_scales:
            from torchao.float8 import precompute_float8_dynamic_scale_for_fsdp

            precompute_float8_dynamic_scale_for_fsdp(self.module)


def build(rc, mark=None):
    """(Engine, None) with the model built as resolved and sharded."""
    import torch
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    s, on_gpu = rc.resolved.train, rc.device.type == "cuda"
    backend = common.init_world_of_one(rc)
    if rc.resolved.world_size > 1:
        torch.distributed.init_process_group(backend)  # torchrun's MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE
    sharded = not single_device("fsdp2", rc.resolved.world_size, rc.resolved.use_liger)  # see the module's docstring
    float8_gather = sharded and rc.resolved.precision.recipe == "tensorwise"
    if s.COMPILE:
        # One graph per block would be one recompile per layer and length; past dynamo's
        # default limit of 8 a block falls back to eager silently.
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
        attention_outside_compile(rc.resolved.backend)
    # fp32 weights: FSDP2 keeps the sharded parameters as the optimizer's master copy
    net = common.build_model(rc, torch.float32, float8_all_gather=float8_gather, compile_linears=not s.COMPILE)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    reshard = s.ZERO_STAGE == 3  # engines.refusal: 2 or 3
    blocks = decoder_blocks(net)
    for index, block in enumerate(blocks):
        if s.GRAD_CHECKPOINT:
            block = checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
        if s.COMPILE:
            block = torch.compile(block)
        if sharded:
            fully_shard(block, mp_policy=policy, reshard_after_forward=reshard)
        blocks[index] = block
    if s.COMPILE and not rc.resolved.use_liger:
        net.loss_function = torch.compile(net.loss_function)
    if sharded:
        fully_shard(net, mp_policy=policy)  # the root: FSDP2 keeps its weights gathered for the backward
    net.train()
    if mark:
        mark("model_built")
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-5, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                                  fused=on_gpu)
    if mark:
        mark("engine_ready")
    return Engine(net, optimizer, float8_gather, None if sharded else rc.device.type), None
