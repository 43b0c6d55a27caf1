"""Cutting a model so one node (or one GPU) holds it, as the guide advises: its first layers in
the family's pattern (NUM_LAYERS), and each MoE layer's routed experts (NUM_EXPERTS), with what
the cut keeps (the FLOPs per token) and changes (the memory), and the words every series says
it in."""
import copy
from dataclasses import dataclass

from ..faults import BadInput
from . import architecture, layers


@dataclass(frozen=True)
class Cut:
    """A model cut to run on fewer GPUs, as the guide advises (compare like with like)."""
    config: object                    # the cut config: a copy, the full one is left as it was
    full: architecture.ModelSpec      # the whole model
    counted: architecture.ModelSpec   # the layers kept, every routed expert: the FLOPs per token
    built: architecture.ModelSpec     # what is built: its parameters and memory
    fields: dict                      # the config fields the cut set
    note: str | None                  # a kind of layer the cut lacks

    def label(self) -> str:
        """'4 of 48 layers, 64 of 512 experts', 'all 32 layers'."""
        return cut_label(len(self.full.layers), len(self.built.layers), experts_of(self.full), experts_of(self.built))


def experts_of(spec: architecture.ModelSpec) -> int:
    """Routed experts of each MoE layer (0: a dense model)."""
    return max((ly.mlp.experts for ly in spec.layers), default=0)


def cut_label(full_layers: int, layers: int, full_experts: int = 0, experts: int = 0) -> str:
    words = f"all {full_layers} layers" if layers == full_layers else f"{layers} of {full_layers} layers"
    if experts and experts != full_experts:
        words += f", {experts} of {full_experts} experts"
    return words


def cut(config, num_layers: int = 0, num_experts: int = 0, model: str = "") -> Cut:
    """`config` (a transformers config or a config.json mapping) cut to `num_layers` layers
    and `num_experts` routed experts (0: all). The FLOP count is the kept layers' with every
    routed expert: a token's active work does not change with the expert cut (top-k of N),
    only how many tokens each expert gets, and the memory. BadInput for sizes no model can
    have (naming `model`) or a cut the model cannot take."""
    try:
        full = architecture.describe(config)
    except BadInput as err:
        raise BadInput(f"MODEL={model!r}: {err}") from None
    layer_fields = cut_fields(full, layers.Cfg(config).get("layer_types"), num_layers, 0)
    expert_fields = cut_fields(full, None, 0, num_experts)
    fields = {**layer_fields, **expert_fields}
    cut_config = apply_cut(copy.copy(config), fields)
    counted = architecture.describe(apply_cut(copy.copy(config), layer_fields)) if layer_fields else full
    built = architecture.describe(cut_config) if expert_fields else counted
    note = architecture.cut_note(full, counted)
    return Cut(cut_config, full, counted, built, fields, note and f"NUM_LAYERS={num_layers}: {note}")


def cut_fields(full: architecture.ModelSpec, own_layer_types, num_layers: int, num_experts: int = 0) -> dict:
    """The config fields that cut the model `full` describes ({} for no cut): to its first
    `num_layers` layers, the pattern written out (a derived one cannot shift) in the config's
    own words where it lists them (`own_layer_types`: transformers builds Granite's Mamba
    layers from its `linear_attention`, never from the suite's mamba2); and each MoE layer's
    routed experts to `num_experts`, its routing (top-k, shared experts, dense layers) kept.
    BadInput for a cut the model cannot take."""
    fields = {}
    if num_layers:
        if num_layers > len(full.layers):
            raise BadInput(f"NUM_LAYERS={num_layers}: the model has only {len(full.layers)} layers")
        kinds = list(own_layer_types[:num_layers]) if own_layer_types else [ly.mixer.kind for ly in full.layers[:num_layers]]
        fields.update(num_hidden_layers=num_layers, layer_types=kinds)
    if num_experts:
        routed = [ly.mlp for ly in full.layers if ly.mlp.experts]
        if not routed:
            raise BadInput(f"NUM_EXPERTS={num_experts}: model type {full.family!r} here has no routed experts to cut")
        experts, top_k = routed[0].experts, max(m.top_k for m in routed)
        if not top_k <= num_experts <= experts:
            raise BadInput(f"NUM_EXPERTS={num_experts}: expected from the top-k ({top_k}) to the model's "
                           f"{experts} routed experts")
        if num_experts < experts:
            fields[architecture.FAMILIES[full.family].experts_field] = num_experts
    return fields


def apply_cut(config, fields: dict):
    """`config` (a transformers config or a mapping) with the cut's fields set; returned."""
    for name, value in fields.items():
        if isinstance(config, dict):
            config[name] = value
        else:
            setattr(config, name, value)
    return config
