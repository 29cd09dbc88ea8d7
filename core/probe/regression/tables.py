"""Write a plain table (header + rows) as CSV, xlsx or JSON, atomically and spreadsheet-safe.

Used by the combined N-way report and by ``probe diff``; cell text that a spreadsheet would
run as a formula is neutralised exactly as in the compare reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from probe.cells import SafeCsvWriter, safe_cell
from probe.io import atomic_path, atomic_write, unique_path
from probe.xlsx import XlsxWriter

TABLE_FORMATS = ("csv", "xlsx", "json")


def table_cell(value: Any) -> Any:
    """Text neutralised for spreadsheets; non-finite floats as text; other values as is."""
    if isinstance(value, str):
        return safe_cell(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "Nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _safe_rows(rows: Sequence[Sequence[Any]]) -> Iterator[list[Any]]:
    return ([table_cell(v) for v in row] for row in rows)


def write_table(
    directory: Path,
    stem: str,
    formats: Sequence[str],
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    head: dict[str, Any] | None = None,
    sheet: str = "Sheet1",
) -> list[Path]:
    """Write ``rows`` under ``directory/stem.{csv,xlsx,json}`` (never replacing a file).

    ``head`` is put at the top of the JSON document (the rows follow under ``"rows"``).
    Formats other than csv/xlsx/json are skipped. Returns the files written.
    """
    header = [safe_cell(str(c)) for c in columns]
    written: list[Path] = []
    for fmt in formats:
        if fmt not in TABLE_FORMATS:
            continue
        path = unique_path(directory, stem, f".{fmt}")
        if fmt == "csv":
            out = atomic_write(path, "w", encoding="utf-8", newline="")
            with out as handle:
                writer = SafeCsvWriter(handle)
                writer.writerow(header)
                writer.writerows(_safe_rows(rows))
        elif fmt == "xlsx":
            out = atomic_path(path)
            with out as tmp, XlsxWriter(tmp) as book:
                book.add_sheet(sheet, header, _safe_rows(rows), rows_count=len(rows))
        else:
            start = orjson.dumps({**(head or {}), "columns": header})[:-1] + b', "rows": [\n'
            out = atomic_write(path, "wb")
            with out as handle:  # one row per line, streamed
                handle.write(start)
                for i, row in enumerate(_safe_rows(rows)):
                    handle.write((b",\n" if i else b"") + orjson.dumps(dict(zip(header, row))))
                handle.write(b"\n]}\n")
        written.append(out.path)  # the name claimed (another run may have taken ``path`` meanwhile)
    return written
