"""read/: arguments to files, files to checked records, records to runs and series (their labels,
stacks, provenance and headers), on records written by hand and files on disk."""
import json

from conftest import REPO
from report.helpers import (
    H200_PEAK, B200_PEAK, STACK, rec, header, summary, two_gpu_log, write_jsonl, analysis_of, only, cli,
    guide_with_a_measured_h200)
from upgrade_bench.report.compare import comparisons
from upgrade_bench.report.page import details as detail_tables, markdown, verdicts as verdict_blocks, words
from upgrade_bench.report.read import inputs, series, stacks


def test_capabilities_logged_under_old_and_new_item_names_share_a_row():
    def cap(run_id, item, status):
        return rec("capability", run_id, script="check_capabilities.py", item=item, category="attention",
                   status=status, detail="", value=None)

    recs = [header("h", "NVIDIA H200", script="check_capabilities.py"), cap("h", "attention:sdpa_cudnn", "ok"),
            header("b", "NVIDIA B200", script="check_capabilities.py"),
            cap("b", "attention:sdpa-cudnn", "unsupported_stack")]
    data = series.load(json.loads(json.dumps(recs)))
    assert {g: list(gpu.capabilities) for g, gpu in data.gpus.items()} == {
        "H200 SXM": ["attention:sdpa-cudnn"], "B200 SXM": ["attention:sdpa-cudnn"]}
    rows = [line for line in detail_tables.capability_markdown(comparisons.analyse(data)).splitlines()
            if "attention:" in line]
    assert rows == ["| **attention:sdpa-cudnn** | **ok** | unsupported_stack | ◀ ok only on H200 SXM |"]


def test_series_labels_name_only_the_settings_that_differ_in_words():
    assert [series.config_phrase(k, v) for k, v in [
        ("ZERO_STAGE", 3), ("GRAD_CHECKPOINT", True), ("OFFLOAD_OPTIMIZER", False),
        ("world_size", 1), ("world_size", 8), ("NUM_LAYERS", 0), ("NUM_LAYERS", 8),
        ("PYTORCH_CUDA_ALLOC_CONF", None), ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),
        ("SOMETHING_NEW", True)]] == [
        "ZeRO-3", "ckpt", "no offload", "1 GPU", "8 GPUs", "all layers", "8 layers",
        "default allocator", "allocator expandable_segments:True", "SOMETHING_NEW=1"]
    recs = [header("a", "NVIDIA H200"), summary("a", 8192, 400.0, H200_PEAK),
            header("b", "NVIDIA H200", config={"ZERO_STAGE": 2, "GRAD_CHECKPOINT": False, "world_size": 1}),
            summary("b", 8192, 500.0, H200_PEAK)]
    labels = sorted(s.label for s in series.load(recs).series)
    # world_size is named first; MODEL and the rest, the same in both, not at all.
    assert labels == ["H200 SXM fa3: 1 GPU, ZeRO-2, no ckpt", "H200 SXM fa3: 8 GPUs, ZeRO-3, ckpt"]


def test_stack_parity_is_per_comparison():
    same = stacks.stack_of({"software": STACK})
    assert stacks.stack_differences(same, dict(same)) == []
    # one-sided attention package = the per-GPU backend choice; two versions = a mismatch
    assert stacks.stack_differences(dict(same, **{"flash-attn-3": "3.0.0"}),
                                    dict(same, **{"flash-attn-4": "4.0.0b22"})) == []
    assert stacks.stack_differences(dict(same, **{"flash-attn-4": "4.0.0b36"}),
                                    dict(same, **{"flash-attn-4": "4.0.0b22"})) == [
        ("flash-attn-4", "4.0.0b36", "4.0.0b22")]
    c = only(analysis_of(two_gpu_log(b200_software={"torch": "2.12.0", "cuda": "12.9"})))
    assert c.stack == [("torch", ["2.13.0"], ["2.12.0"]), ("cuda", ["13.0"], ["12.9"])]
    assert "**Software stacks differ** (the stack alone moves results by double-digit percent): " \
           "torch 2.13.0 vs 2.12.0; cuda 13.0 vs 12.9" in verdict_blocks.verdict_block(c, {})
    assert only(analysis_of(two_gpu_log())).stack == []


def test_duplicate_records_are_counted_once(tmp_path):
    log = two_gpu_log()
    first = write_jsonl(tmp_path / "a.jsonl", log)
    again = write_jsonl(tmp_path / "b.jsonl", log[:3])  # header + two summaries of run-h200
    tally = inputs.Tally()
    data = series.load(inputs.read([first, again], tally), also_in=tally.seen_again)
    (h200,) = [s for s in data.series if s.gpu == "H200 SXM" and s.is_sweep]
    assert [len(v) for v in h200.repeats.values()] == [1, 1, 1]
    assert tally.duplicates == {again: 3} and tally.seen_again == {"run-h200": {again}}
    assert words.sources_words(h200, tally.seen_again).startswith(f"{first} (run run-h200; also in {again})")


def test_reading_a_folder_includes_its_reference_and_a_missing_gpu_names_it(tmp_path, capsys):
    assert inputs.expand([str(REPO / "results")])[-1] == str(REPO / "results" / "reference" / "guide.jsonl")
    code, _, err = cli(capsys, REPO / "results" / "h200x2_8b_longctx_sweep.jsonl", "--price", "B200=7",
                       "--out", tmp_path)
    assert code == 2 and err.count("\n") == 1
    assert "--price B200=7: no GPU named 'B200' in the logs (GPUs: H200 SXM); the guide's published " \
           "B200 SXM figures are in results/reference/guide.jsonl: add that file (or its folder)" in err


def test_thousands_of_one_run_files_compare_stacks_per_comparison(tmp_path):
    paths = []
    for i in range(1500):
        gpu, peak = ("NVIDIA H200", H200_PEAK) if i % 2 else ("NVIDIA B200", B200_PEAK)
        paths.append(write_jsonl(tmp_path / f"{i}.jsonl", [
            header(f"r{i}", gpu),
            summary(f"r{i}", 1024 * (1 + i % 4), 400.0 + i % 7, peak, 1024 * (1 + i % 4) / 0.1, 100.0, (99.0, 101.0))]
            + [rec("step", f"r{i}", seq_len=1024, step=k, step_ms=100.0) for k in range(20)]))
    tally = inputs.Tally()
    a = comparisons.analyse(series.load(inputs.read(paths, tally)))
    (c,) = a.comparisons
    assert len(c.base.stacks) == len(c.other.stacks) == 1 and c.stack == []
    assert sum(len(v) for v in c.base.repeats.values()) == 750 and len(c.base.runs) == 750
    assert words.sources_words(c.base, {}).endswith("and 747 more runs in 747 files")


def test_labels_never_state_a_setting_the_log_does_not_hold_and_keep_ignored_ones():
    # A setting missing from a log is "not recorded", not "no offload" or "ZeRO-None".
    assert [series.config_phrase(k, None) for k in ("OFFLOAD_OPTIMIZER", "ZERO_STAGE", "world_size",
                                                    "PYTORCH_CUDA_ALLOC_CONF")] == [
        "OFFLOAD_OPTIMIZER not recorded", "ZERO_STAGE not recorded", "world_size not recorded", "default allocator"]
    recs = [header("a", "NVIDIA H200"), summary("a", 8192, 400.0, H200_PEAK),
            header("b", "NVIDIA H200", config={"OFFLOAD_OPTIMIZER": None}), summary("b", 8192, 500.0, H200_PEAK)]
    recs[2]["config"].pop("OFFLOAD_OPTIMIZER")
    assert sorted(s.label for s in series.load(recs).series) == [
        "H200 SXM fa3: OFFLOAD_OPTIMIZER not recorded", "H200 SXM fa3: offload"]
    # --ignore-config world_size pairs a 2-GPU run with an 8-GPU one: the figures' labels
    # still say which is which
    recs = guide_with_a_measured_h200(config={"world_size": 2})
    labels = {s.label for s in analysis_of(recs, ignore=("world_size",)).data.series if s.is_sweep}
    assert labels == {"H200 SXM fa4: 2 GPUs", "H200 SXM fa3: 8 GPUs (guide's published)",
                      "B200 SXM fa4: 8 GPUs (guide's published)"}


def test_the_position_field_is_read_from_a_log_file_whatever_its_value(tmp_path):
    # 0 is what every fresh process writes: a reader that refused it would drop every point.
    log = tmp_path / "h200.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in [
        header("r", "NVIDIA H200"), summary("r", 1024, 400.0, H200_PEAK, earlier_points_in_process=0),
        summary("r", 2048, 450.0, H200_PEAK, earlier_points_in_process=1),
        summary("r", 4096, 450.0, H200_PEAK, earlier_points_in_process=-1)]))
    tally = inputs.Tally()
    got = [r for r in inputs.read([str(log)], tally) if r["kind"] == "summary"]
    assert [r["seq_len"] for r in got] == [1024, 2048] and tally.skipped_total() == 1


def test_provenance_comes_from_the_reference_field_never_from_words():
    recs = two_gpu_log()
    for r in recs:
        if r["kind"] == "header" and r["run_id"] == "run-b200":
            r["notes"] = "set up like the guide's published run"
    a = analysis_of(recs, prices={"H200": 3.5, "B200": 7.0})
    assert [c.sources for c in a.comparisons] == ["measured vs measured"]


def test_records_join_the_header_of_their_own_file(tmp_path):
    # b.jsonl: B200 records before their B200 header; a.jsonl: an H200 header of the same run id
    h200 = header("shared", "NVIDIA H200")
    b200 = header("shared", "NVIDIA B200", backend="fa4")
    points = [summary("shared", 1024, 900.0, B200_PEAK, 1024 / 0.0488, 48.8, (48.0, 50.0)),
              summary("shared", 2048, 950.0, B200_PEAK, 19000.0, 108.4, (100.0, 110.0))]
    a_path = write_jsonl(tmp_path / "a.jsonl", [h200, summary("shared", 1024, 400.0, H200_PEAK, 10000.0, 102.4,
                                                              (100.0, 105.0))])
    b_path = write_jsonl(tmp_path / "b.jsonl", points + [b200])
    tally = inputs.Tally()
    data = series.load(inputs.read([a_path, b_path], tally))
    by_gpu = {s.gpu: sorted(s.points) for s in data.series}
    assert by_gpu == {"H200 SXM": [1024], "B200 SXM": [1024, 2048]}
    assert data.conflicts == {"shared": ["NVIDIA B200", "NVIDIA H200"]}
    a = comparisons.analyse(data, None, {})
    assert "Run id shared has headers of different GPUs (NVIDIA B200, NVIDIA H200)" in markdown.inputs_markdown(
        a, [a_path, b_path], tally)


def test_runs_on_the_fast_kernels_and_on_the_fallback_are_two_series_labelled_apart():
    # The same settings, one run with causal-conv1d's kernel, one on transformers' torch conv
    # (an H200's Qwen3-Next runs: 169.9 and 184.2 ms): never one series, never one number.
    fast = header("r1", "NVIDIA H200", backend="fa4", config={"MODEL": "qwen3-next-80b-a3b"},
                  mixer_kernels={"chunk_gated_delta_rule": "fla", "causal_conv1d_fn": "causal_conv1d"})
    slow = header("r2", "NVIDIA H200", backend="fa4", config={"MODEL": "qwen3-next-80b-a3b"},
                  mixer_kernels={"chunk_gated_delta_rule": "fla", "causal_conv1d_fn": "torch fallback"})
    a = analysis_of([fast, summary("r1", 8192, 180.0, 55), slow, summary("r2", 8192, 166.0, 57)])
    labels = sorted(s.label for s in a.data.series)
    assert labels == ["H200 SXM fa4", "H200 SXM fa4: torch fallback: causal_conv1d_fn"]


def test_a_log_from_before_fp8_experts_whose_experts_converted_reads_as_fp8_experts_on():
    # Its header's low_precision says 4 experts modules ran in FP8: not the default run's
    # workload (experts in bf16), so not one series with a run of today's default.
    config = {"MODEL": "qwen3-30b-a3b", "PRECISION": "fp8-tensorwise"}
    old = header("r1", "NVIDIA H200", backend="fa4", config=config, low_precision={"converted_experts": 4})
    new = header("r2", "NVIDIA H200", backend="fa4", config=config, low_precision={"converted_experts": 0})
    a = analysis_of([old, summary("r1", 8192, 122.8, 86), new, summary("r2", 8192, 170.0, 70)])
    assert sorted(s.label for s in a.data.series) == ["H200 SXM fa4", "H200 SXM fa4: experts in FP8"]
    # FP8_EXPERTS=1 where no expert converts (gpt-oss's are stored transposed): the run did what
    # the default does, and reads so; a value of another type is named as recorded, never alike
    on = header("r3", "NVIDIA H200", backend="fa4", config={**config, "FP8_EXPERTS": True},
                low_precision={"converted_experts": 0})
    odd = header("r4", "NVIDIA H200", backend="fa4", config={**config, "FP8_EXPERTS": "1"})
    a = analysis_of([new, summary("r2", 8192, 170.0, 70), on, summary("r3", 8192, 171.0, 70),
                     odd, summary("r4", 8192, 172.0, 70)])
    assert sorted(s.label for s in a.data.series) == ["H200 SXM fa4", "H200 SXM fa4: FP8_EXPERTS='1'"]


def test_a_failed_point_the_sweep_records_joins_its_processs_series():
    # run_sweep writes a timed-out point's error under its own header, which says nothing of the
    # kernels; the error carries what the process's header said ran, so it joins that series
    config = {"MODEL": "qwen3-next-80b-a3b"}
    slow = {"causal_conv1d_fn": "torch fallback"}
    bench = header("r1", "NVIDIA H200", backend="fa4", config=config, mixer_kernels=slow)
    sweep = header("s1", "NVIDIA H200", backend="fa4", config=config, script="run_sweep.sh")
    timeout = rec("error", "s1", seq_len=32768, error="timeout", message="no summary", script="run_sweep.sh",
                  mixer_kernels=slow)
    a = analysis_of([bench, summary("r1", 8192, 166.0, 57), sweep, timeout])
    assert [(s.label, sorted(s.points), sorted(s.errors)) for s in a.data.series] == [("H200 SXM fa4", [8192], [32768])]
