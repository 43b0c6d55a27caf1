"""A series and a comparison in words: the names, settings, sources and differences that the
verdict blocks, the detail tables and the figures all print the same way."""
from ...log import runs
from ..compare.comparisons import HEALTH, NOT_LIKE_FOR_LIKE, Comparison
from ..read.series import Series, _short, config_phrase
from ..text.escape import md_text

# The settings that shape the workload, in the words of a verdict block.
WORKLOAD_KEYS = ("ENGINE", "COMPILE", "SINGLE_DEVICE", "PRECISION", "ZERO_STAGE", "OFFLOAD_OPTIMIZER", "GRAD_CHECKPOINT", "USE_LIGER",
                 "PACKED_DOC_LEN", "BATCH_SIZE", "WARMUP_STEPS", "PYTORCH_CUDA_ALLOC_CONF")
# Said only off their default: every run before ENGINE trained on DeepSpeed, uncompiled.
SAID_OFF_DEFAULT = ("ENGINE", "COMPILE", "SINGLE_DEVICE")
SHOWN_KEYS = ("world_size", "MODEL", "NUM_LAYERS", "ATTN_BACKEND") + WORKLOAD_KEYS
MOST_RUNS_NAMED = 3


def who(s: Series) -> str:
    """'H200 SXM (measured)', 'B200 SXM (guide's published)'."""
    return f"{s.gpu} ({s.provenance})"


def column_names(base: Series, other: Series) -> tuple:
    """How a table's columns name the two sides: the GPU, with provenance where both are one GPU."""
    return (base.gpu, other.gpu) if base.gpu != other.gpu else (who(base), who(other))


def _phrases(s: Series, key: str) -> str:
    return " / ".join(config_phrase(key, v) for v in s.settings(key)) or "not recorded"


def _stack_words(stack: dict) -> str:
    """The packages of a stack; its engine is the configuration's (ENGINE, said where not DeepSpeed)."""
    names = {"cuda": "CUDA"}
    return ", ".join(f"{names.get(k, k)} {v}" for k, v in stack.items()
                     if v is not None and k != "engine") or "not recorded"


def _shown(s: Series, key: str) -> bool:
    values = s.settings(key)
    return bool(values) and not (key in SAID_OFF_DEFAULT and all(runs.is_default(key, v) for v in values))


def engine_words(s: Series) -> str:
    """The engine a series trained on, as its settings say it: 'DeepSpeed ZeRO-2, Liger', 'FSDP2,
    compiled, no Liger' (the ZeRO stage named with DeepSpeed, whose word it is: engines.refusal)."""
    engines = [config_phrase("ENGINE", v) + (f" {_phrases(s, 'ZERO_STAGE')}" if v == "deepspeed" else "")
               for v in s.settings("ENGINE")]
    return ", ".join([" / ".join(engines)] + [_phrases(s, k) for k in ("COMPILE", "SINGLE_DEVICE", "USE_LIGER")
                                             if _shown(s, k)])


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def sources_words(s: Series, also_in: dict) -> str:
    """Where a series was read: files and run ids, the first few, then how many more."""
    runs = list(s.runs.values())
    named = []
    for run in runs[:MOST_RUNS_NAMED]:
        again = sorted(set(also_in.get(run.run_id, ())) - {run.source})
        named.append(f"{md_text(run.source)} (run {run.run_id}"
                     + (f"; also in {', '.join(map(md_text, again))}" if again else "") + ")")
    more = len(runs) - MOST_RUNS_NAMED
    files = len({run.source for run in runs[MOST_RUNS_NAMED:]})
    return "; ".join(named) + (f"; and {_count(more, 'more run')} in {_count(files, 'file')}" if more > 0 else "")


def series_words(s: Series, also_in: dict) -> dict:
    """The facts of a series a buyer needs, in words: {row name: text}."""
    runs = list(s.runs.values())
    counts = sorted({r.gpu_count for r in runs if r.gpu_count})
    node = f" ({' / '.join(map(str, counts))} on the node)" if counts else ""
    layers = sorted({r.num_layers for r in runs if r.num_layers})
    model = ", ".join(map(str, s.settings("MODEL"))) or "model not recorded"
    cut = [v for v in s.settings("NUM_LAYERS") if v not in (0, "0")]
    cuts = sorted({r.model_cut for r in runs if r.model_cut})  # '4 of 48 layers, 64 of 512 experts'
    layer_words = (" / ".join(cuts) if cuts else _phrases(s, "NUM_LAYERS") if cut or not layers
                   else f"all {' / '.join(map(str, layers))} layers")
    others = [config_phrase(k, s.config[k]) for k in sorted(s.config)
              if k not in SHOWN_KEYS and not (k == "MEM_DEBUG" and not s.config[k])]
    notes = list(dict.fromkeys(r.notes for r in runs if r.notes))
    asked = ", ".join(map(_short, s.settings("ATTN_BACKEND"))) or "not recorded"
    return {"GPU": f"{s.gpu}, {_phrases(s, 'world_size')} in the run{node}",
            "model": f"{model}, {layer_words}",
            "configuration": ", ".join([_phrases(s, k) for k in WORKLOAD_KEYS if _shown(s, k)] + others),
            "attention": f"{s.backend} (ATTN_BACKEND={asked})",
            "software": " | ".join(_stack_words(st) for st in s.stacks) or "not recorded",
            "source": f"{s.provenance}: {sources_words(s, also_in)}",
            "notes": " | ".join(notes[:MOST_RUNS_NAMED]) + (f" | (+{len(notes) - MOST_RUNS_NAMED} more)"
                                                            if len(notes) > MOST_RUNS_NAMED else "") or "-"}


def ignored_words(ignored: list) -> str:
    """'world_size 2 vs 8; WARMUP_STEPS 1, 0 vs 2' from (key, base values, other values)."""
    def values(vs):
        return ", ".join(map(_short, vs)) or "not recorded"
    return "; ".join(f"{k} {values(b)} vs {values(o)}" for k, b, o in ignored)


def unlike_words(c: Comparison) -> str:
    """The ignored keys that make a comparison not like for like, with both values."""
    return ignored_words([i for i in c.ignored + c.model_built if i[0] in c.unlike])


def unlike_note(c: Comparison) -> str:
    """What a pair that differs in a NOT_LIKE_FOR_LIKE key may not be read as, with the key's values."""
    return (f"**Not like for like** ({unlike_words(c)}): TFLOPS per GPU is not comparable between these "
            "series, and neither is their $/token: each GPU does different work.")


# The NOT_LIKE_FOR_LIKE settings as a note across many series names them.
WORK_NAMES = {"world_size": "GPUs in the run", "MODEL": "model", "NUM_LAYERS": "model cut",
              "NUM_EXPERTS": "expert cut", "OFFLOAD_OPTIMIZER": "optimizer offload"}


def unlike_across(series: list) -> str:
    """For a figure of many series: the settings that change the work per GPU and differ
    between them, with their values, or '' where they do not differ."""
    differ = []
    for key in NOT_LIKE_FOR_LIKE:
        values = list(dict.fromkeys(config_phrase(key, v) for s in series for v in s.settings(key) or [None]))
        if len(values) > 1:
            differ.append(f"{WORK_NAMES[key]} ({', '.join(values)})")
    built = {r.total_params: r.model_built for s in series for r in s.runs.values() if r.total_params}
    if len(built) > 1:  # one configuration, other models (comparisons.model_built_difference)
        differ.append(f"model as built ({'; '.join(built[n] for n in sorted(built))})")
    if not differ:
        return ""
    return (f"Not like for like: these series differ in {' and '.join(differ)}; each GPU does different "
            "work, so compare TFLOPS per GPU only between series alike in these.")


STACK_CAVEAT = "the stack alone moves results by double-digit percent"  # the guide's H200: torch 2.11 -> 2.12, +16%


def stack_words(stack: list) -> str:
    """'torch 2.11.0 vs 2.13.0; ...' from (package, base versions, other versions)."""
    return "; ".join(f"{pkg} {' / '.join(b)} vs {' / '.join(o)}" for pkg, b, o in stack)


def title(c: Comparison) -> str:
    if c.kind == HEALTH:
        return f"{c.number}. Health check: this {c.other.gpu} node vs the {c.base.provenance} {c.base.gpu}"
    return f"{c.number}. {c.other.gpu} vs {c.base.gpu}" + (f", {c.precision}" if c.precision else "") + f": {c.sources}"
