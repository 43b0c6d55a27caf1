"""main: the command line in-process: the README's command on the shipped results/ (run once per
module: xdist_group shipped_report), hostile arguments and inputs (one line, exit 2), the outputs,
and a report that fails half-way leaving the earlier one whole."""
import contextlib
import csv
import errno
import io
import json
import os
import struct

import pytest

from conftest import REPO, mount_tmpfs, unmount
from report.helpers import (
    H200_PEAK, rec, header, summary, two_gpu_log, write_jsonl, analysis_of, only, cli, skip_figures, bad)
from upgrade_bench import faults
from upgrade_bench.log import records
from upgrade_bench.report.page import verdicts as verdict_blocks
from upgrade_bench.report import main as plot_results


README_ARGS = ["results/", "--price", "H200=3.50", "--price", "B200=7.00", "--forecast", "B200", "--own", "H200=30000",
               "--own", "B200=45000"]


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def shipped_report(tmp_path_factory):
    """plot_results.py on the shipped results/, as the README runs it, once per module (its
    tests: xdist_group shipped_report)."""
    out = tmp_path_factory.mktemp("report")
    cwd = os.getcwd()
    os.chdir(REPO)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            code = plot_results.main(README_ARGS + ["--out", str(out)])
    finally:
        os.chdir(cwd)
    assert code == 0
    (out / "stdout.txt").write_text(printed.getvalue())
    return out


def fits_a_terminal(printed: str) -> list:
    """The printed lines, checked: plain text within 100 columns (but the last, report.md's path
    as given) and 30 lines."""
    lines = printed.splitlines()
    # a path longer than a line is printed whole on a line of its own
    assert len(lines) <= 30 and all(len(line) <= 100 or len(line.split()) == 1 for line in lines[:-1]), lines
    assert not any(line.startswith(("#", "- ", "|", "**")) for line in lines)  # no markdown
    return lines


@pytest.mark.xdist_group("shipped_report")
def test_the_readme_command_runs_on_the_shipped_data(shipped_report):
    text = (shipped_report / "report.md").read_text()
    lines = fits_a_terminal((shipped_report / "stdout.txt").read_text())
    # each workload by its kind, measured whole models first, cuts then, the guide's figures last
    kinds = [line.split(":")[0] for line in lines if line.startswith("[")]
    assert kinds == ["[1] Whole model", "[2] Whole model", "[3] Cut", "[4] Published"]
    cut = lines.index(next(line for line in lines if line.startswith("[3] Cut: llama-3.1-8b, 8 of 32 layers")))
    scaled = "  $/token scaled x3.38-3.53 to the whole model by FLOPs per token, at the cut's TFLOPS/GPU"
    assert scaled in lines[cut:cut + 3]
    # the cut's $/1M tokens are the whole model's (x3.38 the cut's $0.035), never the cut's own
    (row,) = [line for line in lines[cut:cut + 4] if line.startswith("  B200 SXM forecast  8K-32K ")]
    assert "$0.120 v $0." in row and row.endswith("84/180")
    # the guide's pair: dearer past the noise floor at 8K-64K, even beyond (0.5% to 1.6%: rounding, no call)
    assert "  B200 SXM published 8K-64K    1.18-1.84x dearer 9-70%    $0.355 v $0.599  $4.15-6.44/h   38/180" in lines
    assert any(line.startswith("  B200 SXM published 128K-256K 1.99-2.04x even ") for line in lines)
    bottom = " ".join(line.strip() for line in lines[lines.index(next(x for x in lines if "Bottom line" in x)):]
                      if not line.startswith("Training"))
    assert bottom.startswith("Bottom line [1]: B200 SXM (forecast) at $7.00/GPU-hour is ")
    assert "; it pays off below $3." in bottom
    assert "Training the whole model of [1] on 1T tokens (--tokens) at 8K, 2 GPU(s) (--gpus):" in lines
    # the owner: H200 $30,000 over 4 years, its measured 0.181 J/token at 8K x PUE 1.3 x $0.08/kWh
    h200 = 30_000 / (4 * 8766) * 1e6 / (1357.2781101171818 * 3600) + 0.18085103352864584 / 3.6 * 1.3 * 0.08
    assert f"  H200 SXM measured: ${h200:.2f} (" in lines[-3] and "(est. energy); owner " in lines[-2]
    assert lines[-1] == f"Every series, sentence, table and figure: {shipped_report / 'report.md'}"
    # the page: the same answer in sentences, every number with its length
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Is this node healthy?"  # first of all: a sick baseline skews every verdict
    node = text[text.index(sections[0]):text.index(sections[1])]
    assert node.splitlines()[2] == "**H200 SXM in results (baseline) is healthy: 4 of 4 components had a reference**."
    assert "| MAMF bf16 | 802.2 TFLOPS | 794.5 TFLOPS | published" in node
    assert lines[0] == "H200 SXM in results (baseline) is healthy: 4 of 4 components had a reference."
    sections = sections[1:]
    assert sections[:3] == ["## The answer", "## Cost to train the whole model on 1T tokens",
                            "## Forecasts (not measured)"]
    assert text[:text.index(sections[0])].endswith("Prices per GPU-hour: H200 SXM $3.50, B200 SXM $7.00.\n\n")
    assert "Owner's cost per token: H200 SXM $30,000/4y, B200 SXM $45,000/4y; $0.08/kWh, PUE 1.3" in text
    answer = text[text.index(sections[0]):text.index(sections[1])]
    assert ("- [4] B200 SXM (guide's published) at 8K to 64K: 1.18x to 1.84x as fast (point estimates 1.18x, 1.62x, "
            "1.84x); dearer per token by 8.5% to 70.0% at $3.50 vs $7.00 per GPU-hour ($/1M tokens H200 SXM vs "
            "B200 SXM: $0.355 vs $0.599 at 8K, $0.212 vs $0.263 at 32K, $0.240 vs $0.261 at 64K); B200 SXM pays "
            "off below $4.15 at 8K, $5.66 at 32K, $6.44 at 64K per GPU-hour") in answer
    assert "- [4] B200 SXM (guide's published) at 128K to 256K: 1.99x to 2.04x as fast" in answer
    assert "even per token at $3.50 vs $7.00" in answer and "cheaper per token" not in answer
    assert "|" not in answer  # words, not a table
    sections = sections[3:]
    assert sections[0] == "## 1. B200 SXM vs H200 SXM: guide's published vs guide's published"
    assert "| 8K | 1.18x (1.18x to 1.19x) | $0.355 | $0.599 | 68.9% dearer" in text
    assert ("At these prices B200 SXM is dearer per token at 8K, 32K, 64K; even within the noise at 128K, "
            "192K, 256K; 1.18x to 2.03x the baseline's TFLOPS per GPU.") in text
    assert sections[1] == "## Series not compared"
    # the README shows what the command prints: it must stay what it prints
    readme = (REPO / "README.md").read_text()
    assert "\n".join(lines[:-1]) in readme
    # the H200 capability log predates the backend table's spellings: read under today's names
    assert "| attention:sdpa-cudnn | ok |" in text and "sdpa_cudnn" not in text
    for name in ("comparison-1.png", "upgrade.png", "attention.png", "decomposition.png"):
        assert (shipped_report / name).stat().st_size > 10_000 and f"![{name}]({name})" in text
    assert png_size(shipped_report / "comparison-1.png") == (1590, 840)  # 3 x 2 panels of 5.3 x 3.9 in


@pytest.mark.xdist_group("shipped_report")
def test_the_flat_table_has_one_row_per_point_and_no_double_count(shipped_report):
    with open(shipped_report / "points.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(shipped_report / "points.jsonl") as f:
        assert [json.loads(line)["run_id"] or "" for line in f] == [r["run_id"] for r in rows]
    sweep = [r for r in rows if r["run_id"] == "20261130T081436-e8dc5d"]
    assert [r["seq_len"] for r in sweep] == ["8192", "32768", "65536", "131072"]  # in two logs, once here
    (oom,) = [r for r in rows if r["status"] == "oom"]
    assert (oom["gpu"], oom["seq_len"], oom["world_size"], oom["config.WARMUP_STEPS"]) == (
        "H200 SXM", "286720", "2", "0")
    guide = [r for r in rows if r["gpu"] == "B200 SXM" and r["source"] != "forecast"]
    assert {r["provenance"] for r in guide} == {"guide's published"} and len(guide) == 6
    tokens_per_s = 8192 / (2524.823529 * 1e-3)  # the guide's 167 TFLOPS at 8K
    assert float(guide[0]["usd_per_mtok"]) == pytest.approx(7.0 / (tokens_per_s * 3600) * 1e6, rel=1e-6)
    assert rows[0]["source"].startswith("results/") and "config.MODEL" in rows[0] and "step_ms" in rows[0]


@pytest.mark.parametrize("price, why", [
    ("H200=inf", "a price from 0.001 to 10000 dollars"), ("H200=1e400", "a price from 0.001 to 10000 dollars"),
    ("H200=nan", "a price from 0.001"), ("H200=0", "a price from 0.001"), ("H200=-3", "a price from 0.001"),
    ("H200=free", "a price from 0.001"), ("=3", "GPU=USD_PER_GPU_HOUR"),
    ("B200=1e308", "to 10000 dollars"), ("H200=1e-320", "a price from 0.001"), ("H200=0.0009", "from 0.001")])
def test_a_price_must_be_finite_and_positive(tmp_path, capsys, price, why):
    assert why in bad(capsys, "--price", price, "missing.jsonl", "--out", tmp_path)  # before reading


def test_a_gpu_priced_twice_is_an_error(tmp_path, capsys):
    err = bad(capsys, "--price", "H200=3.5", "--price", "nvidia h200=4", "x.jsonl", "--out", tmp_path)
    assert "--price 'H200=3.5' and --price 'nvidia h200=4' both price H200 SXM; give one" in err
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log())
    err = bad(capsys, log, "--price", "H200=3", "--price", "H200 SXM=3", "--out", tmp_path)
    assert "both price H200 SXM" in err


def test_bad_output_targets_get_one_line(tmp_path, capsys):
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log())
    assert f"error: --out {log!r}: {log} is a file, not a folder" in bad(capsys, log, "--out", log)
    assert "is a file, not a folder" in bad(capsys, log, "--out", os.path.join(log, "sub"))
    assert "--export" in bad(capsys, log, "--export", log, "--out", tmp_path / "o")
    assert "a folder; give a file name" in bad(capsys, "--write-guide-reference", tmp_path)
    assert "is a file, not a folder" in bad(capsys, "--write-guide-reference", os.path.join(log, "g.jsonl"))
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    if records.folder_problem(read_only) is None:  # root writes anyway: a folder the kernel refuses
        read_only = "/sys"
    assert "no file can be created in" in bad(capsys, log, "--out", read_only)
    assert "no file can be created in" in bad(capsys, "--write-guide-reference", os.path.join(read_only, "g.jsonl"))


def test_inputs_that_are_no_log_file_are_named_for_what_they_are(tmp_path, capsys):
    err = bad(capsys, "/dev/zero", "--out", tmp_path)
    assert "'/dev/zero': a character device, not a file of JSON lines" in err
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert "a named pipe (FIFO), not a file of JSON lines; to read a pipe, give it on stdin as '-'" in \
        bad(capsys, fifo, "--out", tmp_path)
    (tmp_path / "empty").mkdir()
    assert "a folder with no *.jsonl file (nor in its reference/)" in bad(capsys, tmp_path / "empty")
    assert "no such file or folder, and no file matches it as a glob" in bad(capsys, tmp_path / "nothing-*.jsonl")
    newer = write_jsonl(tmp_path / "newer.jsonl", [dict(two_gpu_log()[0], schema="999")])
    assert "record schema '999' is newer than this code reads" in bad(capsys, newer, "--out", tmp_path)


def test_wrongly_typed_fields_skip_the_record_with_its_reason(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)
    log = two_gpu_log()
    broken = [dict(log[1], seq_len=5120, tflops_per_gpu="200"), dict(log[0], run_id="x", hardware="B200"),
              dict(log[0], run_id="y", config=[]), dict(log[1], run_id=["x"]),
              dict(log[1], seq_len=6144, attn_flop_share="abc"), dict(log[1], seq_len=7168, step_ms=0),
              dict(log[1], kind=["summary"])]
    path = write_jsonl(tmp_path / "bad.jsonl", log + broken, extra_lines=[
        "\ufeff" + json.dumps(header("bom", "NVIDIA H200")), json.dumps(summary("bom", 512, 1.0, H200_PEAK)),
        '{"kind": "summary", "step_ms": NaN, "tokens_per_s_per_gpu": Infinity, "tflops_per_gpu": NaN, '
        '"seq_len": 1024, "run_id": "run-b200", "schema": 1}'])
    code, out, err = cli(capsys, path, "--price", "H200=2", "--price", "B200=4", "--out", tmp_path / "o")
    assert code == 0, err
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warning.startswith(f"warning: {path}: 7 skipped (")
    for reason in ("summary record: tflops_per_gpu is text, not a number >= 0",
                   "header record: hardware is text, not an object",
                   "header record: config is a list, not an object",
                   "summary record: run_id is a list, not text",
                   "summary record: attn_flop_share is text, not a fraction from 0 to 1",
                   "summary record: step_ms is 0, not a positive number", "kind is a list, not a name"):
        assert f"1 x {reason}" in warning
    text = (tmp_path / "o" / "report.md").read_text()
    assert "H200 SXM fa3: 1 GPU" not in text and "nan" not in text.lower() and "inf" not in text.replace("info", "")
    assert "| 512 |" in text  # the BOM-prefixed header still names its run's GPU


def test_cli_report_prices_terminal_and_garbage(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log(),
                      extra_lines=["not json at all", "[1, 2]", '{"no_kind": 1}', '{"kind": "summ'])
    out = tmp_path / "out"
    # B200 listed first on purpose: the baseline is still the lower-peak H200
    code, stdout, err = cli(capsys, log, "--out", out, "--price", "B200=4.0", "--price", "H200=2.0")
    assert code == 0, err
    assert f"warning: {log}: 4 skipped (2 x not JSON; 1 x a JSON list, not a record; 1 x no kind)" in err
    text = (out / "report.md").read_text()
    block = verdict_blocks.verdict_block(only(analysis_of(two_gpu_log(), prices={"H200": 2, "B200": 4})), {})
    # the terminal prints the node check (its MAMF against the published one), then the answer in
    # plain text; the page has it in sentences, then the block
    lines = fits_a_terminal(stdout)
    head = lines[:next(i for i, line in enumerate(lines) if line.startswith("Prices"))]
    node = " ".join(line.strip() for line in head)  # the node's line, wrapped whatever the path's length
    assert node.startswith(f"H200 SXM in {tmp_path} (baseline) is healthy: 1 of 3 components had a reference.")
    lines = lines[lines.index(next(line for line in lines if line.startswith("Prices"))):]
    assert lines[:5] == [
        "Prices per GPU-hour: B200 SXM $4.00, H200 SXM $2.00. Cheaper/dearer: beyond range + 4% noise.",
        "  vs H200 SXM        lengths   speedup    per token       $/1M tok at 1st  pays off below GiB/HBM",
        "[1] Whole model: llama-3.1-8b: 8 GPUs",
        "  B200 SXM measured  1K-2K     1.75-2.62x even            $0.056 v $0.053  $4.00-4.40/h   20/178",
        "  B200 SXM measured  3K        2.20x      undecided       $0.069 v $0.065  $4.40/h        30/178"]
    assert ("- [1] B200 SXM (measured) at 1K to 2K: 1.75x to 2.62x as fast (point estimates 2.00x, 2.20x); even per token "
            "at $2.00 vs $4.00 per GPU-hour ($/1M tokens H200 SXM vs B200 SXM: $0.056 vs $0.053 at 1K, $0.062 vs "
            "$0.059 at 2K); B200 SXM pays off below $4.00 at 1K, $4.40 at 2K per GPU-hour; fits: 20.0 GiB at most, "
            "in its 178.4 GiB") in text
    assert ("- [1] B200 SXM (measured): One side only: not measured on H200 SXM (measured) at 512; H200 SXM (measured) "
            "cannot run this (OOM) at 4K") in text
    assert text[text.index("## 1."):].startswith(block.replace(str(tmp_path / "two.jsonl"), log)[:200])
    assert [line for line in text.splitlines() if line.startswith("## ")][:3] == \
        ["## Is this node healthy?", "## The answer", "## Cost to train the whole model on 1T tokens"]
    assert "| 1K | 10.0% | 400.0 | 800.0 | 40.4% | 35.6% | 2.00x | 2.28x | 0.88x | 2.00x | ok | 10.0 | 10.0 |" \
        in text
    assert "Skipped 4 malformed line(s) or record(s)" in text and "WARNING" not in text


def test_cli_strict_stack_refuses_measured_stacks_that_differ(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)  # a stack difference on a figure: test_dollar_signs_in_figures_are_text_never_tex
    log = write_jsonl(tmp_path / "mixed.jsonl", two_gpu_log(b200_software={"torch": "2.12.0"}))
    code, out, _ = cli(capsys, log, "--out", tmp_path / "out")
    assert code == 0 and "torch 2.13.0 vs 2.12.0" in (tmp_path / "out" / "report.md").read_text()
    err = bad(capsys, log, "--out", tmp_path / "strict", "--strict-stack")
    assert "--strict-stack: software stacks differ (B200 SXM fa4 vs H200 SXM fa3: torch 2.13.0 vs 2.12.0)" in err
    assert not (tmp_path / "strict" / "report.md").exists()


def test_cli_stdin_folder_and_baseline_flag(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)  # what is read and said; the figures of two_gpu_log are drawn elsewhere
    recs = two_gpu_log()
    folder = tmp_path / "logs"
    folder.mkdir()
    is_h200 = lambda r: r["run_id"].endswith(("h200", "-h"))  # noqa: E731
    write_jsonl(folder / "h200.jsonl", [r for r in recs if is_h200(r)])
    b200 = "".join(json.dumps(r) + "\n" for r in recs if not is_h200(r))
    code, out, err = cli(capsys, folder, "-", "--baseline", "b200", "--out", tmp_path / "out", "--export",
                         tmp_path / "table", stdin=b200, monkeypatch=monkeypatch)
    assert code == 0, err
    out = (tmp_path / "out" / "report.md").read_text()
    assert out[out.index("## 1."):].startswith("## 1. H200 SXM vs B200 SXM: measured vs measured")
    assert "| 1K | 0.50x (0.46x to 0.52x) |" in out and "&lt;stdin> (run run-b200)" in out  # no tag (text.html_safe)
    assert (tmp_path / "table" / "points.csv").exists()


def test_cli_on_real_logs_of_the_suite(tmp_path, capsys, monkeypatch):
    """A shipped 8-layer H200 sweep (two runs of one config) against itself renamed B200, 2x faster."""
    skip_figures(monkeypatch)
    real = []
    for name in ("h200x1_8L_rightsized_fa4_liger_emptycache.jsonl",
                 "h200x1_8L_rightsized_fa4_liger_emptycache_perpoint.jsonl"):
        path = REPO / "results" / "experiments" / name
        real += records.read_lines(path.read_text().splitlines(), name)[0]
    fake = json.loads(json.dumps(real))
    for r in fake:
        r["run_id"] += "-b200"
        if r["kind"] == "header":
            r["hardware"]["gpu_name"] = "NVIDIA B200"
        if r["kind"] == "summary":
            r["tflops_per_gpu"] *= 2
            r["tokens_per_s_per_gpu"] *= 2
            for k in ("step_ms", "step_ms_min", "step_ms_max"):
                r[k] /= 2
    code, out, err = cli(capsys, write_jsonl(tmp_path / "two.jsonl", real + fake), "--out", tmp_path / "out",
                         "--price", "H200=1", "--price", "B200=2")
    assert code == 0, err
    out = (tmp_path / "out" / "report.md").read_text()
    assert out[out.index("## 1."):].startswith("## 1. B200 SXM vs H200 SXM: measured vs measured")
    # 2x faster at 2x the price: the same $/token, within the steps' and two runs' spread
    assert out.count("| same $/token within the spread and the 4% noise floor (") == 2 and "| 8K | 2.00x (" in out


def test_a_page_without_summaries_or_with_skipped_lines_says_so_first(tmp_path, capsys, monkeypatch):
    log = write_jsonl(tmp_path / "headers.jsonl", [header("h", "NVIDIA H200")])
    code, out, _ = cli(capsys, log, "--out", tmp_path / "o")
    text = (tmp_path / "o" / "report.md").read_text()
    assert code == 0 and "no training summaries" in out and "no training summaries" in text
    assert "## Series" not in text and "listed below" not in text
    skip_figures(monkeypatch)
    log = write_jsonl(tmp_path / "two.jsonl", two_gpu_log(), extra_lines=['{"kind": "error", "seq_l'])
    code, out, _ = cli(capsys, log, "--out", tmp_path / "p")
    lines = (tmp_path / "p" / "report.md").read_text().splitlines()
    assert lines[2] == ("**Skipped 1 malformed line(s) or record(s)** while reading (see Inputs): what they "
                        "held is missing from the verdicts below.")


def test_an_ignore_config_key_no_run_records_is_exit_2_naming_the_keys(tmp_path, capsys, monkeypatch):
    skip_figures(monkeypatch)
    log = write_jsonl(tmp_path / "a.jsonl", two_gpu_log())
    code, out, err = cli(capsys, log, "--ignore-config", "worldsize", "--out", tmp_path / "rep")
    assert code == 2 and out == "" and not (tmp_path / "rep").exists()
    assert err.startswith("error: --ignore-config 'worldsize': no run of the inputs records that key; "
                          "keys they record: ") and "ZERO_STAGE" in err and len(err.splitlines()) == 1
    assert cli(capsys, log, "--ignore-config", "ZERO_STAGE", "--out", tmp_path / "rep2")[0] == 0


@pytest.mark.parametrize("bad", [{"wall_step_ms": "200"}, {"attn_flop_share": "x"},
                                 {"buckets": {"other": {"ms": 1.0, "moe_routing": {"ms": "10"}}}}])
def test_a_decomposition_with_mistyped_fields_is_skipped_not_a_traceback(tmp_path, capsys, bad):
    h = header("r1", "NVIDIA H200", backend="fa4", script="bench_decompose.py")
    d = rec("decomposition", "r1", seq_len=8192, wall_step_ms=200.0, attn_flop_share=0.2,
            buckets={"attention": {"ms": 30.0, "time_share": 0.15}}, script="bench_decompose.py")
    code, _, err = cli(capsys, write_jsonl(tmp_path / "a.jsonl", [h, {**d, **bad}]), "--out", tmp_path / "rep")
    assert code == 0 and "skipped" in err.lower()


def _folder_bytes(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_report_that_fails_half_way_leaves_the_earlier_one_whole(tmp_path, monkeypatch, capsys):
    # the disk fills while the second figure is written: points.csv and the first figure are
    # already written by then, under temporary names; the earlier report stays as it was
    log = write_jsonl(tmp_path / "a.jsonl", two_gpu_log())
    out = tmp_path / "report"
    assert plot_results.main([str(log), "--price", "H200=3.5", "--price", "B200=7", "--out", str(out)]) == 0
    before = _folder_bytes(out)
    assert {"report.md", "points.csv"} <= set(before)
    from upgrade_bench.report.figures import draw as figures

    real_save, saved = figures.save, []

    def save(fig, path, opener=open):
        if saved:
            figures.plt.close(fig)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        saved.append(path)
        return real_save(fig, path, opener)

    monkeypatch.setattr(figures, "save", save)
    code = faults.run_main(lambda: plot_results.main([str(log), "--price", "H200=9", "--price", "B200=7",
                                                      "--out", str(out)]))
    err = capsys.readouterr().err
    assert code == 2 and "No space left on device; the files already there are untouched" in err
    assert _folder_bytes(out) == before  # no half file, no temporary name left behind


def test_a_full_tmpfs_leaves_the_earlier_report_whole(tmp_path, capsys):
    disk = tmp_path / "disk"
    disk.mkdir()
    if not mount_tmpfs(disk, "size=400k"):
        pytest.skip("no tmpfs can be mounted here")
    try:
        small = write_jsonl(tmp_path / "small.jsonl", two_gpu_log()[:4])
        out = disk / "report"
        assert plot_results.main([str(small), "--out", str(out)]) == 0
        before = _folder_bytes(out)
        big = write_jsonl(tmp_path / "big.jsonl", two_gpu_log())
        with open(disk / "filler", "wb") as f:  # what is left: less than the bigger report needs
            f.write(b"\0" * (400 * 1024 - sum(len(b) for b in before.values()) - 40 * 1024))
        code = faults.run_main(lambda: plot_results.main([str(big), "--out", str(out)]))
        assert code == 2 and "No space left on device" in capsys.readouterr().err
        assert _folder_bytes(out) == before
    finally:
        unmount(disk)


@pytest.mark.parametrize("argv, needle", [(["x.jsonl", "--out", ""], "--out ''"),
                                          (["x.jsonl", "--baseline", " "], "--baseline ''"),
                                          (["x.jsonl", "--export", ""], "--export ''")])
def test_an_empty_flag_value_is_refused(argv, needle, capsys):
    assert faults.run_main(lambda: plot_results.main(argv)) == 2
    err = capsys.readouterr().err
    assert needle in err and len(err.strip().splitlines()) == 1


def test_an_ascii_terminal_and_a_non_ascii_gpu_name_print_without_a_traceback(tmp_path):
    log = tmp_path / "a.jsonl"
    log.write_text(json.dumps(header("r", "Acme \u2603 GPU")) + "\n"  # no table row: the raw name is shown
                   + json.dumps(summary("r", 1024, 400.0, H200_PEAK, 10000.0, 102.4, (100.0, 105.0))) + "\n",
                   encoding="utf-8")
    import subprocess
    import sys as _sys

    proc = subprocess.run([_sys.executable, str(REPO / "plot_results.py"), str(log), "--out", str(tmp_path / "r")],
                          env={**os.environ, "PYTHONIOENCODING": "ascii"}, capture_output=True, text=True,
                          encoding="ascii", errors="strict", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "\\u2603" in proc.stdout and "Traceback" not in proc.stderr
