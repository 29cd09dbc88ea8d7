"""Registers the built-in analyzers and the ``merge_result`` command (implementations in
:mod:`probe.analysis`, imported only when used)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from probe.hookspecs import hookimpl
from probe.interfaces import Command


# --------------------------------------------------------------------------------------
# merge_result
# --------------------------------------------------------------------------------------

MERGE_EPILOG = """config.yaml:
  api:                    # APIs / modules to gather (a name matches when it contains "<api>.")
    - Distributed.all_reduce
    - Functional.conv2d
  compare_index:          # metrics, one sheet each (default: every metric of the results)
    - Max diff
    - NormRelativeErr

examples:
  probe compare -tp target/step0 -gp golden/step0 -o out
  probe merge_result -i out -o merged -config config.yaml
  probe merge-result -i out -o merged -config config.yaml   # same command
  probe merge_result --input_dir out --output_dir merged --config config.yaml
"""


def add_merge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-i", "--input_path", "--input_dir", dest="input_path", required=True, metavar="DIR",
                        help="folder with per-rank results compare_result_rank<N>_<timestamp>.csv/.xlsx/.json")
    parser.add_argument("-o", "--output_path", "--output_dir", dest="output_path", default="./output", metavar="DIR",
                        help="where multi_ranks_compare_merge_<timestamp>.xlsx goes (default ./output)")
    parser.add_argument("-config", "--config-path", "--config", dest="config_path", required=True, metavar="YAML",
                        help="YAML with 'api' (list) and optional 'compare_index' (list)")


def run_merge_command(args: argparse.Namespace, host: Any) -> int:
    """``probe merge_result``: read every rank's result, merge, write the xlsx."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from probe.analysis.merge import load_config, merge_results

    config = load_config(Path(args.config_path))
    err = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err,
                  transient=True, disable=not err.is_terminal) as progress:
        task = progress.add_task("reading rank results", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        path, tables = merge_results(Path(args.input_path), Path(args.output_path), config, advance)
    out = Console(highlight=False, soft_wrap=True)
    ranks = ", ".join(f"rank{t.rank}" for t in tables)
    out.print(f"merged {len(tables)} ranks ({ranks}), {tables[0].mode} results: {path}")
    return 0


@hookimpl
def probe_register_analyzers(register: Any) -> None:
    from probe.analysis.analyzers import AdvisorAnalyzer, CollectiveAnalyzer, DiffAnalyzer
    from probe.diagnosis.analyzer import DiagnosisAnalyzer

    register.add("diagnosis", DiagnosisAnalyzer())  # first: -da and the advisor show its answer
    register.add("diff_analyze", DiffAnalyzer())
    register.add("collective", CollectiveAnalyzer())
    register.add("advisor", AdvisorAnalyzer())


@hookimpl
def probe_register_commands(register: Any) -> None:
    from probe.builtin.diagnose_command import DIAGNOSE_EPILOG, add_diagnose_arguments, run_diagnose_command

    register.add("diagnose", Command(
        name="diagnose",
        help="compare and name the calls that went wrong, ranked against the dtypes' noise floor",
        description="Run the compare, judge every call against the rounding noise its dtypes explain and "
                    "write diagnosis_<timestamp>.json: verdict (identical / noise / divergent), the noise "
                    "floor per dtype and the suspects, best first.",
        add_arguments=add_diagnose_arguments,
        run=run_diagnose_command,
        epilog=DIAGNOSE_EPILOG,
    ))
    register.add("merge_result", Command(
        name="merge_result",
        help="merge chosen APIs and metrics of every rank's result into one xlsx",
        description="Gather the rows of chosen APIs/modules from every rank's compare result "
                    "(csv, xlsx or json) into multi_ranks_compare_merge_<timestamp>.xlsx: one sheet per "
                    "metric, one column per rank.",
        add_arguments=add_merge_arguments,
        run=run_merge_command,
        aliases=("merge-result",),
        epilog=MERGE_EPILOG,
    ))
