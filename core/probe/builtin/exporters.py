"""Built-in exporters: CSV (default), xlsx (openpyxl write-only) and JSON."""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from probe.hookspecs import hookimpl
from probe.io import atomic_path, atomic_write
from probe.modes.common import STAT_COLUMNS
from probe.result import CompareResult

CSV_MAX_ROWS = 1_000_000
XLSX_MAX_ROWS = 1_048_500
HIGHLIGHT_COLUMN = "Highlight"
_FORMULA_START = ("=", "+", "-", "@", "%", "＝", "＋", "－", "＠", "％")


def neutralise_formula(value: str) -> str:
    """Prefix text that a spreadsheet would run as a formula with ``'``; numbers are kept."""
    if value.startswith(_FORMULA_START):
        try:
            float(value)
            return value
        except ValueError:
            return "'" + value
    return value


def _rows(result: CompareResult, inf_text: tuple[str, str]) -> Iterator[list[Any]]:
    """Report rows with spreadsheet-safe text and the infinities of stat columns as text."""
    columns = result.columns
    stat_index = [columns.index(c) for c in STAT_COLUMNS if c in columns]
    pos_inf, neg_inf = inf_text
    for row in result.table():
        for i in stat_index:
            value = row[i]
            if isinstance(value, float) and math.isinf(value):
                row[i] = pos_inf if value > 0 else neg_inf
        for i, value in enumerate(row):
            if isinstance(value, str) and value:
                row[i] = neutralise_formula(value)
        yield row


def _chunks(rows: Iterable[list[Any]], size: int) -> Iterator[list[list[Any]]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


class CsvExporter:
    """UTF-8 CSV without BOM, minimal quoting, split into ``_part_N`` files past 1M rows."""

    name = "csv"
    suffix = ".csv"
    max_rows = CSV_MAX_ROWS

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        columns = result.columns
        if len(result) <= self.max_rows:
            self._write_file(path, columns, _rows(result, (" inf", " -inf")))
            return [path]
        written = []
        for index, chunk in enumerate(_chunks(_rows(result, (" inf", " -inf")), self.max_rows), start=1):
            part = path.with_name(f"{path.stem}_part_{index}{path.suffix}")
            self._write_file(part, columns, chunk)
            written.append(part)
        return written

    @staticmethod
    def _write_file(path: Path, columns: list[str], rows: Iterable[list[Any]]) -> None:
        with atomic_write(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(columns)
            writer.writerows(rows)


class XlsxExporter:
    """One sheet (``Sheet1``), or ``part_0``... past Excel's row limit; fills with ``-hl``."""

    name = "xlsx"
    suffix = ".xlsx"
    max_rows = XLSX_MAX_ROWS

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        from openpyxl import Workbook
        from openpyxl.cell import WriteOnlyCell
        from openpyxl.styles import PatternFill

        columns = result.columns
        highlight = columns.index(HIGHLIGHT_COLUMN) if HIGHLIGHT_COLUMN in columns else None
        fills = {
            "red": PatternFill("solid", start_color="FFFF0000", end_color="FFFF0000"),
            "yellow": PatternFill("solid", start_color="FFFFFF00", end_color="FFFFFF00"),
        }
        total = len(result)
        sheets = max(1, math.ceil(total / self.max_rows))
        per_sheet = math.ceil(total / sheets) if total else 0
        book = Workbook(write_only=True)
        rows = _rows(result, ("inf", "-inf"))
        for index in range(sheets):
            sheet = book.create_sheet("Sheet1" if sheets == 1 else f"part_{index}")
            sheet.append(columns)
            for row in islice(rows, per_sheet):
                colour = row[highlight] if highlight is not None else ""
                if colour in fills:
                    cells = []
                    for value in row:
                        cell = WriteOnlyCell(sheet, value=value)
                        cell.fill = fills[colour]
                        cells.append(cell)
                    sheet.append(cells)
                else:
                    sheet.append(row)
        with atomic_path(path) as tmp:
            book.save(tmp)
        return [path]


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "Nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


class JsonExporter:
    """A JSON document: label, mode, columns, summary and one object per row (streamed)."""

    name = "json"
    suffix = ".json"

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        columns = result.columns
        summary = result.summary()
        head = {
            "label": result.label,
            "mode": result.mode.name,
            "columns": columns,
            "summary": {
                "rows": summary.rows, "pass": summary.passed, "warning": summary.warnings,
                "error": summary.errors, "unmatched": summary.unmatched, "golden_only": summary.golden_only,
                "first_error": summary.first_error,
            },
        }
        with atomic_write(path, "wb") as handle:
            handle.write(orjson.dumps(head)[:-1] + b', "rows": [\n')
            first = True
            for row in result.table():
                record = {c: _json_value(v) for c, v in zip(columns, row)}
                handle.write((b"" if first else b",\n") + orjson.dumps(record))
                first = False
            handle.write(b"\n]}\n")
        return [path]


@hookimpl(trylast=True)
def probe_register_exporters(register) -> None:
    register.add("csv", CsvExporter())
    register.add("xlsx", XlsxExporter())
    register.add("json", JsonExporter())
