"""What a training run will run: its settings resolved once, against a machine, without torch.

The sweep's plan, the node's plan and each training process call `resolve` with the same
settings and a `Machine` (from NVML before anything starts, from torch inside the process),
so the plan's file name, header, RESUME and estimate name what the children run: the
attention backend (`auto` and the model family's refusals), Liger (the family must be one
liger-kernel patches), the precision, the peak for MFU, the model's cut (NUM_LAYERS,
NUM_EXPERTS) and the user's token file (DATA). Each refusal is BadInput, one line, before any model is built.

A run's identity (`Resolved.config`) is what a header records and what RESUME and the report
compare (log/runs.run_identity).
"""
import ast
from dataclasses import dataclass
from functools import lru_cache

from ..faults import BadInput
from ..hardware import gpus, precisions
from ..hardware.fingerprint import Device, installed_file, package_version
from ..kernels.attention import backends as attn_backends
from ..log.runs import training_config
from ..models import architecture, cuts, model
from . import data, engines, low_precision
from ..settings import Settings


@dataclass(frozen=True)
class Machine:
    """What resolution needs to know of where the run goes."""
    device: Device
    gpu_name: str | None
    world_size: int
    installed_backends: frozenset  # attention backends that import here (attn_backends.installed)
    liger_types: frozenset | None  # model types the installed liger-kernel patches; None: not installed
    liger_moe_types: frozenset = frozenset()  # of those, the ones whose experts it swaps for its fused MoE


def liger_source() -> str | None:
    """The installed liger-kernel's monkey_patch module as text, read without importing it (that
    would import torch and Triton): '' where it cannot be found, None where not installed."""
    if package_version("liger-kernel") is None:
        return None
    return installed_file("liger_kernel", "transformers/monkey_patch.py") or ""


@lru_cache(maxsize=2)
def _parsed(source: str) -> ast.Module:
    """liger-kernel's monkey_patch module parsed once for both readers (a few thousand lines)."""
    return ast.parse(source)


def _apply_table(tree: ast.Module) -> dict:
    """MODEL_TYPE_TO_APPLY_LIGER_FN as assigned in `tree`: {model type: its apply function's
    name (None where the value is no plain name)}; {} where the module has no such dict."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(getattr(t, "id", None) == "MODEL_TYPE_TO_APPLY_LIGER_FN" for t in node.targets)):
            return {k.value: getattr(v, "id", None) for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return {}


def liger_types_in(source: str) -> frozenset:
    """The string keys of the MODEL_TYPE_TO_APPLY_LIGER_FN dict assigned in `source`."""
    return frozenset(_apply_table(_parsed(source)))


def liger_fused_moe_types_in(source: str) -> frozenset:
    """The keys of MODEL_TYPE_TO_APPLY_LIGER_FN whose apply function, called with its defaults as
    model.apply_liger calls it, swaps the experts for LigerExperts: it names LigerExperts and its
    `swiglu` argument defaults to True (gpt-oss's defaults to False: its experts stay). liger-kernel
    0.8.5 swaps them on transformers 5 only, which the pins require."""
    tree = _parsed(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    swaps = set()
    for name, fn in functions.items():
        positional = fn.args.posonlyargs + fn.args.args
        args = positional[len(positional) - len(fn.args.defaults):] + fn.args.kwonlyargs
        defaults = fn.args.defaults + list(fn.args.kw_defaults)
        swiglu = next((d for a, d in zip(args, defaults) if a.arg == "swiglu"), None)
        names = {getattr(n, "id", None) or getattr(n, "attr", None) for n in ast.walk(fn)}
        if isinstance(swiglu, ast.Constant) and swiglu.value is True and "LigerExperts" in names:
            swaps.add(name)
    return frozenset(kind for kind, fn in _apply_table(tree).items() if fn in swaps)


def machine_for(device: Device, gpu_name: str | None, world_size: int, requested_backend: str) -> Machine:
    """The Machine of a device as NVML or torch describes it, with this host's packages."""
    source = liger_source()
    return Machine(device, gpu_name, world_size, frozenset(attn_backends.installed(requested_backend)),
                   None if source is None else liger_types_in(source), liger_fused_moe_types_in(source or ""))


@dataclass(frozen=True)
class Resolved:
    """What will run."""
    train: Settings  # the training variables, as the script parsed them
    world_size: int
    cut: cuts.Cut | None        # the model and its cut; None: its config is not at hand (a hub id not cached)
    use_liger: bool
    backend: str
    backend_why: str
    precision: precisions.Precision
    peak_tflops: float | None
    peak_source: str | None
    warnings: tuple
    tokens: data.Tokens | None = None  # DATA's token file; None: random tokens
    liger_moe: bool = False     # Liger's fused MoE runs the experts: its Triton kernels autotune in the first step
    liger_swiglu: bool = True   # Liger swaps its SwiGLU in (off where its fused MoE would take FP8 experts' place)

    def config(self, alloc_conf: str = "") -> dict:
        """The header's `config`: the settings as resolved here, a run's identity."""
        return training_config(self.train, self.use_liger, self.world_size, alloc_conf,
                               engines.single_device(self.train.ENGINE, self.world_size, self.use_liger))


def resolve(train: Settings, machine: Machine, model_config, seq_lens: list) -> Resolved:
    """The run `train` (the training variables) describe on `machine`, for a model whose
    full config is `model_config` (a transformers config or a config.json mapping; None when
    not at hand) at `seq_lens`. BadInput on anything that cannot run there."""
    problem = engines.refusal(train)
    if problem:
        raise BadInput(problem)
    warnings = []
    cut = None
    if model_config is not None:
        cut = cuts.cut(model_config, train.NUM_LAYERS, train.NUM_EXPERTS, train.MODEL)
        if cut.note:
            warnings.append(cut.note)
    else:
        warnings.append(f"MODEL={train.MODEL}: its config is not at hand before the first process "
                        f"starts, which checks the family's refusals and the cut")
    model_type = cut.full.family if cut else None
    has_gpu = machine.device.capability is not None
    use_liger, liger_warnings = model.resolve_liger(
        train.USE_LIGER, has_gpu, machine.liger_types is not None, model_type or "",
        machine.liger_types if has_gpu and model_type else None, train.ENGINE == "fsdp2" and bool(train.COMPILE))
    warnings += liger_warnings
    backend, why = attn_backends.resolve(train.ATTN_BACKEND, machine.device, machine.installed_backends,
                                         architecture.refusals(model_type))
    check_packing(train.PACKED_DOC_LEN, seq_lens, backend)
    tokens = data.open_tokens(train.DATA) if train.DATA else None
    if tokens:  # bench_decompose.py times TIME_STEPS where benchmark.py times STEPS
        steps = train.WARMUP_STEPS + getattr(train, "STEPS", getattr(train, "TIME_STEPS", 1))
        warnings += data.check_length(tokens, train.BATCH_SIZE, seq_lens, steps)
    precision = precisions.resolve(train.PRECISION, machine.device)
    if train.FP8_EXPERTS and not precision.experts:
        runs = " or ".join(p.name for p in precisions.TABLE if p.experts)
        raise BadInput(f"FP8_EXPERTS=1: PRECISION={precision.name} has no FP8 grouped GEMM for the experts; "
                       f"use PRECISION={runs}, or FP8_EXPERTS=0")
    warnings += no_effect(train, cut, precision, has_gpu)
    peak, source, peak_warning = gpus.resolve_peak(machine.gpu_name, "bf16", train.PEAK_TFLOPS)
    if peak_warning:
        warnings.append(peak_warning)
    liger_moe = bool(use_liger and cut and cut.counted.moe and model_type in machine.liger_moe_types)
    liger_swiglu = not (liger_moe and low_precision.experts_none_because(precision, train.FP8_EXPERTS) is None)
    if not liger_swiglu:
        liger_moe = False
        warnings.append(f"PRECISION={precision.name}: Liger is applied without its SwiGLU (swiglu=False), whose "
                        f"fused MoE would replace the experts that run the FP8 grouped GEMM")
    return Resolved(train, machine.world_size, cut, use_liger, backend, why, precision, peak, source,
                    tuple(warnings), tokens, liger_moe, liger_swiglu)


def no_effect(train: Settings, cut: cuts.Cut | None, precision: precisions.Precision, has_gpu: bool) -> list:
    """A line for each setting that can change nothing in this run: it would run as without
    it, silently (issue 46: FP8_EXPERTS=1 on a dense model, NUM_EXPERTS where the layer cut keeps
    no MoE layer, a low precision on CPU, where torchao emulates it)."""
    lines = []
    if cut is not None and not cuts.experts_of(cut.counted):
        where = (f"the cut to NUM_LAYERS={train.NUM_LAYERS} keeps no MoE layer of {train.MODEL}"
                 if cuts.experts_of(cut.full) else f"MODEL={train.MODEL} has no MoE layer")
        lines += [f"{name}={getattr(train, name):d}: {where}: it changes nothing here"
                  for name in ("NUM_EXPERTS", "FP8_EXPERTS") if getattr(train, name)]
    if precision.low and not has_gpu:
        lines.append(f"PRECISION={precision.name} on CPU: torchao emulates the format (every linear it can "
                     f"convert, no size threshold, nothing compiled): the numbers run, not its speed")
    return lines


def check_packing(doc_len: int, seq_lens: list, backend: str) -> None:
    """BadInput for a PACKED_DOC_LEN no step can run."""
    if doc_len == 1:  # its one token is masked: every label would be, and the loss NaN
        raise BadInput("PACKED_DOC_LEN=1: a document needs at least 2 tokens (one predicts the "
                       "next); use 0 for dense sequences")
    shortest = min(seq_lens)
    if doc_len and doc_len >= shortest:
        raise BadInput(f"PACKED_DOC_LEN={doc_len}: must be shorter than every sequence length "
                       f"(shortest {shortest}), or 0 for dense sequences")
    if doc_len and backend == "eager":
        raise BadInput("PACKED_DOC_LEN with ATTN_BACKEND=eager: use sdpa or a flash backend")
