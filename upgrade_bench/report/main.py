"""plot_results.py: from the suite's JSON-lines logs to the decision: $/token verdicts, figures.

Reads any number of logs (files, folders, globs, `-` for stdin; a folder also reads its
reference/ subfolder, where results/reference/guide.jsonl ships the guide's published
H200/B200 figures), groups runs into series by GPU + attention backend + configuration and
compares them, one comparison per pair of series of the same configuration:

  upgrade       a series of the baseline GPU (default: the lower bf16 peak) and one of
                another GPU; measured with measured, or measured with published where one
                side is only published ("measured vs guide's published")
  health check  a measured series and the published figures of the same GPU and config

The terminal and report.md open with the node check: each measured node's figures (MAMF, HBM,
isolated attention, the step, the collectives) against a healthy node of its GPU kind (--reference
DIR, else the published MAMF and the suite's shipped node runs), healthy / below / well below at
NVIDIA's 95% acceptance bar, and the likely cause of a shortfall. Then the terminal prints the
answer in 100 columns: per workload (your measured whole model, cuts priced as their whole model
by FLOPs, published figures) a line per candidate and run of lengths: speedup range, per-token
call (beyond the range and a 4% noise floor; none where it does not fit), $/1M tokens, the price
per GPU-hour it pays off below, memory; then the bottom line, the cost to train --tokens on
--gpus, and with --own the owner's $/token (amortised GPUs plus board energy, measured or from the
rated power, x --pue x --kwh). report.md says the same in sentences, then each comparison gets a verdict block: the two series
in words, the prices, and per sequence length the speedup with its range (from the
step-time spread of both series), $/1M tokens of each, cheaper / same / dearer with its
margin (or "cannot decide"), and the break-even price ratio. Into --out go report.md, one
figure per comparison (comparison-N.png), upgrade.png (every series), attention.png and
decomposition.png where those records exist, and the flat table points.csv/points.jsonl
(also alone with --export).

    python plot_results.py results/ --price H200=3.50 --price B200=7.00 --out results/report
    python plot_results.py node/ --price H200=3.50 --price B200=7.00 --forecast B200 --own H200=30000 --own B200=45000
    python plot_results.py my_h200_logs/ results/reference/ --ignore-config world_size
    python plot_results.py --write-guide-reference results/reference/guide.jsonl

The guide's published figures: Stas Bekman, Machine Learning Engineering Open Book,
insights/when-to-upgrade-gpus. Every published record says "reference": "guide" and is
labelled "guide's published" wherever it appears.

Exit 2, with one line and before anything is written, on a bad flag, a bad (or not UTF-8)
--out/--export/--write-guide-reference target, an input that is no readable file of JSON
lines, two files claiming one published run with other figures, a log of a newer schema, a
--price or --baseline for a GPU the logs lack, or (--strict-stack) measured series whose
software stacks differ. Malformed lines and records are skipped and counted.
"""
import argparse
import csv
import io
import json
import math
import os
import sys

from .. import settings
from ..hardware import gpus
from ..log import records, staged
from ..faults import BadInput, Parser, run_main
from .analysis import build as build_analysis
from .forecast import backtest, calibration
from .decide import cost, dollars
from .page import dollars as dollar_words, export, markdown, terminal
from .read import inputs, series
from .decide.answer import workloads
from .published import guide as published, pairs as published_pairs


def parse_args(argv):
    p = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="JSONL files, folders (their *.jsonl and reference/*.jsonl), "
                                             "globs, or - for stdin")
    p.add_argument("--out", default="out/report",
                   help="folder for report.md, the PNGs and the flat table [out/report]")
    p.add_argument("--export", metavar="DIR", help="also write the flat table (points.csv, points.jsonl) to DIR")
    p.add_argument("--baseline", help="GPU the others are compared with (default: lower bf16 peak)")
    p.add_argument("--price", action="append", default=[], metavar="GPU=USD_PER_GPU_HOUR",
                   help="price of one GPU-hour, once per GPU; gives $/1M tokens and verdicts")
    p.add_argument("--ignore-config", action="append", default=[], metavar="KEY",
                   help="config field to leave out when pairing series, repeatable (e.g. world_size "
                        "to compare a 2-GPU run with an 8-GPU one); the verdict names it with both values")
    p.add_argument("--strict-stack", action="store_true",
                   help="software stacks that differ between measured series compared (or within one "
                        "series) are an error (exit 2)")
    p.add_argument("--forecast", action="append", default=[], metavar="GPU",
                   help="forecast this GPU of the GPU table (e.g. B200) for every measured series of "
                        "another GPU, from its own steps; repeatable; labelled a forecast everywhere")
    p.add_argument("--tokens", default=dollar_words.compact(cost.DEFAULT_TRAIN_TOKENS), metavar="N",
                   help="tokens to train the whole model on, for its cost and time on each GPU "
                        "(e.g. 1T, 500B, 2e12) [1T]")
    p.add_argument("--gpus", type=str, metavar="G",
                   help="GPUs the training cost is for [the GPUs each workload's runs trained on]")
    p.add_argument("--own", action="append", default=[], metavar="GPU=USD_PER_GPU[:YEARS]",
                   help=f"price of buying one GPU and the years it is spread over [{cost.DEFAULT_YEARS:g}]: the "
                        "owner's $/token "
                        "(hardware plus board energy, measured or from the rated power, x PUE x --kwh) beside the renter's")
    p.add_argument("--kwh", metavar="USD",
                   help=f"price of a kWh for the owner's cost [{cost.DEFAULT_USD_PER_KWH:g}: US industrial "
                        "average, EIA]")
    p.add_argument("--pue", metavar="X",
                   help=f"the facility's power usage effectiveness [{cost.DEFAULT_PUE:g}: the upper end AI data "
                        "centres report, Uptime Institute]")
    p.add_argument("--backtest", action="store_true",
                   help="forecast each published pair's candidate from its baseline alone, calibrated on "
                        "the other sources' pairs (leave one source out), set it against the published "
                        "figures, print the table and write backtest.csv to --out")
    p.add_argument("--reference", action="append", default=[], metavar="DIR",
                   help="a healthy node's logs (a folder, file or glob) of the same GPU kind: the node check "
                        "sets your nodes' figures against it first; repeatable")
    p.add_argument("--write-guide-reference", metavar="FILE",
                   help="write the guide's published H200/B200 figures as JSONL to FILE "
                        "(then exit, unless inputs are given too)")
    args = p.parse_args(argv)
    for flag, value in (("--out", args.out), ("--export", args.export), ("--baseline", args.baseline),
                        ("--write-guide-reference", args.write_guide_reference)):
        if value is not None and not value.strip():
            p.error(f"{flag} '': expected a {'GPU name' if flag == '--baseline' else 'path'}")
        if value is not None and flag != "--baseline":
            settings.check_utf8(flag, value)  # made valid, the page would be written under another name
    if not args.inputs and not args.write_guide_reference and not args.backtest:
        p.error("no input: give JSONL files, folders, globs or -")
    return args


# A GPU-hour costs more than a tenth of a cent and less than ten thousand dollars: outside
# that a price is a typo (1e308 printed a 309-digit price, 1e-320 "$0.00 per GPU-hour").
MIN_USD_PER_GPU_HOUR, MAX_USD_PER_GPU_HOUR = 0.001, 10_000.0


def parse_prices(specs) -> dict:
    """--price GPU=USD_PER_GPU_HOUR strings -> {name as given: USD}; BadInput names a bad one."""
    prices, seen = {}, {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            usd = float(value)
        except ValueError:
            usd = math.nan
        if not sep or not name.strip() or not (MIN_USD_PER_GPU_HOUR <= usd <= MAX_USD_PER_GPU_HOUR):
            raise BadInput(f"--price {spec!r}: expected GPU=USD_PER_GPU_HOUR with a price from "
                           f"{MIN_USD_PER_GPU_HOUR} to {MAX_USD_PER_GPU_HOUR:g} dollars, e.g. H200=3.50")
        gpu = series.gpu_identity({"hardware": {"gpu_name": name.strip()}})[0]  # 'h200' -> 'H200 SXM'
        if gpu.lower() in seen:
            raise BadInput(f"--price {seen[gpu.lower()]!r} and --price {spec!r} both price {gpu}; give one")
        seen[gpu.lower()] = spec
        prices[name.strip()] = usd
    return prices


TOKEN_SUFFIXES = {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
MAX_TRAIN_TOKENS = 1e16   # beyond any training run: a typo


def _number(flag: str, text: str, low: float, high: float, what: str, given: str | None = None) -> float:
    """A flag's number within [low, high], else BadInput naming the flag, the value as `given`
    (the whole of it, where the number is a part) and the range."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not low <= value <= high:
        raise BadInput(f"{flag} {given or repr(text)}: expected {what} from {low:g} to {high:g}")
    return value


def parse_tokens(text: str) -> float:
    """--tokens '1T', '500B', '2e12' -> tokens; BadInput for anything else."""
    number, scale = text.strip(), 1.0
    if number[-1:].upper() in TOKEN_SUFFIXES:
        number, scale = number[:-1], TOKEN_SUFFIXES[number[-1].upper()]
    try:
        tokens = float(number) * scale
    except ValueError:
        tokens = math.nan
    if not 1 <= tokens <= MAX_TRAIN_TOKENS:
        raise BadInput(f"--tokens {text!r}: expected a token count from 1 to {MAX_TRAIN_TOKENS:.0e}, "
                       "e.g. 1T, 500B or 2e12")
    return tokens


def parse_owned(specs: list) -> dict:
    """--own GPU=USD_PER_GPU[:YEARS] -> {GPU table name: (USD, years)}; BadInput names a bad one."""
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        usd_text, _, years_text = value.partition(":")
        gpu = forecast_gpu(name) if name.strip() else None
        if not sep or gpu is None:
            raise BadInput(f"--own {spec!r}: expected GPU=USD_PER_GPU[:YEARS] with a GPU of the GPU table "
                           f"({', '.join(gpus.names())}), e.g. H200=30000:4")
        if gpu in out:
            raise BadInput(f"--own {spec!r}: {gpu} is owned twice; give one")
        out[gpu] = (_number("--own", usd_text, 100, 10_000_000, "a price per GPU in dollars", repr(spec)),
                    _number("--own", years_text, 0.5, 20, "years", repr(spec)) if years_text else cost.DEFAULT_YEARS)
    return out


def assumptions(args) -> dollars.Assumptions:
    """The cost flags, checked: BadInput names a bad one."""
    g = None if args.gpus is None else int(_number("--gpus", args.gpus, 1, 100_000, "a GPU count"))
    if args.gpus is not None and g != float(args.gpus):
        raise BadInput(f"--gpus {args.gpus!r}: expected a whole GPU count from 1 to 100000")
    usd_per_kwh = _number("--kwh", str(cost.DEFAULT_USD_PER_KWH) if args.kwh is None else args.kwh, 0.001, 10,
                          "dollars per kWh")
    pue = _number("--pue", str(cost.DEFAULT_PUE) if args.pue is None else args.pue, 1, 3, "a power usage effectiveness")
    tokens, owned = parse_tokens(args.tokens), parse_owned(args.own)  # every flag checked before the note
    energy = [flag for flag, given in (("--kwh", args.kwh), ("--pue", args.pue)) if given is not None]
    if energy and not owned:
        sys.stderr.write(f"note: {' and '.join(energy)} change nothing without --own (they price the owner's "
                         "energy)\n")
    return dollars.Assumptions(tokens, g, owned, usd_per_kwh, pue)


def forecast_gpu(name: str) -> str | None:
    """The GPU table's name a --forecast value spells: the name itself (any case), or the start
    of names up to a space ('B200' of 'B200 SXM') where the table reads it as one of them
    ('H200' as 'H200 SXM', not 'H200 NVL'); None for anything else ('B2000', 'B200-NVL')."""
    wanted = " ".join(name.split()).lower()
    names = gpus.names()
    exact = [n for n in names if n.lower() == wanted]
    if exact:
        return exact[0]
    prefixed = [n for n in names if n.lower().startswith(wanted + " ")]
    if len(prefixed) == 1:
        return prefixed[0]
    read = gpus.table_name(name)
    return read if read in prefixed else None


def forecast_gpus(names: list) -> list:
    """The GPU table's names of --forecast values; BadInput for one the table does not spell."""
    out = []
    for name in names:
        table_name = forecast_gpu(name)
        if table_name is None:
            raise BadInput(f"--forecast {name!r}: not a GPU name of the GPU table (a name or its first "
                           f"word); known: {', '.join(gpus.names())}")
        if table_name not in out:
            out.append(table_name)
    return out


def backtest_csv(rows: list) -> str:
    text = io.StringIO()
    writer = csv.DictWriter(text, backtest.BACKTEST_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def backtest_section(rows: list | None) -> str:
    """The backtest's full tables for report.md ('' without --backtest)."""
    if rows is None:
        return ""
    notes = backtest.unbacktested(published_pairs.all_records())
    return ("\n\n## Backtest: forecasts of the published pairs from their baseline alone\n\n"
            + backtest.backtest_markdown(rows, notes) + "\n")


def print_backtest(rows: list) -> None:
    notes = backtest.unbacktested(published_pairs.all_records())
    sys.stdout.write("\nBacktest of the forecast on published pairs (full table: report.md, backtest.md)\n"
                     + backtest.backtest_summary(rows, notes))


def write_guide_reference(path: str) -> None:
    if os.path.isdir(path):
        raise BadInput(f"--write-guide-reference {path!r}: a folder; give a file name")
    problem = records.folder_problem(os.path.dirname(os.path.abspath(path)))
    try:
        if problem:
            raise OSError(problem)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        staged.write_text(path, "".join(json.dumps(r) + "\n" for r in published.guide_reference_records()))
    except OSError as err:
        raise BadInput(f"--write-guide-reference {path!r}: {err.strerror or err}") from None
    sys.stderr.write(f"wrote the guide's published figures to {path}\n")


def write_outputs(analysis, args, paths, tally, backtest_rows=None, money: str = "") -> list:
    """report.md, the figures, the flat table and (with `backtest_rows`) backtest.csv, or
    backtest.csv alone without an analysis; OSError ends the run with one line."""
    written = []
    for flag, folder in (("--out", args.out), ("--export", args.export)):
        if not folder or (analysis is None and flag == "--export"):
            continue
        stage = staged.Staged()  # the folder's files replace the earlier ones together, or none does
        try:
            os.makedirs(folder, exist_ok=True)
            names = export.write(analysis, folder, stage.open) if analysis is not None else []
            if flag == "--out" and analysis is not None:
                from .figures import draw as figures
                pngs = figures.write_all(analysis, folder, stage.open)
                with stage.open(os.path.join(folder, "report.md"), "w", encoding="utf-8") as f:
                    f.write(markdown.render(analysis, pngs, paths, tally, money) + backtest_section(backtest_rows))
                names = ["report.md"] + pngs + names
            if flag == "--out" and backtest_rows is not None:
                with stage.open(os.path.join(folder, "backtest.csv"), "w", encoding="utf-8", newline="") as f:
                    f.write(backtest_csv(backtest_rows))
                names.append("backtest.csv")
                if analysis is None:  # the full table where no report.md is written
                    with stage.open(os.path.join(folder, "backtest.md"), "w", encoding="utf-8") as f:
                        f.write(backtest_section(backtest_rows).lstrip())
                    names.append("backtest.md")
            stage.commit()
        except OSError as err:
            stage.discard()
            raise BadInput(f"{flag} {folder!r}: {err.strerror or err}; the files already there are "
                           f"untouched") from None
        written.append(f"{', '.join(names)} in {folder}")
    return written


def main(argv=None) -> int:
    """The report; bad input (a flag, a file, a price the logs lack) raises BadInput before
    anything is written (see faults.run_main)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    prices = parse_prices(args.price)
    for flag, folder in (("--out", args.out), ("--export", args.export)):
        problem = folder and records.folder_problem(folder)
        if problem:
            raise BadInput(f"{flag} {folder!r}: {problem}")
    candidates = forecast_gpus(args.forecast)
    opts = assumptions(args)
    backtest_rows = backtest.backtest(published_pairs.all_records()) if args.backtest or candidates else None
    analysis = tally = paths = None
    if args.inputs:  # every input is read and checked before anything is written
        tally = inputs.Tally()
        paths = inputs.expand(args.inputs)
        analysis = analyse(args, paths, tally, prices, candidates, backtest_rows)
        unpriced = sorted(set(opts.owned) - set(analysis.prices) - set(analysis.forecast_prices))
        if unpriced:  # the owner's call stands beside the renter's: a GPU owned is priced too
            raise BadInput(f"--own {unpriced[0]}: no --price for it; the owner's cost is set beside the renter's")
    if args.write_guide_reference:
        write_guide_reference(args.write_guide_reference)
    if analysis is None:
        if args.backtest:
            print_backtest(backtest_rows)
            for line in write_outputs(None, args, (), None, backtest_rows):
                sys.stderr.write(f"wrote {line}\n")
        return 0
    for line in tally.skipped_lines():
        sys.stderr.write(f"warning: {line}\n")
    if tally.duplicates:
        sys.stderr.write(f"note: {sum(tally.duplicates.values())} record(s) repeated in another log "
                         "counted once\n")
    for line in analysis.forecast_notes:
        sys.stderr.write(f"note: {line}\n")
    found = workloads(analysis)
    report = os.path.join(args.out, "report.md") if args.out else None
    sys.stdout.write(terminal.terminal_text(analysis, opts, report))
    if args.backtest:  # the answer first, the backtest after it
        print_backtest(backtest_rows)
    sys.stdout.flush()
    money = dollar_words.dollars_markdown(found, opts) if found else ""
    for line in write_outputs(analysis, args, paths, tally, backtest_rows if args.backtest else None, money):
        sys.stderr.write(f"wrote {line}\n")
    return 0


def analyse(args, paths, tally, prices: dict, candidates: list, backtest_rows):
    """The analysis of the inputs, forecasts included; BadInput (a file, a key, a price, a
    stack) before anything is written."""
    return build_analysis(list(inputs.read(paths, tally)), tally.seen_again, prices, candidates,
                          calibration.calibration(backtest_rows or []), args.ignore_config, args.baseline,
                          args.reference, args.strict_stack, tally.impossible)


if __name__ == "__main__":  # python -m upgrade_bench.report.main: plot_results.py without its shim
    raise SystemExit(run_main(main))
