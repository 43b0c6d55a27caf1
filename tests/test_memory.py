"""memory.py: the allocator's segments summarised as MEM_DEBUG records them, a point's peaks."""
import torch

from upgrade_bench.log import records
from upgrade_bench.training import memory

GIB = 2**30


def segment(stream, total_gib, blocks):
    return {"stream": stream, "total_size": int(total_gib * GIB),
            "allocated_size": int(sum(g for g, state in blocks if state == "active_allocated") * GIB),
            "blocks": [{"size": int(g * GIB), "state": state} for g, state in blocks]}


def test_segments_per_stream_free_space_and_largest_blocks():
    # The guide's 8-layer 8K run: a 10.4 GiB Adam state full, the fp32 master's neighbour
    # holding 1 GiB with 9.4 free, and DeepSpeed's side-stream segment empty.
    segments = [segment(0, 10.5, [(10.5, "active_allocated")]),
                segment(0, 10.5, [(1.0, "active_allocated"), (9.5, "inactive")]),
                segment(7, 5.25, [(5.25, "inactive")])]
    s = memory.segment_summary(segments, largest=2)
    assert s["segments"] == 3 and s["reserved_gib"] == 26.25 and s["allocated_gib"] == 11.5
    assert s["free_in_segments_gib"] == 14.75
    assert s["largest_free_blocks_gib"] == [9.5, 5.25]
    assert s["largest_segments_gib"] == [[10.5, 10.5], [10.5, 1.0]]
    assert s["streams"] == {"0": {"segments": 2, "reserved_gib": 21.0, "allocated_gib": 11.5},
                            "7": {"segments": 1, "reserved_gib": 5.25, "allocated_gib": 0.0}}


def test_a_point_records_each_ranks_peak_reserved_beside_the_worst_of_every_figure():
    # each rank's (max reserved GiB, max allocated GiB, alloc retries, OOMs), in rank order
    peaks = memory.rank_peaks([[61.5, 50.0, 0, 0], [79.25, 57.5, 3, 0], [70.0, 58.0, 1, 1]])
    assert peaks == {"peak_mem_gib": 79.25, "peak_alloc_gib": 58.0, "num_alloc_retries": 3, "num_ooms": 1,
                     "peak_mem_gib_per_rank": [61.5, 79.25, 70.0]}
    assert type(peaks["num_alloc_retries"]) is int  # counts, though gathered as float64
    summary = records.record("summary", "benchmark.py", "r1", None, seq_len=8192, **peaks)
    assert summary["peak_mem_gib_per_rank"] == [61.5, 79.25, 70.0]  # the schema declares it
    cpu = memory.point_peaks(torch.device("cpu"))  # no GPU: nothing measured, every field null
    assert cpu == dict.fromkeys(["peak_mem_gib", "peak_alloc_gib", "num_alloc_retries", "num_ooms",
                                 "peak_mem_gib_per_rank"])
