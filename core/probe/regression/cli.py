"""Command-line side of the regression workflows: repeatable ``-tp``/``--label`` and the
N-way console front-end (``probe diff`` has its own command module, :mod:`.diff_command`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any



class TargetPathAction(argparse.Action):
    """``-tp`` that may repeat: ``target_path`` keeps the first, ``target_paths`` all of them."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        paths = list(getattr(namespace, "target_paths", None) or [])
        paths.append(values)
        namespace.target_paths = paths
        if len(paths) == 1:
            setattr(namespace, self.dest, values)


def add_target_arguments(group: Any, help_text: str, required: bool = False) -> None:
    """``-tp`` (repeatable) and ``--label`` (one per ``-tp``) on an argument group."""
    group.add_argument("-tp", "--target_path", dest="target_path", metavar="TARGET", action=TargetPathAction,
                       required=required,
                       help=help_text + "; repeat -tp to compare several targets with one golden (N-way)")
    group.add_argument("--label", dest="labels", action="append", metavar="NAME",
                       help="name of a target in an N-way run, once per -tp in the same order "
                            "(default: its directory name); reports go to OUT/NAME/")


def target_paths(args: argparse.Namespace) -> list[str]:
    """Every ``-tp`` given (empty when none)."""
    return list(getattr(args, "target_paths", None) or [])


def is_nway(args: argparse.Namespace) -> bool:
    """Whether several ``-tp`` were given; ``--label`` without them is an error."""
    if len(target_paths(args)) > 1:
        return True
    if getattr(args, "labels", None):
        from probe.errors import InputError

        raise InputError("--label names the targets of an N-way run: give several -tp")
    return False


def run_nway_command(args: argparse.Namespace, host: Any) -> int:
    """``probe compare -gp G -tp T1 -tp T2 ...``: compare every target, print, return the exit code."""
    from rich.console import Console

    from probe.builtin.commands import request_from_args
    from probe.console import err_console, report
    from probe.regression.nway import run_nway

    if getattr(args, "input_path", None):
        from probe.errors import InputError

        raise InputError("-i compare.json names one target; give the targets with -tp instead")
    base = request_from_args(args, host)
    targets = [Path(t) for t in target_paths(args)]
    outcomes = []
    with _progress(err_console) as progress:
        task = progress.add_task(f"compare {len(targets)} targets", total=None)

        def planned(total: int) -> None:
            progress.update(task, total=total)

        def done(label: str, outcome: Any) -> None:
            outcome.label = f"{label} {outcome.label}".strip()
            outcomes.append(outcome)
            progress.advance(task, 1)

        run = run_nway(base, targets, args.labels, host=host, on_outcome=done, on_planned=planned)
    code = report(outcomes, base, args.fail_on)
    out = Console(highlight=False, soft_wrap=True)
    for table in run.tables:
        where = ", ".join(str(f) for f in table.files) or "(not written)"
        out.print(f"combined {table.job_label or 'report'}: {len(table.rows)} golden rows, "
                  f"{table.disagree} where the targets disagree: {where}")
    return code


def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    )


def run_nway_graph_command(args: argparse.Namespace, options: Any) -> int:
    """``probe graph -gp G -tp T1 -tp T2 ...``: one graph compare per target plus the N-way db."""
    from probe.regression.nway_graph import run_graph_many

    from dataclasses import replace

    run = run_graph_many(replace(options, html=bool(args.html)), [Path(t) for t in target_paths(args)], args.labels,
                         jobs=args.jobs)
    for label, db in zip(run.labels, run.target_dbs):
        print(f"graph written: {db} ({label})")
    print(f"N-way graph written: {run.db} ({run.disagree} golden nodes where the targets disagree)")
    if run.html:
        print(f"viewer written: {run.html}")
    return 0
