"""The flat table: one row per measured or published point, for pandas without a join.

points.csv and points.jsonl hold the same rows: the GPU, where the point was read (source,
run_id, provenance), the run's world size, GPUs on the node and layers, every key of the
run's configuration (as config.KEY), the point's status (ok, or its error such as oom) and
every field of its summary; with a price, usd_per_gpu_hour and usd_per_mtok (a cut's own: model_cut
names the cut, usd_per_mtok_whole_model is its whole model's where scaled by FLOPs). A record found
in two logs was read once (inputs.py), so concatenated logs are never counted twice.

    pd.read_csv("out/report/points.csv")  # or pd.read_json("out/report/points.jsonl", lines=True)
"""
import csv
import json
import os

from ..compare.comparisons import Analysis
from ..forecast.series import FORECAST
from ..text.escape import csv_cell
from ..compare.verdict import tokens_per_s_per_gpu, usd_per_mtok
from ..read.whole_model import scope

LEADING = ("gpu", "gpu_name", "provenance", "source", "run_id", "series", "world_size", "gpu_count",
           "num_layers", "model_cut", "attn_backend", "seq_len", "status", "usd_per_gpu_hour", "usd_per_mtok",
           "usd_per_mtok_whole_model")
# Record plumbing, not a figure of the point.
LEFT_OUT = ("kind", "schema", "script", "log_file", "run_id", "config", "reference")
NAMES = ("points.csv", "points.jsonl")


def rows(a: Analysis) -> list:
    out = []
    for s in a.data.series:
        sc = scope(s)  # a cut's $/1M tokens is the cut's: its whole model's beside it, where scaled
        records = [r for reps in (*s.repeats.values(), *s.instrumented.values()) for r in reps] + list(s.errors.values())
        for r in sorted(records, key=lambda r: (r["seq_len"], r["kind"])):
            run = s.runs.get((r.get("log_file"), r.get("run_id")))
            config = run.config if run else s.config
            row = {"gpu": s.gpu, "gpu_name": s.gpu_raw, "provenance": s.provenance, "source": r.get("log_file"),
                   "run_id": r.get("run_id"), "series": s.label,
                   "world_size": r.get("world_size") or config.get("world_size"),
                   "gpu_count": run.gpu_count if run else None, "num_layers": run.num_layers if run else None,
                   "attn_backend": s.backend, "seq_len": r["seq_len"],
                   "status": "ok" if r["kind"] == "summary" else r.get("error") or "error"}
            if s.gpu in a.prices and r["kind"] == "summary":
                row["usd_per_gpu_hour"] = a.prices[s.gpu]
                row["usd_per_mtok"] = usd_per_mtok(a.prices[s.gpu], tokens_per_s_per_gpu(r))
                if r["seq_len"] in sc.factors and row["usd_per_mtok"] is not None:
                    row["usd_per_mtok_whole_model"] = row["usd_per_mtok"] * sc.factors[r["seq_len"]]
            if not sc.whole:
                row["model_cut"] = sc.words
            row.update({f"config.{k}": v for k, v in sorted(config.items())})
            row.update({k: v for k, v in r.items() if k not in LEFT_OUT and k not in row})
            out.append(row)
    for fc in a.forecasts:  # rows of their own: source forecast, never a measured point's
        for r in fc.rows:
            out.append({"gpu": fc.candidate, "provenance": FORECAST, "source": FORECAST, "series": fc.label,
                        "attn_backend": fc.base.backend, "seq_len": r.seq_len, "status": "ok",
                        "step_ms": r.forecast.step_ms, "step_ms_min": r.forecast.step_ms_fast,
                        "step_ms_max": r.forecast.step_ms_slow, "tflops_per_gpu": r.tflops[0],
                        "tflops_per_gpu_low": r.tflops[1], "tflops_per_gpu_high": r.tflops[2],
                        "usd_per_mtok": r.usd_per_mtok[0] if r.usd_per_mtok else None,
                        "peak_mem_gib": r.peak_mem_gib,
                        **{f"config.{k}": v for k, v in sorted(fc.base.config.items())}})
    return out


def _cell(value):
    return csv_cell(json.dumps(value) if isinstance(value, (list, dict)) else value)


def write(a: Analysis, folder: str, opener=open) -> list:
    """points.csv and points.jsonl in `folder`, opened by `opener` (see figures.write_all);
    returns their names."""
    table = rows(a)
    columns = list(LEADING) + sorted({k for row in table for k in row} - set(LEADING),
                                     key=lambda k: (not k.startswith("config."), k))
    with opener(os.path.join(folder, NAMES[0]), "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, columns)
        writer.writerow({k: csv_cell(k) for k in columns})  # a record's key is a log's text too
        writer.writerows({k: _cell(v) for k, v in row.items()} for row in table)
    with opener(os.path.join(folder, NAMES[1]), "w", encoding="utf-8") as f:
        for row in table:
            f.write(json.dumps({k: row.get(k) for k in columns}) + "\n")
    return list(NAMES)
