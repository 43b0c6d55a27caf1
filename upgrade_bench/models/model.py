"""Model configs, presets, weights and building.

Llama-3.1-8B's weights are gated, so its config ships in `configs/` and `WEIGHTS=auto`
loads real weights only when they are staged on local disk (install.sh stages them);
otherwise it initialises random weights from the config, which has the same FLOPs and
memory. The model is never materialised on a rank's CPU: it is built directly on the GPU,
or partitioned at construction under ZeRO-3 (`HfDeepSpeedConfig` makes transformers build
it inside `deepspeed.zero.Init`).
"""
import json
import os
import socket
import urllib.parse
import urllib.request
from pathlib import Path

from ..faults import BadInput
from . import architecture, config_file, cuts, layers
from ..paths import REPO

# Every config in configs/ is a preset by its file name: adding one is adding the file.
PRESETS = {p.stem: p for p in sorted((REPO / "configs").glob("*.json"))}
# Where install.sh stages real weights of a preset (MODEL_DIR overrides).
STAGED = {"llama-3.1-8b": "meta-llama/Llama-3.1-8B"}
# A hub that answers at all accepts a TCP connection in well under a second; 3 s allows a
# slow link and is far below the ~25 s of retries an unreachable hub costs a download.
HUB_PROBE_S = 3.0


def model_dir() -> Path:
    return Path(os.environ.get("MODEL_DIR", REPO / "models"))


def not_a_model(model: str) -> str:
    return f"MODEL={model!r}: not a preset ({', '.join(PRESETS)}), a local config folder or a cached hub id"


def cheap_problem(model: str) -> str | None:
    """Why MODEL cannot name a model, found without importing transformers (the sweep asks
    before any process starts), or None when it may: a preset, a folder with a config.json,
    or a hub id (an `org/name`, cached or not; the benchmark's own start says which)."""
    if model in PRESETS:
        return None
    if os.path.exists(model):
        return None if os.path.isfile(os.path.join(model, "config.json")) or os.path.isfile(model) else \
            f"{not_a_model(model)} (no config.json in that folder)"
    parts = model.split("/")
    if len(parts) == 2 and all(parts) and not model.startswith((".", "~")):
        return None
    return not_a_model(model)


def cheap_config(model: str) -> dict | None:
    """MODEL's config.json as a checked mapping (config_file.read), read without transformers (a
    preset, a local folder or file, a hub id's cached config), or None when none is at hand (a
    hub id not cached): the plans resolve the run before any process starts
    (training/resolver.py). BadInput, naming MODEL, for a file that is no model config."""
    path = config_path(model)
    if path is None:
        return None
    try:
        return config_file.read(path)
    except BadInput as err:
        where = "" if path in (Path(model), Path(model) / "config.json") else f" ({path})"
        raise BadInput(f"MODEL={model!r}{where}: {err}") from None


def config_path(model: str) -> Path | None:
    """The config.json file MODEL names (a preset, a local folder or file, a hub id's cached
    config), or None where there is none at hand."""
    path = PRESETS.get(model) or (Path(model) / "config.json" if os.path.isdir(model) else Path(model))
    if path.is_file():
        return path
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model, "config.json")
    except Exception:  # not a hub id either: the benchmark's own start says what MODEL can be
        return None
    return Path(cached) if isinstance(cached, str) else None


def cheap_model_type(model: str) -> str | None:
    """MODEL's `model_type` from cheap_config, or None where its config is not at hand."""
    return (cheap_config(model) or {}).get("model_type")


def hub_unreachable(endpoint: str, timeout_s: float = HUB_PROBE_S) -> str | None:
    """Why the hub at `endpoint` (through the proxy the environment names, if any) cannot be
    reached now, or None: one TCP connection, instead of a download's retries."""
    url = urllib.parse.urlsplit(endpoint)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(url.hostname):
        url = urllib.parse.urlsplit(proxy if "://" in proxy else "http://" + proxy)
    address = (url.hostname, url.port or (443 if url.scheme == "https" else 80))
    try:
        socket.create_connection(address, timeout=timeout_s).close()
    except OSError as err:
        return f"{address[0]}:{address[1]}: {err}"
    return None


def hub_config(repo_id: str):
    """The config of a hub model: from the local cache, else fetched if the hub is reachable."""
    from huggingface_hub import constants
    from huggingface_hub.utils import HFValidationError, validate_repo_id
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(repo_id, local_files_only=True)
    except OSError:
        try:
            validate_repo_id(repo_id)
        except HFValidationError:
            raise  # not a hub id either: the caller says what MODEL can be
    where = not_a_model(repo_id)
    if constants.is_offline_mode():
        raise BadInput(f"{where}, and HF_HUB_OFFLINE is set: fetch it once online, or unset it")
    problem = hub_unreachable(constants.ENDPOINT)
    if problem:
        raise BadInput(f"{where}, and the hub cannot be reached to fetch it ({problem})")
    return AutoConfig.from_pretrained(repo_id)


def load_config(model: str):
    """A transformers config from a preset name, a local path or a hub id, whole (the resolver
    cuts it: cuts.cut).

    BadInput: no config there, sizes no model can have, or a hub id that is neither cached nor
    fetchable now.
    """
    from transformers import AutoConfig

    source = str(PRESETS.get(model, model))
    cheap_config(model)  # the file checked field by field before transformers reads it
    try:
        config = AutoConfig.from_pretrained(source) if os.path.exists(source) else hub_config(source)
    except BadInput:
        raise
    except Exception as err:  # OSError for a missing path, validation errors for a bad config
        first_line = (str(err).splitlines() or [""])[0][:200]
        raise BadInput(f"{not_a_model(model)} ({type(err).__name__}: {first_line})") from None
    return cuts.cut(config, 0, 0, model).config  # a whole model's sizes checked as a cut's are


def spec(config) -> architecture.ModelSpec:
    """What the model is (its layers, mixers and experts); BadInput for an uncounted family."""
    return architecture.describe(config)




def _origin(fn) -> str:
    """Where a layer's kernel comes from: its package's module, or layers.TORCH_FALLBACK for None
    (the layer then runs its own torch code) and for transformers' torch versions."""
    origin = getattr(fn, "__module__", None) or ""
    return layers.TORCH_FALLBACK if fn is None or origin.startswith("transformers") else origin


def _fast_kernel(target: str):
    """The function "package.module:function" names, or None when it does not import."""
    import importlib

    module, _, name = target.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception:  # not installed, or a CUDA/Triton error while importing
        return None


def mixer_kernels(hf_config) -> dict:
    """{kernel: where it comes from} of a family with fast-kernel packages (flash-linear-
    attention, mamba-ssm, causal-conv1d), as its layers will run: one linear-mixer layer is
    built on the meta device (no memory) and its kernel attributes read. Where transformers
    left its torch code and the package is installed, bind_mixer_kernels binds the package's
    kernel, and the entry says so. (transformers 5.14 binds FLA's at import, or its torch code
    without FLA; 5.17's layers hold no such attribute and call a module function that resolves
    the package itself. Granite's Mamba layer sets module globals instead, and runs them only
    all together: Family.fast_path_flag; 5.17's has no such flag, and calls module functions as
    its Gated DeltaNet does.) Empty for families without such kernels."""
    import importlib

    import torch

    family = architecture.FAMILIES[hf_config.model_type]
    where = family.fast_kernels
    if not where:
        return {}
    module_name, _, cls = where[0].rpartition(".")
    module = importlib.import_module(module_name)
    with torch.device("meta"):
        layer = getattr(module, cls)(hf_config, layer_idx=0)
    if family.fast_path_flag in vars(module):  # all of the module's kernels, or none
        fast = vars(module).get(family.fast_path_flag)
        return {attr: _origin(vars(module).get(attr) if fast else None) for attr in where[1]}
    out = {}
    for attr, target in where[1].items():
        package = target.partition(":")[0]
        installed = _fast_kernel(target) is not None
        if not hasattr(layer, attr):
            # transformers 5.17: the layer calls a module function whose decorator picks, at
            # import, a hub kernel if asked for, else the package when it imports, else torch
            out[attr] = f"{package} (transformers' choice)" if installed else layers.TORCH_FALLBACK
            continue
        held = _origin(getattr(layer, attr))
        if held == layers.TORCH_FALLBACK and installed:
            held = f"{package} (bound by the suite: transformers held its torch code)"
        out[attr] = held
    return out


def bind_mixer_kernels(net, model_type: str) -> int:
    """Bind each installed fast kernel where a built model's linear-mixer layers hold
    transformers' torch code (mixer_kernels says which); returns the layers changed."""
    where = architecture.FAMILIES[model_type].fast_kernels
    if not where:
        return 0
    cls = where[0].rpartition(".")[2]
    kernels = {attr: _fast_kernel(target) for attr, target in where[1].items()}
    changed = 0
    for layer in (m for m in net.modules() if type(m).__name__ == cls):
        for attr, fn in kernels.items():
            if fn is not None and hasattr(layer, attr) and _origin(getattr(layer, attr)) == layers.TORCH_FALLBACK:
                setattr(layer, attr, fn)
                changed += 1
    return changed


def mixer_kernel_warnings(model_type: str, kernels: dict) -> list:
    """What a header warns of mixer_kernels: a torch fallback, whose timings are not the
    architecture's speed."""
    slow = [name for name, where in kernels.items() if where == layers.TORCH_FALLBACK]
    if not slow:
        return []
    targets = architecture.FAMILIES[model_type].fast_kernels[1]
    packages = dict.fromkeys(targets[name].partition(".")[0].partition(":")[0] for name in slow)
    return [f"{model_type}: {', '.join(slow)} run transformers' slow torch fallback "
            f"({', '.join(packages)}: not installed, or not taken here): these timings are not "
            f"the architecture's speed"]


def _has_weights(path: Path) -> bool:
    return path.is_dir() and any(path.glob("*.safetensors"))


def weights_path(model: str) -> Path | None:
    """Local folder holding real weights for `model`, or None."""
    if model in STAGED:
        staged = model_dir() / Path(STAGED[model]).name
        return staged if _has_weights(staged) else None
    if _has_weights(Path(model)):
        return Path(model)
    try:  # a hub id already in the local HF cache; never downloads
        from huggingface_hub import snapshot_download

        cached = Path(snapshot_download(model, local_files_only=True, allow_patterns=["*.json", "*.safetensors"]))
        return cached if _has_weights(cached) else None
    except Exception:
        return None


def resolve_weights(requested: str, model: str) -> tuple[str, Path | None]:
    """('pretrained', path) or ('random', None); BadInput for WEIGHTS=pretrained without weights."""
    path = weights_path(model) if requested != "random" else None
    if requested == "pretrained" and path is None:
        where = model_dir() / Path(STAGED[model]).name if model in STAGED else model
        raise BadInput(f"WEIGHTS=pretrained: no *.safetensors at {where}; stage them with "
                       f"./install.sh (HF cache) or use WEIGHTS=random")
    return ("pretrained", path) if path else ("random", None)


def resolve_liger(requested: str, has_gpu: bool, installed: bool, model_type: str = "",
                  supported: set | None = None, compiled: bool = False) -> tuple[bool, list[str]]:
    """(Liger on, warnings) for USE_LIGER on a machine and model; BadInput where it cannot run.

    `supported`: the model types Liger patches (None: not known, as when it is not installed).
    `compiled`: the decoder blocks are compiled (ENGINE=fsdp2 COMPILE=1), where auto is off:
    inductor fuses the norms, RoPE, SwiGLU and the loss as Liger's kernels do, and Liger's
    kernels cut the compiled graphs instead (on an H100, the right-sized 8-layer Llama at 8K:
    483.7 TFLOPS/GPU without Liger, 359.7 with it; results/h100-stacks-12).
    """
    if supported is not None and model_type not in supported and requested != "0":
        if requested == "1":
            raise BadInput(f"USE_LIGER=1: liger-kernel has no kernels for model type {model_type!r}; "
                           f"use USE_LIGER=0 or auto")
        return False, [f"liger-kernel has no kernels for model type {model_type!r}: USE_LIGER=auto "
                       f"resolved to off"]
    use_liger = requested == "1" or (requested == "auto" and has_gpu and not compiled)
    if use_liger and not has_gpu:
        raise BadInput("USE_LIGER=1: Liger kernels need a GPU (Triton has no CPU driver); "
                       "use USE_LIGER=0 or auto on CPU")
    if use_liger and not installed:
        if requested == "1":
            raise BadInput("USE_LIGER=1: liger-kernel is not installed (./install.sh installs it)")
        return False, ["liger-kernel not installed: USE_LIGER=auto resolved to off"]
    if requested == "auto" and not has_gpu:
        return False, ["no GPU: USE_LIGER=auto resolved to off"]
    return use_liger, []


def apply_liger(model_type: str, swiglu: bool = True) -> None:
    """Patch transformers' classes with Liger kernels before the model is built (the model
    type is one Liger has kernels for: resolve_liger checked it before the header)."""
    from liger_kernel.transformers.monkey_patch import MODEL_TYPE_TO_APPLY_LIGER_FN

    # Defaults: RoPE, RMSNorm, SwiGLU and fused linear cross-entropy (train mode with labels).
    # Without SwiGLU for a family whose swap includes its fused MoE (resolver.Resolved.liger_swiglu).
    MODEL_TYPE_TO_APPLY_LIGER_FN[model_type](**({} if swiglu else {"swiglu": False}))


def moe_block_classes(net) -> list:
    """The classes of the model's MoE blocks: the modules that hold an `experts` submodule
    (Qwen3-MoE's SparseMoeBlock, gpt-oss's MLP, DeepSeek-V3's MoE, ...)."""
    import torch

    found = {type(m) for m in net.modules() if isinstance(getattr(m, "experts", None), torch.nn.Module)}
    return sorted(found, key=lambda c: c.__name__)


def build(config, attn_implementation: str, weights: str, path: Path | None, device, dtype):
    """The causal LM on `device` (or partitioned, when a ZeRO-3 HfDeepSpeedConfig is alive)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.integrations import is_deepspeed_zero3_enabled

    zero3 = is_deepspeed_zero3_enabled()
    if weights == "pretrained":
        kwargs = {} if zero3 else {"device_map": {"": device}}
        model = AutoModelForCausalLM.from_pretrained(
            str(path), config=config, dtype=dtype, attn_implementation=attn_implementation, **kwargs)
    elif zero3:
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    else:
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_implementation)
    model.config.use_cache = False  # packed documents need it: see engine.make_batch
    return model
