"""CSV text of whole report columns at once (what ``csv.writer`` writes, cell for cell).

The exporters used to hand every row to ``csv.writer`` as a list of Python values; at a
few hundred thousand rows that per-row work was most of a statistics compare. Here a
report arrives as columns (see ``MetricMode.render_columns``): each column is turned into
its cell texts in a few C-level passes (text columns without a comma, quote or newline
pass through untouched; repeated texts are quoted once), and lines are joined from the
columns. The result equals ``csv.writer(lineterminator="\\n")`` with minimal quoting after
the spreadsheet rule of :mod:`probe.cells` and with infinite statistics as ``inf_text``;
``tests/test_csv_columns.py`` checks that on random cells and on every report kind.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress, repeat
from typing import Any

from probe.cells import SUSPECT_START, needs_care, safe_cell

_SUSPECT = tuple(SUSPECT_START)
_NUMBER_CHARS = frozenset("0123456789.eE+-infatyINFATY")
"""Characters of texts that ``float`` reads exactly when :mod:`probe.cells` calls them numbers."""
_SPECIAL = (",", '"', "\n")
"""Characters that make ``csv.writer`` (``QUOTE_MINIMAL``, ``\\n`` line end) quote a field."""
_INF = math.inf
_STR = {str}
_FLOAT = {float}
_BOOL_INT = {bool, int}


def quote(text: str) -> str:
    """``text`` as one CSV field (quoted only when it must be)."""
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def formula_safe(column: Sequence[str]) -> Sequence[str]:
    """An all-``str`` column with :func:`probe.cells.safe_cell` applied where needed.

    Returns the column itself when no cell changes: no cell starts with a suspect
    character, or all that do are plain numbers (``-1.5``, ``-inf``; checked with ``float``
    over an alphabet where ``float`` and :mod:`probe.cells` agree).
    """
    flags = list(map(str.startswith, column, repeat(_SUSPECT)))
    if "\r" in "".join(column):
        return [safe_cell(v) if needs_care(v) else v for v in column]
    if not any(flags):
        return column
    suspects = list(compress(column, flags))
    if set("".join(suspects)) <= _NUMBER_CHARS:
        try:
            list(map(float, suspects))
            return column
        except ValueError:
            pass
    return [safe_cell(v) if flag else v for v, flag in zip(column, flags)]


def _quoted(column: Sequence[str]) -> list[str]:
    """:func:`quote` of every cell (repeated texts such as stack info quoted once)."""
    cache: dict[str, str] = {}
    out = []
    for value in column:
        text = cache.get(value)
        if text is None:
            text = quote(value)
            if len(cache) < 65536:
                cache[value] = text
        out.append(text)
    return out


def _finite_floats(column: Sequence[float]) -> bool:
    """Whether a column of floats holds no NaN or infinity (one C-level sum)."""
    try:
        return -_INF < math.fsum(column) < _INF
    except (OverflowError, ValueError):  # huge sums; inf and -inf together
        return False


def column_texts(column: Sequence[Any], stat: bool = False, inf_text: tuple[str, str] = (" inf", " -inf")) -> list[str]:
    """The CSV field text of every cell of one column.

    ``stat`` columns write an infinite float as ``inf_text`` (the report's statistics
    columns); elsewhere floats are written as ``repr`` like ``csv.writer`` does.
    """
    types = set(map(type, column))
    if types == _STR:
        column = formula_safe(column)
        joined = "\x00".join(column)
        if any(ch in joined for ch in _SPECIAL):
            return _quoted(column)
        return column if isinstance(column, list) else list(column)
    pos_inf, neg_inf = inf_text if stat else ("inf", "-inf")
    if types == _FLOAT:
        out = list(map(repr, column))
        if not _finite_floats(column):
            for i, text in enumerate(out):
                if text == "inf":
                    out[i] = pos_inf
                elif text == "-inf":
                    out[i] = neg_inf
        return out
    if types <= _BOOL_INT:
        return list(map(str, column))
    out = []
    append = out.append
    for value in column:
        cls = value.__class__
        if cls is float:
            if -_INF < value < _INF:
                append(repr(value))
            elif value == _INF:
                append(pos_inf)
            elif value == -_INF:
                append(neg_inf)
            else:
                append("nan")
        elif cls is str:
            append(quote(safe_cell(value) if needs_care(value) else value))
        elif value is None:
            append("")
        else:
            append(str(value))
    return out


def safe_cells(column: Sequence[Any], stat: bool, inf_text: tuple[str, str]) -> Sequence[Any]:
    """A column with the exporters' spreadsheet rules applied and values kept as values:
    :func:`probe.cells.safe_cell` on text, infinite floats of ``stat`` columns as ``inf_text``."""
    types = set(map(type, column))
    if types == _STR:
        return formula_safe(column)
    if types == _FLOAT and (not stat or _finite_floats(column)):
        return column
    pos_inf, neg_inf = inf_text
    out = []
    for value in column:
        cls = value.__class__
        if cls is str:
            if needs_care(value):
                value = safe_cell(value)
        elif stat and cls is float and (value == _INF or value == -_INF):
            value = pos_inf if value > 0 else neg_inf
        out.append(value)
    return out


def csv_lines(columns: Sequence[Sequence[Any]], stat_columns: Sequence[int] = (),
              inf_text: tuple[str, str] = (" inf", " -inf")) -> str:
    """The CSV text (one ``\\n``-ended line per row) of a table given as columns."""
    stat = set(stat_columns)
    texts = [column_texts(col, i in stat, inf_text) for i, col in enumerate(columns)]
    if not texts or not texts[0]:
        return ""
    if len(texts) == 1:  # a lone empty field is written as "" (csv.writer's rule)
        return "".join((t if t else '""') + "\n" for t in texts[0])
    return "\n".join(map(",".join, zip(*texts))) + "\n"
