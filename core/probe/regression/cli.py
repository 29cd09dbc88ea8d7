"""Command-line options of the N-way workflows: repeatable ``-tp`` and ``--label`` (light: the
compare and graph commands import it at start-up; the runs are in :mod:`probe.regression.console`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from probe.errors import InputError



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
        raise InputError("--label names the targets of an N-way run: give several -tp")
    return False
