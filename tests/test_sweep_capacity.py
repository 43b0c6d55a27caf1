"""The capacity search of FIND_MAX_SEQLEN (upgrade_bench.sweep.sweep_capacity) on synthetic GPUs,
and its seeding from what a results file holds."""
import math

import pytest

from upgrade_bench.sweep import capacity
from upgrade_bench.sweep.capacity import Probe


def probe_runner(threshold, peak=None, hbm=None):
    """run(lengths) of find_max_seq_len for a GPU where lengths <= threshold fit."""
    calls = []

    def run(lengths):
        calls.append(list(lengths))
        probes = []
        for s in lengths:
            fits = s <= threshold
            probes.append(Probe(s, fits, peak(s) if peak and fits else None, hbm,
                                      "ok" if fits else "oom"))
            if not fits:
                break
        return probes

    return run, calls


START, STEP, LIMIT = 8192, 8192, 1048576
MAX_RUNS = math.ceil(math.log2((LIMIT - START) / STEP)) + 2  # the bound


@pytest.mark.parametrize("threshold", [5000, 8192, 9000, 100000, 262143, 300000, 1048575, 1048576, 5000000])
def test_capacity_search_finds_the_threshold_within_the_step(threshold):
    run, calls = probe_runner(threshold)
    found = capacity.find_max_seq_len(run, START, STEP, LIMIT)
    assert found["runs"] == len(calls) <= MAX_RUNS
    if threshold >= LIMIT:
        assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (LIMIT, None)
        return
    top, bottom = found["max_fit_seq_len"] or 0, found["min_fail_seq_len"]
    assert top <= threshold < bottom and bottom - top <= STEP
    assert calls[0] == [8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576]  # one process


def test_capacity_search_bisects_below_a_start_that_does_not_fit():
    run, calls = probe_runner(9000)
    found = capacity.find_max_seq_len(run, 10000, STEP, LIMIT)
    assert calls[0][0] == 10000 and calls[1:] == [[8192]]
    assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (8192, 10000)


def test_capacity_search_seeded_by_the_sweep_skips_the_ladder():
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    run, calls = probe_runner(298604, peak, hbm=141)
    sweep_fits = [Probe(s, True, peak(s), 141) for s in (32768, 65536, 131072)]
    found = capacity.find_max_seq_len(run, START, STEP, LIMIT, known=sweep_fits)
    assert calls == [[294912, 303104]] and found["runs"] == 1
    assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (294912, 303104)


def test_capacity_search_cut_short_goes_on_from_what_it_knew():
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    run, calls = probe_runner(298604, peak, hbm=141)
    done_before = [Probe(s, True, peak(s), 141) for s in (65536, 131072, 294912)] + \
        [Probe(524288, False, reason="oom")]
    found = capacity.find_max_seq_len(run, START, STEP, LIMIT, known=done_before)
    assert calls == [[303104, 311296]]  # one run: 303104 fails, the process stops there
    assert (found["max_fit_seq_len"], found["min_fail_seq_len"]) == (294912, 303104)


def test_capacity_search_guided_by_the_memory_line_needs_two_runs():
    # The guide's line: 12.6 GiB + 0.00043 GiB/token; OOM where it crosses 141 GiB.
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    threshold = int((141 - 12.6) / 0.00043)  # 298604
    run, calls = probe_runner(threshold, peak, hbm=141)
    found = capacity.find_max_seq_len(run, START, STEP, LIMIT)
    assert found["max_fit_seq_len"] <= threshold < found["min_fail_seq_len"]
    assert found["min_fail_seq_len"] - found["max_fit_seq_len"] == STEP
    assert calls[1] == [294912, 303104] and found["runs"] == 2
    assert found["peak_mem_gib_at_max"] == pytest.approx(peak(294912))


def test_capacity_search_survives_a_wrong_memory_line():
    # Peaks say the ceiling is ~58K tokens higher than it is: both guesses fail, bisection ends it.
    peak = lambda s: 12.6 + 0.00043 * s  # noqa: E731
    run, calls = probe_runner(240000, peak, hbm=141)
    found = capacity.find_max_seq_len(run, START, STEP, LIMIT)
    assert calls[1:3] == [[253952], [245760]]
    assert found["max_fit_seq_len"] <= 240000 < found["min_fail_seq_len"]
    assert found["min_fail_seq_len"] - found["max_fit_seq_len"] <= STEP
    assert found["runs"] <= MAX_RUNS


def test_capacity_search_interrupted_keeps_the_fits_of_the_cut_run():
    # As on the 2-GPU H200: seeded by the sweep, the guided run fits 262144 and is then
    # stopped (device-time limit) while probing 270336. The record keeps the fit.
    line = lambda s: 12.6 + 0.00045 * s  # noqa: E731 (GiB at s tokens)
    known = [Probe(s, True, line(s), 139.8) for s in (8192, 32768, 65536, 131072)]

    def run(lengths):
        raise capacity.ProbesInterrupted([Probe(lengths[0], True, line(lengths[0]), 139.8)])

    found = capacity.find_max_seq_len(run, 8192, 8192, 1048576, known)
    assert found["complete"] is False and found["runs"] == 1
    # The line meets 139.8 GiB at 282667 tokens: the guided run tried 278528 (a multiple of
    # the step below it) first, and that fit is what the cut run leaves.
    assert found["max_fit_seq_len"] == 278528
    assert found["min_fail_seq_len"] is None
    assert found["peak_mem_gib_at_max"] == pytest.approx(line(found["max_fit_seq_len"]))
    whole = capacity.find_max_seq_len(probe_runner(270000, line, 139.8)[0], 8192, 8192, 1048576, known)
    assert whole["complete"] is True


def test_the_file_seeds_the_search_with_fits_of_any_step_count_and_out_of_memory_points():
    config = {"MODEL": "m", "STEPS": 10, "WARMUP_STEPS": 2, "SEQ_LEN": [1], "OUTPUT": "a", "NOTES": "x"}
    recs = [{"kind": "header", "run_id": "a", "config": config, "hardware": {"hbm_gib": 139.8}},
            {"kind": "summary", "run_id": "a", "seq_len": 8192, "peak_mem_gib": 20.0},
            {"kind": "header", "run_id": "b", "config": {**config, "STEPS": 1, "WARMUP_STEPS": 0}},  # a probe
            {"kind": "summary", "run_id": "b", "seq_len": 32768, "peak_mem_gib": 30.0},
            {"kind": "header", "run_id": "c", "config": {**config, "MODEL": "other"}},
            {"kind": "summary", "run_id": "c", "seq_len": 65536, "peak_mem_gib": 40.0},
            {"kind": "error", "run_id": "a", "seq_len": 65536, "error": "oom", "config": config},
            {"kind": "error", "run_id": "a", "seq_len": 98304, "error": "timeout", "config": config}]
    now = {**config, **capacity.PROBE_STEPS, "SEQ_LEN": [8192, 32768], "OUTPUT": "b", "NOTES": ""}
    # Peaks do not depend on how many steps ran; a timeout says nothing about memory.
    seeds = capacity.known_probes(recs, now)
    assert [(p.seq_len, p.fits, p.peak_mem_gib, p.hbm_gib) for p in seeds] == [
        (8192, True, 20.0, 139.8), (32768, True, 30.0, None), (65536, False, None, None)]
