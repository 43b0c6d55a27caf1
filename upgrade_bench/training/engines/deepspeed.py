"""ENGINE=deepspeed, the guide's: DeepSpeed ZeRO (stage, CPU Adam offload) around the model."""
from . import common
from ..run_config import zero3_moe
from ...settings import Settings


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


def build(rc, mark=None):
    """(DeepSpeed engine, hf_ds_config keep-alive) with the model built as resolved."""
    import deepspeed
    import torch

    on_gpu = rc.device.type == "cuda"
    backend = common.init_world_of_one(rc)
    deepspeed.init_distributed(dist_backend=backend, verbose=False)  # a world of one's group as it is
    ds_config = deepspeed_config(rc.resolved.train, on_gpu)
    keep_alive = None
    if rc.resolved.train.ZERO_STAGE == 3:
        from transformers.integrations import HfDeepSpeedConfig

        keep_alive = HfDeepSpeedConfig(ds_config)  # must outlive model construction
    net = common.build_model(rc, torch.bfloat16)
    if zero3_moe(rc):
        # ZeRO-3 otherwise gathers each expert's weights as the router reaches it, one
        # all-gather per expert and layer; a leaf module is gathered whole, once.
        from ...models import model

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
