"""``probe diagnose``: compare, then name the calls that went wrong, ranked against the noise floor."""

from __future__ import annotations

import argparse
from typing import Any

from probe.builtin.commands import add_compare_arguments, request_from_args

DIAGNOSE_EPILOG = """examples:
  probe diagnose -tp target/step0 -gp golden/step0 -o out            # one step, every rank
  probe diagnose -tp target -gp golden -o out                        # every step and rank, one ranking
  probe diagnose -tp t/dump.json -gp g/dump.json -o out -fm          # any compare option works
  probe diagnose -tp target -gp golden -o out --html --png           # + the chart page and picture

writes out/diagnosis_<timestamp>.json (verdict identical | noise | divergent, the noise floor per dtype,
the suspects best first, the error along the network) beside the compare reports; the console shows the
verdict and the first suspects. probe compare writes the same file.
"""


def add_diagnose_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``probe diagnose``: those of ``probe compare``."""
    add_compare_arguments(parser)
    parser.add_argument("--png", dest="diagnosis_png", action="store_true",
                        help="also write diagnosis_<timestamp>.png, the error-along-the-network chart (needs matplotlib)")


def run_diagnose_command(args: argparse.Namespace, host: Any) -> int:
    """Run the compare with progress, print the summary and the diagnosis; returns the exit code."""
    from probe.console import run_with_console  # rich: imported when the command runs

    if args.diagnosis_png:
        from probe.viewer.chart import require_png  # only when a picture is asked for

        require_png()
    request = request_from_args(args, host)
    if request.options.get("compare_only") is None:
        request.options["compare_only"] = True  # the diagnosis is the answer; the advisor would repeat it
    return run_with_console(request, host, fail_on=args.fail_on)
