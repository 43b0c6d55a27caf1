"""Software-stack parity, the guide's caveat 2: the stack alone moves results by double-digit %.

The guide found torch 2.11 -> 2.12 alone worth +16% on one H200 (Machine Learning
Engineering Open Book, insights/when-to-upgrade-gpus, "Same software stack"), so every
comparison names each package whose version differs between its two series, and the training
engine where it differs: a log of the suite without `engine` ran DeepSpeed (the only engine
before ENGINE); a published figure without a software stack names no engine.
"""

STACK_KEYS = ("python", "torch", "cuda", "transformers", "deepspeed", "liger-kernel")


def stack_of(header) -> dict:
    software = (header or {}).get("software") or {}
    keys = list(STACK_KEYS) + sorted(k for k in software if k.startswith("flash-attn"))
    engine = (header or {}).get("engine") or ("deepspeed" if software else None)
    return {**{k: software.get(k) for k in keys}, "engine": engine}


def stack_differences(a: dict, b: dict) -> list:
    """[(package, a's version, b's version)] where two stacks differ.

    An attention package installed on one side only is the per-GPU backend choice (FA3 on
    Hopper, FA4 on Blackwell, as the guide ran), shown as the series' backend; two
    different versions of the same package are a mismatch.
    """
    out = []
    for k in dict.fromkeys(list(a) + list(b)):
        va, vb = a.get(k), b.get(k)
        if va != vb and not (k.startswith("flash-attn") and (va is None or vb is None)):
            out.append((k, va, vb))
    return out


def differences_between(stacks_a: list, stacks_b: list) -> list:
    """[(package, versions on side a, versions on side b)] over the distinct stacks of two
    series: one comparison of stacks per pair of distinct stacks, never per pair of runs."""
    found = {}
    for a in stacks_a:
        for b in stacks_b:
            for package, va, vb in stack_differences(a, b):
                sides = found.setdefault(package, ({}, {}))
                sides[0][str(va)] = None
                sides[1][str(vb)] = None
    return [(package, list(a), list(b)) for package, (a, b) in found.items()]
