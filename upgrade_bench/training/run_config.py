"""What a training-step run will run, resolved against this machine before any model or GPU
work: the settings, the world, the device, Liger, the attention backend (its `auto` rule and
the model family's say), the weights, the model's spec, the memory floor, the peak for MFU;
and the header such a run writes. Bad input is BadInput here, before the header.
"""
import os
from dataclasses import dataclass

from ..models import architecture, model
from ..kernels import attn_backends
from . import extensions, memory
from ..hardware import fingerprint, gpus
from ..log import header, runs
from ..faults import BadInput


@dataclass
class RunConfig:
    """Settings resolved against this machine: what actually runs."""
    settings: dict
    world_size: int
    rank: int
    local_rank: int
    device: object
    use_liger: bool
    backend: str
    backend_why: str
    weights: str
    weights_path: object
    hf_config: object
    spec: architecture.ModelSpec
    peak_tflops: float | None
    peak_source: str | None
    warnings: list
    alloc_conf: str = ""  # PYTORCH_CUDA_ALLOC_CONF as this process got it
    mixer_kernels: dict | None = None  # where a hybrid's fast kernels come from (model.mixer_kernels)

    def header_config(self) -> dict:
        return runs.training_config(self.settings, self.use_liger, self.world_size, self.alloc_conf)


def resolve(settings: dict) -> RunConfig:
    """Check every setting against this machine before any model or GPU work.

    Raises BadInput with one line on anything that cannot run.
    """
    import torch

    has_gpu = torch.cuda.is_available()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if has_gpu else torch.device("cpu")
    warnings = []
    hf_config = model.load_config(settings["MODEL"], settings["NUM_LAYERS"], warnings)
    liger_installed = fingerprint.package_version("liger-kernel") is not None
    use_liger, liger_warnings = model.resolve_liger(settings["USE_LIGER"], has_gpu, liger_installed,
                                                    hf_config.model_type,
                                                    model.liger_model_types() if has_gpu and liger_installed else None)
    warnings += liger_warnings
    backend, why = attn_backends.resolve(settings["ATTN_BACKEND"], fingerprint.device(),
                                         attn_backends.installed(settings["ATTN_BACKEND"]),
                                         architecture.refusals(hf_config.model_type))
    kernels = model.mixer_kernels(hf_config)
    warnings += model.mixer_kernel_warnings(hf_config.model_type, kernels)
    weights, path = model.resolve_weights(settings["WEIGHTS"], settings["MODEL"])

    doc_len = settings["PACKED_DOC_LEN"]
    if doc_len == 1:  # its one token is masked: every label would be, and the loss NaN
        raise BadInput("PACKED_DOC_LEN=1: a document needs at least 2 tokens (one predicts the "
                       "next); use 0 for dense sequences")
    shortest = min(settings["SEQ_LEN"])
    if doc_len and doc_len >= shortest:
        raise BadInput(f"PACKED_DOC_LEN={doc_len}: must be shorter than every SEQ_LEN "
                       f"(shortest {shortest}), or 0 for dense sequences")
    if doc_len and backend == "eager":
        raise BadInput("PACKED_DOC_LEN with ATTN_BACKEND=eager: use sdpa or a flash backend")

    spec = model.spec(hf_config)
    if doc_len:
        warnings += packed_state_warnings(doc_len, spec.mix())
    gpu_bytes = torch.cuda.get_device_properties(device).total_memory if has_gpu else None
    problem = memory.fit_problem(settings["MODEL"], spec.total_params, settings["ZERO_STAGE"], world,
                                 settings["OFFLOAD_OPTIMIZER"], gpu_bytes, memory.host_ram_bytes())
    if problem:  # before the header: the host's OOM killer gives no record, only a SIGKILL
        raise BadInput(problem)
    problem = extensions.stale_lock_problem()
    if problem:  # else DeepSpeed's first op build waits on it, silently, forever
        raise BadInput(problem)
    peak, source, warning = gpus.resolve_peak(fingerprint.gpu_name(), "bf16", settings["PEAK_TFLOPS"])
    if warning:
        warnings.append(warning)
    return RunConfig(settings, world, rank, local_rank, device, use_liger, backend, why, weights,
                     path, hf_config, spec, peak, source, warnings,
                     os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), kernels)


def packed_state_warnings(doc_len: int, mix: dict) -> list:
    """Packed documents reach the model as position_ids that restart at 0, which attention
    reads; transformers gives its Gated DeltaNet and Mamba-2 mixers document boundaries only
    through other arguments (cu_seq_lens_q, seq_idx) that a batch of position_ids does not
    carry, so their state runs on from one document into the next. Their cost is linear in
    the tokens either way: the time and FLOPs stand, what such a step computes does not."""
    linear = {kind: n for kind, n in mix.items() if kind in architecture.LINEAR_MIXERS}
    if not linear:
        return []
    return [f"PACKED_DOC_LEN={doc_len}: documents are told apart by position_ids, which attention reads; "
            f"the {architecture.mix_text(linear)} layers get no document boundaries from transformers, "
            f"so their state runs across documents (step time and FLOPs as timed, not a separated run)"]


def zero3_moe(rc: RunConfig) -> bool:
    """Whether the MoE blocks are ZeRO-3 leaf modules in this run (the header says so)."""
    return rc.settings["ZERO_STAGE"] == 3 and rc.spec.moe and rc.settings["ZERO3_LEAF_MOE"]


def header_fields(rc: RunConfig) -> dict:
    """The header record of any script that runs the training step."""
    return header.fields(rc.header_config(), rc.settings["NOTES"], rc.warnings, attn_backend=rc.backend,
                         attn_backend_why=rc.backend_why, attn_versions=attn_backends.versions(),
                         weights=rc.weights, model_type=rc.hf_config.model_type,
                         num_layers=len(rc.spec.layers), layer_mix=rc.spec.mix(),
                         n_active_params=rc.spec.active_params, n_total_params=rc.spec.total_params,
                         mixer_kernels=rc.mixer_kernels, z3_leaf_moe_blocks=zero3_moe(rc),
                         peak_tflops=rc.peak_tflops, peak_source=rc.peak_source)
