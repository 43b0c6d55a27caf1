"""Where each measured workload sits: the guide's question "is my architecture in the
attention-bound regime where the new GPU shines?", answered per series and length.

Next to each other: the quadratic-attention share of the model FLOPs (full and windowed
attention; linear-attention layers and MoE experts shrink it) and, where a decomposition ran,
the share of the measured step that attention kernels took, with the linear mixers' and MoE
routing's shares. FLOP share is what the count says; time share is what the GPU did. The rows
here; their table page/bound.py's.
"""
from dataclasses import dataclass

from ..read.series import Series


def _share(decomposition: dict | None, bucket: str) -> float | None:
    part = ((decomposition or {}).get("buckets") or {}).get(bucket) or {}
    return part.get("time_share")


def _routing_share(decomposition: dict | None) -> float | None:
    other = ((decomposition or {}).get("buckets") or {}).get("other") or {}
    routing, wall = (other.get("moe_routing") or {}).get("ms"), (decomposition or {}).get("wall_step_ms")
    return routing / wall if isinstance(routing, (int, float)) and wall else None


@dataclass(frozen=True)
class BoundRow:
    """One series at one length: its throughput and where its FLOPs and its step time went."""
    series: Series
    seq_len: int
    tflops: float | None
    attn_flop_share: float | None        # quadratic attention's share of the model FLOPs
    attention_time_share: float | None   # of the measured step (a decomposition's), as the rest
    mixer_time_share: float | None
    routing_time_share: float | None


def rows(series_list) -> list:
    out = []
    for s in series_list:
        for n in sorted(set(s.points) | set(s.decompositions)):
            summary, dec = s.points.get(n) or {}, s.decompositions.get(n)
            out.append(BoundRow(s, n, summary.get("tflops_per_gpu") or ((dec or {}).get("total") or {}).get("tflops"),
                                (dec or summary).get("attn_flop_share"), _share(dec, "attention"),
                                _share(dec, "linear_mixer"), _routing_share(dec)))
    return out
