"""CSV text of whole report columns at once (what ``csv.writer`` writes, cell for cell).

The exporters used to hand every row to ``csv.writer`` as a list of Python values; at a
few hundred thousand rows that per-row work was most of a statistics compare. Here a
report arrives as columns (see ``MetricMode.render_columns``): each column is turned into
its cell texts in a few C-level passes (floats formatted in bulk by :func:`float_texts`,
text columns screened once per distinct text and passed through untouched unless a cell
needs the spreadsheet rule or quoting), and lines are joined from the columns. The result
equals ``csv.writer(lineterminator="\\n")`` with minimal quoting after the spreadsheet rule
of :mod:`probe.cells` and with infinite statistics as ``inf_text``;
``tests/test_csv_columns.py`` checks that on random cells and on every report kind.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_, itemgetter, not_
from typing import Any

import orjson

from probe.cells import SUSPECT_START, needs_care, safe_cell

_NUMBER_CHARS = frozenset("0123456789.eE+-infatyINFATY")
"""Characters of texts that ``float`` reads exactly when :mod:`probe.cells` calls them numbers."""
_SPECIAL = (",", '"', "\n")
"""Characters that make ``csv.writer`` (``QUOTE_MINIMAL``, ``\\n`` line end) quote a field."""
_INF = math.inf
_STR = {str}
_FLOAT = {float}
_BOOL_INT = {bool, int}
_BOOL = {bool}
_BOOL_TEXT = {True: "True", False: "False"}
"""``str`` of each bool (a look-up instead of a call a cell)."""
_PLAIN = frozenset({float, int, bool, str})
"""Cell types whose ``str`` is their CSV text (text after the checks of :func:`_text_column`)."""
_FIRST = itemgetter(slice(None, 1))
_SUSPECT_FIRST = SUSPECT_START.__contains__
_REPR_LOW, _REPR_HIGH = 1e-4, 1e16
"""``repr`` writes a float positionally when ``1e-4 <= abs(value) < 1e16`` (or zero)."""


class TextColumn(list):
    """A column of texts that are their own CSV fields and that :func:`probe.cells.safe_cell`
    keeps: texts probe writes itself (numbers, fixed words; no comma, quote or line break,
    nothing a spreadsheet evaluates), so no cell of it is screened again."""

    __slots__ = ()


class NumberTexts(TextColumn):
    """A :class:`TextColumn` whose every cell is ``repr`` of a finite float or one of
    :data:`NUMBER_WORDS` (a difference column), so a sheet stores its numbers without
    parsing and formatting them again."""

    __slots__ = ()


class JoinedFields(TextColumn):
    """A :class:`TextColumn` whose every cell is the CSV text of several adjacent report
    columns of one row (their fields joined by commas): written as it is."""

    __slots__ = ()


class PercentTexts(TextColumn):
    """A :class:`TextColumn` whose every cell is ``repr`` of a finite float followed by
    ``%``, or one of :data:`NUMBER_WORDS` (a relative-error column)."""

    __slots__ = ()


NUMBER_WORDS = frozenset({"0", "N/A", "Diff", "Nan", "inf", "-inf"})
"""The texts a :class:`NumberTexts` cell holds besides ``repr`` of finite floats."""


def quote(text: str) -> str:
    """``text`` as one CSV field (quoted only when it must be)."""
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def float_texts(values: Sequence[float] | Any) -> list[str]:
    """``repr`` of every value of ``values`` (all of type ``float``, or a float64 numpy
    array), formatted in bulk.

    orjson writes the same shortest round-trip digits as ``repr``; only the layout of
    values outside ``repr``'s positional range differs: orjson writes ``0.0000123`` and
    ``1.5e-7`` where ``repr`` writes ``1.23e-05`` and ``1.5e-07`` (fixed here with a few
    string replacements over those tokens), and NaN, infinities and (in older orjson)
    values from 1e16 on take ``repr`` itself. If the installed orjson lays numbers out
    otherwise (checked once), every value takes ``repr``.
    """
    if len(values) == 0:
        return []
    import numpy as np  # noqa: PLC0415 - numpy only when floats are written

    if not _orjson_layout_known():
        return list(map(repr, values.tolist() if isinstance(values, np.ndarray) else values))
    array = np.ascontiguousarray(values, dtype=np.float64)
    texts = orjson.dumps(array, option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    size = np.abs(array)
    with np.errstate(invalid="ignore"):
        small = (size < _REPR_LOW) & (size != 0)
        if small.any():  # taken out and put back through an object array (no loop over them)
            positional = small & (size >= _TENTH_LOW)
            cells = np.array(texts, dtype=object)
            for where, fix in ((np.flatnonzero(positional), _positional_small),
                               (np.flatnonzero(small & ~positional), _exponent_small)):
                if len(where):
                    cells[where] = fix(cells[where].tolist())
            texts = cells.tolist()
        odd = np.flatnonzero(~(size < _REPR_HIGH))  # huge, NaN, infinities
    if len(odd):
        for i in odd.tolist():
            texts[i] = repr(float(array[i]))
    return texts


def matrix_rows(matrix: Any, special: Any, texts: Sequence[str], suffix: str = "") -> JoinedFields:
    """The CSV fields of a float64 matrix, one text per row (its cells joined by commas).

    A cell reads ``repr`` of its value followed by ``suffix``, except the ``special`` cells
    (a boolean mask; every cell whose value :func:`plain_floats` rejects must be one), which
    read ``texts`` in row-major order, as given (without ``suffix``). orjson writes the whole
    matrix at once (numbers, ``null`` for special cells, commas and brackets only), ``suffix``
    goes after every cell in two replacements, and special cells are replaced in one join.
    """
    import numpy as np  # noqa: PLC0415 - numpy only when floats are written

    if len(matrix) == 0:
        return JoinedFields()
    values = np.where(special, np.nan, matrix)
    body = orjson.dumps(values, option=orjson.OPT_SERIALIZE_NUMPY).decode()[2:-2]
    rows = "],["
    if suffix:  # "a,b],[c" -> "a%,b%],[c%"
        body = body.replace(",", suffix + ",").replace("]" + suffix + ",[", suffix + rows) + suffix
    if len(texts):
        held = "".join(texts)
        if "[" in held or "]" in held:  # texts side by side could form the separator: split rows at a free character
            free = next(c for c in map(chr, range(1, 0x110000)) if c not in held)  # orjson writes no control character
            body, rows = body.replace(rows, free), free
        pieces = body.split("null" + suffix)
        if len(pieces) != len(texts) + 1:
            raise ValueError("special cells and their texts differ in number")
        parts = [""] * (2 * len(pieces) - 1)
        parts[0::2] = pieces
        parts[1::2] = texts
        body = "".join(parts)
    return JoinedFields(body.split(rows))


def plain_floats(values: Any) -> Any:
    """Where a float64 array holds values orjson writes exactly as ``repr`` (zero, or a
    finite magnitude in ``repr``'s positional range, or above it when orjson agrees there)."""
    import numpy as np  # noqa: PLC0415 - numpy only when floats are written

    if not _orjson_layout_known():
        return np.zeros(np.shape(values), dtype=bool)
    size = np.abs(values)
    with np.errstate(invalid="ignore"):
        return ((size >= _REPR_LOW) & (size < (_INF if _orjson_large_known() else _REPR_HIGH))) | (size == 0)


@functools.cache
def _orjson_large_known() -> bool:
    """Whether the installed orjson writes values from 1e16 up as ``repr`` does."""
    import numpy as np  # noqa: PLC0415 - numpy only when floats are written

    probes = [1e16, -1e16, 1.5e16, 1.2345678901234568e+17, 1e22, 1.7976931348623157e308, 9.999999999999999e+22,
              123456789012345680.0, -2.5e300]
    texts = orjson.dumps(np.array(probes), option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    return texts == list(map(repr, probes))


_TENTH_LOW = 1e-5
"""orjson writes values from 1e-5 up to 1e-4 positionally (``0.0000123``)."""
def _positional_small(texts: list[str]) -> list[str]:
    """``-0.0000123`` -> ``-1.23e-05`` (orjson's text of values in [1e-5, 1e-4), as ``repr`` has them).

    Each text is ``[-]0.0000`` then digits, the first not zero (orjson's layout, checked
    once by :func:`_orjson_layout_known`; the prefix, and no exponent, are checked over all texts at
    once): a point follows the first digit (none when it is the only one) and ``e-05`` ends
    the text. Texts laid out otherwise are re-read with ``float`` and written with ``repr``.
    """
    joined = ",".join(texts)
    if joined.count("0.0000") != len(texts) or "e" in joined:
        return [repr(float(t)) for t in texts]
    out = [f"-{t[7]}.{t[8:]}e-05" if t[0] == "-" else f"{t[6]}.{t[7:]}e-05" for t in texts]
    if min(map(len, texts)) < 9:  # a single digit: no point
        out = [t.replace(".e", "e") for t in out]
    return out


def _exponent_small(texts: list[str]) -> list[str]:
    """``1.5e-7`` -> ``1.5e-07`` (orjson's text of values below 1e-5, as ``repr`` has them)."""
    joined = ",".join(texts) + ","
    if joined.count("e-") != len(texts):
        return [repr(float(t)) for t in texts]
    for digit in "6789":
        joined = joined.replace(f"e-{digit},", f"e-0{digit},")
    return joined[:-1].split(",")


@functools.cache
def _orjson_layout_known() -> bool:
    """Whether the installed orjson lays numbers out as :func:`float_texts` expects."""
    probes = [0.0, -0.0, 3.0, 1e-4, 9.999e-05, 1.5e-05, -1e-05, 9.99e-06, 1e-06, 1.5e-07, 1e-10, 5e-324,
              0.1, 1 / 3, 123456789.125, 9999999999999998.0, 1e15, -2.5, 1e16, 1.7976931348623157e308]
    size = [abs(v) for v in probes]
    texts = orjson.dumps(probes).decode()[1:-1].split(",")
    for i, v in enumerate(size):
        if 0 < v < _REPR_LOW:
            texts[i] = (_positional_small if v >= _TENTH_LOW else _exponent_small)([texts[i]])[0]
        elif v >= _REPR_HIGH:
            texts[i] = repr(probes[i])
    import numpy as np  # noqa: PLC0415 - numpy only when floats are written

    array = orjson.dumps(np.array(probes), option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    return texts == list(map(repr, probes)) and array == orjson.dumps(probes).decode()[1:-1].split(",")


def formula_safe(column: Sequence[str]) -> Sequence[str]:
    """An all-``str`` column with :func:`probe.cells.safe_cell` applied where needed.

    Returns the column itself when no cell changes: no cell starts with a suspect
    character, or all that do are plain numbers (``-1.5``, ``-inf``; checked with ``float``
    over an alphabet where ``float`` and :mod:`probe.cells` agree).
    """
    distinct = set(column)
    changed = _safe_texts(list(distinct) if len(distinct) < len(column) else column)
    if changed is None:
        return column
    return [changed.get(v, v) for v in column]


def _safe_texts(cells: Sequence[str], joined: str | None = None) -> dict[str, str] | None:
    """``{text: safe_cell(text)}`` of the cells :func:`probe.cells.safe_cell` changes, or
    ``None`` when it changes none (``joined``: the cells joined by NUL, when at hand)."""
    if joined is None:
        joined = "\x00".join(cells)
    if "\r" in joined:
        return {v: safe_cell(v) for v in cells if needs_care(v)}
    if SUSPECT_START.isdisjoint(map(_FIRST, cells)):
        return None
    suspects = list(compress(cells, map(_SUSPECT_FIRST, map(_FIRST, cells))))
    if set("".join(suspects)) <= _NUMBER_CHARS:
        try:
            list(map(float, suspects))
            return None
        except ValueError:
            pass
    changed = {v: safe_cell(v) for v in suspects}
    return {k: v for k, v in changed.items() if k is not v} or None


_SAMPLE = 16
"""Leading cells :func:`_text_column` looks at: all different, the column is screened as it is."""


def _text_column(column: Sequence[str]) -> Sequence[str]:
    """CSV fields of an all-``str`` column: the column itself when no cell changes."""
    cells: Sequence[str] = column
    if len(set(column[:_SAMPLE])) < _SAMPLE:  # repeated texts (not a column of names): each screened once
        distinct = set(column)
        if len(distinct) < len(column):
            cells = list(distinct)
    joined = "\x00".join(cells)
    changed = _safe_texts(cells, joined)
    if changed is None and not any(ch in joined for ch in _SPECIAL):
        return column
    changed = changed or {}
    fields = {}
    for value in cells:
        text = changed.get(value, value)
        field = quote(text)
        if field is not value:
            fields[value] = field
    if not fields:
        return column
    return list(map(fields.get, column, column))


def finite_floats(column: Sequence[float]) -> bool:
    """Whether a column of floats holds no NaN or infinity (one C-level sum)."""
    try:
        return -_INF < math.fsum(column) < _INF
    except (OverflowError, ValueError):  # huge sums; inf and -inf together
        return False


def column_texts(column: Sequence[Any], stat: bool = False, inf_text: tuple[str, str] = (" inf", " -inf")) -> list[str]:
    """The CSV field text of every cell of one column.

    ``stat`` columns write an infinite float as ``inf_text`` (the report's statistics
    columns); elsewhere floats are written as ``repr`` like ``csv.writer`` does. A
    :class:`TextColumn` is its own text; a column with a ``csv_texts(inf_text)`` method
    (a stat column that knows its cells' kinds) makes its text itself.
    """
    if isinstance(column, TextColumn):
        return column
    if stat and hasattr(column, "csv_texts"):
        return column.csv_texts(inf_text)
    types = set(map(type, column))
    if types == _STR:
        texts = _text_column(column)
        return texts if isinstance(texts, list) else list(texts)
    pos_inf, neg_inf = inf_text if stat else ("inf", "-inf")
    if types == _FLOAT:
        out = float_texts(column)
        if not finite_floats(column):
            for i, text in enumerate(out):
                if text == "inf":
                    out[i] = pos_inf
                elif text == "-inf":
                    out[i] = neg_inf
        return out
    if types == _BOOL:
        return list(map(_BOOL_TEXT.__getitem__, column))
    if types <= _BOOL_INT:
        return list(map(str, column))
    if types <= _PLAIN:
        texts = _plain_texts(column, list(map(type, column)), float in types, pos_inf, neg_inf)
        if texts is not None:
            return texts
    return _cell_texts(column, pos_inf, neg_inf)


def _plain_texts(column: Sequence[Any], kinds: list[type], floats: bool, pos_inf: str,
                 neg_inf: str) -> list[str] | None:
    """Fields of a column of floats, ints, bools and text (``str`` of each, floats through
    :func:`float_texts`, infinities as ``pos_inf``/``neg_inf``), or ``None`` when some text
    cell needs the spreadsheet rule or quotes."""
    strs = list(compress(column, map(is_, kinds, repeat(str))))
    if strs and _text_column(strs) is not strs:
        return None
    if not floats:
        return list(map(str, column))
    import numpy as np  # noqa: PLC0415 - numpy only when floats are written

    is_float = list(map(is_, kinds, repeat(float)))
    values = list(compress(column, is_float))
    texts = float_texts(values)
    if pos_inf != "inf" and not finite_floats(values):
        texts = [pos_inf if t == "inf" else neg_inf if t == "-inf" else t for t in texts]
    out = np.empty(len(column), dtype=object)
    where = np.array(is_float, dtype=bool)
    out[where] = np.array(texts, dtype=object)
    out[~where] = np.array(list(map(str, compress(column, map(not_, is_float)))), dtype=object)
    return out.tolist()


def _cell_texts(column: Sequence[Any], pos_inf: str, neg_inf: str) -> list[str]:
    """Fields of a column of any cells, one cell at a time."""
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
            append(quote(str(value)))  # a list or object: its text may hold a comma
    return out


def safe_cells(column: Sequence[Any], stat: bool, inf_text: tuple[str, str]) -> Sequence[Any]:
    """A column with the exporters' spreadsheet rules applied and values kept as values:
    :func:`probe.cells.safe_cell` on text, infinite floats of ``stat`` columns as ``inf_text``."""
    if isinstance(column, TextColumn):
        return column
    kinds = list(map(type, column))
    types = set(kinds)
    if types == _STR:
        return formula_safe(column)
    if types == _FLOAT and (not stat or finite_floats(column)):
        return column
    if types <= _PLAIN:
        strs = list(compress(column, map(is_, kinds, repeat(str))))
        floats = list(compress(column, map(is_, kinds, repeat(float)))) if stat else []
        if formula_safe(strs) is strs and finite_floats(floats):
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


def _same_text(column: Sequence[Any], other: Sequence[Any]) -> bool:
    """Whether two columns are lists of equal ``str`` cells (so of equal fields; ``1 == 1.0 == True``
    but their fields differ)."""
    return (isinstance(column, list) and isinstance(other, list) and column == other
            and set(map(type, column)) == _STR)


def csv_lines(columns: Sequence[Sequence[Any]], stat_columns: Sequence[int] = (),
              inf_text: tuple[str, str] = (" inf", " -inf")) -> str:
    """The CSV text (one ``\\n``-ended line per row) of a table given as columns."""
    stat = set(stat_columns)
    texts: list[Sequence[str]] = []
    for i, col in enumerate(columns):
        if i and _same_text(col, columns[i - 1]) and i not in stat:  # a golden column like the target's
            texts.append(texts[-1])
        else:
            texts.append(column_texts(col, i in stat, inf_text))
    if not texts or not texts[0]:
        return ""
    if len(texts) == 1:  # a lone empty field is written as "" (csv.writer's rule)
        if all(texts[0]):  # no empty field (the usual: whole lines): one join, the last line end included
            return "\n".join([*texts[0], ""])
        return "".join((t if t else '""') + "\n" for t in texts[0])
    # the lines without their last field, then one join with the last fields (often long stack
    # texts, so copied once rather than into a line and again into the text)
    heads = list(map(",".join, zip(*texts[:-1])))
    parts = [","] * (4 * len(heads))
    parts[0::4] = heads
    parts[2::4] = texts[-1]
    parts[3::4] = ["\n"] * len(heads)
    return "".join(parts)
