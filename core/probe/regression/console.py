"""Terminal front-end of the N-way runs: progress, the per-target summary, the combined reports."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from probe.console import err_console, render_analyses, report
from probe.errors import InputError
from probe.model import CompareRequest
from probe.regression.cli import target_paths
from probe.regression.nway import run_nway
from probe.regression.nway_graph import run_graph_many


def run_nway_command(args: argparse.Namespace, host: Any, base: CompareRequest) -> int:
    """``probe compare -gp G -tp T1 -tp T2 ...``: compare every target, print, return the exit code.

    ``base`` is the request the arguments make (its target is replaced per target).
    """
    if getattr(args, "input_path", None):
        raise InputError("-i compare.json names one target; give the targets with -tp instead")
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
    for label, target_run in zip(run.labels, run.runs):
        if any(analysis.shown for analysis in target_run.analyses):
            out.print(f"[bold]{label}[/bold]")
            render_analyses(target_run)
    for table in run.tables:
        where = ", ".join(str(f) for f in table.files) or "(not written)"
        out.print(f"combined {table.job_label or 'report'}: {len(table.rows)} golden rows, "
                  f"{table.disagree} where the targets disagree: {where}", markup=False)
    return code


def run_nway_graph_command(args: argparse.Namespace, options: Any) -> int:
    """``probe graph -gp G -tp T1 -tp T2 ...``: one graph compare per target plus the N-way db."""
    run = run_graph_many(replace(options, html=bool(args.html)), [Path(t) for t in target_paths(args)], args.labels,
                         jobs=args.jobs)
    for label, db in zip(run.labels, run.target_dbs):
        print(f"graph written: {db} ({label})")
    print(f"N-way graph written: {run.db} ({run.disagree} golden nodes where the targets disagree)")
    if run.html:
        print(f"viewer written: {run.html}")
    return 0


def _progress(console: Any) -> Progress:
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True, disable=not console.is_terminal,
    )
