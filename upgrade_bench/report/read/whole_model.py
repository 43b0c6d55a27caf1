"""Which workload a series is: the whole model, or a cut of it (NUM_LAYERS, NUM_EXPERTS), and
what a cut's price per token means for the whole model.

A cut of the first layers does a fraction of the whole model's work per token, so its $/token
and its time per token are that fraction of the whole model's. Scaled by the FLOP count
(models/flops.py, the whole model's step at the cut's batch and length over the cut's), they
are the whole model's at the cut's TFLOPS per GPU: the assumption is said wherever the scaled
number is shown. An expert cut keeps the FLOPs per token (top-k of fewer experts) but gives
each expert more tokens, so its step flatters the whole model: its price is not scaled, and
the page says so. A model whose config is not at hand is not scaled: its cut's price is never
shown as a model's.
"""
from dataclasses import dataclass, field

from ...faults import BadInput
from ...models import architecture, flops, model
from ..decide.cost import whole_model_factor
from .series import Series


@dataclass
class Scope:
    whole: bool                 # the whole model ran: its prices are the model's
    words: str                  # 'all 32 layers', '8 of 32 layers', '4 of 48 layers, 64 of 512 experts'
    factors: dict = field(default_factory=dict)  # seq_len -> whole model's FLOPs per token over the cut's
    caveat: str = ""            # why a cut's price is not the model's, where it is not scaled

    @property
    def scaled(self) -> bool:
        return bool(self.factors)


def _setting(s: Series, key: str) -> int:
    values = [v for v in s.settings(key) if v not in (None, 0, "0")]
    try:
        return int(values[0]) if values else 0
    except (TypeError, ValueError):
        return 0


def full_spec(s: Series) -> tuple:
    """(the whole model's description, from MODEL's config (a preset, a folder, a cached hub id),
    or None; why not, where its config is there but cannot be read now). The page reads what the
    log recorded: a config that changed since the run loses the scaling, never the page."""
    name = next((v for v in s.settings("MODEL") if isinstance(v, str)), None)
    try:
        config = model.cheap_config(name) if name else None
        return (architecture.describe(config) if config else None), ""
    except BadInput as err:
        return None, f"its config cannot be read now ({err})"


def whole_tflop_per_step(spec: architecture.ModelSpec, summary: dict) -> float:
    """The whole model's model TFLOP of the step a summary timed (its batch, length, packing)."""
    step = flops.step_flops(spec, summary.get("batch_size") or 1, summary["seq_len"],
                            summary.get("packed_doc_len") or 0)
    return step.model / 1e12


def scope(s: Series) -> Scope:
    """Whether `s` ran its whole model, and a cut's factors to the whole model per length."""
    layers, experts = _setting(s, "NUM_LAYERS"), _setting(s, "NUM_EXPERTS")
    cuts = sorted({r.model_cut for r in s.runs.values() if r.model_cut})
    if not layers and not experts:
        return Scope(True, cuts[0] if cuts else "all layers")
    spec, why = full_spec(s)
    words = cuts[0] if cuts else (f"{layers} of {len(spec.layers)} layers" if spec and layers else
                                 ", ".join(filter(None, [layers and f"{layers} layers",
                                                         experts and f"{experts} experts"])))
    if experts:
        return Scope(False, words, caveat="the expert cut flatters the step (more tokens per expert): "
                                          "no whole-model $/token")
    if spec is None:
        return Scope(False, words, caveat=f"{why or 'no whole-model config at hand to scale by'}: "
                                          "no whole-model $/token")
    factors = {n: whole_model_factor(whole_tflop_per_step(spec, p), p["model_tflop_per_step"])
               for n, p in s.points.items() if p.get("model_tflop_per_step")}
    return Scope(False, words, factors, "" if factors else "no FLOP count to scale by: no whole-model $/token")


def cut_of(s: Series) -> str:
    """'8 of 32 layers' where `s` ran a cut of its model, '' where it ran the whole: what a figure
    of its own (its $/1M tokens) is of, named wherever one is shown."""
    sc = scope(s)
    return "" if sc.whole else sc.words


def scaling_words(sc: Scope) -> str:
    """How a cut's prices were scaled, for the line that shows them."""
    if sc.whole:
        return ""
    if not sc.scaled:
        return sc.caveat
    xs = sorted(sc.factors.values())
    span = f"x{xs[0]:.2f}" if f"{xs[0]:.2f}" == f"{xs[-1]:.2f}" else f"x{xs[0]:.2f}-{xs[-1]:.2f}"
    return f"$/token scaled {span} to the whole model by FLOPs per token, at the cut's TFLOPS/GPU"
