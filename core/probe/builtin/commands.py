"""Built-in commands: ``compare`` and ``plugins``."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from probe.errors import InputError
from probe.hookspecs import hookimpl
from probe.interfaces import Command
from probe.jsonio import read_json
from probe.model import CompareRequest
from probe.regression.cli import add_target_arguments, is_nway

COMPARE_EPILOG = """examples:
  probe compare -tp target/step0/rank0/dump.json -gp golden/step0/rank0/dump.json -o out
  probe compare -tp target/step0 -gp golden/step0 -o out --xlsx          # every rank
  probe compare -tp target -gp golden -o out --format csv,json --jobs 4  # every step and rank
  probe compare -tp target -gp golden -o out --rank 0,3 --step 1         # some ranks of one step
  probe compare -tp t/dump.json -gp g/dump.json -fm -hl                  # fuzzy match, highlight
  probe compare -tp t/dump.json -gp g/dump.json -dm mapping.yaml --fail-on error
  probe compare -tp t/dump.json -gp g/dump.json --auto-match             # pair rows whose names differ
  probe compare -i compare.json -o out                                   # msProbe's input file
  probe compare -gp golden/step0 -tp npu_eager/step0 -tp npu_graph/step0 -o out   # N-way: out/<label>/ + nway_result
  probe compare -gp gpu -tp npu_bf16 --label bf16 -tp npu_new --label new -o out --xlsx
  probe -f mindspore compare -tp ms/step0 -gp pt/step0 -am -o out        # -f before or after the command

Rows whose data could not be compared read N/A with the reason in Err_message; the summary
counts them as "not compared" and --fail-on exits 1 for them, printing why.
"""



def at_least(minimum: int):
    """An argparse type: an integer no smaller than ``minimum`` (else a one-line usage error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value

    return parse

def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``probe compare``, spelled as msProbe spells them."""
    io = parser.add_argument_group("inputs and outputs")
    add_target_arguments(io, "target (NPU) dump: dump.json/debug.json, a step dir with rank*/ or a dump root with step*/")
    io.add_argument("-gp", "--golden_path", dest="golden_path", metavar="GOLDEN",
                    help="golden (bench) dump of the same kind as the target")
    io.add_argument("-i", "--input_path", dest="input_path", metavar="compare.json",
                    help="msProbe's older input file with npu_path / bench_path / stack_path / is_print_compare_log")
    io.add_argument("-o", "--output_path", dest="output_path", nargs="?", const="./output", default=None,
                    metavar="DIR", help="output directory (default ./output; the current directory for "
                                        "TorchAir reports, as documented)")
    io.add_argument("--xlsx", action="store_true", help="write xlsx instead of CSV")
    io.add_argument("--format", dest="format", metavar="FMT[,FMT]",
                    help="report formats, comma separated (csv, xlsx, json, or a plugin's)")
    io.add_argument("-j", "--jobs", type=at_least(1), default=None, metavar="N",
                    help="parallel processes for ranks and tensor loading (default: CPU count)")
    io.add_argument("--executor", choices=("process", "dask"), default=None,
                    help="where rank jobs run: local processes (default) or a dask cluster (pip install 'probe[dask]'); "
                         "a single tensor-mode rank is split into row ranges over the cluster")
    io.add_argument("--rank", dest="rank", default=None, metavar="N[,N]",
                    help="ranks to compare, comma separated (default: every rank found on both sides)")
    io.add_argument("--step", dest="step", default=None, metavar="N[,N]",
                    help="steps to compare, comma separated (default: every step found on both sides)")
    io.add_argument("--window", dest="stream_window", type=at_least(0), default=None, metavar="N",
                    help="compare a window of N dump entries at a time: only one window's rows in memory (default: "
                         "automatic, windows sized from the dump, for dump.json files of 16 MiB or more "
                         "together, 512 MiB for xlsx; 0: always whole dumps)")
    io.add_argument("--scheduler", metavar="ADDRESS", default=None,
                    help="dask scheduler address for --executor dask (default: $DASK_SCHEDULER_ADDRESS, "
                         "else a local cluster of -j workers); -o must be on storage every worker sees")
    match = parser.add_argument_group("matching")
    match.add_argument("-fm", "--fuzzy_match", action="store_true", default=None,
                       help="match rows ignoring call indices")
    match.add_argument("-dm", "--data_mapping", metavar="FILE", help="YAML of target row name: golden row name")
    report = parser.add_argument_group("report")
    report.add_argument("-hl", "--highlight", action="store_true", default=None,
                        help="mark suspicious rows red/yellow by msProbe's documented highlight rules, the reason "
                             "written into the row (xlsx fills, Highlight column in CSV/JSON)")
    report.add_argument("-s", "--stack_mode", action="store_true", default=None,
                        help="accepted for compatibility: stack info is shown whenever stack.json exists")
    report.add_argument("-c", "--compare_only", action="store_true", default=None,
                        help="skip the advisor summary")
    report.add_argument("-tensor_log", "--is_print_compare_log", dest="tensor_log", action="store_true",
                        default=None, help="print one line per row with all metrics (tensor mode)")
    report.add_argument("-da", "--diff_analyze", action="store_true", default=None,
                        help="find the first diverging node")
    report.add_argument("--metric-mode", dest="metric_mode", metavar="NAME",
                        help="force a metric mode (statistics, tensor, md5, or a plugin's)")
    report.add_argument("--fail-on", dest="fail_on", choices=("never", "warning", "error"), default="never",
                        help="exit 1 when a row's Result is at least this bad, or a row was not compared "
                             "(for CI gating; prints why)")
    report.add_argument("-m", "--mode", dest="compare_mode", default=None, metavar="MODE",
                        help="msProbe's compare mode: auto (default) or a plugin's (torchair, mindspore); "
                             "offline_data, offline_model and atb are refused (not implemented)")
    report.add_argument("--html", dest="diagnosis_html", action="store_true", default=None,
                        help="also write diagnosis_<timestamp>.html: the error along the network and the suspects, "
                             "one self-contained page")


_CORE_KEYS = {"target_path", "golden_path", "input_path", "output_path", "xlsx", "format", "jobs", "fail_on",
              "command", "framework", "verbose", "quiet", "handler", "target_paths", "labels"}


# msProbe's compare modes that probe does not implement, and what they are
UNSUPPORTED_MODES = {
    "offline_data": "offline data (Ascend model-dump) compare",
    "offline_model": "offline model (om/onnx/pb) compare",
    "atb": "ATB operator-library dump compare",
}


def compare_modes(host: Any) -> list[str]:
    """``-m`` values probe accepts: ``auto`` and every plugin that plans its own compares."""
    planners = {info.name for info in host.plugin_infos
                if not info.error and "probe_plan_compare" in info.hooks and not info.name.startswith("probe.")}
    return ["auto", *sorted(planners)]


def check_compare_mode(mode: str | None, host: Any) -> None:
    """Refuse a ``-m`` value probe does not implement, naming msProbe's modes it does not support."""
    if mode is None:
        return
    supported = compare_modes(host)
    if mode in supported:
        return
    if mode in UNSUPPORTED_MODES:
        raise InputError(f"-m {mode} ({UNSUPPORTED_MODES[mode]}) is not supported by probe; "
                         f"supported modes: {', '.join(supported)}")
    raise InputError(f"unknown compare mode -m {mode!r}; supported modes: {', '.join(supported)}")


DEFAULT_OUTPUT_DIRS = {"torchair": "."}
"""Where reports go without ``-o``, when a framework's documentation says other than ./output."""


def default_output_dir(framework: str) -> str:
    """The output directory used when ``-o`` is not given."""
    return DEFAULT_OUTPUT_DIRS.get(framework, "./output")


def request_from_args(args: argparse.Namespace, host: Any) -> Any:
    """Build a :class:`CompareRequest` from parsed arguments (incl. ``-i compare.json``)."""
    options = {k: v for k, v in vars(args).items() if k not in _CORE_KEYS}
    target, golden = args.target_path, args.golden_path
    if args.input_path:
        doc = read_json(Path(args.input_path))
        if not isinstance(doc, dict) or "npu_path" not in doc or "bench_path" not in doc:
            raise InputError("must hold npu_path and bench_path", args.input_path)
        for key in ("npu_path", "bench_path", "stack_path"):
            if doc.get(key) is not None and not isinstance(doc[key], str):
                raise InputError(f"{key} must be a path (text), not {type(doc[key]).__name__}", args.input_path)
        target = target or doc["npu_path"]
        golden = golden or doc["bench_path"]
        if doc.get("stack_path"):
            options["stack_path"] = doc["stack_path"]
        if doc.get("is_print_compare_log"):
            options["tensor_log"] = True
    if not target or not golden:
        raise InputError("give both -tp TARGET and -gp GOLDEN (or -i compare.json)")
    formats = ["xlsx"] if args.xlsx else ["csv"]
    if args.format:
        formats = [f.strip().lower() for f in args.format.split(",") if f.strip()]
    check_compare_mode(options.get("compare_mode"), host)
    framework = options["framework_option"] = args.framework  # what -f said, before detection
    if not framework and options.get("compare_mode") not in (None, "auto"):
        framework = options["compare_mode"]
    if not framework:
        framework = host.detect_framework(path=str(target)) or "pytorch"
    jobs = args.jobs if args.jobs else (os.cpu_count() or 1)
    output = args.output_path or default_output_dir(framework)
    return CompareRequest(
        target=Path(target), golden=Path(golden), output_dir=Path(output),
        framework=framework, formats=tuple(formats), jobs=max(1, jobs), options=options,
    )


def run_compare_command(args: argparse.Namespace, host: Any) -> int:
    """``probe compare``: plan, run with progress, print the summary; returns the exit code."""
    from probe.console import run_with_console

    if is_nway(args):
        from probe.regression.console import run_nway_command

        return run_nway_command(args, host, request_from_args(args, host))
    request = request_from_args(args, host)
    return run_with_console(request, host, fail_on=args.fail_on)


def add_plugins_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print as JSON")


def run_plugins_command(args: argparse.Namespace, host: Any) -> int:
    """``probe plugins``: every plugin with its distribution, version and hooks."""
    infos = host.plugin_infos
    if args.json:
        print(json.dumps([info.__dict__ for info in infos], indent=2))
        return 1 if host.broken_plugins() else 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title="probe plugins")
    for column in ("plugin", "distribution", "version", "hooks"):
        table.add_column(column)
    for info in infos:
        hooks = f"[red]failed: {info.error}[/red]" if info.error else ", ".join(
            h.removeprefix("probe_") for h in info.hooks
        )
        table.add_row(info.name, info.distribution, info.version, hooks)
    Console().print(table)
    return 1 if host.broken_plugins() else 0


@hookimpl(trylast=True)
def probe_register_commands(register) -> None:
    register.add("compare", Command(
        name="compare",
        help="compare a target dump with a golden dump",
        description="Match every API/module of two dumps, compute precision metrics and write a report.",
        add_arguments=add_compare_arguments,
        run=run_compare_command,
        epilog=COMPARE_EPILOG,
    ))
    register.add("plugins", Command(
        name="plugins",
        help="list discovered plugins, their versions and hooks",
        add_arguments=add_plugins_arguments,
        run=run_plugins_command,
        epilog="examples:\n  probe plugins\n  probe plugins --json\n",
    ))
