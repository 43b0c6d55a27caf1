"""published/: the guide's published figures as records, labelled as published, reproducing the
guide's tables, and the shipped results/reference/guide.jsonl what the code writes."""
import json

import pytest

from conftest import REPO
from report.helpers import analysis_of, only, rows_of
from upgrade_bench.report.read import series
from upgrade_bench.report.published import guide as published


def test_guide_reference_records_are_labelled_and_reproduce_the_guide():
    recs = published.guide_reference_records()
    assert all(r["reference"] == "guide" for r in recs)
    headers = [r for r in recs if r["kind"] == "header"]
    assert {r["hardware"]["gpu_name"] for r in headers} == {"NVIDIA H200", "NVIDIA B200"}
    assert all("guide's published figures" in r["notes"] for r in headers)
    # the `reference` field marks published figures; the notes' words alone do not
    unmarked = [{k: v for k, v in r.items() if k != "reference"} for r in recs]
    assert {s.reference for s in series.load(unmarked).series} == {None}
    a = analysis_of(recs, prices={"H200": 3.5, "B200": 7.0})
    c = only(a)
    assert c.other.label == "B200 SXM fa4 (guide's published)"
    rows = rows_of(c)
    assert rows[262144].speedup == pytest.approx(852 / 419)  # the guide's 2.03x
    # the range of published whole-number TFLOPS is their rounding; it holds the guide's 1.19x
    assert rows[8192].speedup_range == pytest.approx((166.5 / 141.5, 167.5 / 140.5))
    assert rows[8192].speedup_range[0] < 1.19 < rows[8192].speedup_range[1]
    assert rows[8192].attn_share == pytest.approx(0.125, abs=0.001)  # the guide: 12.5% at 8K
    # the guide's memory table, both GPUs
    assert [r.other["peak_mem_gib"] for r in c.rows] == [16.3, 25.9, 37.6, 66.7, 95.7, 124.6]
    assert [r.base["peak_mem_gib"] for r in c.rows] == [16.3, 25.8, 37.5, 66.5, 95.7, 124.5]
    # the guide's verdict at a 2x price ratio: 8K 69% dearer; 256K about even
    assert rows[8192].cost.value == pytest.approx(2 * 141 / 167)
    assert rows[262144].break_even == pytest.approx(852 / 419)
    (dec,) = a.decompositions
    assert [(r["bucket"], round(r["speedup"], 2)) for r in dec.rows] == [
        ("attention", 1.87), ("everything else", 1.67), ("total", 1.69)]  # the guide's ratios


def test_the_shipped_guide_reference_is_what_the_code_writes():
    with open(REPO / "results" / "reference" / "guide.jsonl") as f:
        shipped = [json.loads(line) for line in f]
    assert shipped == json.loads(json.dumps(published.guide_reference_records()))
