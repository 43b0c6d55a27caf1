"""This project's own measured pairs for the forecast's backtest: one configuration measured on
two GPUs, read from the committed result folders, as records of a source of their own
('project'), each run re-keyed to its folder.

The pair: the right-sized 8-layer Llama-3.1-8B (ZeRO-2, no offload, no checkpointing, Liger,
FA4, bf16, 1 GPU) on an H100 80GB HBM3 (results/h100-node-10/node) and on an H200
(results/h200-precision-7/node), one stack (torch + DeepSpeed). Each side forecasts the other
(both directions); only the lengths both measured are scored.
"""
import json

from ...paths import REPO

PROJECT = "project"
SOURCE = ("this project's measurements: results/h100-node-10/node and results/h200-precision-7/node "
          "(one stack, one configuration)")
FOLDERS = {"project-h100-node-10": "results/h100-node-10/node",
           "project-h200-precision-7": "results/h200-precision-7/node"}
PAIRS = (("project-h200-precision-7", "project-h100-node-10"), ("project-h100-node-10", "project-h200-precision-7"))
# the settings that make the workload; the rest (output paths, lengths asked for) are the run's
IDENTITY = ("MODEL", "NUM_LAYERS", "BATCH_SIZE", "ZERO_STAGE", "OFFLOAD_OPTIMIZER", "GRAD_CHECKPOINT", "USE_LIGER",
            "PRECISION", "world_size")
FILES = ("decompose.jsonl", "sweep.jsonl")  # the sweep's summary of a length last: it is the one scored


def folder_records(run_id: str, folder: str) -> list:
    """A folder's header (its first with a model), summaries and decompositions under `run_id`."""
    header, out = None, []
    for name in FILES:
        for line in (REPO / folder / name).read_text().splitlines():
            r = json.loads(line)
            if r.get("kind") == "header" and (r.get("config") or {}).get("MODEL") and header is None:
                config = {k: r["config"][k] for k in IDENTITY if k in r["config"]}
                header = {**r, "run_id": run_id, "reference": PROJECT, "config": config}
            elif r.get("kind") in ("summary", "decomposition"):
                out.append({**r, "run_id": run_id, "reference": PROJECT})
    return [header] + out


def records() -> list:
    return [r for run_id, folder in FOLDERS.items() for r in folder_records(run_id, folder)]
