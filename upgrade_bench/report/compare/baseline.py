"""The GPUs a user names: --baseline and --price names matched to the logs' GPUs, and the
baseline chosen when none is named."""
from ...faults import BadInput
from ...hardware import gpus
from ..published.guide import PUBLISHED_GPUS, SHIPPED_PATH


def match_gpu(name: str, gpu_map: dict) -> str | None:
    """The dataset GPU a user-given name means: its normalised or raw name (any case), or
    the GPU the table maps the name to ('B200' -> 'B200 SXM')."""
    wanted = name.strip().lower()
    for gpu in gpu_map.values():
        if wanted == gpu.name.lower() or wanted in {r.lower() for r in gpu.raw_names}:
            return gpu.name
    spec = gpus.lookup(name)
    return spec.name if spec and spec.name in gpu_map else None


def choose_baseline(gpu_map: dict, candidates, requested: str | None = None) -> str:
    """The GPU the others are compared with: --baseline, else the lower bf16 peak."""
    if requested:
        found = match_gpu(requested, gpu_map)
        if found is None:
            raise BadInput(f"--baseline {requested!r}: no such GPU in the logs "
                             f"(GPUs: {', '.join(sorted(gpu_map))})")
        return found
    # Unknown peaks sort last; ties (H100 vs H200) go to the smaller memory.
    return min(candidates, key=lambda n: (gpu_map[n].peak_tflops is None,
                                          gpu_map[n].peak_tflops or 0.0,
                                          gpu_map[n].hbm_gib or 0.0, n))


def published_hint(name: str) -> str:
    """'; the guide's published H200 SXM figures are in <file>: add ...' for a GPU the guide
    publishes, else ''."""
    spec = gpus.lookup(name)
    if spec is None or spec not in map(gpus.lookup, PUBLISHED_GPUS):
        return ""
    return f"; the guide's published {spec.name} figures are in {SHIPPED_PATH}: add that file (or its folder) " \
           "to the inputs"


def match_prices(prices: dict, gpu_map: dict) -> dict:
    """{name as given: USD per GPU-hour} -> {dataset GPU: USD}; BadInput names what is wrong."""
    out, given = {}, {}
    for name, usd in prices.items():
        gpu = match_gpu(name, gpu_map)
        if gpu is None:
            raise BadInput(f"--price {name}={usd:g}: no GPU named {name!r} in the logs "
                             f"(GPUs: {', '.join(sorted(gpu_map))})" + published_hint(name))
        if gpu in out:
            raise BadInput(f"--price {given[gpu]} and --price {name}: both price {gpu}; give one")
        out[gpu], given[gpu] = usd, name
    return out
