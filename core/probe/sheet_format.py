"""How a report sheet is laid out for reading: frozen header, autofilter, column widths, numbers.

Every xlsx writer calls :func:`sheet_format` once per sheet with the header and the first rows,
then :meth:`SheetFormat.cell` on every value, so the formatting decisions live here and not in
the writer (whichever library writes the file).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_, itemgetter, not_
from typing import Any

SAMPLE_ROWS = 500
"""Rows looked at to fit column widths and to decide which columns hold numbers."""
MIN_WIDTH, MAX_WIDTH = 6.0, 80.0
"""Column widths, in characters: long texts (stacks, messages) are cut at MAX_WIDTH."""
_TEXT_COLUMN_WORDS = ("name", "md5", "dtype", "shape", "message", "stack", "result", "requires_grad", "accuracy")
"""Columns whose header holds one of these words keep their values as text (an md5 of digits stays text)."""

_NUMBER_START = frozenset("-+.0123456789")
_FIRST = itemgetter(slice(None, 1))


@dataclass(frozen=True)
class SheetFormat:
    """The layout decisions of one sheet."""

    widths: tuple[float, ...]
    numeric: tuple[bool, ...]
    """Per column: numeric text (``"0.0123"``) is stored as a number."""
    freeze_header: bool = True
    autofilter: bool = True

    def cell(self, column: int, value: Any) -> Any:
        """``value`` as stored: numeric text of a numeric column becomes a float, the rest is unchanged."""
        if value.__class__ is str and self.numeric[column]:
            number = _number(value)
            if number is not None:
                return number
        return value


    def column(self, index: int, values: Sequence[Any]) -> Sequence[Any]:
        """:meth:`cell` of every value of column ``index`` (``values`` itself when none changes)."""
        if not self.numeric[index]:
            return values
        where = list(compress(range(len(values)), map(is_, map(type, values), repeat(str))))
        if not where:
            return values
        out = list(values)
        for i, number in zip(where, _numbers([values[i] for i in where])):
            if number is not None:
                out[i] = number
        return out


def _numbers(texts: list[str]) -> list[float | None]:
    """:func:`_number` of every text; texts that end with ``%`` (relative errors) are skipped
    at once and the rest parsed in one pass when all of them are numbers."""
    flags = list(map(str.endswith, texts, repeat("%")))
    maybe = list(compress(texts, map(not_, flags)))
    try:
        parsed = list(map(float, maybe))
        if not all(map(math.isfinite, parsed)) or set(map(_FIRST, maybe)) - _NUMBER_START:
            raise ValueError
    except ValueError:
        parsed = list(map(_number, maybe))
    numbers = iter(parsed)
    return [None if flag else next(numbers) for flag in flags]


def _number(text: str) -> float | None:
    """A finite float written as plain decimal/exponent text (``"-0.5"``, ``"1e-07"``), else ``None``."""
    if not text or text[0] not in _NUMBER_START:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _width(value: Any) -> int:
    if value is None:
        return 0
    if value.__class__ is float:
        return min(len(repr(value)), 12)
    text = str(value)
    return max(map(len, text.split("\n"))) if "\n" in text else len(text)


def sheet_format(columns: Sequence[str], sample: Sequence[Sequence[Any]]) -> SheetFormat:
    """Fit widths to the header and ``sample`` rows; mark the columns whose text values are numbers."""
    widths = []
    numeric = []
    for index, header in enumerate(columns):
        values = [row[index] for row in sample if index < len(row)]
        longest = max([_width(header) + 2] + [_width(v) + 1 for v in values])
        widths.append(float(min(MAX_WIDTH, max(MIN_WIDTH, longest))))
        lowered = str(header).lower()
        texts = [v for v in values if isinstance(v, str) and v]
        numeric.append(not any(word in lowered for word in _TEXT_COLUMN_WORDS)
                       and any(_number(v) is not None for v in texts))
    return SheetFormat(tuple(widths), tuple(numeric))
