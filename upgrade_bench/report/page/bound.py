"""Where each measured workload sits, as report.md's table (compare/bound.py's rows): the
model and its layer mix in words, the attention share of its FLOPs and of its step time."""
from ...models.layers import mix_text
from ..compare.bound import BoundRow, rows
from ..read.series import seq_label
from ..text.tables import fmt, md_table


def mix_words(series) -> str:
    """The model, its layer mix as its runs recorded it, and any kernel that ran as the torch
    fallback: such a timing is not the architecture's speed, and the row says so."""
    model = str(series.config.get("MODEL", "-"))
    mixes = {tuple(r.layer_mix.items()) for r in series.runs.values() if isinstance(r.layer_mix, dict)}
    words = model if len(mixes) != 1 else f"{model} ({mix_text(dict(next(iter(mixes))))})"
    slow = sorted({k for r in series.runs.values() for k in r.fallbacks})
    return words + (f" **torch fallback for {', '.join(slow)}: not the architecture's speed**" if slow else "")


def _cells(r: BoundRow) -> list:
    return [r.series.label, mix_words(r.series), seq_label(r.seq_len), fmt(r.tflops), fmt(r.attn_flop_share, "pct"),
            fmt(r.attention_time_share, "pct"), fmt(r.mixer_time_share, "pct"), fmt(r.routing_time_share, "pct")]


def workload_markdown(series_list) -> str:
    table = [_cells(r) for r in rows(series_list)]
    if not table:
        return ""
    return md_table(["series", "model (layers)", "seq_len", "TFLOPS/GPU", "attention share of FLOPs",
                     "attention share of step time", "linear mixers' share of step time",
                     "MoE routing share of step time"], table)
