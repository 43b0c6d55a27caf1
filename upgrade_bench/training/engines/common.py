"""What both engines do alike before they wrap the model: the process group, and the model built
as resolved (Liger, the attention backend, the hybrids' fast kernels, the low-precision linears)."""
from ...models import model
from ...kernels.attention import backends as attn_backends
from .. import low_precision


def init_world_of_one(rc) -> str:
    """Select the GPU, and in a world of one make the process group; returns its backend (NCCL
    on a GPU, gloo on CPU) for the engine, which joins a launched world itself.

    A world of one needs no rendezvous: an in-process store, not a TCP port that another run on
    the host may hold."""
    import torch

    on_gpu = rc.device.type == "cuda"
    if on_gpu:
        torch.cuda.set_device(rc.device)
    backend = "nccl" if on_gpu else "gloo"
    if rc.resolved.world_size == 1:
        torch.distributed.init_process_group(backend, store=torch.distributed.HashStore(), rank=0,
                                             world_size=1)
    return backend


def build_model(rc, dtype, float8_all_gather: bool = False, compile_linears: bool = True):
    """The causal LM of `rc` on its device in `dtype`, with Liger applied and the linears converted
    to the low precision as the header planned (float8_all_gather: torchao's FSDP2 float8
    weights; compile_linears: compile each converted linear's forward, on a GPU)."""
    import torch

    r = rc.resolved
    if r.use_liger:
        model.apply_liger(r.cut.config.model_type, r.liger_swiglu)
    torch.manual_seed(r.train.SEED)
    net = model.build(r.cut.config, attn_backends.BACKENDS[r.backend].hf_name, rc.weights, rc.weights_path,
                      rc.device, dtype)
    model.bind_mixer_kernels(net, r.cut.config.model_type)  # as rc.mixer_kernels says
    if r.precision.low:  # after the model is built, before the engine flattens, partitions or shards it
        converted = low_precision.convert(net, r.precision, emulate=rc.device.type != "cuda",
                                          experts=r.train.FP8_EXPERTS, float8_all_gather=float8_all_gather,
                                          compile_linears=compile_linears)
        planned = rc.low_precision["converted_linears"], rc.low_precision["converted_experts"]
        if converted != planned:  # the header said otherwise: a programming error, not a measurement
            raise AssertionError(f"(linears, experts modules) converted to {r.precision.name}: {converted}, "
                                 f"the header says {planned}")
    return net
