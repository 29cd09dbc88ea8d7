"""Built-in commands ``graph_visualize`` (alias ``graph``) and ``view``."""

from __future__ import annotations

import argparse
from pathlib import Path

from probe.automatch.plugin import add_auto_match_option
from probe.diagnosis import diagnose
from probe.errors import InputError, ProbeError
from probe.hookspecs import hookimpl
from probe.interfaces import Command
from probe.io import prepare_output_dir
from probe.regression.cli import add_target_arguments, is_nway

GRAPH_EPILOG = """examples:
  probe graph -tp target/step0/rank0 -o out                         # build one graph
  probe graph -tp target -gp golden -o out --html                   # compare every step/rank, plus HTML
  probe graph -tp t -gp g -o out -oc -fm                            # overflow levels, fuzzy matching
  probe graph -tp ms -gp pt -o out -lm layer_mapping.yaml           # cross-framework
  probe graph -tp t -gp g -o out -lm                                # same module paths, other classes
  probe graph -tp t -gp g -o out --auto-match                       # pair nodes whose names differ
  probe graph -tp t/step0 -gp g/step0 -o out --rank_size 2 1 --tp 2 1 --pp 1 1
  probe graph -tp t/step0 -o out --rank_size 4 --tp 2 --pp 2 --file_type json   # merged dump files
  probe view out/compare_20260101120000.vis.db                     # self-contained HTML viewer
  probe graph -gp gpu -tp npu_eager -tp npu_graph -o out --html     # N-way: golden graph, verdict per target
"""
VIEW_EPILOG = """examples:
  probe view out/compare_20260101120000.vis.db                     # -> out/compare_20260101120000.html
  probe view out/build_20260101120000.vis.db --step 1 --rank 3 -o rank3.html
  probe view out/compare_20260101120000.vis.db --diagnosis out/diagnosis_20260101120000.json

Every step and rank of the db is in the page (a selector switches between them); a compare shows
the "error along the network" chart above the graphs, with the suspects of --diagnosis.
"""


def add_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``probe graph_visualize`` (msProbe's spelling)."""
    add_target_arguments(parser, "target (NPU) dump directory: one rank, a step dir of rank*/, or a root of step*/",
                         required=True)
    parser.add_argument("-gp", "--golden_path", metavar="GOLDEN", help="golden (bench) dump: switches build to compare")
    parser.add_argument("-o", "--output_path", required=True, metavar="DIR", help="output directory")
    parser.add_argument("-lm", "--layer_mapping", nargs="?", const=True, metavar="FILE",
                        help="layer mapping YAML ({Class: {target attr: golden attr}}) or node/row pairs "
                             "exported by the viewer; without FILE, modules pair by path whatever their class")
    parser.add_argument("-oc", "--overflow_check", action="store_true", help="fill NaN/Inf anomaly levels")
    parser.add_argument("--overflow_rules", metavar="YAML",
                        help="extra overflow false-positive rules ({API: all | [input.0, output, ...]}), "
                             "added to the built-in list")
    parser.add_argument("-fm", "--fuzzy_match", action="store_true", help="match ignoring call indices")
    add_auto_match_option(parser)
    parser.add_argument("-tensor_log", "--is_print_compare_log", dest="tensor_log", action="store_true",
                        help="log every compared node")
    parser.add_argument("-progress_log", "--is_print_progress_log", dest="progress_log", action="store_true",
                        help="print PROGRESS: {json} lines")
    parser.add_argument("--html", action="store_true",
                        help="also write a self-contained HTML viewer (a compare also runs the diagnosis for its "
                             "error chart and suspects, unless --diagnosis gives one)")
    parser.add_argument("--diagnosis", metavar="JSON",
                        help="with --html: the diagnosis_*.json whose suspects and error chart the page shows")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="worker processes for several ranks/steps (default: one per CPU; 1 = no workers)")
    merge = parser.add_argument_group("parallel merge (one value per side)")
    merge.add_argument("--rank_size", type=int, nargs="+", metavar="N")
    merge.add_argument("--tp", type=int, nargs="+", metavar="N")
    merge.add_argument("--pp", type=int, nargs="+", metavar="N")
    merge.add_argument("--vpp", type=int, nargs="+", metavar="N")
    merge.add_argument("--order", nargs="+", metavar="ORDER")
    parser.add_argument("--file_type", choices=("db", "json"), default="db",
                        help="json: write a parallel-merge build as step<S>/rank<R>/{construct,dump,stack}.json "
                             "(dump format) instead of the .vis.db")


def merge_options(args: argparse.Namespace) -> list:
    """Per-side parallel-merge options (empty when ``--rank_size`` is absent)."""
    from probe.graph.merge import validate
    from probe.graph.service import MergeOptions

    if not args.rank_size:
        return []
    sides = 2 if args.golden_path else 1
    if args.tp is None or args.pp is None:
        raise InputError("--tp and --pp are required with --rank_size")

    def values(name: str, default):
        given = getattr(args, name)
        if given is None:
            return [default] * sides
        if len(given) != sides:
            raise InputError(f"--{name} needs {sides} value(s), one per side; got {len(given)}")
        return given

    out = []
    for rank_size, tp, pp, vpp, order in zip(
        values("rank_size", 1), values("tp", 1), values("pp", 1), values("vpp", 1), values("order", "tp-cp-ep-dp-pp")
    ):
        option = MergeOptions(rank_size, tp, pp, vpp, order)
        validate(option)
        out.append(option)
    return out


def run_graph_command(args: argparse.Namespace, host) -> int:
    """Run ``graph_visualize``."""
    from probe.graph.service import GraphOptions, run_graph

    mapping = args.layer_mapping
    if mapping not in (None, True) and not Path(mapping).is_file():
        raise InputError("mapping file does not exist", mapping)
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs must be at least 1")
    if args.file_type == "json" and (args.golden_path or not args.rank_size):
        raise InputError("--file_type json is only supported for a parallel-merge build")
    options = GraphOptions(
        target=Path(args.target_path),
        golden=Path(args.golden_path) if args.golden_path else None,
        output=prepare_output_dir(Path(args.output_path)),
        layer_mapping=True if mapping is True else Path(mapping) if mapping else None,
        overflow_check=args.overflow_check,
        overflow_rules=Path(args.overflow_rules) if args.overflow_rules else None,
        fuzzy_match=args.fuzzy_match,
        auto_match=bool(args.auto_match),
        tensor_log=args.tensor_log,
        progress_log=args.progress_log,
        merge=merge_options(args),
        html=False,  # written below, with the diagnosis
        file_type=args.file_type,
        jobs=args.jobs,
    )
    diagnosis_file = Path(args.diagnosis) if args.diagnosis else None
    if diagnosis_file is not None and not diagnosis_file.is_file():
        raise InputError("diagnosis file does not exist", diagnosis_file)
    if is_nway(args):
        from probe.regression.console import run_nway_graph_command

        return run_nway_graph_command(args, options)
    run = run_graph(options, host)
    if args.html and run.db is not None:
        from probe.viewer.writer import write_html

        run.html = write_html(run.db, diagnosis=diagnosis_file or _diagnose_for_page(args, host))
    if run.db is None:
        for directory in run.json_dirs:
            print(f"merged graph written: {directory}")
        return 0
    print(f"graph written: {run.db} ({run.nodes} nodes)")
    if run.html:
        print(f"viewer written: {run.html}")
    return 0


def _diagnose_for_page(args: argparse.Namespace, host):
    """The diagnosis of a graph compare for its page (None for a build, or when the dumps cannot be
    diagnosed: the page then charts the graph's own metrics)."""
    if not args.golden_path:
        return None
    options = {"fuzzy_match": True} if args.fuzzy_match else {}
    if args.layer_mapping:
        options["layer_mapping"] = args.layer_mapping
    try:
        found = diagnose(args.target_path, args.golden_path, None, jobs=args.jobs or 1, host=host, **options)
    except ProbeError as exc:
        print(f"diagnosis skipped for the viewer: {exc}")
        return None
    print(f"diagnosis: {found.verdict}" + (f", first suspect {found.suspects[0].node}" if found.suspects else ""))
    return found


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``probe view``."""
    parser.add_argument("db", metavar="VIS_DB", help="a build_*.vis.db or compare_*.vis.db")
    parser.add_argument("-o", "--output", metavar="HTML", help="output file (default: next to the db, .html)")
    parser.add_argument("--step", type=int, default=None, help="only this step (default: every step)")
    parser.add_argument("--rank", type=int, default=None, help="only this rank (default: every rank)")
    parser.add_argument("--diagnosis", metavar="JSON",
                        help="a diagnosis_*.json (probe diagnose): its suspects and error chart go into the page")


def run_view_command(args: argparse.Namespace, host) -> int:
    """Run ``view``: write the self-contained HTML viewer of a .vis.db."""
    from probe.viewer.writer import write_html

    out = write_html(Path(args.db), Path(args.output) if args.output else None, step=args.step, rank=args.rank,
                     diagnosis=Path(args.diagnosis) if args.diagnosis else None)
    print(f"viewer written: {out}")
    return 0


@hookimpl
def probe_register_commands(register) -> None:
    register.add("graph_visualize", Command(
        name="graph_visualize",
        help="build or compare hierarchical graphs (.vis.db for TensorBoard, optional HTML)",
        add_arguments=add_graph_arguments,
        run=run_graph_command,
        aliases=("graph",),
        epilog=GRAPH_EPILOG,
    ))
    register.add("view", Command(
        name="view",
        help="write a self-contained HTML viewer of a .vis.db (no server needed)",
        add_arguments=add_view_arguments,
        run=run_view_command,
        epilog=VIEW_EPILOG,
    ))
