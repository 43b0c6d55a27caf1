"""What the engine buys on one GPU, as report.md's table and the terminal's lines: each series
beside its baseline engine's per length (compare/engines.py's rows), and why no verdict between
GPUs pairs two engines."""
from ..compare.engines import ENGINE_KEYS, EngineRow
from ..read.series import config_phrase, ordered_keys, seq_label
from ..text.tables import fmt, md_table
from .words import engine_words

MOST_PAIRS = 2  # on the terminal; report.md has every pair
STACK_WORDS = ("A different engine is a different software stack, as a different torch is: a verdict between "
               "GPUs never pairs two engines unless --ignore-config ENGINE asks, and then names the engine as "
               "a stack difference. Here each series stands beside one of the same GPU, attention backend and "
               "configuration on another engine (ENGINE, COMPILE, SINGLE_DEVICE, and USE_LIGER as the run resolved it: "
               "USE_LIGER=auto is off under ENGINE=fsdp2 COMPILE=1), DeepSpeed's (the guide's engine) the "
               "baseline where there is one. Each side's numbers are its own summaries; the speedup is the "
               "baseline's step time over the other engine's. A point that failed gives no speedup.")


def workload_words(base, bases: list) -> str:
    """'H100 SXM fa4, bf16': the GPU, attention backend and precision of a pair, and the settings
    (not the engine's) by which its baseline differs from the other pairs' baselines."""
    keys = {k for b in bases for k in b.config if k not in ENGINE_KEYS + ("PRECISION",)}
    varying = [k for k in ordered_keys(keys) if len({str(b.settings(k)) for b in bases}) > 1]
    phrases = [" / ".join(filter(None, (config_phrase(k, v) for v in base.settings(k) or [None]))) for k in varying]
    return ", ".join([f"{base.gpu} {base.backend}", " / ".join(map(str, base.settings("PRECISION")))]
                     + [p for p in phrases if p])


def _pair(a: float | None, b: float | None) -> str:
    return f"{fmt(a)} / {fmt(b)}"


def _cells(r: EngineRow, bases: list) -> list:
    said = "; ".join(f"{engine_words(s)}: {why}" for s, why in r.failed)
    return [workload_words(r.base, bases), seq_label(r.seq_len), engine_words(r.base), engine_words(r.other),
            _pair(r.base_tflops, r.other_tflops), _pair(r.base_step_ms, r.other_step_ms),
            _pair(r.base_peak_gib, r.other_peak_gib),
            f"- ({said})" if said else fmt(r.speedup, "x") if r.speedup is not None else "-"]


def _bases(rows: list) -> list:
    return list({id(r.base): r.base for r in rows}.values())


def engines_markdown(rows: tuple) -> str:
    """The section's sentence and table, one row per pair and length; '' without a pair."""
    if not rows:
        return ""
    bases = _bases(rows)
    return (STACK_WORDS + "\n\n"
            + md_table(["workload", "seq_len", "baseline engine", "other engine", "TFLOPS/GPU baseline / other",
                        "step ms baseline / other", "peak GiB baseline / other", "speedup over the baseline"],
                       [_cells(r, bases) for r in rows]))


def engine_lines(rows: tuple) -> list:
    """The terminal's: a line per pair with a speedup (the first MOST_PAIRS), its range over the
    lengths both ran; then how many more report.md has."""
    pairs = {}
    for r in rows:
        if r.speedup is not None:
            pairs.setdefault((id(r.base), id(r.other)), []).append(r)
    bases, out = _bases(rows), []
    for found in list(pairs.values())[:MOST_PAIRS]:
        low, high = min(r.speedup for r in found), max(r.speedup for r in found)
        lengths = seq_label(found[0].seq_len) + (f"-{seq_label(found[-1].seq_len)}" if len(found) > 1 else "")
        speed = fmt(low, "x") if fmt(low, "x") == fmt(high, "x") else f"{fmt(low, 'x')}-{fmt(high, 'x')}"
        out.append(f"Engine on one GPU ({workload_words(found[0].base, bases)}, {lengths}): "
                   f"{engine_words(found[0].other)} steps {speed} as fast as {engine_words(found[0].base)}")
    if len(pairs) > MOST_PAIRS:
        out.append(f"... and {len(pairs) - MOST_PAIRS} more pairs of engines in report.md")
    return out
