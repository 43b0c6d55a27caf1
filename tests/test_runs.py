"""upgrade_bench.log.runs: which header a record belongs to, and which configs are one run."""
from upgrade_bench.log.runs import NOT_IDENTITY, run_identity, with_headers


def test_identity_drops_what_does_not_change_the_workload():
    config = {"MODEL": "m", "ZERO_STAGE": 3, "WARMUP_STEPS": 2, "SEQ_LEN": [8192], "OUTPUT": "a.jsonl",
              "NOTES": "x", "SEED": 1, "STEPS": 10, "PEAK_TFLOPS": 989.0}
    kept, key = run_identity(config)
    assert kept == {"MODEL": "m", "WARMUP_STEPS": 2, "ZERO_STAGE": 3}
    other = {**config, "SEQ_LEN": [65536], "OUTPUT": "b.jsonl", "NOTES": "", "SEED": 7, "STEPS": 1,
             "PEAK_TFLOPS": 0.0}
    assert run_identity(other)[1] == key  # a resumed sweep and the report: one run
    assert run_identity({**config, "WARMUP_STEPS": 0})[1] != key  # a capacity probe is not
    assert run_identity({**config, "WARMUP_STEPS": 0}, ignore=("WARMUP_STEPS",))[1] == \
        run_identity(config, ignore=("WARMUP_STEPS",))[1]
    # how many warm-up steps, and how the backend was asked for, do not split a run
    assert run_identity({**config, "WARMUP_STEPS": 1})[1] == key
    assert run_identity({**config, "ATTN_BACKEND": "auto"})[1] == run_identity({**config, "ATTN_BACKEND": "fa3"})[1]
    assert run_identity(None) == ({}, "{}")
    assert {"SEED", "PEAK_TFLOPS", "STEPS"} <= NOT_IDENTITY


def test_records_join_the_latest_header_of_their_run_before_them():
    h1 = {"kind": "header", "run_id": "a", "n": 1}
    h2 = {"kind": "header", "run_id": "a", "n": 2}  # a second sweep with the same RUN_ID
    early = {"kind": "summary", "run_id": "b"}       # its header comes later in the file
    hb = {"kind": "header", "run_id": "b"}
    s1, s2 = {"kind": "summary", "run_id": "a", "i": 1}, {"kind": "summary", "run_id": "a", "i": 2}
    orphan = {"kind": "capacity", "run_id": "c"}
    joined = with_headers([h1, s1, early, h2, s2, hb, orphan])
    assert joined == [(s1, h1), (early, hb), (s2, h2), (orphan, None)]


def test_resume_skips_a_point_only_of_the_same_resolved_backend():
    from upgrade_bench.sweep.plan import done_summaries

    config = {"MODEL": "m", "ATTN_BACKEND": "auto"}
    header = {"kind": "header", "run_id": "a", "config": {**config, "ATTN_BACKEND": "fa3"}, "attn_backend": "fa3"}
    point = {"kind": "summary", "run_id": "a", "seq_len": 8192}
    assert done_summaries([header, point], config, [8192], "fa3") == {8192: point}
    assert done_summaries([header, point], config, [8192], "fa4") == {}  # auto picks FA4 on this node


def test_the_difference_between_two_runs_names_each_setting_they_differ_in():
    from upgrade_bench.log.runs import identity_difference

    config = {"MODEL": "tiny", "ZERO_STAGE": 2, "WARMUP_STEPS": 2, "SEQ_LEN": [64], "STEPS": 10}
    assert identity_difference(config, {**config, "SEQ_LEN": [128], "STEPS": 3, "WARMUP_STEPS": 1}) is None
    assert identity_difference(config, {**config, "MODEL": "tiny-gemma3"}) == 'MODEL="tiny" there, "tiny-gemma3" asked'
    assert identity_difference(config, {**config, "NUM_LAYERS": 8}) == "NUM_LAYERS=unset there, 8 asked"
    assert identity_difference(config, {**config, "ZERO_STAGE": 3}, ignore={"ZERO_STAGE"}) is None
    assert identity_difference(config, {**config, "ZERO_STAGE": 3, "MODEL": "x"}) == (
        'MODEL="tiny" there, "x" asked; ZERO_STAGE=2 there, 3 asked')
