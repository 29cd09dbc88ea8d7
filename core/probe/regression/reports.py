"""Read compare reports back (probe's or msProbe's): CSV (also gzipped), xlsx, probe's JSON.

Reports are hostile input: rows are streamed (never the whole file in memory), cells and
lines are capped, an xlsx is checked for decompression bombs before it is opened, and every
problem is one :class:`InputError` naming the file.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from probe.errors import InputError

NAME_COLUMN = "NPU Name"
BENCH_COLUMN = "Bench Name"
RESULT_COLUMN = "Result"
MAX_CELL = 16 << 20
"""Longest CSV cell / JSON line accepted (stack texts are long, but not this long)."""
MAX_JSON_DOCUMENT = 64 << 20
"""A JSON report not in probe's one-row-per-line layout is parsed whole only below this size."""
MAX_XLSX_MEMBER = 4 << 30
MAX_XLSX_RATIO = 200
"""An xlsx member inflating more than this many times (and past 16 MiB) is refused as a bomb."""
REPORT_SUFFIXES = (".csv", ".csv.gz", ".xlsx", ".json")
_STAMP = re.compile(r"_\d{14}(?:_\d+)?$")


@dataclass
class Report:
    """A readable report: its header and a way to stream its rows as ``{column: text}``."""

    path: Path
    columns: list[str]

    def select(self, columns: list[str]) -> Iterator[tuple[str, ...]]:
        """Only ``columns`` of every row, as tuples of text (``""`` where a row lacks one)."""
        suffix = report_suffix(self.path)
        if suffix in (".csv", ".csv.gz"):
            yield from _csv_select(self.path, columns)
        elif suffix == ".xlsx":
            for row in _xlsx_rows(self.path):
                yield tuple(row.get(c, "") for c in columns)
        else:
            for raw in _json_objects(self.path):
                yield tuple(_json_value(raw.get(c)) for c in columns)

    def rows(self) -> Iterator[dict[str, str]]:
        """Every row, as text cells (numbers of xlsx/JSON reports turned into text)."""
        suffix = report_suffix(self.path)
        if suffix in (".csv", ".csv.gz"):
            yield from _csv_rows(self.path)
        elif suffix == ".xlsx":
            yield from _xlsx_rows(self.path)
        else:
            for raw in _json_objects(self.path):
                yield {str(k): _json_value(v) for k, v in raw.items()}


def report_suffix(path: Path) -> str:
    """``.csv``, ``.csv.gz``, ``.xlsx`` or ``.json`` (``""`` for anything else)."""
    name = path.name.lower()
    return next((s for s in REPORT_SUFFIXES if name.endswith(s)), "")


def report_stem(path: Path) -> str:
    """The file name without suffix and timestamp: ``compare_result_rank0_20260101120000.csv`` ->
    ``compare_result_rank0``."""
    name = path.name[: len(path.name) - len(report_suffix(path))] if report_suffix(path) else path.stem
    part = re.search(r"_part_\d+$", name)
    if part:
        name = name[: part.start()]
    return _STAMP.sub("", name) + (part.group(0) if part else "")


def open_report(path: Path) -> Report:
    """Open ``path`` and read its header; one-line :class:`InputError` when it is no report."""
    if not path.is_file():
        raise InputError("does not exist or is not a file", path)
    suffix = report_suffix(path)
    if not suffix:
        raise InputError("is not a report (expected .csv, .csv.gz, .xlsx or .json)", path)
    try:
        columns = next(_headers(path, suffix))
    except StopIteration:
        raise InputError("is empty: no header row", path) from None
    if NAME_COLUMN not in columns:
        raise InputError(f"has no {NAME_COLUMN!r} column: not a compare report", path)
    return Report(path, columns)


def _headers(path: Path, suffix: str) -> Iterator[list[str]]:
    if suffix in (".csv", ".csv.gz"):
        with _open_text(path) as handle:
            reader = csv.reader(handle)
            try:
                header = next(reader)
            except StopIteration:
                return
            except (csv.Error, UnicodeDecodeError, OSError, EOFError) as exc:
                raise InputError(f"is not a readable CSV ({_short(exc)})", path) from None
            yield [h.strip() for h in header]
    elif suffix == ".xlsx":
        for row in _xlsx_sheet_rows(path, header_only=True):
            yield row
            return
    else:
        head, _ = _json_head(path)
        yield [str(c) for c in head.get("columns", [])]


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]


def _open_text(path: Path) -> Any:
    csv.field_size_limit(MAX_CELL)
    if path.name.lower().endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _csv_rows(path: Path) -> Iterator[dict[str, str]]:
    with _open_text(path) as handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
            width = len(header)
            for line in reader:
                if not line:
                    continue
                if len(line) > width:
                    raise InputError(f"line {reader.line_num} has {len(line)} cells, the header {width}", path)
                yield dict(zip(header, line))
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError, OSError, EOFError) as exc:
            raise InputError(f"is not a readable CSV ({_short(exc)})", path) from None


def _csv_select(path: Path, columns: list[str]) -> Iterator[tuple[str, ...]]:
    with _open_text(path) as handle:
        reader = csv.reader(handle)
        try:
            header = [h.strip() for h in next(reader)]
            width = len(header)
            where = [header.index(c) if c in header else None for c in columns]
            for line in reader:
                if not line:
                    continue
                if len(line) > width:
                    raise InputError(f"line {reader.line_num} has {len(line)} cells, the header {width}", path)
                size = len(line)
                yield tuple(line[i] if i is not None and i < size else "" for i in where)
        except StopIteration:
            return
        except (csv.Error, UnicodeDecodeError, OSError, EOFError) as exc:
            raise InputError(f"is not a readable CSV ({_short(exc)})", path) from None


def _check_xlsx(path: Path) -> None:
    """Refuse an xlsx that is no zip, or whose members would inflate absurdly."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.file_size > MAX_XLSX_MEMBER or (
                    info.file_size > 16 << 20 and info.file_size > MAX_XLSX_RATIO * max(1, info.compress_size)
                ):
                    raise InputError(f"member {info.filename!r} would inflate to {info.file_size} bytes: refused", path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(f"is not a readable xlsx ({_short(exc)})", path) from None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def _xlsx_sheet_rows(path: Path, header_only: bool = False) -> Iterator[list[str]]:
    """Rows of every sheet (each sheet starts with its header row), as text."""
    _check_xlsx(path)
    try:
        from openpyxl import load_workbook
    except ImportError:  # pragma: no cover - openpyxl is a test/runtime extra
        raise InputError("reading xlsx reports needs openpyxl (pip install openpyxl)", path) from None
    try:
        book = load_workbook(path, read_only=True, data_only=True)
        try:
            for sheet in book.worksheets:
                for row in sheet.iter_rows(values_only=True):
                    yield [_text(v) for v in row]
                    if header_only:
                        return
        finally:
            book.close()
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - openpyxl raises many kinds on a broken file
        raise InputError(f"is not a readable xlsx ({_short(exc)})", path) from None


def _xlsx_rows(path: Path) -> Iterator[dict[str, str]]:
    header: list[str] | None = None
    for row in _xlsx_sheet_rows(path):
        if header is None or (row and row[0].strip() == NAME_COLUMN):
            header = [h.strip() for h in row]  # every part sheet starts with the header
            continue
        if any(row):
            yield dict(zip(header, row))


def _json_head(path: Path) -> tuple[dict[str, Any], bool]:
    """The head object of a JSON report, and whether it is in probe's streamed layout."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(MAX_CELL)
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path) from None
    marker = b', "rows": [\n'
    if first.endswith(marker):
        try:
            head = orjson.loads(first[: -len(marker)] + b"}")
        except orjson.JSONDecodeError:
            head = None
        if isinstance(head, dict):
            return head, True
    doc = _json_document(path)
    return doc, False


def _json_document(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_JSON_DOCUMENT:
        raise InputError(f"is a JSON report over {MAX_JSON_DOCUMENT >> 20} MiB not in probe's streamed layout", path)
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON ({_short(exc)})", path) from None
    if isinstance(doc, list):
        doc = {"rows": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise InputError("is not a compare report (no \"rows\" list)", path)
    if "columns" not in doc:
        first = next((r for r in doc["rows"] if isinstance(r, dict)), {})
        doc["columns"] = list(first)
    return doc


def _json_value(value: Any) -> str:
    if value is None:
        return ""
    if value.__class__ is str:
        return value
    if isinstance(value, (dict, list)):
        return orjson.dumps(value).decode()
    return _text(value)


def _json_objects(path: Path) -> Iterator[dict[str, Any]]:
    """The row objects of a JSON report, as parsed."""
    head, streamed = _json_head(path)
    if not streamed:
        for row in head["rows"]:
            if not isinstance(row, dict):
                raise InputError("has a row that is not an object", path)
            yield row
        return
    with open(path, "rb") as handle:
        handle.readline(MAX_CELL)
        for number, line in enumerate(handle, start=2):
            if len(line) >= MAX_CELL:
                raise InputError(f"line {number} is longer than {MAX_CELL >> 20} MiB", path)
            text = line.strip()
            if text in (b"]}", b""):
                continue
            try:
                row = orjson.loads(text.rstrip(b","))
            except orjson.JSONDecodeError as exc:
                raise InputError(f"line {number} is not valid JSON ({_short(exc)})", path) from None
            if not isinstance(row, dict):
                raise InputError(f"line {number} is not an object", path)
            yield row


def find_reports(directory: Path) -> dict[str, Path]:
    """Compare reports under ``directory`` by ``sub/folder/stem`` (one file per report).

    A report written in several formats is read once (CSV first, then JSON, then xlsx); of
    several runs of the same report the newest timestamp wins. N-way combined reports,
    diffs and other files are left out.
    """
    preference = {".csv": 0, ".csv.gz": 1, ".json": 2, ".xlsx": 3}
    chosen: dict[str, tuple[tuple[int, str], Path]] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue  # never follow a link out of the directory
        suffix = report_suffix(path)
        stem = report_stem(path)
        if not suffix or not ("compare_result" in stem or stem.startswith("msprobe_cmp_report")):
            continue
        relative = path.parent.relative_to(directory).as_posix()
        key = stem if relative == "." else f"{relative}/{stem}"
        stamp = re.search(r"_(\d{14})(?:_\d+)?(?:_part_\d+)?$", path.name[: len(path.name) - len(suffix)])
        rank = (-(int(stamp.group(1)) if stamp else 0), preference[suffix]), path.name
        if key not in chosen or rank < chosen[key][0]:
            chosen[key] = (rank, path)
    return {key: path for key, (_, path) in chosen.items()}
