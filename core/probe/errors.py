"""Exceptions that the command line turns into one-line messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ProbeError(Exception):
    """Base class of every error probe reports to the user without a traceback."""

    exit_code = 1


class InputError(ProbeError):
    """Bad input (a dump, a mapping file, an option): exit code 2.

    ``path`` names the offending file; the message reads ``<path>: <problem>``.
    """

    exit_code = 2

    def __init__(self, problem: str, path: str | Path | None = None) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {problem}" if self.path else problem)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as ``(problem, path)`` so a copy from another process keeps both."""
        return type(self), (self.problem, self.path)


class PluginError(ProbeError):
    """A plugin failed to load or registered something inconsistent."""

    exit_code = 3


class NotStreamable(Exception):
    """A compare started a window at a time found something only a whole-dump compare does
    exactly (see :mod:`probe.streaming`); it is run again on the whole dumps. Never shown."""
