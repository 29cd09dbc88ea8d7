"""CSV text of whole report columns at once (what ``csv.writer`` writes, cell for cell).

The exporters used to hand every row to ``csv.writer`` as a list of Python values; at a
few hundred thousand rows that per-row work was most of a statistics compare. Here a
report arrives as columns (see ``MetricMode.render_columns``): each column is turned into
its cell texts in one pass (text columns without a comma, quote or newline pass through
untouched; repeated texts are converted once), and lines are joined from the columns.
The result equals ``csv.writer(lineterminator="\\n")`` with minimal quoting after the
exporters' spreadsheet-safety rules (formula text prefixed with ``'``, infinite
statistics as ``inf_text``); ``tests/test_csv_columns.py`` checks that on random cells.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress, repeat
from typing import Any

FORMULA_START = ("=", "+", "-", "@", "%", "＝", "＋", "－", "＠", "％")
_FORMULA_FIRST = frozenset(FORMULA_START)
_SPECIAL = (",", '"', "\n")
"""Characters that make ``csv.writer`` (``QUOTE_MINIMAL``, ``\\n`` line end) quote a field."""
_INF = math.inf
_STR = {str}
_FLOAT = {float}
_BOOL_INT = {bool, int}


def neutralise_formula(value: str) -> str:
    """Prefix text that a spreadsheet would run as a formula with ``'``; numbers are kept."""
    if value.startswith(FORMULA_START):
        try:
            float(value)
            return value
        except ValueError:
            return "'" + value
    return value


def quote(text: str) -> str:
    """``text`` as one CSV field (quoted only when it must be)."""
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def text_cell(value: str) -> str:
    """A text cell as the CSV shows it: formula-safe, then quoted if needed."""
    return quote(text_cell_safe(value))


def formula_safe(column: Sequence[str]) -> Sequence[str]:
    """An all-``str`` column with :func:`neutralise_formula` applied (the column itself when
    no cell changes: no cell starts with a formula character, or all such cells are numbers)."""
    starts = list(map(str.startswith, column, repeat(FORMULA_START)))
    if not any(starts):
        return column
    try:
        list(map(float, compress(column, starts)))  # "-1.5", "-inf": numbers stay as they are
        return column
    except ValueError:
        return [neutralise_formula(v) if first else v for v, first in zip(column, starts)]


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
    if types == _FLOAT:
        out = list(map(repr, column))
        try:
            finite = -_INF < math.fsum(column) < _INF  # NaN and infinities make the sum non-finite
        except (OverflowError, ValueError):  # huge sums; inf and -inf together
            finite = False
        if finite:
            return out
        pos_inf, neg_inf = inf_text if stat else ("inf", "-inf")
        for i, text in enumerate(out):
            if text == "inf":
                out[i] = pos_inf
            elif text == "-inf":
                out[i] = neg_inf
        return out
    if types <= _BOOL_INT:
        return list(map(str, column))
    pos_inf, neg_inf = inf_text if stat else ("inf", "-inf")
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
            append(text_cell(value))
        elif value is None:
            append("")
        else:
            append(str(value))
    return out


def safe_cells(column: Sequence[Any], stat: bool, inf_text: tuple[str, str]) -> Sequence[Any]:
    """A column with the exporters' spreadsheet rules applied and values kept as values:
    formula text prefixed with ``'``, infinite floats of ``stat`` columns as ``inf_text``."""
    types = set(map(type, column))
    if types == _STR:
        return formula_safe(column)
    if types == _FLOAT:
        try:
            if not stat or -_INF < math.fsum(column) < _INF:
                return column
        except (OverflowError, ValueError):  # huge sums; inf and -inf together
            pass
    pos_inf, neg_inf = inf_text
    out = []
    for value in column:
        cls = value.__class__
        if cls is str:
            value = text_cell_safe(value)
        elif stat and cls is float and (value == _INF or value == -_INF):
            value = pos_inf if value > 0 else neg_inf
        out.append(value)
    return out


def text_cell_safe(value: str) -> str:
    """Formula text prefixed with ``'`` (no CSV quoting)."""
    return neutralise_formula(value) if value[:1] in _FORMULA_FIRST else value


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
