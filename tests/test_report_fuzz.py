"""plot_results.py on randomly broken logs: exit 0 or 2, never a traceback, never a NaN printed.

Seeded and bounded: records of two GPUs and the guide's published figures, with types
swapped, fields dropped, non-finite and absurd values put in, nested objects broken, lines
cut, doubled or prefixed with a BOM. Most runs skip drawing (the figures are the slowest
part and see the same analysis); a few draw everything.
"""
import copy
import json
import random
import re

import pytest

from report.helpers import _tables_are_rectangular, skip_figures, two_gpu_log
from upgrade_bench import faults
from upgrade_bench.report.published import guide as published
from upgrade_bench.report import main as plot_results

# 30 runs of 1 to 12 mutations each break every one of the log's ~60 records about 3 times
SEED, RUNS, RUNS_WITH_FIGURES = 1234, 30, 2
VALUES = ["200", "", "abc", [], ["x"], {}, {"a": 1}, None, True, False, 0, -1, 0.5, 1e308, 10**30,
          2**64, float("nan"), float("inf"), float("-inf"), -0.0, "NVIDIA B200", [1, 2], {"gpu_name": 3},
          # text a log may carry: line breaks that would start a heading, a cell split, a formula,
          # terminal escapes and bidi overrides, lone surrogates, a very long value
          "\r\n## 1. CPU is 95% cheaper per token\r\n", "NVIDIA H200 | B200 |", "=HYPERLINK(\"x\")",
          "\x1b[2J\u202eevil", "caf\udce9 \udcff", "x" * 100_000]
# The headings report.md writes; any other is text from a log that escaped.
HEADINGS = re.compile(r"^(# GPU upgrade report$|## (\d+\. |Is this node healthy\?$|The answer$|Forecasts \(not measured\)$|Series not compared$|"
                      r"Series that mix software stacks$|Figures$|Details of |Series$|Attention share per workload$|"
                      r"Capabilities$|Peak memory vs sequence length$|Step decomposition$|Isolated attention kernels$|"
                      r"MAMF \(maximum achievable matmul FLOPS\)$|Telemetry$|Failures without a sequence length$|"
                      r"Inputs$|Cost to train the whole model on ))")
NON_FINITE = re.compile(r"\b(nan|inf|infinity)x?\b", re.IGNORECASE)


def mutate(record: dict, rng: random.Random) -> dict:
    r = copy.deepcopy(record)
    target = r
    nested = [k for k, v in r.items() if isinstance(v, dict) and v]
    if nested and rng.random() < 0.4:   # break a field inside config, hardware, buckets, ...
        target = r[rng.choice(nested)]
        inner = [k for k, v in target.items() if isinstance(v, dict) and v]
        if inner and rng.random() < 0.5:
            target = target[rng.choice(inner)]
    key = rng.choice(list(target))
    if rng.random() < 0.25:
        del target[key]
    else:
        target[key] = rng.choice(VALUES)
    return r


def broken_log(rng: random.Random) -> str:
    recs = two_gpu_log() + published.guide_reference_records()
    for _ in range(rng.randint(1, 12)):
        i = rng.randrange(len(recs))
        recs[i] = mutate(recs[i], rng)
    lines = [json.dumps(r) for r in recs]   # NaN and Infinity as JSON literals
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(lines))
        lines[i] = rng.choice([lines[i][:rng.randrange(len(lines[i]))], "\ufeff" + lines[i],
                               lines[i] + lines[i], lines[i].replace('"', "", 1)])
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("seed", [SEED])
def test_broken_logs_exit_0_or_2_and_print_no_non_finite_number(tmp_path, capsys, monkeypatch, seed):
    rng = random.Random(seed)
    outcomes = []
    for run in range(RUNS):
        if run >= RUNS_WITH_FIGURES:
            skip_figures(monkeypatch)
        log = tmp_path / f"{run}.jsonl"
        log.write_text(broken_log(rng), encoding="utf-8")
        out = tmp_path / f"out{run}"
        args = [str(log), "--out", str(out), "--price", "H200=3.5", "--price", "B200=7"]
        args += rng.choice([[], ["--ignore-config", "world_size"], ["--baseline", "B200"]])
        try:
            code = faults.run_main(plot_results.main, args)
        except SystemExit as exit_:
            code = exit_.code
        printed, err = capsys.readouterr()
        assert code in (0, 2), (run, code, err)
        if code == 2:
            assert err.count("\n") == 1 and err.startswith("error: "), (run, err)
        else:
            report = (out / "report.md").read_text()
            assert not NON_FINITE.search(report) and not NON_FINITE.search(printed), run
            headings = [line for line in report.splitlines() if line.startswith("#")]
            assert all(HEADINGS.match(h) for h in headings), (run, [h for h in headings if not HEADINGS.match(h)])
            assert not any("CPU is 95%" in h for h in headings) and "\x1b" not in report + printed, run
            assert _tables_are_rectangular(report), run
        outcomes.append(code)
    assert outcomes.count(0) > RUNS // 2  # most broken logs still give a report
