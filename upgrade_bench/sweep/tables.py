"""What run_sweep.sh prints for people (stderr): the sweep's and the capacity search's tables,
and durations."""
from ..numfmt import pct, sig


def sweep_table(seq_lens, summaries: dict, failures: dict, earlier: dict, interrupted=()) -> str:
    """seq_len | TFLOPS/GPU | MFU | peak GiB | status, one row per point of the sweep (`interrupted`:
    the point a Ctrl-C or SIGTERM stopped, neither failed nor never started)."""
    lines = [f"{'seq_len':>8}  {'TFLOPS/GPU':>10}  {'MFU':>6}  {'peak GiB':>8}  status"]
    for seq_len in sorted(set(seq_lens)):
        r = summaries.get(seq_len) or earlier.get(seq_len) or {}
        status = ("ok" if seq_len in summaries else "ok (earlier run)" if seq_len in earlier
                  else failures[seq_len]["error"] if seq_len in failures
                  else "interrupted" if seq_len in interrupted else "not run")
        lines.append(f"{seq_len:>8}  {sig(r.get('tflops_per_gpu')):>10}  {pct(r.get('mfu')):>6}  "
                     f"{sig(r.get('peak_mem_gib')):>8}  {status}")
    return "\n".join(lines)


def capacity_table(capacity: dict) -> str:
    lines = [f"{'seq_len':>8}  {'peak GiB':>8}  status"]
    lines += [f"{p['seq_len']:>8}  {sig(p['peak_mem_gib']):>8}  {'fits' if p['fits'] else p['reason']}"
              for p in capacity["probes"]]
    return "\n".join(lines + [f"largest that fits: {capacity['max_fit_seq_len']} (smallest failing: "
                              f"{capacity['min_fail_seq_len']}; {capacity['runs']} search rounds)"])
