#!/usr/bin/env python3
"""torchtitan's training log as the suite's JSON lines (tools/side_by_side.sh torchtitan).

Reads the stdout of tools/titan_train.py (its `titan_train: workload {...}` line, torchtitan's
`Trainer is initialized with local batch size B, ..., sequence length S` line and its metrics
line per step, `step: N  loss: ...  memory: M GiB(P%)  tps: T  tflops: F  mfu: U`) and writes one
record per step and a summary per log, in the suite's field names (step_ms, tflops_per_gpu,
peak_mem_gib, seq_len, precision) with `stack: torchtitan`.

The conversion is the suite's own, so the two stacks are compared on one count: a step's
time is its tokens over torchtitan's tokens per second (tps: the wall time between two metric
lines, one step apart at log_freq 1: data, forward, backward, optimizer, the loss read back);
TFLOPS/GPU is the suite's model FLOPs of that step (models/flops.step_flops on the model's
config cut to the workload's layers) over that time; the peak memory is torch's allocator's
reserved peak (`memory:`, GiB of 2^30 bytes, torch.cuda.memory_stats' reserved_bytes.all.peak),
which torchtitan resets at each metric line: the summary takes the largest. torchtitan's own
TFLOPS (its own count) is kept beside, as titan_tflops. A log with no step line gives a summary
with `status: failed` and the log's last error line, so a failed run is a record too.

    python3 tools/titan_log.py OUT/torchtitan_bf16_8192.log OUT/torchtitan_fp8-tensorwise_8192.log > OUT/torchtitan.jsonl
"""
import argparse
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from upgrade_bench.faults import BadInput, run_main  # noqa: E402
from upgrade_bench.models import architecture, cuts, flops  # noqa: E402

WORKLOAD = re.compile(r"titan_train: workload (\{.*\})")
INIT = re.compile(r"Trainer is initialized with local batch size (\d+), .*sequence length (\d+)")
# torchtitan's MetricsProcessor.log line (components/metrics.py); a validation line starts
# "validate step:" and is not a training step.
STEP = re.compile(r"(?<!validate )step:\s*(\d+)\s+loss:\s*(\S+)\s+grad_norm:\s*\S+\s+"
                  r"memory:\s*([\d.]+)GiB\([\d.]+%\)\s+tps:\s*([\d,]+)\s+tflops:\s*([\d,.]+)")
COLOR = re.compile(r"\x1b\[[0-9;]*m")
ERROR = re.compile(r"(Error|error:|Exception|Traceback|OutOfMemory)")


def parse(text: str) -> dict:
    """The workload, batch, length and metric lines of one log (pure; missing parts are None)."""
    text = COLOR.sub("", text)
    workload = batch = seq_len = None
    steps, errors = [], []
    for line in text.splitlines():
        if m := WORKLOAD.search(line):
            workload = json.loads(m.group(1))
        elif m := INIT.search(line):
            batch, seq_len = int(m.group(1)), int(m.group(2))
        elif m := STEP.search(line):
            steps.append({"step": int(m.group(1)), "loss": float(m.group(2)), "peak_mem_gib": float(m.group(3)),
                          "tps": int(m.group(4).replace(",", "")),
                          "titan_tflops": float(m.group(5).replace(",", ""))})
        elif ERROR.search(line):
            errors.append(line.strip())
    return {"workload": workload, "batch_size": batch, "seq_len": seq_len, "steps": steps,
            "error": errors[-1] if errors else None}


def model_flops(config: dict, num_layers: int, batch: int, seq_len: int) -> float:
    """The suite's model FLOPs of one step of `config` cut to `num_layers` layers."""
    spec = architecture.describe(cuts.cut(config, num_layers).config)
    return flops.step_flops(spec, batch, seq_len).model


def records(parsed: dict, config: dict, warmup: int, log: str) -> list[dict]:
    """The step records and the summary of one parsed log, in the suite's field names."""
    w = parsed["workload"] or {}
    base = {"stack": "torchtitan", "precision": w.get("precision"), "seq_len": parsed["seq_len"],
            "batch_size": parsed["batch_size"], "num_layers": w.get("num_layers"), "attn": w.get("attn"),
            "compile": w.get("compile"), "log": log}
    if not parsed["steps"] or not parsed["workload"] or not parsed["seq_len"]:
        return [{"kind": "summary", **base, "status": "failed",
                 "error": parsed["error"] or "no step line in the log"}]
    tokens = parsed["batch_size"] * parsed["seq_len"]
    step_flops = model_flops(config, w["num_layers"], parsed["batch_size"], parsed["seq_len"])
    out = []
    for s in parsed["steps"]:
        step_ms = tokens / s["tps"] * 1e3
        out.append({"kind": "step", **base, "step": s["step"], "warmup": s["step"] <= warmup, "step_ms": step_ms,
                    "tokens": tokens, "tflops_per_gpu": flops.tflops(step_flops, step_ms),
                    "peak_mem_gib": s["peak_mem_gib"], "loss": s["loss"], "titan_tflops": s["titan_tflops"]})
    timed = [r for r in out if not r["warmup"]]
    if not timed:
        return out + [{"kind": "summary", **base, "status": "failed",
                       "error": f"{len(out)} steps logged, none after the {warmup} warmup steps"}]
    step_ms = statistics.median(r["step_ms"] for r in timed)
    out.append({"kind": "summary", **base, "status": "ok", "steps": len(timed), "warmup_steps": warmup,
                "step_ms": step_ms, "step_ms_min": min(r["step_ms"] for r in timed),
                "step_ms_max": max(r["step_ms"] for r in timed), "tflops_per_gpu": flops.tflops(step_flops, step_ms),
                "model_tflop_per_step": step_flops / 1e12, "peak_mem_gib": max(r["peak_mem_gib"] for r in out),
                "titan_tflops": statistics.median(r["titan_tflops"] for r in timed)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+", help="tools/titan_train.py's stdout, one file per run")
    ap.add_argument("--config", default="configs/llama-3.1-8b.json", help="the model's config.json (the FLOP count)")
    ap.add_argument("--warmup", type=int, default=2, help="first steps left out of the summary (compile)")
    args = ap.parse_args(argv)
    if args.warmup < 0:
        raise BadInput(f"--warmup={args.warmup}: a whole number >= 0")
    try:
        with open(args.config, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as err:
        raise BadInput(f"--config={args.config}: not a readable config.json ({err})") from None
    failed = False
    for log in args.logs:
        try:
            with open(log, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as err:
            raise BadInput(f"{log}: cannot be read ({err.strerror})") from None
        for rec in records(parse(text), config, args.warmup, log):
            print(json.dumps(rec))
            failed |= rec.get("status") == "failed"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run_main(main))
