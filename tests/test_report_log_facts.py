"""Issue 46's report-side classes, each a rule with its tests: text from a log never becomes a
tag on the rendered page (46.3); a run whose loss is not finite is "diverged" wherever it
appears and gets no speedup (46.4); the header's facts are what the report reads, each
type-checked, and a claim the hardware says is impossible is refused with its reason (46.5).
And the loss comparison of precisions is a convergence test only on fresh tokens against a
measured bf16 seed spread (issue 45.8). In-process, without figures."""
import json

import pytest

from report.helpers import H200_PEAK, B200_PEAK, cli, header, rec, skip_figures, summary, write_jsonl
from upgrade_bench.report.compare import precision as formats
from upgrade_bench.report.page import precision as format_table
from upgrade_bench.report.page import markdown
from upgrade_bench.report.read import series
from upgrade_bench.report.compare.comparisons import analyse
from upgrade_bench.report.text import escape as text

SCRIPT = "</td><script>alert(1)</script>"


@pytest.fixture(autouse=True)
def no_figures(monkeypatch):
    skip_figures(monkeypatch)


def sweep(run_id, gpu="NVIDIA H200", peak=H200_PEAK, config=None, losses=(2.0, 2.0), step_ms=(300.0, 1200.0),
          **header_fields):
    """A measured sweep at 8K and 32K: its loss_mean per length (a string is written as is: NaN)."""
    out = [header(run_id, gpu, backend="fa4", config=config, hbm=139.8, **header_fields)]
    for n, loss, ms in zip((8192, 32768), losses, step_ms):
        s = summary(run_id, n, 400.0, peak, n / (ms * 1e-3), ms, (ms * 0.99, ms * 1.01))
        s["loss_mean"] = loss
        out.append(s)
    return out


def write(path, recs) -> str:
    """JSON lines where a loss given as a string is written bare (NaN, Infinity: what JSON lacks)."""
    with open(path, "w") as f:
        for r in recs:
            line = json.dumps(r)
            if isinstance(r.get("loss_mean"), str):
                line = line.replace(json.dumps(r["loss_mean"]), r["loss_mean"])
            f.write(line + "\n")
    return str(path)


def page_of(capsys, tmp_path, *logs, args=()):
    code, out, err = cli(capsys, *logs, "--out", tmp_path / "o", *args)
    assert code == 0, err
    return (tmp_path / "o" / "report.md").read_text(), out, err


# ---------------------------------------------------------------- 46.3 text from a log

def test_a_tag_from_a_log_is_text_on_the_page_rendered_with_html_on(tmp_path, capsys):
    hostile = {"MODEL": SCRIPT, "NOTES": SCRIPT}
    logs = (sweep("b16", config=hostile) + sweep("f8", config={**hostile, "PRECISION": SCRIPT})
            + sweep("q", config=hostile, precision="fp8-rowwise", mixer_kernels={SCRIPT: SCRIPT, "x": "torch fallback"})
            + sweep("b2", "NVIDIA B200", B200_PEAK, config=hostile, notes=SCRIPT))
    page, out, _ = page_of(capsys, tmp_path, write(tmp_path / "<b>x<\\b>.jsonl", logs),
                           args=("--price", "H200=3.5", "--price", "B200=7"))
    assert "alert(1)" in page and "<script" not in page and "</td>" not in page  # shown, as text
    try:
        from markdown_it import MarkdownIt  # a CommonMark renderer with HTML on, as a browser shows it
    except ImportError:
        return
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(page)
    assert "alert(1)" in html and "<script" not in html
    assert html.count("&lt;script&gt;") >= 5  # MODEL, PRECISION, notes, the fallback, the file name
    assert "<table>" in html and "<strong>" in html  # the page's own markdown still renders


def test_the_escape_writes_every_opening_angle_bracket_as_an_entity_and_keeps_the_rest():
    assert text.html_safe("> **Not like** <b>x</b> & y > 95%\n<!-- c --> <http://x>") == \
        "> **Not like** &lt;b>x&lt;/b> & y > 95%\n&lt;!-- c --> &lt;http://x>"


# ---------------------------------------------------------------- 46.4 a loss that is not finite

@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e400"])
@pytest.mark.parametrize("side", ["bf16", "format"])
def test_a_run_whose_loss_is_not_finite_is_diverged_and_gets_no_speedup(tmp_path, capsys, bad, side):
    b16 = sweep("b16", losses=(bad if side == "bf16" else 2.0, 2.0))
    f8 = sweep("f8", config={"PRECISION": "fp8-rowwise"}, losses=(bad if side == "format" else 2.0, 2.0),
               step_ms=(150.0, 600.0))
    page, _, _ = page_of(capsys, tmp_path, write(tmp_path / "x.jsonl", b16 + f8))
    section = page.split("## What the number format buys")[1].split("\n## ")[0]
    [at_8k] = [line for line in section.splitlines() if "| 8K |" in line]
    [at_32k] = [line for line in section.splitlines() if "| 32K |" in line]
    who = "bf16" if side == "bf16" else "fp8-rowwise"
    assert f"{who} diverged" in at_8k and "2.00x" not in at_8k  # no speedup on it
    assert "2.00x" in at_32k and "diverged" not in at_32k
    # wherever else the point appears: the series table names it, it is no measured point
    assert "diverged" in page.split("## Series\n")[1].split("\n## ")[0]


def test_a_diverged_candidate_gets_no_speedup_call_against_another_gpu(tmp_path, capsys):
    logs = sweep("h") + sweep("b", "NVIDIA B200", B200_PEAK, losses=("NaN", 2.0), step_ms=(100.0, 400.0))
    a = analyse(series.load(json.loads(json.dumps(_read(write(tmp_path / "x.jsonl", logs))))))
    [c] = a.comparisons
    rows = {r.seq_len: r for r in c.rows}
    assert rows[32768].speedup is not None and (8192 not in rows or rows[8192].speedup is None)
    page, _, _ = page_of(capsys, tmp_path, tmp_path / "x.jsonl")
    assert "failed here (diverged)" in page


def _read(path):
    from upgrade_bench.report.read import inputs

    return list(inputs.read([path], inputs.Tally()))


def test_an_older_logs_nonfinite_loss_error_reads_as_diverged():
    recs = sweep("h") + [rec("error", "h", error="nonfinite_loss", message="loss is nan", seq_len=65536)]
    [s] = series.load(json.loads(json.dumps(recs))).series
    assert s.errors[65536]["error"] == series.DIVERGED


# ---------------------------------------------------------------- 46.5 the header's facts

def skipped_line(err: str, name: str) -> str:
    [line] = [line for line in err.splitlines() if name in line and "skipped" in line]
    return line


@pytest.mark.parametrize("fields, reason", [
    ({"config": {"PRECISION": 7}}, "header record: config.PRECISION is 7, not text"),
    ({"config": {"FP8_EXPERTS": "yes"}}, "header record: config.FP8_EXPERTS is text, not true or false"),
    ({"low_precision": {"converted_experts": "48"}},
     "header record: low_precision.converted_experts is text, not a whole number >= 0"),
    ({"precision": 8}, "header record: precision is 8, not text"),
    ({"precision": "nvfp4"}, "header record: precision nvfp4 on the H200 SXM, which has no fp4 tensor cores"),
    ({"config": {"PRECISION": "mxfp8"}, "hardware": {"gpu_name": "NVIDIA H200", "compute_capability": "9.0",
                                                     "arch": "sm_90"}},
     "precision mxfp8 on compute capability 9.0: MX block-scaled tensor cores need sm_100+ (Blackwell)"),
])
def test_a_header_fact_of_the_wrong_type_or_impossible_is_refused_naming_the_file(tmp_path, capsys, fields,
                                                                                  reason):
    head, *points = sweep("x")
    config = {**head["config"], **fields.pop("config", {})}
    head = {**head, **fields, "config": config, "hardware": {**head["hardware"], **fields.get("hardware", {})}}
    log = write(tmp_path / "facts.jsonl", sweep("ok") + [head] + points)
    page, _, err = page_of(capsys, tmp_path, log)
    assert reason in skipped_line(err, "facts.jsonl")
    assert "facts.jsonl" in page and text.html_safe(reason) in page


def test_the_precision_a_header_says_ran_is_the_series_precision():
    # a header whose precision says fp8 while its config has no PRECISION: not the bf16 series
    recs = sweep("b16", precision="bf16") + sweep("f8", precision="fp8-rowwise")
    by_precision = {tuple(s.settings("PRECISION")): s for s in series.load(json.loads(json.dumps(recs))).series}
    assert set(by_precision) == {("bf16",), ("fp8-rowwise",)}
    assert formats.low_precision_pairs(list(by_precision.values())) == [(by_precision[("bf16",)],
                                                                         by_precision[("fp8-rowwise",)])]


def test_decomposition_parts_over_the_whole_step_are_refused_with_the_reason(tmp_path, capsys):
    part = {"tflop": 1.0, "ms": 300.0, "tflops": 1.0, "time_share": 0.9}
    decomposition = rec("decomposition", "x", seq_len=8192, wall_step_ms=300.0, source="cuda kernels",
                        buckets={"attention": part, "gemm": part, "other": part, "linear_mixer": part})
    log = write(tmp_path / "parts.jsonl", sweep("x") + [decomposition])
    _, _, err = page_of(capsys, tmp_path, log)
    assert ("decomposition record: its buckets' time shares sum to 360% of the step, which no split of one "
            "step can") in skipped_line(err, "parts.jsonl")
    # parts without a time share: their ms over the wall step; a split that adds up is read
    bare = {"tflop": 1.0, "ms": 200.0, "tflops": 5.0}
    over = dict(decomposition, run_id="x", buckets={"attention": bare, "gemm": bare})
    fits = dict(decomposition, seq_len=32768, buckets={"attention": {**bare, "ms": 100.0}, "gemm": bare})
    _, _, err = page_of(capsys, tmp_path, write(tmp_path / "bare.jsonl", sweep("x") + [over, fits]))
    assert "1 skipped" in skipped_line(err, "bare.jsonl") and "sum to 133% of the step" in skipped_line(err, "bare.jsonl")


# ---------------------------------------------------------------- 45.8 the loss as a convergence test

def fresh(run_id, precision="bf16", seed=0, loss=3.0, data="/data/train.bin"):
    config = {"SEQ_LEN": [8192], "SEED": seed, **({"DATA": data} if data else {}),
              **({"PRECISION": precision} if precision != "bf16" else {})}
    return [header(run_id, "NVIDIA H200", config=config, precision=precision),
            summary(run_id, 8192, 400.0, H200_PEAK, step_ms=300.0 if precision == "bf16" else 250.0,
                    loss_mean=loss)]


def loss_cells(recs) -> list:
    table = format_table.format_markdown(series.load(json.loads(json.dumps(recs))).series)
    return [line.split(" | ")[-2:] for line in table.splitlines() if line.startswith("| H200")]


def test_a_format_departs_only_on_fresh_tokens_past_the_bf16_seed_spread():
    seeds = fresh("s0", seed=0, loss=3.00) + fresh("s1", seed=1, loss=3.04)  # bf16's spread: 0.04
    assert loss_cells(seeds + fresh("f", "fp8-rowwise", loss=3.10)) == [["0.04", "0.1 (departs) |"]]
    assert loss_cells(seeds + fresh("f", "fp8-rowwise", loss=3.03)) == [["0.04", "0.03 |"]]  # within it
    # one bf16 seed: no spread measured, nothing marked however far
    assert loss_cells(fresh("s0") + fresh("f", "fp8-rowwise", loss=9.0)) == [["one seed", "6 |"]]


def test_without_data_the_page_says_the_loss_is_no_convergence_test_and_marks_nothing():
    recs = (fresh("s0", data="", loss=3.0) + fresh("s1", seed=1, data="", loss=3.01)
            + fresh("f", "fp8-rowwise", data="", loss=5.0))
    assert loss_cells(recs) == [["0.01", "2 |"]]
    assert "not a convergence test" in format_table.format_markdown(series.load(json.loads(json.dumps(recs))).series)
    # runs on other tokens than bf16's are no pair at all
    assert loss_cells(fresh("s0") + fresh("f", "fp8-rowwise", data="/other.bin")) == []
