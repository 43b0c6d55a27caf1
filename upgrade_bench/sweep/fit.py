"""Whether each point of a sweep fits the GPU's memory, said before anything runs: its peak
estimated (models/peak_memory.py) against what the GPU's allocator can reserve, a verdict,
and for a point that does not fit the single changes that would fit it, chosen from what the
run has not already set.
"""
from dataclasses import dataclass, replace

from ..models import cuts, peak_memory

# Memory outside the caching allocator, which its peak (max reserved) does not count: the CUDA
# context, cuBLAS's and NCCL's workspaces. The H100's out-of-memory at 32K said 74.97 GiB in use by
# the process of which 73.70 was PyTorch's (results/h100-node-10/node/decompose.jsonl).
CONTEXT_GIB = 1.3
FITS, TIGHT, NO_FIT, UNKNOWN = "fits", "tight", "does not fit", "unknown"
# Where a point's estimate is within the model's own error of the usable memory it may go either
# way: "tight" (it runs). The error is what the estimate holds on every committed peak it covers.
TIGHT_SHARE = peak_memory.ESTIMATE_ERROR
# Larger worlds a ZeRO-3 fix may name: a node's GPUs, up to the guide's 8.
WORLDS = (2, 4, 8)


@dataclass(frozen=True)
class Fit:
    seq_len: int
    peak_gib: float
    floor: bool
    usable_gib: float
    verdict: str
    fixes: tuple = ()   # ("GRAD_CHECKPOINT=1 (~45 GiB)", ...): single changes that would fit it

    def text(self) -> str:
        """'fits (~62 GiB of 78)', 'does not fit: needs ~84 GiB of 78; fits with ...'."""
        need, of = f"~{self.peak_gib:.0f} GiB", f"{self.usable_gib:.0f}"
        if self.verdict == NO_FIT:
            fix = f"; fits with {' or '.join(self.fixes)}" if self.fixes else ""
            return f"does not fit: needs {'at least ' if self.floor else ''}{need} of {of}{fix}"
        if self.verdict == TIGHT:
            return (f"tight ({need} of {of}: within the estimate's {TIGHT_SHARE:.0%}, it may run out of "
                    f"memory)")
        if self.verdict == UNKNOWN:
            return f"unknown (at least {need} of {of}: the estimate covers dense models' activations only)"
        return f"fits ({need} of {of})"


def usable_gib(hbm_gib: float) -> float:
    """What the allocator can reserve on a GPU of `hbm_gib` (as torch reports its total)."""
    return hbm_gib - CONTEXT_GIB


def verdict(peak_gib: float, floor: bool, usable: float) -> str:
    if peak_gib > usable:
        return NO_FIT
    if floor:
        return UNKNOWN
    return TIGHT if peak_gib > usable * (1 - TIGHT_SHARE) else FITS


def peak_of(train, world: int, cut, seq_len: int) -> peak_memory.Estimate:
    return peak_memory.estimate(cut.built, cut.counted, seq_len, train.BATCH_SIZE, train.ZERO_STAGE, world,
                                train.OFFLOAD_OPTIMIZER, train.GRAD_CHECKPOINT, train.ENGINE)


def fixes(train, world: int, cut, model_config, seq_len: int, usable: float) -> tuple:
    """The single changes, cheapest first, that would fit the point, each with its estimate: only
    settings not already in force (checkpointing, offload, ZeRO-3 over more GPUs, fewer layers)."""
    found = []

    def fits(changed, w=world, c=cut):
        est = peak_of(changed, w, c, seq_len)
        return est.peak_gib <= usable * (1 - TIGHT_SHARE) and not est.floor, est.peak_gib

    for name in ("GRAD_CHECKPOINT", "OFFLOAD_OPTIMIZER"):
        if not getattr(train, name):
            ok, gib = fits(replace(train, **{name: True}))
            if ok:
                found.append(f"{name}=1 (~{gib:.0f} GiB)")
    for w in (w for w in WORLDS if w > world):
        ok, gib = fits(replace(train, ZERO_STAGE=3), w)
        if ok:
            found.append(f"ZERO_STAGE=3 over {w} GPUs (~{gib:.0f} GiB)")
            break
    layers = len(cut.counted.layers)
    for n in range(layers - 1, 0, -1):
        smaller = cuts.cut(model_config, n, train.NUM_EXPERTS, train.MODEL)
        ok, gib = fits(train, world, smaller)
        if ok:
            found.append(f"NUM_LAYERS={n} (~{gib:.0f} GiB)")
            break
    return tuple(found)


def point_fits(train, world: int, cut, model_config, seq_len: int, hbm_gib: float | None) -> Fit | None:
    """The verdict of one point on a GPU of `hbm_gib`; None where the memory or the model is unknown."""
    if not hbm_gib or cut is None:
        return None
    usable = usable_gib(hbm_gib)
    est = peak_of(train, world, cut, seq_len)
    said = verdict(est.peak_gib, est.floor, usable)
    found = fixes(train, world, cut, model_config, seq_len, usable) if said == NO_FIT else ()
    return Fit(seq_len, est.peak_gib, est.floor, usable, said, found)
