"""The built-in exporters: CSV (default), xlsx (streamed by ``probe.xlsx``) and JSON."""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

import probe.runtime as runtime
from probe.cells import SUSPECT_START, SafeCsvWriter, safe_cell, safe_row
from probe.csvtext import csv_lines, safe_cells
from probe.io import atomic_path, atomic_write, open_temp, temp_file
from probe.modes.common import STACK_COLUMN, STAT_COLUMNS
from probe.model import Summary
from probe.result import CompareResult

CSV_MAX_ROWS = 1_000_000
CSV_INF = (" inf", " -inf")
"""How the CSV writes infinite statistics."""
XLSX_INF = ("inf", "-inf")
"""How the xlsx writes infinite statistics."""
SPLIT_MIN_ROWS = 20_000
"""Reports with at least this many rows are rendered by two processes (see :mod:`probe.runtime`)."""
XLSX_MAX_ROWS = 1_048_500
HIGHLIGHT_COLUMN = "Highlight"
_INF = math.inf
COLUMN_CHUNK = 4096
"""Rows rendered together when a mode renders whole columns (bounded memory, bulk speed)."""


def neutralise_formula(value: str) -> str:
    """Text a spreadsheet would run as a formula, prefixed with ``'`` (see :mod:`probe.cells`)."""
    return safe_cell(value)


def _rows(result: CompareResult, inf_text: tuple[str, str]) -> Iterator[list[Any]]:
    """Report rows with spreadsheet-safe text and the infinities of stat columns as text."""
    columns = result.columns
    stat_index = [columns.index(c) for c in STAT_COLUMNS if c in columns]
    pos_inf, neg_inf = inf_text
    starts = SUSPECT_START
    for row in result.table():
        for i in stat_index:
            value = row[i]
            if (value == _INF or value == -_INF) and isinstance(value, float):
                row[i] = pos_inf if value > 0 else neg_inf
        # only text starting with a formula character (or holding a CR) needs a closer look
        yield [safe_cell(v) if v.__class__ is str and (v[:1] in starts or "\r" in v) else v for v in row]


def _column_blocks(result: CompareResult, inf_text: tuple[str, str], start: int = 0,
                   stop: int | None = None) -> Iterator[list[Sequence[Any]]]:
    """Rows ``start:stop`` of a result whose mode renders whole columns, as blocks of columns
    with the rules of :func:`_rows` applied, a chunk of rows at a time."""
    columns = result.columns
    stat_index = {columns.index(c) for c in STAT_COLUMNS if c in columns}
    stop = len(result) if stop is None else stop
    for begin in range(start, stop, COLUMN_CHUNK):
        table = result.table_columns(begin, min(stop, begin + COLUMN_CHUNK))
        yield [safe_cells(col, i in stat_index, inf_text) for i, col in enumerate(table)]


def _column_rows(result: CompareResult, inf_text: tuple[str, str]) -> Iterator[list[Any]]:
    """:func:`_rows` of a result whose mode renders whole columns, a chunk at a time."""
    for block in _column_blocks(result, inf_text):
        yield from map(list, zip(*block))


def _renders_columns(result: CompareResult) -> bool:
    return getattr(result.mode, "render_columns", None) is not None and not result.extra_columns


class CsvExporter:
    """UTF-8 CSV without BOM, minimal quoting, split into ``_part_N`` files past 1M rows."""

    name = "csv"
    suffix = ".csv"
    max_rows = CSV_MAX_ROWS

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        columns = result.columns
        if _renders_columns(result):
            return self._write_columns(result, path, columns)
        stack = columns.index(STACK_COLUMN) if STACK_COLUMN in columns else None
        if len(result) <= self.max_rows:
            if len(result) >= SPLIT_MIN_ROWS and runtime.allowed():
                return [_write_split(path, columns, result, partial(_row_body, stack=stack))]
            return [self._write_file(path, columns, _rows(result, CSV_INF), stack)]
        rows = _rows(result, CSV_INF)
        written = []
        for index in range(1, math.ceil(len(result) / self.max_rows) + 1):
            part = path.with_name(f"{path.stem}_part_{index}{path.suffix}")
            written.append(self._write_file(part, columns, islice(rows, self.max_rows), stack))
        return written

    def _write_columns(self, result: CompareResult, path: Path, columns: list[str]) -> list[Path]:
        """Write a report whose mode renders whole columns (see :mod:`probe.csvtext`)."""
        total = len(result)
        header = csv_lines([[c] for c in safe_row(columns)])
        ranges = [(0, total)] if total <= self.max_rows else [
            (start, min(total, start + self.max_rows)) for start in range(0, total, self.max_rows)]
        if len(ranges) == 1 and total >= SPLIT_MIN_ROWS and runtime.allowed():
            return [_write_split(path, columns, result, partial(_column_body, columns=columns))]
        written = []
        for index, (start, stop) in enumerate(ranges, 1):
            part = path if len(ranges) == 1 else path.with_name(f"{path.stem}_part_{index}{path.suffix}")
            out = atomic_write(part, "w", encoding="utf-8", newline="")
            with out as handle:
                handle.write(header)
                _write_column_range(handle, result, columns, start, stop)
            written.append(out.path)
        return written

    @staticmethod
    def _write_file(path: Path, columns: list[str], rows: Iterable[list[Any]], stack: int | None = None) -> Path:
        out = atomic_write(path, "w", encoding="utf-8", newline="")
        with out as handle:
            SafeCsvWriter(handle).writerow(columns)
            _write_body(handle, rows, stack)
        return out.path


def csv_header(handle: Any, result: CompareResult) -> None:
    """The header line of ``result``'s CSV report, as :class:`CsvExporter` writes it."""
    if _renders_columns(result):
        handle.write(csv_lines([[c] for c in safe_row(result.columns)]))
    else:
        SafeCsvWriter(handle).writerow(result.columns)


def csv_body(handle: Any, result: CompareResult) -> None:
    """The CSV lines of every row of ``result``, as :class:`CsvExporter` writes them."""
    columns = result.columns
    if _renders_columns(result):
        _column_body(handle, result, columns)
    else:
        _row_body(handle, result, columns.index(STACK_COLUMN) if STACK_COLUMN in columns else None)


def _write_column_range(handle: Any, result: CompareResult, columns: list[str], start: int, stop: int) -> None:
    """CSV lines of rows ``start:stop`` of ``result``, rendered a chunk of columns at a time."""
    stat_index = [columns.index(c) for c in STAT_COLUMNS if c in columns]
    csv_columns = getattr(result.mode, "csv_columns", None)
    for begin in range(start, stop, COLUMN_CHUNK):
        end = min(stop, begin + COLUMN_CHUNK)
        if csv_columns is not None:  # the mode writes some columns as CSV text itself
            handle.write(csv_lines(csv_columns(result.records[begin:end], result.with_stack, CSV_INF)))
        else:
            handle.write(csv_lines(result.table_columns(begin, end), stat_index, CSV_INF))


def _write_body(handle: Any, rows: Iterable[list[Any]], stack: int | None) -> None:
    """The CSV lines of ``rows`` (no header)."""
    if stack is None:
        SafeCsvWriter(handle).writerows(rows)
    else:
        _write_with_stacks(handle, rows, stack)


def _write_split(path: Path, columns: list[str], result: CompareResult,
                 body: Callable[[Any, CompareResult], None]) -> Path:
    """Write one CSV file with two processes: a forked child renders the second half of the
    rows into a temporary file while this process renders the first half; the child's text
    is then appended. Rows are rendered independently, so the bytes equal a serial write.
    ``body(handle, part)`` writes the lines of a part of the result. Returns the name used.
    """
    half = len(result) // 2
    tail = str(temp_file(path, ".tail"))
    try:
        child = runtime.start(_write_tail, tail, replace(result, records=result.records[half:]), body)
        out = atomic_write(path, "w", encoding="utf-8", newline="")
        try:
            with out as handle:
                SafeCsvWriter(handle).writerow(columns)
                body(handle, replace(result, records=result.records[:half]))
                child.result()
                handle.flush()
                with open(tail, "rb") as source:
                    shutil.copyfileobj(source, handle.buffer, 1 << 20)
        except BaseException:
            child.cancel()
            raise
    finally:
        os.unlink(tail)
    return out.path


def _write_tail(path: str, result: CompareResult, body: Callable[[Any, CompareResult], None]) -> None:
    """The second half of :func:`_write_split` (runs in the forked child)."""
    with open_temp(Path(path), "w", encoding="utf-8", newline="") as handle:
        body(handle, result)


def _row_body(handle: Any, result: CompareResult, stack: int | None) -> None:
    """CSV lines of ``result`` rendered row by row."""
    _write_body(handle, _rows(result, CSV_INF), stack)


def _column_body(handle: Any, result: CompareResult, columns: list[str]) -> None:
    """CSV lines of ``result`` rendered a chunk of columns at a time."""
    _write_column_range(handle, result, columns, 0, len(result))


class _Lines(list):
    """A file-like list: ``csv.writer`` appends one line per row."""

    write = list.append


def _write_with_stacks(handle: Any, rows: Iterable[list[Any]], stack: int) -> None:
    """Write rows as ``csv.writer`` would, quoting each distinct stack text only once.

    The stack cell (kilobytes of text, repeated for every entry of a stack group) would
    otherwise be scanned and quoted again on every row. Quoting is per field, so a row is
    the csv text of the cells before the stack, the cached stack text and the cells after.
    """
    lines = _Lines()
    writer = SafeCsvWriter(lines)
    writerow = writer.writerow
    quoted: dict[str, str] = {}
    for row in rows:
        cell = row[stack]
        if not (cell.__class__ is str and len(cell) > 64):
            writerow(row)
        else:
            text = quoted.get(cell)
            if text is None:
                writerow((cell,))
                text = quoted[cell] = lines.pop()[:-1]
            parts = [_csv_cells(writerow, lines, row[:stack]), text]
            if stack + 1 < len(row):
                parts.append(_csv_cells(writerow, lines, row[stack + 1 :]))
            lines.append(",".join(parts) + "\n")
        if len(lines) >= 4096:
            handle.write("".join(lines))
            lines.clear()
    handle.write("".join(lines))


def _csv_cells(writerow: Any, lines: _Lines, cells: list[Any]) -> str:
    """The csv text of ``cells`` as part of a longer row (no line end)."""
    if len(cells) == 1 and (cells[0] is None or cells[0] == ""):
        return ""  # a lone empty field is written as "" only when it is the whole row
    writerow(cells)
    return lines.pop()[:-1]


class XlsxExporter:
    """One sheet (``Sheet1``), or ``part_0``... past Excel's row limit; fills with ``-hl``."""

    name = "xlsx"
    suffix = ".xlsx"
    max_rows = XLSX_MAX_ROWS

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        if not _renders_columns(result):
            return self.write_rows(path, result.columns, self.cells(result), len(result))
        columns = result.columns
        highlight = columns.index(HIGHLIGHT_COLUMN) if HIGHLIGHT_COLUMN in columns else None
        from probe.xlsx import XlsxWriter  # not at start-up: most compares write CSV

        out = atomic_path(path)
        with out as tmp, XlsxWriter(tmp) as book:
            for name, start, count in self._sheets(len(result)):
                book.add_sheet_columns(name, safe_row(columns), _column_blocks(result, XLSX_INF, start, start + count),
                                       rows_count=count, fill_column=highlight)
        return [out.path]

    @staticmethod
    def cells(result: CompareResult) -> Iterator[list[Any]]:
        """The sheet rows of ``result`` (spreadsheet-safe text, infinities as text)."""
        return _column_rows(result, XLSX_INF) if _renders_columns(result) else _rows(result, XLSX_INF)

    def write_rows(self, path: Path, columns: list[str], rows: Iterator[list[Any]], total: int) -> list[Path]:
        """Write ``total`` sheet rows: one sheet, or equal parts past the row limit."""
        highlight = columns.index(HIGHLIGHT_COLUMN) if HIGHLIGHT_COLUMN in columns else None
        from probe.xlsx import XlsxWriter

        out = atomic_path(path)
        with out as tmp, XlsxWriter(tmp) as book:
            for name, _, count in self._sheets(total):
                book.add_sheet(name, safe_row(columns), islice(rows, count), rows_count=count, fill_column=highlight)
        return [out.path]

    def _sheets(self, total: int) -> Iterator[tuple[str, int, int]]:
        """``(sheet name, first row, rows)`` of each sheet: one, or equal parts past the row limit."""
        sheets = max(1, math.ceil(total / self.max_rows))
        per_sheet = math.ceil(total / sheets) if total else 0
        for index in range(sheets):
            start = index * per_sheet
            yield ("Sheet1" if sheets == 1 else f"part_{index}"), start, min(per_sheet, total - start)


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "Nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


class JsonExporter:
    """A JSON document: label, mode, columns, summary and one object per row (streamed)."""

    name = "json"
    suffix = ".json"

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        out = atomic_write(path, "wb")
        with out as handle:
            handle.write(self.head(result, result.summary()))
            handle.writelines(self.lines(result, True))
            handle.write(self.TAIL)
        return [out.path]

    TAIL = b"\n]}\n"

    @staticmethod
    def head(result: CompareResult, summary: Summary) -> bytes:
        """The document up to the opening of its ``rows`` list."""
        head = {
            "label": result.label,
            "mode": result.mode.name,
            "columns": result.columns,
            "summary": {
                "rows": summary.rows, "pass": summary.passed, "warning": summary.warnings,
                "error": summary.errors, "unmatched": summary.unmatched, "golden_only": summary.golden_only,
                "not_compared": summary.not_compared,
                "first_error": summary.first_error,
            },
        }
        return orjson.dumps(head)[:-1] + b', "rows": [\n'

    @staticmethod
    def lines(result: CompareResult, first: bool) -> Iterator[bytes]:
        """One JSON object per row, each but the document's first preceded by ``,\\n``."""
        columns = result.columns
        for row in result.table():
            record = {c: _json_value(v) for c, v in zip(columns, row)}
            yield (b"" if first else b",\n") + orjson.dumps(record)
            first = False
