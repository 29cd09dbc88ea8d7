"""md5 mode's CSV rows made in one pass over the records (the usual window), instead of column by column.

A CSV line of md5 mode is the row's names, dtypes, shapes, requires_grad flags, checksums,
consistency, Result, Err_message [and stack]. Names and checksums differ from row to row: they
are written as they are and checked together afterwards (ASCII letters, digits and ``._/[]``
only, :func:`plain_text`); every other cell is one of a few texts whose
field is made once and then looked up. Anything else (a cell that is not text, a name that
would need quoting or the spreadsheet rule) gives ``None`` and the columns are written as usual.
"""

from __future__ import annotations

import json
import string
from collections.abc import Sequence
from itertools import repeat
from typing import Any

from probe.cells import needs_care, safe_cell
from probe.csvtext import JoinedFields, quote
from probe.model import NA
from probe.result import RowResult, extra_values, text_keys


def plain_text(text: str) -> bool:
    """Whether ``text`` holds only ASCII letters, digits and ``._/[]``: any piece of it is its own CSV
    field, nothing a spreadsheet evaluates (names, checksums, ``N/A``, ``[0]``; two C-level passes)."""
    try:
        return not text.encode("ascii").translate(None, _PLAIN_BYTES)
    except UnicodeEncodeError:
        return False


_PLAIN_BYTES = (string.ascii_letters + string.digits + "._/[]").encode()


class _NotPlain(Exception):
    """A cell the one-pass lines do not write (the columns are written instead)."""


def row_lines(records: Sequence[RowResult], with_stack: bool) -> JoinedFields | None:
    """Each record's CSV line without its line end (what md5 mode's columns give, joined), or
    ``None`` when a cell is not one the lines write (see the module docstring)."""
    keys = text_keys(records)
    stacks = extra_values(records, "stack", NA) if with_stack else repeat(None)
    cells: dict[tuple[Any, ...], tuple[str, str]] = {}  # dtypes, shapes, flags -> their fields, the consistency
    ends: dict[tuple[Any, Any, Any], str] = {}  # Result, messages and notes, stack -> their fields
    cells_of, end = cells.get, ends.get
    lines: list[str] = []
    raw: list[str] = []  # names and checksums, checked at once
    append, take = lines.append, raw.append
    try:
        for record, key, stack in zip(records, keys, stacks):
            pair = record.pair
            t, g = pair.target, pair.golden
            npu, bench = record.metrics
            name = t.name
            if g is None:
                g_name = NA
                shared = (t.dtype, t.shape, t.requires_grad, _UNMATCHED)
            else:
                g_name = g.name
                shared = (t.dtype, g.dtype, t.shape, g.shape, t.requires_grad, g.requires_grad)
            middle, consistent = cells_of(shared) or _cells(cells, shared)
            if npu.__class__ is not str or bench.__class__ is not str or name.__class__ is not str \
                    or g_name.__class__ is not str:
                return None
            take(f"{name}{g_name}{npu}{bench}")
            verdict = record.verdict
            append(f"{name},{g_name},{middle},{npu},{bench},{consistent},"
                   f"{end((verdict, key, stack)) or _end(ends, verdict, key, stack)}")
    except (_NotPlain, TypeError):  # TypeError: a cell that is not hashable
        return None
    return JoinedFields(lines) if plain_text("".join(raw)) else None


def _cells(cells: dict[tuple[Any, ...], tuple[str, str]], shared: tuple[Any, ...]) -> tuple[str, str]:
    """The fields of a row's dtypes, shapes and requires_grad flags joined, and its consistency
    (as :func:`probe.modes.common.tail_columns` has it), kept in ``cells``."""
    if shared[-1] is _UNMATCHED:  # no golden row: its cells read N/A
        t_dtype, t_shape, t_rg = shared[:3]
        values, consistent = (t_dtype, NA, t_shape, NA, t_rg, NA), t_rg == NA
    else:
        values, t_rg, g_rg = shared, shared[4], shared[5]
        consistent = t_rg == g_rg or t_rg == NA or g_rg == NA
    fields: dict[Any, str] = {}
    made = cells[shared] = ",".join(_field(fields, value) for value in values), "True" if consistent else "False"
    return made


_UNMATCHED = object()
"""Ends the cells' key of a row without a golden row."""


def _field(fields: dict[Any, str], value: Any) -> str:
    """The CSV field of a text cell (as :func:`probe.csvtext.column_texts` writes it), kept in ``fields``."""
    if value.__class__ is not str:
        raise _NotPlain
    made = fields[value] = quote(safe_cell(value) if needs_care(value) else value)
    return made


def _end(ends: dict[tuple[Any, Any, Any], str], verdict: Any, key: tuple[str, ...] | None, stack: Any) -> str:
    """The Result field of ``verdict``, ``,``, the Err_message field of a row's messages and notes ``key``
    [and ``,`` and the field of its ``stack``, unless it is ``None``], kept in ``ends``."""
    fields: dict[Any, str] = {}
    message = _field(fields, json.dumps(list(key), ensure_ascii=False)) if key else "[]"
    made = f"{_field(fields, verdict)},{message}"
    if stack is not None:
        made = f"{made},{_field(fields, stack)}"
    ends[verdict, key, stack] = made
    return made
