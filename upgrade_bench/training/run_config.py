"""What this training process will run: the resolver's answer (training/resolver.py, the same
the sweep's and the node's plans get) for this machine as torch sees it, plus what only the
process knows: its rank and device, the weights, where a hybrid's fast kernels come from, and
whether the model's state fits. Bad input is BadInput here, before the header.
"""
import os
from dataclasses import dataclass

from ..models import layers, model
from ..kernels.attention import backends as attn_backends
from . import extensions, low_precision, memory, resolver
from ..hardware import fingerprint
from ..log import header
from ..faults import BadInput, EnvironmentFault
from ..settings import Settings


@dataclass
class RunConfig:
    """Settings resolved against this machine: what actually runs."""
    resolved: resolver.Resolved
    rank: int
    local_rank: int
    device: object
    weights: str
    weights_path: object
    warnings: list
    alloc_conf: str = ""  # PYTORCH_CUDA_ALLOC_CONF as this process got it
    mixer_kernels: dict | None = None  # where a hybrid's fast kernels come from (model.mixer_kernels)
    low_precision: dict | None = None  # what the conversion to a low precision does (low_precision.plan)

    def header_config(self) -> dict:
        return self.resolved.config(self.alloc_conf)


def resolve_here(train: Settings) -> RunConfig:
    """Check every setting against this machine before any model or GPU work.

    Raises BadInput with one line on anything that cannot run.
    """
    import torch

    has_gpu = torch.cuda.is_available()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if has_gpu else torch.device("cpu")
    machine = resolver.machine_for(fingerprint.device(), fingerprint.gpu_name(), world, train.ATTN_BACKEND)
    resolved = resolver.resolve(train, machine, model.load_config(train.MODEL), train.SEQ_LEN)
    if resolved.precision.low and has_gpu:
        problem = precision_probe_problem(resolved.precision, device)
        if problem:
            raise BadInput(problem)
    cut = resolved.cut
    warnings = list(resolved.warnings)
    kernels = model.mixer_kernels(cut.config)
    warnings += model.mixer_kernel_warnings(cut.full.family, kernels)
    weights, path = model.resolve_weights(train.WEIGHTS, train.MODEL)
    if train.PACKED_DOC_LEN:
        warnings += packed_state_warnings(train.PACKED_DOC_LEN, cut.counted.mix())
    gpu_bytes = torch.cuda.get_device_properties(device).total_memory if has_gpu else None
    problem = memory.fit_problem(train.MODEL, cut.built.total_params, train.ZERO_STAGE, world,
                                 train.OFFLOAD_OPTIMIZER, gpu_bytes, fingerprint.host_ram_bytes())
    if problem:  # before the header: the host's OOM killer gives no record, only a SIGKILL
        raise BadInput(problem)
    extensions.use_checkout_cache()
    problem = extensions.stale_lock_problem()
    if problem:  # else DeepSpeed's first op build waits on it, silently, forever
        raise EnvironmentFault(problem)
    converts = (low_precision.plan_on_meta(cut.config, resolved.precision, thresholds=has_gpu,
                                           experts=train.FP8_EXPERTS)
                if resolved.precision.low else None)
    if train.FP8_EXPERTS and converts and converts["kept_experts"] and not converts["converted_experts"]:
        kept = "; ".join(converts["kept_experts"])  # its experts modules, each kept in bf16 (gpt-oss's: row-major)
        warnings.append(f"FP8_EXPERTS=1: no experts module of MODEL={train.MODEL} can run the FP8 grouped "
                        f"GEMM ({kept}): its experts stay bf16, it changes nothing here")
    return RunConfig(resolved, int(os.environ.get("RANK", "0")), local_rank, device, weights, path, warnings,
                     os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), kernels, converts)


def precision_probe_problem(precision, device) -> str | None:
    """Why this GPU and stack cannot run `precision`'s GEMM, from check_capabilities' probe of
    it (a tiny real scaled matmul), or None."""
    from ..capability import probes, verdicts

    verdict = verdicts.evaluate(precision.item, fingerprint.device(device.index or 0),
                                lambda: probes.MATMULS[precision.item](device))
    if verdict.status == "ok":
        return None
    return f"PRECISION={precision.name}: {precision.item} is {verdict.status} here ({verdict.detail}); use PRECISION=bf16"


def packed_state_warnings(doc_len: int, mix: dict) -> list:
    """Packed documents reach the model as position_ids that restart at 0, which attention
    reads; transformers gives its Gated DeltaNet and Mamba-2 mixers document boundaries only
    through other arguments (cu_seq_lens_q, seq_idx) that a batch of position_ids does not
    carry, so their state runs on from one document into the next. Their cost is linear in
    the tokens either way: the time and FLOPs stand, what such a step computes does not."""
    linear = {kind: n for kind, n in mix.items() if kind in layers.LINEAR_MIXERS}
    if not linear:
        return []
    return [f"PACKED_DOC_LEN={doc_len}: documents are told apart by position_ids, which attention reads; "
            f"the {layers.mix_text(linear)} layers get no document boundaries from transformers, "
            f"so their state runs across documents (step time and FLOPs as timed, not a separated run)"]


def zero3_moe(rc: RunConfig) -> bool:
    """Whether the MoE blocks are ZeRO-3 leaf modules in this run (the header says so)."""
    return rc.resolved.train.ZERO_STAGE == 3 and rc.resolved.cut.counted.moe and rc.resolved.train.ZERO3_LEAF_MOE


def header_fields(rc: RunConfig) -> dict:
    """The header record of any script that runs the training step."""
    r, cut = rc.resolved, rc.resolved.cut
    return header.fields(rc.header_config(), rc.resolved.train.NOTES, rc.warnings, attn_backend=r.backend,
                         attn_backend_why=r.backend_why, attn_versions=attn_backends.versions(),
                         weights=rc.weights, model_type=cut.full.family,
                         num_layers=len(cut.built.layers), layer_mix=cut.counted.mix(), model_cut=cut.label(),
                         n_active_params=cut.counted.active_params, n_total_params=cut.built.total_params,
                         mixer_kernels=rc.mixer_kernels, z3_leaf_moe_blocks=zero3_moe(rc),
                         peak_tflops=r.peak_tflops, peak_source=r.peak_source, precision=r.precision.name,
                         low_precision=rc.low_precision, data=r.tokens.describe() if r.tokens else None,
                         workload=r.train.WORKLOAD)
