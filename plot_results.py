#!/usr/bin/env python3
"""plot_results.py: from the suite's JSON-lines logs to the decision: figures, report.md, $/token.

Reads any number of logs (files, folders of *.jsonl, globs, `-` for stdin), groups runs by
GPU + attention backend + configuration, compares every GPU with the baseline (default: the
one with the lower bf16 peak) and writes into --out:
  report.md         the guide's tables: speedup with the identity check `speedup ~= peak ratio
                    x MFU ratio`, $/1M tokens and a verdict per point (--price), memory and
                    max seqlen, step decomposition, isolated attention, MAMF, telemetry,
                    capabilities side by side
  upgrade.png       the guide's 2x2 figure; attention.png, decomposition.png when those exist

    python plot_results.py results/*.jsonl --price H200=3.50 --price B200=7.00
    python plot_results.py results/ results/reference/guide.jsonl --ignore-config world_size
    python plot_results.py --write-guide-reference results/reference/guide.jsonl

The guide's published H200/B200 numbers ship as results/reference/guide.jsonl (written by
--write-guide-reference from DESIGN.md's tables): every record says "reference": "guide",
and the report and the figures label those series "guide's published". Feed them in next to
your own logs; --ignore-config world_size pairs a run on fewer GPUs with the guide's 8.

Software-stack differences between the GPUs compared are printed on stderr, at the top of
the report and on the figure; --strict-stack makes them an error. Exit 2 on a bad flag, an
input that matches nothing, a log of a newer schema, or (with --strict-stack) a mismatch.
"""
import argparse
import glob
import json
import os
import sys

from upgrade_bench import records
from upgrade_bench.report import comparisons, markdown, published, series
from upgrade_bench.faults import EXIT_BAD_INPUT


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="JSONL files, folders (their *.jsonl), globs, or - for stdin")
    p.add_argument("--out", default="out/report", help="folder for report.md and the PNGs [out/report]")
    p.add_argument("--baseline", help="GPU the others are compared with (default: lower bf16 peak)")
    p.add_argument("--price", action="append", default=[], metavar="GPU=USD_PER_GPU_HOUR",
                   help="price of one GPU-hour, repeatable; gives $/1M tokens and verdicts")
    p.add_argument("--ignore-config", action="append", default=[], metavar="KEY",
                   help="config field to leave out when pairing series across GPUs, repeatable "
                        "(e.g. world_size to compare a 2-GPU run with an 8-GPU one)")
    p.add_argument("--strict-stack", action="store_true",
                   help="software stacks that differ between compared GPUs are an error (exit 2)")
    p.add_argument("--write-guide-reference", metavar="FILE",
                   help="write the guide's published H200/B200 figures as JSONL to FILE "
                        "(then exit, unless inputs are given too)")
    args = p.parse_args(argv)
    if not args.inputs and not args.write_guide_reference:
        p.error("no input: give JSONL files, folders, globs or -")
    return args


def fail(message: str) -> None:
    sys.stderr.write(f"error: {message}\n")
    sys.exit(EXIT_BAD_INPUT)


def expand(inputs) -> list:
    """Input arguments -> paths (and '-'), in order, without repeats."""
    paths = []
    for arg in inputs:
        if arg == "-":
            found = ["-"]
        elif os.path.isdir(arg):
            found = sorted(glob.glob(os.path.join(arg, "*.jsonl")))
        elif os.path.isfile(arg):
            found = [arg]
        else:
            found = sorted(p for p in glob.glob(arg) if os.path.isfile(p))
        if not found:
            fail(f"input {arg!r}: no such file, no *.jsonl in that folder, or no match for that glob")
        paths += [p for p in found if p not in paths]
    return paths


def read_all(paths) -> tuple:
    """(records, {path: skipped lines}); SchemaTooNew and unreadable files end the run."""
    all_records, skipped = [], {}
    for path in paths:
        try:
            if path == "-":
                got, bad = records.read_lines(sys.stdin, "<stdin>")
            else:
                with open(path, encoding="utf-8", errors="replace") as f:
                    got, bad = records.read_lines(f, path)
        except records.SchemaTooNew as err:
            fail(str(err))
        except OSError as err:
            fail(f"input {path!r}: {err.strerror}")
        all_records += got
        if bad:
            skipped[path] = bad
    return all_records, skipped


def write_guide_reference(path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in published.guide_reference_records():
            f.write(json.dumps(r) + "\n")
    sys.stderr.write(f"wrote the guide's published figures to {path}\n")


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.write_guide_reference:
        write_guide_reference(args.write_guide_reference)
        if not args.inputs:
            return 0
    paths = expand(args.inputs)
    all_records, skipped = read_all(paths)
    if skipped:
        where = ", ".join(f"{p}: {n}" for p, n in skipped.items())
        sys.stderr.write(f"warning: skipped {sum(skipped.values())} malformed line(s) ({where})\n")
    data = series.load(all_records, args.ignore_config)
    try:
        analysis = comparisons.analyse(data, args.baseline, args.price)
    except ValueError as err:
        fail(str(err))
    if analysis.stack:
        sys.stderr.write("!" * 78 + "\nWARNING: SOFTWARE STACKS DIFFER between the GPUs compared "
                         "(the stack alone moves results by double-digit %):\n")
        sys.stderr.write("".join(f"  {line}\n" for line in analysis.stack) + "!" * 78 + "\n")
        if args.strict_stack:
            fail("--strict-stack: software stacks differ (listed above); pin the same stack on "
                 "every GPU (./install.sh) or drop --strict-stack")
    for hint in analysis.hints:
        sys.stderr.write(f"note: {hint}\n")

    from upgrade_bench.report import figures  # matplotlib only once the inputs are known good

    os.makedirs(args.out, exist_ok=True)
    pngs = figures.write_all(analysis, args.out)
    text = markdown.render(analysis, pngs, paths, sum(skipped.values()))
    report_path = os.path.join(args.out, "report.md")
    with open(report_path, "w", encoding="utf-8") as f:
        f.write(text)
    for c in analysis.comparisons:
        if c["base"].points or c["other"].points:
            sys.stderr.write(f"\n{c['other'].label} vs {c['base'].label}\n"
                             f"{markdown.speedup_markdown(c)}\n")
            if analysis.prices:
                sys.stderr.write(markdown.cost_markdown(c) + "\n")
    sys.stderr.write(f"\nwrote {report_path} and {', '.join(pngs)} in {args.out}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
