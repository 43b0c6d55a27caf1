"""Software-stack parity: the guide's caveat 2 (the stack alone moves results by double-digit %)."""

# The guide's caveat 2: these move results by double-digit percent, so they must match.
STACK_KEYS = ("python", "torch", "cuda", "transformers", "deepspeed", "liger-kernel")


def stack_of(header) -> dict:
    software = (header or {}).get("software") or {}
    keys = list(STACK_KEYS) + sorted(k for k in software if k.startswith("flash-attn"))
    return {k: software.get(k) for k in keys}


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


def mixed_stack_warnings(series: list) -> list:
    return [f"{s.label} mixes software stacks: " + "; ".join(
        f"{k} {a} vs {b}" for k, a, b in stack_differences(s.stacks[0], s.stacks[1]))
        for s in series if len(s.stacks) > 1]
