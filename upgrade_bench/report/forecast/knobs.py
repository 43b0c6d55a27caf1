"""What a publisher's change of pipeline layout does to a step, beside what the GPUs do.

A published pair whose two runs differ in pipeline parallelism (PP), virtual stages (VP),
micro-batch (MBS), global batch (GBS) or data-parallel width pays a different pipeline bubble on
each side. With the interleaved 1F1B schedule of Megatron-LM, a pipeline of p stages, v virtual
stages per GPU and m micro-batches per step idles (p - 1) / (m * v) of its ideal time (Narayanan
et al., *Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM*, SC 2021,
section 2.2.2), so the share of the step that works is m * v / (m * v + p - 1). m is the global
batch over the micro-batch and the data-parallel width (the GPUs over TP x PP x CP).

The correction is a ratio of two such shares, no parameter fitted. It applies to dense steps
(pre-training, SFT, LoRA) alone: on the MoE steps of the same tables it does not describe what was
published (Megatron-Bridge's gpt-oss-120b on 64 H100s, PP 4: m = 8 in 25.11 and 80 in 26.04.01, a
bubble of 27% against 4%, and the figure moved +3%, not +28%): there the expert all-to-all and
its overlap with the pipeline decide more than the idle stages do.
"""
from . import calibration


def microbatches(config: dict) -> float | None:
    """m: micro-batches a pipeline runs per step (GBS / (MBS x DP), DP = GPUs / (TP x PP x CP)), or
    None where the run does not publish its global batch or GPU count, or where its figures are
    no step Megatron runs (DP or m not a whole number of at least one: it asserts both)."""
    gbs, mbs, gpus = config.get("GBS"), config.get("MBS") or 1, config.get("world_size")
    if not gbs or not gpus:
        return None
    dp, rest = divmod(gpus, (config.get("TP") or 1) * (config.get("PP") or 1) * (config.get("CP") or 1))
    if rest or dp < 1 or gbs % (mbs * dp) or gbs < mbs * dp:
        return None
    return gbs / (mbs * dp)


def pipeline_efficiency(config: dict) -> float:
    """m v / (m v + p - 1): the share of an interleaved 1F1B step that is not bubble; 1.0 without
    a pipeline (PP 1) or without the figures to count m."""
    p, v, m = config.get("PP") or 1, config.get("VP") or 1, microbatches(config)
    if p <= 1 or not m:
        return 1.0
    return m * v / (m * v + p - 1)


def config_factor(base_config: dict, cand_config: dict) -> float:
    """The candidate's pipeline efficiency over the baseline's, for a dense step (see the module's
    words); 1.0 for an MoE step."""
    if calibration.step_kind(base_config) == calibration.MOE:
        return 1.0
    return pipeline_efficiency(cand_config) / pipeline_efficiency(base_config)


def factor_words(base_config: dict, cand_config: dict) -> str:
    """'pipeline bubble 2.1% -> 0.0% (x1.022)' where the factor moves the forecast, else ''."""
    f = config_factor(base_config, cand_config)
    if abs(f - 1) < 1e-9:
        return ""
    b, c = (1 - pipeline_efficiency(x) for x in (base_config, cand_config))
    return f"pipeline bubble {b:.1%} -> {c:.1%} (x{f:.3f}, Narayanan et al. 2021)"
