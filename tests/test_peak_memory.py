"""The peak-memory estimate (models/peak_memory.py) against every peak the project measured:
each committed summary record of a configuration the model covers within ESTIMATE_ERROR, and
its floor never above a measured peak it does not cover."""
import json

import pytest

from conftest import REPO
from upgrade_bench.log.runs import with_headers
from upgrade_bench.models import cuts, model, peak_memory


def measured_points():
    """(file, config, summary) of every committed summary with a peak, measured by the suite in a
    fresh process with the default allocator (published figures, a process's later points and
    another allocator's settings are other configurations of memory)."""
    for path in sorted((REPO / "results").rglob("*.jsonl")):
        records = []
        for line in path.read_text().splitlines():
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
        for r, header in with_headers(records):
            if (r.get("kind") == "summary" and r.get("peak_mem_gib") and header and not header.get("reference")
                    and r.get("earlier_points_in_process") == 0
                    and not (header.get("config") or {}).get("PYTORCH_CUDA_ALLOC_CONF")):
                yield path.relative_to(REPO).as_posix(), header["config"], r


def estimate_of(config, summary):
    est = peak_memory.of_run(config, summary["seq_len"])
    assert est is not None, config  # every committed run's model is a preset at hand
    return est


def test_every_committed_peak_it_covers_is_within_its_error_and_its_floors_hold():
    covered, floors, misses = [], [], []
    for path, config, summary in measured_points():
        est = estimate_of(config, summary)
        measured = summary["peak_mem_gib"]
        (floors if est.floor else covered).append(config["MODEL"])
        if est.floor:
            if est.peak_gib > measured * (1 + peak_memory.ESTIMATE_ERROR):
                misses.append(f"{path} {summary['seq_len']}: floor {est.peak_gib:.1f} over {measured:.1f}")
        elif abs(est.peak_gib / measured - 1) > peak_memory.ESTIMATE_ERROR:
            misses.append(f"{path} {summary['seq_len']}: {est.peak_gib:.1f} for {measured:.1f}")
    assert misses == []
    # what it covers: dense Llama cuts on one GPU (ZeRO-2) and the whole 8B on two (ZeRO-3, offload,
    # checkpointing), 1K to 128K; MoE and hybrid records are held to the floor only
    assert len(covered) >= 35 and set(covered) == {"llama-3.1-8b"}
    assert {"qwen3-30b-a3b", "qwen3-next-80b-a3b", "gpt-oss-20b", "granite-4.0-h-small"} <= set(floors)
    # FSDP2's runs (one H100, 8K: 66.0 GiB eager, 62.4 and 60.4 compiled) are held to the floor: the
    # backward's buffers were calibrated on DeepSpeed's
    assert sum(1 for _, config, _ in measured_points() if config.get("ENGINE") == "fsdp2") >= 3


def test_the_peak_by_hand():
    spec = cuts.cut(model.cheap_config("llama-3.1-8b"), 8, 0, "llama-3.1-8b")
    # the optimizer step: 24 bytes a parameter, 2,795,503,616 of them
    step = peak_memory.estimate(spec.built, spec.counted, 8192, 1, 2, 1, False, False)
    assert step.phase == "optimizer step" and step.peak_gib == pytest.approx(24 * 2_795_503_616 / 2**30)
    # the backward at 32K: 16 bytes a parameter, the buffers, 8 layers of (4096 + 14336) widths a token
    back = peak_memory.estimate(spec.built, spec.counted, 32768, 1, 2, 1, False, False)
    assert back.phase == "backward" and back.peak_gib == pytest.approx(
        16 * 2_795_503_616 / 2**30 + peak_memory.BUFFER_GIB[2]
        + 32768 * 8 * 18432 * peak_memory.ACT_BYTES_PER_WIDTH / 2**30)
    # checkpointing keeps each layer's input and one layer's full activations
    ckpt = peak_memory.estimate(spec.built, spec.counted, 32768, 1, 2, 1, False, True)
    assert ckpt.peak_gib < back.peak_gib
