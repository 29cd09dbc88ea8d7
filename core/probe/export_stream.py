"""Exporters that also write a report a window of rows at a time (streamed compares).

An exporter streams when it has ``open_stream(result, path)``: ``result`` holds everything
but the rows; the returned stream takes ``write(window)`` for each window of judged rows in
order, then ``close(result, summary)`` (the files written) or ``abort()`` (nothing is left).
The bytes equal those of ``write`` on the whole result: CSV parts past the row limit are cut
where the whole report would cut them; a JSON or xlsx report, which needs the totals first,
spools its rows to a temporary file and is assembled at ``close``.

A stream may also take a window's bytes rendered elsewhere (:mod:`probe.window_render`):
``render(window, file)`` writes them to ``file`` (any process, no stream state involved) and
``append(file, rows)`` adds them in order in place of ``write``; ``fits(rows)`` tells beforehand
whether it can (else the caller renders the window itself and calls ``write``).
"""

from __future__ import annotations

import marshal
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from probe.exporters import CsvExporter, JsonExporter, XlsxExporter, csv_body, csv_header
from probe.io import AtomicFile, atomic_write, open_temp, temp_file
from probe.model import Summary
from probe.result import CompareResult


class CsvStream:
    """A CSV report written as windows arrive; ``_part_N`` files past ``max_rows`` rows."""

    def __init__(self, result: CompareResult, path: Path, max_rows: int) -> None:
        self.path = path
        self.max_rows = max_rows
        self.parts: list[AtomicFile] = []
        self.handle: Any = None
        self.in_part = 0
        self.shell = result

    def _part_path(self, index: int) -> Path:
        return self.path.with_name(f"{self.path.stem}_part_{index}{self.path.suffix}")

    def _next_part(self) -> None:
        if self.parts:
            if len(self.parts) == 1:  # a second part: the first one is a part too
                self.parts[0].requested = self._part_path(1)
            self.handle.close()
        out = atomic_write(self.path if not self.parts else self._part_path(len(self.parts) + 1),
                           "w", encoding="utf-8", newline="")
        self.parts.append(out)
        self.handle = out.__enter__()
        csv_header(self.handle, self.shell)
        self.in_part = 0

    def write(self, result: CompareResult) -> None:
        records = result.records
        start = 0
        while start < len(records):
            if self.handle is None or self.in_part == self.max_rows:
                self._next_part()
            take = min(len(records) - start, self.max_rows - self.in_part)
            part = result if take == len(records) else replace(result, records=records[start:start + take])
            csv_body(self.handle, part)
            self.in_part += take
            start += take

    def render(self, result: CompareResult, file: Path) -> None:
        with open(file, "w", encoding="utf-8", newline="") as handle:
            csv_body(handle, result)

    def fits(self, rows: int) -> bool:
        """Whether a window of ``rows`` rows goes in whole (no part ends inside it)."""
        used = 0 if self.handle is None or self.in_part == self.max_rows else self.in_part
        return not rows or used + rows <= self.max_rows

    def append(self, file: Path, rows: int) -> bool:
        """Add a rendered window of ``rows`` rows; ``False`` when a part ends inside it."""
        if not rows:
            return True
        if not self.fits(rows):
            return False
        if self.handle is None or self.in_part == self.max_rows:
            self._next_part()
        self.handle.flush()  # the text layer's pending lines go first
        _copy(file, self.handle.buffer)
        self.in_part += rows
        return True

    def close(self, result: CompareResult, summary: Summary) -> list[Path]:
        written = []
        for out in self.parts:
            out.__exit__(None, None, None)
            written.append(out.path)
        return written

    def abort(self) -> None:
        error = RuntimeError("streamed compare abandoned")
        for out in self.parts:
            out.__exit__(type(error), error, None)
        self.parts = []


class _Spool:
    """Rows kept in a temporary file beside the report until the totals are known."""

    def __init__(self, path: Path) -> None:
        self.file = temp_file(path, ".rows")
        self.handle = open_temp(self.file, "wb")
        self.count = 0

    def add(self, rows: list[Any]) -> None:
        marshal.dump(rows, self.handle)
        self.count += len(rows)

    def rows(self) -> Iterator[list[Any]]:
        """Every row added, in order (the file holds only what :meth:`add` wrote)."""
        self.handle.close()
        with open(self.file, "rb") as source:
            while True:
                try:
                    chunk = marshal.load(source)
                except EOFError:
                    return
                yield from chunk

    def drop(self) -> None:
        self.handle.close()
        try:
            os.unlink(self.file)
        except FileNotFoundError:
            pass


class XlsxStream:
    """An xlsx report: rows spooled, the workbook written at ``close`` when its size is known."""

    def __init__(self, exporter: XlsxExporter, result: CompareResult, path: Path) -> None:
        self.exporter, self.path, self.columns = exporter, path, result.columns
        self.spool = _Spool(path)

    def write(self, result: CompareResult) -> None:
        self.spool.add(list(self.exporter.cells(result)))

    def render(self, result: CompareResult, file: Path) -> None:
        with open(file, "wb") as handle:
            marshal.dump(list(self.exporter.cells(result)), handle)

    def fits(self, rows: int) -> bool:
        return True

    def append(self, file: Path, rows: int) -> bool:
        _copy(file, self.spool.handle)
        self.spool.count += rows
        return True

    def close(self, result: CompareResult, summary: Summary) -> list[Path]:
        try:
            return self.exporter.write_rows(self.path, self.columns, self.spool.rows(), self.spool.count)
        finally:
            self.spool.drop()

    def abort(self) -> None:
        self.spool.drop()


class JsonStream:
    """A JSON report: rows written to a temporary body, the head (with the summary) put before it at ``close``."""

    def __init__(self, result: CompareResult, path: Path) -> None:
        self.path = path
        self.body = temp_file(path, ".rows")
        self.handle = open_temp(self.body, "wb")
        self.first = True

    def write(self, result: CompareResult) -> None:
        if result.records:
            self.handle.writelines(JsonExporter.lines(result, self.first))
            self.first = False

    def render(self, result: CompareResult, file: Path) -> None:
        with open(file, "wb") as handle:
            handle.writelines(JsonExporter.lines(result, False))

    def fits(self, rows: int) -> bool:
        return True

    def append(self, file: Path, rows: int) -> bool:
        if rows:
            _copy(file, self.handle, len(b",\n") if self.first else 0)
            self.first = False
        return True

    def close(self, result: CompareResult, summary: Summary) -> list[Path]:
        self.handle.close()
        try:
            out = atomic_write(self.path, "wb")
            with out as handle, open(self.body, "rb") as body:
                handle.write(JsonExporter.head(result, summary))
                shutil.copyfileobj(body, handle, 1 << 20)
                handle.write(JsonExporter.TAIL)
        finally:
            os.unlink(self.body)
        return [out.path]

    def abort(self) -> None:
        self.handle.close()
        try:
            os.unlink(self.body)
        except FileNotFoundError:  # closed already
            pass


def _copy(file: Path, handle: Any, skip: int = 0) -> None:
    """Append the bytes of ``file`` (less its first ``skip``) to the binary ``handle`` (flushed
    first; copied inside the kernel where the system allows it)."""
    handle.flush()
    with open(file, "rb") as source:
        source.seek(skip)
        left = os.fstat(source.fileno()).st_size - skip
        try:
            while left > 0:
                done = os.copy_file_range(source.fileno(), handle.fileno(), left)
                if not done:
                    break
                left -= done
        except (AttributeError, OSError):  # no copy_file_range here: copy through this process
            pass
        if left > 0:
            shutil.copyfileobj(source, handle, 1 << 20)


class StreamingCsvExporter(CsvExporter):
    """The CSV exporter, able to write a streamed compare's report."""

    def open_stream(self, result: CompareResult, path: Path) -> CsvStream:
        return CsvStream(result, path, self.max_rows)


class StreamingXlsxExporter(XlsxExporter):
    """The xlsx exporter, able to write a streamed compare's report (by default only for dumps this
    large: the workbook is assembled row by row from the spool, where a whole write renders columns)."""

    stream_min_bytes = 512 << 20

    def open_stream(self, result: CompareResult, path: Path) -> XlsxStream:
        return XlsxStream(self, result, path)


class StreamingJsonExporter(JsonExporter):
    """The JSON exporter, able to write a streamed compare's report."""

    def open_stream(self, result: CompareResult, path: Path) -> JsonStream:
        return JsonStream(result, path)
