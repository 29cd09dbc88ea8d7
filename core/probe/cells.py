"""The one rule for text that goes into a spreadsheet cell (CSV and xlsx reports, merged xlsx).

A spreadsheet evaluates a cell whose text starts with ``=``, ``+``, ``-``, ``@`` (and, in
some, ``%`` or ``|``), or with a tab, a carriage return or a line feed (OWASP's CSV
injection list), including the full-width forms and after leading spaces. Such text is
prefixed with ``'`` unless it is a plain number (``-1.5``, `` -inf``). A carriage return
inside a cell becomes a line feed, so the CSV writer quotes the cell and no reader can
split the row at it (the piece after a bare CR would start a new row unneutralised).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any

FORMULA_START = frozenset("=+-@%|\t\r\n＝＋－＠％｜")
"""First characters (after leading spaces) that make a spreadsheet evaluate a cell."""
SUSPECT_START = FORMULA_START | {" "}
"""Cells starting with one of these need a closer look (a cheap first test)."""
_NUMBER = re.compile(
    r"\s*[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)\s*", re.IGNORECASE | re.ASCII
)


def safe_cell(value: str) -> str:
    """``value`` as text a spreadsheet shows and never evaluates (see the module docstring)."""
    if "\r" in value:
        value = value.replace("\r\n", "\n").replace("\r", "\n")
    head = value.lstrip(" ")
    if head[:1] in FORMULA_START and head and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def needs_care(value: Any) -> bool:
    """Whether ``value`` is text that :func:`safe_cell` may change (fast pre-test per cell)."""
    return value.__class__ is str and (value[:1] in SUSPECT_START or "\r" in value)


def safe_row(row: Iterable[Any]) -> list[Any]:
    """A row with every text cell passed through :func:`safe_cell`."""
    return [safe_cell(v) if needs_care(v) else v for v in row]


class SafeCsvWriter:
    """The one CSV writer of probe's reports: msProbe's ``\\n`` line ends, minimal quoting, and
    every text cell through :func:`safe_cell` first, so no caller can write a CR unquoted (a
    reader that breaks lines at CR would split the row) or a formula a spreadsheet evaluates."""

    def __init__(self, handle: Any) -> None:
        self._writerow = csv.writer(handle, lineterminator="\n").writerow

    def writerow(self, row: Iterable[Any]) -> Any:
        """Write one row (cells made safe)."""
        return self._writerow(safe_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        """Write every row of ``rows`` (cells made safe)."""
        writerow = self._writerow
        for row in rows:
            writerow(safe_row(row))
