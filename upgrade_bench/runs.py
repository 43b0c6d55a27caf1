"""Runs in a log: which header a record belongs to, and which configs describe the same run.

A record belongs to the run whose `header` has its run_id. A run's identity is its header's
config minus NOT_IDENTITY: two runs with the same identity measured the same workload, so
a sweep's RESUME skips a point the file already holds for it, the capacity search is seeded
with it, and the report puts both in one series.
"""
import json

# Config keys that vary per process of one sweep or do not change the workload: SEQ_LEN,
# OUTPUT and NOTES differ between a sweep's processes; STEPS and SEED (and bench_decompose's
# TIME_STEPS and PROFILE_STEPS) change the precision of a point, not what it measures;
# PEAK_TFLOPS changes only the MFU denominator. WARMUP_STEPS stays in: a capacity probe (one
# cold step, no warm-up) is no steady-state throughput.
NOT_IDENTITY = frozenset({"SEQ_LEN", "SEQLENS", "OUTPUT", "NOTES", "SEED", "STEPS", "PEAK_TFLOPS",
                          "RUN_ID", "TIME_STEPS", "PROFILE_STEPS"})


def run_identity(config: dict | None, ignore=()) -> tuple[dict, str]:
    """(the keys of `config` that identify its run, their canonical text to compare by);
    `ignore`: further keys that do not matter for this comparison."""
    kept = {k: v for k, v in sorted((config or {}).items()) if k not in NOT_IDENTITY and k not in ignore}
    return kept, json.dumps(kept, sort_keys=True, default=str)


def with_headers(records) -> list[tuple[dict, dict | None]]:
    """[(record, its run's header or None)] for every non-header record, in input order.

    The header is the latest one of the run before the record, so sweeps that share a RUN_ID
    still resolve; a record before any header of its run gets the run's first one.
    """
    first = {}
    for r in records:
        if r.get("kind") == "header":
            first.setdefault(r.get("run_id"), r)
    latest, out = {}, []
    for r in records:
        if r.get("kind") == "header":
            latest[r.get("run_id")] = r
        else:
            run_id = r.get("run_id")
            out.append((r, latest.get(run_id) or first.get(run_id)))
    return out
