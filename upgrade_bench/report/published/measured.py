"""This project's own measured pairs for the forecast's backtest: one configuration measured on
two GPUs, read from the committed result folders, as records of a source of their own
('project'), each run re-keyed to its folder and files.

The configuration: the right-sized 8-layer Llama-3.1-8B (ZeRO-2, no offload, no checkpointing,
Liger, FA4, 1 GPU) on one stack (torch + DeepSpeed), in bf16 on two H100 80GB HBM3 nodes
(results/h100-node-10/node, results/h100-node-13/node) and an H200 (results/h200-precision-7/node),
and in fp8-tensorwise on the first H100 and the H200 (each folder's fp8_tensorwise.jsonl, run in the
lease of its node). Each side forecasts the other (both directions); only the lengths both
measured are scored. Each run's node check (its node folder's MAMF against its reference) gives
the baseline node's health (`node_folder`; forecast/backtest.py's node_health), which the forecast's
ceiling credits.
"""
import json

from ...paths import REPO

PROJECT = "project"
SOURCE = ("this project's measurements: results/h100-node-10, results/h100-node-13 and results/h200-precision-7 "
          "(one stack, one configuration)")


def _node_run(folder: str) -> tuple:
    """(a result folder, the step logs of its node/: the sweep's summary of a length last, the one scored)."""
    return folder, (f"{folder}/node/decompose.jsonl", f"{folder}/node/sweep.jsonl")


# run id: (the result folder whose node/ the node check measured the run's node in, the run's logs),
# each relative to the repository
RUNS = {"project-h100-node-10": _node_run("results/h100-node-10"),
        "project-h100-node-13": _node_run("results/h100-node-13"),
        "project-h200-precision-7": _node_run("results/h200-precision-7"),
        "project-h100-node-10-fp8": ("results/h100-node-10", ("results/h100-node-10/fp8_tensorwise.jsonl",)),
        "project-h200-precision-7-fp8": ("results/h200-precision-7",
                                         ("results/h200-precision-7/fp8_tensorwise.jsonl",))}
_ONE_WAY = (("project-h200-precision-7", "project-h100-node-10"), ("project-h200-precision-7", "project-h100-node-13"),
            ("project-h200-precision-7-fp8", "project-h100-node-10-fp8"))
PAIRS = _ONE_WAY + tuple((cand, base) for base, cand in _ONE_WAY)
# the settings that make the workload; the rest (output paths, lengths asked for) are the run's
IDENTITY = ("MODEL", "NUM_LAYERS", "BATCH_SIZE", "ZERO_STAGE", "OFFLOAD_OPTIMIZER", "GRAD_CHECKPOINT", "USE_LIGER",
            "PRECISION", "world_size")


def run_records(run_id: str) -> list:
    """A run's header (its files' first with a model), summaries and decompositions under `run_id`."""
    header, out = None, []
    for path in RUNS[run_id][1]:
        for line in (REPO / path).read_text().splitlines():
            r = json.loads(line)
            if r.get("kind") == "header" and (r.get("config") or {}).get("MODEL") and header is None:
                config = {k: r["config"][k] for k in IDENTITY if k in r["config"]}
                header = {**r, "run_id": run_id, "reference": PROJECT, "config": config}
            elif r.get("kind") in ("summary", "decomposition"):
                out.append({**r, "run_id": run_id, "reference": PROJECT})
    return [header] + out


def records() -> list:
    return [r for run_id in RUNS for r in run_records(run_id)]


def node_folder(run_id: str):
    """The committed node folder (a Path) whose node check measured the node that ran `run_id`;
    None for a run not of this project."""
    return REPO / RUNS[run_id][0] / "node" if run_id in RUNS else None
