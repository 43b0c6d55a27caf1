"""Where each measured workload sits: the guide's question "is my architecture in the
attention-bound regime where the new GPU shines?", answered per series and length.

Next to each other: the quadratic-attention share of the model FLOPs (full and windowed
attention; linear-attention layers and MoE experts shrink it) and, where a decomposition ran,
the share of the measured step that attention kernels took, with the linear mixers' and MoE
routing's shares. FLOP share is what the count says; time share is what the GPU did.
"""
from ...models.layers import mix_text
from ..text.tables import fmt, md_table
from ..read.series import seq_label


def mix_words(series) -> str:
    """The model, its layer mix as its runs recorded it, and any kernel that ran as the torch
    fallback: such a timing is not the architecture's speed, and the row says so."""
    model = str(series.config.get("MODEL", "-"))
    mixes = {tuple(r.layer_mix.items()) for r in series.runs.values() if isinstance(r.layer_mix, dict)}
    words = model if len(mixes) != 1 else f"{model} ({mix_text(dict(next(iter(mixes))))})"
    slow = sorted({k for r in series.runs.values() for k in r.fallbacks})
    return words + (f" **torch fallback for {', '.join(slow)}: not the architecture's speed**" if slow else "")


def _share(decomposition: dict | None, bucket: str) -> float | None:
    part = ((decomposition or {}).get("buckets") or {}).get(bucket) or {}
    return part.get("time_share")


def _routing_share(decomposition: dict | None) -> float | None:
    other = ((decomposition or {}).get("buckets") or {}).get("other") or {}
    routing, wall = (other.get("moe_routing") or {}).get("ms"), (decomposition or {}).get("wall_step_ms")
    return routing / wall if isinstance(routing, (int, float)) and wall else None


def rows(series_list) -> list:
    out = []
    for s in series_list:
        for n in sorted(set(s.points) | set(s.decompositions)):
            summary, dec = s.points.get(n) or {}, s.decompositions.get(n)
            flop_share = (dec or summary).get("attn_flop_share")
            tflops = summary.get("tflops_per_gpu") or ((dec or {}).get("total") or {}).get("tflops")
            out.append([s.label, mix_words(s), seq_label(n), fmt(tflops), fmt(flop_share, "pct"),
                        fmt(_share(dec, "attention"), "pct"), fmt(_share(dec, "linear_mixer"), "pct"),
                        fmt(_routing_share(dec), "pct")])
    return out


def workload_markdown(series_list) -> str:
    table = rows(series_list)
    if not table:
        return ""
    return md_table(["series", "model (layers)", "seq_len", "TFLOPS/GPU", "attention share of FLOPs",
                     "attention share of step time", "linear mixers' share of step time",
                     "MoE routing share of step time"], table)
