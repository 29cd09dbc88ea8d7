"""Write a zip archive whose large members are deflated on a second thread while being produced.

``zipfile`` compresses on the thread that writes, and a member streamed into it must decide
on ZIP64 records before its size is known. Here a streamed member is deflated by a worker
thread (zlib, or ISA-L when the ``isal`` wheel is installed; both release the GIL) into an
anonymous spool file; once complete, its local header is written with the exact CRC and
sizes and the compressed bytes are copied after it, so ZIP64 records appear only for
members or offsets that need them, as with ``zipfile.write``.

    with ZipStream(path) as archive:
        with archive.member("big.xml") as out:
            out.write(b"...")          # called many times, large chunks
        archive.add("small.xml", b"...")
"""

from __future__ import annotations

import queue
import shutil
import struct
import tempfile
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO

try:  # ISA-L's deflate (the optional ``isal`` wheel): the same format, about 4x faster at level 1
    from isal import isal_zlib as _deflate

    _MAX_LEVEL = _deflate.ISAL_BEST_COMPRESSION
except ImportError:  # pragma: no cover - depends on the environment
    _deflate = zlib
    _MAX_LEVEL = 9

ZIP64_LIMIT = (1 << 31) - 1  # as zipfile: past this, sizes and offsets go into ZIP64 records
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END64 = struct.Struct("<IQHHIIQQQQ")
_LOCATOR64 = struct.Struct("<IIQI")
_END = struct.Struct("<IHHHHIIH")
_MAX32 = 0xFFFFFFFF
_DEFLATED = 8


@dataclass
class _Entry:
    name: bytes
    crc: int
    size: int
    compressed: int
    offset: int


class _Deflater(threading.Thread):
    """Deflates the chunks put into ``chunks`` into ``spool`` (raw deflate), counting CRC and size."""

    def __init__(self, spool: IO[bytes], level: int) -> None:
        super().__init__(name="zip-deflate", daemon=True)
        self.spool = spool
        self.chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=4)
        self.compressor = _deflate.compressobj(level, zlib.DEFLATED, -15)
        self.crc = 0
        self.size = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        get, write, compress = self.chunks.get, self.spool.write, self.compressor.compress
        crc32 = _deflate.crc32
        while (chunk := get()) is not None:
            if self.error is not None:
                continue  # keep draining so the producer never blocks
            try:
                self.crc = crc32(chunk, self.crc)
                self.size += len(chunk)
                write(compress(chunk))
            except BaseException as exc:  # reported by the producer
                self.error = exc
        if self.error is None:
            try:
                write(self.compressor.flush())
            except BaseException as exc:
                self.error = exc


class MemberWriter:
    """File-like object of a streamed member: ``write(bytes)`` hands the chunk to the deflater."""

    def __init__(self, deflater: _Deflater) -> None:
        self._deflater = deflater

    def write(self, data: bytes) -> int:
        if self._deflater.error is not None:
            raise self._deflater.error
        if data:
            self._deflater.chunks.put(data)
        return len(data)


class ZipStream:
    """A zip archive written front to back; members are deflated (level ``compresslevel``)."""

    def __init__(self, path: Path, compresslevel: int = 1) -> None:
        self.path = Path(path)
        self.level = min(compresslevel, _MAX_LEVEL)
        self._file: IO[bytes] = open(self.path, "wb")
        self._entries: list[_Entry] = []
        self._date_time = _dos_time(time.localtime())

    def __enter__(self) -> ZipStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()

    def abort(self) -> None:
        """Close the file without a central directory (the caller discards it)."""
        self._file.close()

    def add(self, name: str, data: bytes) -> None:
        """A member from bytes in memory."""
        compressor = _deflate.compressobj(self.level, zlib.DEFLATED, -15)
        packed = compressor.compress(data) + compressor.flush()
        self._local_header(name.encode(), _deflate.crc32(data), len(data), len(packed))
        self._file.write(packed)

    @contextmanager
    def member(self, name: str) -> Iterator[MemberWriter]:
        """A member streamed through ``write``; deflated on a worker thread while written."""
        with tempfile.TemporaryFile(dir=self.path.parent) as spool:
            deflater = _Deflater(spool, self.level)
            deflater.start()
            try:
                yield MemberWriter(deflater)
            finally:
                deflater.chunks.put(None)
                deflater.join()
            if deflater.error is not None:
                raise deflater.error
            compressed = spool.tell()
            spool.seek(0)
            self._local_header(name.encode(), deflater.crc, deflater.size, compressed)
            shutil.copyfileobj(spool, self._file, 1 << 20)

    def _local_header(self, name: bytes, crc: int, size: int, compressed: int) -> None:
        offset = self._file.tell()
        zip64 = size > ZIP64_LIMIT or compressed > ZIP64_LIMIT
        extra = struct.pack("<HHQQ", 1, 16, size, compressed) if zip64 else b""
        self._file.write(_LOCAL.pack(
            0x04034B50, 45 if zip64 else 20, 0, _DEFLATED, *self._date_time, crc,
            _MAX32 if zip64 else compressed, _MAX32 if zip64 else size, len(name), len(extra),
        ) + name + extra)
        self._entries.append(_Entry(name, crc, size, compressed, offset))

    def close(self) -> None:
        """Write the central directory (with ZIP64 end records when needed) and close the file."""
        out = self._file
        start = out.tell()
        for entry in self._entries:
            fields = []
            size, compressed, offset = entry.size, entry.compressed, entry.offset
            if size > ZIP64_LIMIT:
                fields.append(size)
                size = _MAX32
            if compressed > ZIP64_LIMIT:
                fields.append(compressed)
                compressed = _MAX32
            if offset > ZIP64_LIMIT:
                fields.append(offset)
                offset = _MAX32
            extra = struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields) if fields else b""
            version = 45 if fields else 20
            out.write(_CENTRAL.pack(
                0x02014B50, version | 3 << 8, version, 0, _DEFLATED, *self._date_time, entry.crc,
                compressed, size, len(entry.name), len(extra), 0, 0, 0, 0o100644 << 16, offset,
            ) + entry.name + extra)
        end = out.tell()
        count, length = len(self._entries), end - start
        if count > 0xFFFF or start > ZIP64_LIMIT or length > ZIP64_LIMIT:
            out.write(_END64.pack(0x06064B50, 44, 45 | 3 << 8, 45, 0, 0, count, count, length, start))
            out.write(_LOCATOR64.pack(0x07064B50, 0, end, 1))
            out.write(_END.pack(0x06054B50, 0, 0, min(count, 0xFFFF), min(count, 0xFFFF),
                                min(length, _MAX32), min(start, _MAX32), 0))
        else:
            out.write(_END.pack(0x06054B50, 0, 0, count, count, length, start, 0))
        out.close()


def _dos_time(moment: time.struct_time) -> tuple[int, int]:
    """(time, date) fields of a zip header."""
    year = max(moment.tm_year, 1980)
    return (
        moment.tm_hour << 11 | moment.tm_min << 5 | moment.tm_sec // 2,
        (year - 1980) << 9 | moment.tm_mon << 5 | moment.tm_mday,
    )
