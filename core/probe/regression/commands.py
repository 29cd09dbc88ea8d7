"""Built-in command ``probe diff``: what changed between two compare reports."""

from __future__ import annotations

import argparse
from pathlib import Path

from probe.hookspecs import hookimpl
from probe.interfaces import Command

DIFF_EPILOG = """examples:
  probe diff nightly/compare_result_20260101.csv today/compare_result_20260102.csv
  probe diff nightly_out today_out -o diff_out                 # output dirs: reports paired by rank/step
  probe diff old.xlsx new.json --fail-on newly-failing          # CI: exit 1 when a row got worse
  probe diff old.csv new.csv --tolerance MaxRelativeErr=0.5 --tolerance Cosine=1e-4 --fail-on changed
  probe diff msprobe_out/compare_result_x.csv.gz probe_out/compare_result_y.csv   # msProbe vs probe

Rows pair by NPU Name. Tolerances are absolute, in the report's units (percent for the
statistics relative errors); a metric without one moved when it changed by more than a
millionth of its size. Exit codes: 0 done, 1 --fail-on tripped, 2 unreadable input.
"""


def add_diff_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``probe diff``."""
    parser.add_argument("old", metavar="OLD", help="the earlier report (csv, csv.gz, xlsx, json) or output directory")
    parser.add_argument("new", metavar="NEW", help="the later report or output directory")
    parser.add_argument("-o", "--output_path", dest="output_path", metavar="DIR",
                        help="write diff_{timestamp}.csv/.json/.md here (default: print only)")
    parser.add_argument("--format", dest="format", metavar="FMT[,FMT]", default="csv,json,md",
                        help="what to write with -o: csv, json, md (default all three)")
    parser.add_argument("--tolerance", dest="tolerance", action="append", metavar="METRIC=VALUE",
                        help="absolute tolerance of a metric (repeatable); also adds that column to the diff")
    parser.add_argument("--fail-on", dest="fail_on", choices=("never", "newly-failing", "changed"), default="never",
                        help="exit 1 when a row newly fails (its Result got worse, or a failing row appeared) "
                             "or when anything changed")
    parser.add_argument("--markdown", action="store_true", help="print the markdown (for a pull request) to stdout")


def run_diff_command(args: argparse.Namespace, host: object) -> int:
    """Run ``probe diff``; returns the exit code."""
    from rich.console import Console
    from rich.table import Table

    from probe.regression.diff import diff_reports, markdown  # the diff command only

    formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
    diff = diff_reports(Path(args.old), Path(args.new), args.output_path, tolerances=args.tolerance,
                        formats=formats)
    if args.markdown:
        print(markdown(diff))
    else:
        s = diff.summary
        table = Table(title="probe diff", show_header=True)
        for column in ("paired", "Result changed", "newly failing", "fixed", "metrics moved", "added", "removed"):
            table.add_column(column, justify="right")
        table.add_row(str(s.paired), str(s.result_changed), f"[red]{s.newly_failing}[/red]", str(s.fixed),
                      str(s.metric_moved), str(s.added), str(s.removed))
        out = Console(highlight=False, soft_wrap=True)
        out.print(table)
        for transition, count in sorted(s.transitions.items()):
            out.print(f"  {transition}: {count}", markup=False)
        for key in s.reports_only_old:
            out.print(f"report only in the old run: {key}", markup=False)
        for key in s.reports_only_new:
            out.print(f"report only in the new run: {key}", markup=False)
        for path in diff.files:
            out.print(f"diff: {path}", markup=False)
    return diff.exit_code(args.fail_on)


@hookimpl
def probe_register_commands(register) -> None:
    register.add("diff", Command(
        name="diff",
        help="what changed between two compare reports (Result, metrics, rows added/removed); CI exit codes",
        description="Pair the rows of two compare reports (probe's or msProbe's) by name and list what changed.",
        add_arguments=add_diff_arguments,
        run=run_diff_command,
        epilog=DIFF_EPILOG,
    ))
