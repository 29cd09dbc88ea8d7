"""Fast, strict loading of user files: JSON, YAML and CSV (regular files only, bounded, one-line errors)."""

from __future__ import annotations

import csv
import json
import mmap
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

import probe.runtime as runtime
from probe.errors import InputError


def read_json(path: Path) -> Any:
    """Parse a JSON file; accepts the ``NaN``/``Infinity`` tokens msProbe's dumper writes.

    orjson is tried first (fast); files with the non-standard tokens fall back to the
    standard library parser. Errors become a one-line :class:`InputError` naming the file.
    """
    return parse_json(_read_bytes(path), path)


MAX_JSON_BYTES = 10 << 30
"""Larger JSON files are refused before reading (msProbe's own limit)."""
MAX_WHOLE_JSON_BYTES = 1 << 30
"""JSON files parsed as one document (not piece by piece) are refused past this size: the
parsed tree takes about three times the file's size in memory."""
MAX_TEXT_BYTES = 64 << 20
"""Larger YAML (mapping, config) files are refused before reading."""
MAP_BYTES = 64 << 20
"""Files at least this large are memory-mapped rather than read (page cache, not process memory)."""


def open_regular(path: Path, what: str = "file") -> int:
    """Open ``path`` for reading if it is a regular file; a file descriptor, else an :class:`InputError`.

    Opened non-blocking so that a FIFO cannot hang the open; devices, FIFOs, sockets and
    directories are refused by their type before anything is read.
    """
    return open_regular_stat(path, what)[0]


def open_regular_stat(path: Path, what: str = "file", blocking: bool = True) -> tuple[int, os.stat_result]:
    """:func:`open_regular`, with the ``fstat`` of the opened file (its size without another call).

    ``blocking=False`` leaves ``O_NONBLOCK`` set, two system calls fewer, for callers that
    only ``pread`` the file (regular files ignore the flag, see open(2)).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("file does not exist", path) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected a {what}", path) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"is a directory, expected a {what}", path)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"is not a regular file (a device, FIFO or socket), expected a {what}", path)
        if blocking:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_regular(path: Path, limit: int, what: str = "file") -> bytes | mmap.mmap:
    """The bytes of the regular file ``path`` (memory-mapped when large); refused past ``limit`` bytes."""
    fd = open_regular(path, what)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise InputError(f"is too large ({_size(size)}; the limit is {_size(limit)})", path)
        if size >= MAP_BYTES:
            return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path) from None
    finally:
        os.close(fd)


def read_text(path: Path, what: str = "text file", limit: int = MAX_TEXT_BYTES) -> str:
    """A small UTF-8 text file (regular files only, at most ``limit`` bytes)."""
    raw = read_regular(path, limit, what)
    try:
        return bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"is not UTF-8 text (byte {exc.start})", path) from None


CSV_FIELD_BYTES = 128 << 10
"""The longest CSV field accepted by default (the csv module's own default limit)."""


def csv_rows(path: Path, field_limit: int = CSV_FIELD_BYTES, what: str = "CSV file") -> Iterator[list[str]]:
    """The rows of a UTF-8 CSV file, streamed; a bad byte, an over-long field or a broken
    quote is a one-line :class:`InputError` naming the file and the line."""
    fd = open_regular(path, what)
    with open(fd, newline="", encoding="utf-8", errors="strict") as handle:
        csv.field_size_limit(field_limit)
        reader = csv.reader(handle)
        try:
            yield from reader
        except UnicodeDecodeError:
            raise InputError("is not UTF-8 text", path) from None
        except csv.Error as exc:
            raise InputError(f"is not valid CSV (line {reader.line_num}: {exc})", path) from None
        except OSError as exc:
            raise InputError(f"cannot be read ({exc.strerror})", path) from None


def available_memory() -> int | None:
    """Bytes of memory this machine can still give (``MemAvailable``); ``None`` when unknown."""
    try:
        with open("/proc/meminfo", "rb") as handle:
            for line in handle:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _size(count: int) -> str:
    return f"{count / (1 << 30):.1f} GiB" if count >= 1 << 30 else f"{count / (1 << 20):.1f} MiB"


def _read_bytes(path: Path) -> bytes | mmap.mmap:
    """The bytes of a JSON file; a missing, unreadable, non-regular or empty file is an :class:`InputError`."""
    raw = read_regular(path, MAX_JSON_BYTES, "JSON file")
    if not raw[:4096].strip() and re.search(rb"\S", raw) is None:
        raise InputError("is empty", path)
    return raw


HEAD_BYTES = 1 << 20
"""The member read piece by piece must open within this many bytes (msProbe writes it last)."""
CHUNK_BYTES = 256 << 10
"""Size of the pieces :func:`read_json_member` and :func:`object_parts` parse one at a time. Small
pieces keep each parsed tree in the CPU caches while it is turned into rows (0.64 s instead of
0.78 s for a 43 MB dump.json with 8 MB pieces) and little memory is held by trees at any time."""
MEMBER_START = b'\n "'
"""Where a member of a top-level object starts in the ``indent=1`` layout ``json.dump`` writes."""
ENTRY_START = b'\n  "'
"""Where a member of a top-level object's member (an entry of dump.json's ``data``) starts."""
_BLANKS = b" \t\n\r"
"""JSON's whitespace (``bytes.strip`` would also take vertical tabs and form feeds)."""
_NONBLANK = re.compile(rb"[^ \t\n\r]")


def cuts(raw: Any, begin: int, end: int, marker: bytes, size: int) -> Iterator[tuple[int, int]]:
    """Consecutive spans ``(start, stop)`` that cover ``raw[begin:end]``, each cut just before a
    ``marker``: the last one that keeps the span within ``size`` bytes, or the first after that
    when a member is longer; the last span ends at ``end``.

    In the ``indent=1`` layout, with the marker that starts a member at the object's indentation
    (:data:`MEMBER_START`, :data:`ENTRY_START`), each span is a run of whole members: JSON text holds
    no raw newline inside a string, so the marker occurs nowhere else. :func:`parse_run` parses one.
    """
    reach = len(marker)
    while end - begin > size:
        cut = raw.rfind(marker, begin + 1, min(begin + size + reach, end))
        if cut < 0:
            cut = raw.find(marker, begin + size, end)
            if cut < 0:
                break
        yield begin, cut
        begin = cut
    yield begin, end


def parse_run(raw: Any, start: int, stop: int, comma: bool) -> dict[str, Any] | None:
    """The members in ``raw[start:stop]`` (a span of :func:`cuts`) parsed as one object, in file order
    (:func:`run_text`); ``None`` when they do not parse so."""
    text = run_text(raw, start, stop, comma)
    part = None if text is None else parse_piece(text)
    return part if isinstance(part, dict) else None


def run_text(raw: Any, start: int, stop: int, comma: bool) -> bytes | None:
    """The members in ``raw[start:stop]`` (a span of :func:`cuts`) as the text of one object, copied once.

    ``comma``: more members follow the span, so it ends with a comma (then JSON blanks). ``None`` when
    the text is anything else (another layout, a comma without a member before it); bad JSON is left to
    the parser. A caller that cannot take a run reads the whole file, so every run it takes is a slice
    of a document that parses whole.
    """
    while stop > start and raw[stop - 1] in _BLANKS:
        stop -= 1
    if comma:
        if stop <= start or raw[stop - 1] != 0x2C:  # ","
            return None
        stop -= 1
        if _NONBLANK.search(raw, start, stop) is None:  # "{," does not parse whole
            return None
    return b"".join((b"{", memoryview(raw)[start:stop], b"}"))


def parse_piece(piece: bytes) -> Any:
    """A piece of JSON text parsed (``NaN``/``Infinity`` tokens too); ``None`` when it does not parse.

    The standard parser, for the tokens orjson refuses, reads the text as UTF-8 (given bytes, it
    would guess UTF-16 or UTF-32 from null bytes), as it reads a whole file that opens with ``{``."""
    try:
        return orjson.loads(piece)
    except orjson.JSONDecodeError:
        try:  # NaN/Infinity tokens: the standard parser reads them
            return json.loads(piece.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            return None


class MemberMisplaced(Exception):
    """The text is not laid out as a piece-by-piece read needs (see :func:`object_parts`), or iterating
    a member read with ``exact=False`` found that the member does not close at the file's last
    ``\n }`` (see :func:`read_json_member`): read the file otherwise."""


def read_json_member(path: Path, key: str, exact: bool = True) -> tuple[Any, Iterator[tuple[str, Any]] | None]:
    """Parse a JSON object file whose member ``key`` is a large object, piece by piece.

    Returns the document with ``key`` mapped to an empty object, and an iterator over the
    member's ``(name, value)`` pairs in file order that parses about :data:`CHUNK_BYTES`
    at a time (:func:`cuts`, :func:`parse_run`), so the parsed tree of the whole member never
    exists at once (for a 175 MB dump.json that tree is several hundred MB). This needs the
    layout ``json.dump(..., indent=1)`` writes, as msProbe's dumper does: the member opens with
    ``\n "key": {``, each of its names starts a line indented by two spaces and it closes
    with ``\n }``. JSON text holds no raw newline inside a string, so those markers are unambiguous.

    For any other layout, the iterator is ``None`` and the document is parsed whole, as
    :func:`read_json` does. If a piece turns out not to parse, the whole file is parsed
    after all (reporting the error, or continuing with the remaining names). A name that
    a later piece repeats (a whole read would keep it once, with its last value, at its
    first place) is an :class:`InputError`.

    ``exact=False`` takes the member to close at the file's *last* ``\n }`` (it is the last
    member, as msProbe writes it) instead of scanning the whole file for the first one. Every
    piece then parses only if that is so (a member closing inside a piece leaves text after
    the piece's object); when a piece does not parse and the first ``\n }`` is elsewhere,
    iterating raises :class:`MemberMisplaced`, and the caller reads again with ``exact=True``.
    """
    raw = _read_bytes(path)
    span = member_span(raw, key, not exact)
    if span is not None:
        body, end = span
        try:
            doc = orjson.loads(raw[:body] + raw[end:])  # the member left empty
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and doc.get(key) == {}:
            if exact:
                _release(raw, 0, len(raw))  # finding the member's end read every page
            return doc, _member_entries(raw, body, end, path, key, exact)
    return parse_json(raw, path), None


def member_span(raw: bytes | mmap.mmap, key: str, last: bool = False) -> tuple[int, int] | None:
    """Where the member ``key`` (a non-empty object) of an ``indent=1`` JSON file opens and
    closes: ``(end of its opening brace, start of its closing brace)``; ``None`` for another
    layout. ``last``: the member is taken to close at the file's last ``\n }`` (see
    :func:`read_json_member`), found without reading the file."""
    marker = b'\n "' + key.encode() + b'": {'
    start = raw.find(marker, 0, HEAD_BYTES)
    if start < 0:
        return None
    body = start + len(marker)
    end = raw.rfind(b"\n }", body) if last else raw.find(b"\n }", body)
    if end < 0 or raw[body : body + 4] != ENTRY_START:  # an empty member is not worth it
        return None
    return body, end


def _member_entries(raw: bytes | mmap.mmap, body: int, end: int, path: Path, key: str,
                    exact: bool) -> Iterator[tuple[str, Any]]:
    """Yield the entries of the member ``raw[body:end]`` piece by piece (see :func:`read_json_member`)."""
    taken = released = 0
    seen: set[str] = set()
    for begin, stop in cuts(raw, body, end, ENTRY_START, CHUNK_BYTES):
        released = _release(raw, released, begin)
        if stop - begin > MAX_WHOLE_JSON_BYTES:
            raise InputError(f"has an entry too large to parse ({_size(stop - begin)} from byte {begin})", path)
        part = parse_run(raw, begin, stop, stop < end)
        if part is None:
            if not exact and raw.find(b"\n }", body) != end:
                raise MemberMisplaced(str(path))
            # NaN tokens or an unusual layout: parse everything and go on after the
            # entries already given (a real syntax error is reported by parse_json)
            doc = parse_json(raw, path)
            member = doc.get(key) if isinstance(doc, dict) else None
            if not isinstance(member, dict):
                raise InputError(f"is not an msProbe dump ('{key}' is not an object)", path)
            for name in list(member)[taken:]:
                yield name, member.pop(name)
            return
        if not seen.isdisjoint(part):
            name = next(name for name in part if name in seen)
            raise InputError(f"has the entry {name!r} twice in '{key}'", path)
        seen.update(part)
        yield from part.items()  # the piece's tree goes as a whole when the next one comes
        taken += len(part)


def object_parts(path: Path, piece: int = CHUNK_BYTES) -> Iterator[dict[str, Any]]:
    """The JSON object file ``path`` as dicts of its consecutive members, in file order, parsed about
    ``piece`` bytes of text at a time (:func:`cuts`, :func:`parse_run` over blocks of
    :data:`_BLOCK_PIECES` pieces read into one buffer: no copy of the whole file, and each run's
    objects made while its text is in the CPU caches); merged in order (``dict.update``), they are
    what :func:`read_json` gives. This needs the layout ``json.dump(..., indent=1)`` writes: each
    member starts a line ``\n "``. Iterating raises :class:`MemberMisplaced` when the text is laid out
    otherwise, does not parse piece by piece, is empty or larger than :func:`read_json` parses (then
    :func:`read_json` decides), :class:`InputError` when the file is not a regular file or cannot be read."""
    fd, info = open_regular_stat(path, "JSON file")
    try:
        if info.st_size > MAX_WHOLE_JSON_BYTES:
            raise MemberMisplaced(str(path))
        with open(fd, "rb", buffering=0, closefd=False) as handle:
            yield from _object_runs(handle, piece, path)
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path) from None
    finally:
        os.close(fd)


def _object_runs(handle: Any, piece: int, path: Path) -> Iterator[dict[str, Any]]:
    """:func:`object_parts` of the file open as ``handle`` (unbuffered)."""
    block = _BLOCK_PIECES * piece
    text = bytearray(block + piece)
    have, begin = 0, -1  # bytes in the buffer; where its members start (-1: before the opening brace)
    while True:
        if len(text) < have + block:
            if have > _CARRIED * piece:  # one line, or members longer than pieces: read whole
                raise MemberMisplaced(str(path))
            text.extend(bytes(have + block - len(text)))
        with memoryview(text) as view:
            got = handle.readinto(view[have:have + block])
        have += got
        end = have
        if begin < 0:
            opening = _NONBLANK.search(text, 0, have)
            if opening is None:
                if not got:  # nothing but blanks
                    raise MemberMisplaced(str(path))
                have = 0
                continue
            if text[opening.start()] != 0x7B:  # "{"
                raise MemberMisplaced(str(path))
            begin = opening.end()
        if not got:  # the end: the last member closes with the object's brace
            end = begin + len(text[begin:have].rstrip(_BLANKS)) - 1
            if end < begin or text[end] != 0x7D:  # "}"
                raise MemberMisplaced(str(path))
        spans = list(cuts(text, begin, end, MEMBER_START, piece))
        rest = spans.pop()[0] if got else end  # the last span may go on in the next block
        for start, stop in spans:
            part = parse_run(text, start, stop, stop < end)
            if part is None:
                raise MemberMisplaced(str(path))
            yield part
        if not got:
            return
        text[:have - rest] = text[rest:have]
        have, begin = have - rest, 0


def read_json_object(path: Path, piece: int = CHUNK_BYTES) -> Any:
    """:func:`read_json`, parsed ``piece`` bytes at a time (:func:`object_parts`) when the file is an
    object in the ``indent=1`` layout."""
    try:
        merged: dict[str, Any] = {}
        for part in object_parts(path, piece):
            merged.update(part)
        return merged
    except MemberMisplaced:
        return read_json(path)


_BLOCK_PIECES = 2
""":func:`object_parts` reads this many pieces of text at a time into its buffer (construct.json at
200k APIs: 1, 2 or 4 pieces cost the same, 64 pieces 10 % more)."""
_CARRIED = 16
""":func:`object_parts` reads whole a file whose text goes this many pieces without a member starting."""


_PAGE = mmap.PAGESIZE


def _release(raw: bytes | mmap.mmap, start: int, stop: int) -> int:
    """Drop the pages of a mapped file between ``start`` and ``stop`` from this process's
    memory (they stay in the page cache, and come back if read again); returns where the
    next release starts. A dump.json read piece by piece then never counts whole in the
    process's resident memory."""
    stop -= stop % _PAGE
    if stop > start and isinstance(raw, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        raw.madvise(mmap.MADV_DONTNEED, start, stop - start)
        return stop
    return start


def parse_json(raw: bytes | mmap.mmap, path: Path) -> Any:
    """Parse JSON text read from ``path`` (see :func:`read_json`).

    Refused with a one-line :class:`InputError`: a document larger than
    :data:`MAX_WHOLE_JSON_BYTES`, nesting deeper than the parsers allow, numbers with more
    digits than Python converts, invalid UTF-8.
    """
    if len(raw) > MAX_WHOLE_JSON_BYTES:
        raise InputError(f"is too large to parse as one document ({_size(len(raw))}; the limit is "
                         f"{_size(MAX_WHOLE_JSON_BYTES)}; dump.json files in the layout msProbe writes "
                         "are read piece by piece without this limit)", path)
    with runtime.gc_off():  # the parsed tree holds no cycles; collection passes only cost time
        try:
            return orjson.loads(raw if isinstance(raw, bytes) else memoryview(raw))
        except orjson.JSONDecodeError:
            pass
        try:
            return json.loads(bytes(raw))
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path) from None
        except UnicodeDecodeError:
            raise InputError("is not UTF-8 text", path) from None
        except RecursionError:
            raise InputError("is not valid JSON (nested too deeply)", path) from None
        except ValueError as exc:  # e.g. an integer with more digits than Python converts
            if "digits" in str(exc):
                raise InputError("is not valid JSON (a number has more than 4300 digits)", path) from None
            raise InputError(f"is not valid JSON ({str(exc).splitlines()[0][:120]})", path) from None


def _duplicate_key(root: Any) -> tuple[str, int] | None:
    """The first scalar key that a mapping of the composed YAML tree holds twice, and its line."""
    import yaml

    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    if key_node.value in seen:
                        return key_node.value, key_node.start_mark.line + 1
                    seen.add(key_node.value)
                stack.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def read_yaml(path: str | Path) -> Any:
    """Load a YAML file safely (no object construction); errors name the file and the line.

    The one YAML loader of probe (see :func:`parse_yaml`).
    """
    path = Path(path)
    return parse_yaml(read_text(path, "YAML"), path)


def parse_yaml(text: str, path: str | Path) -> Any:
    """Parse YAML text read from ``path`` safely.

    Refused, before anything is built: anchors and aliases (a few hundred bytes of nested
    aliases expand to billions of nodes), and a mapping holding the same key twice (YAML
    forbids it; PyYAML would silently keep the last value). Only plain data is built
    (``yaml.safe_load`` rules: no tags naming Python objects).
    """
    import yaml

    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                line = event.start_mark.line + 1
                raise InputError(f"uses YAML anchors/aliases (line {line}); write the values out instead", path)
        duplicate = _duplicate_key(yaml.compose(text, Loader=yaml.SafeLoader))
        if duplicate is not None:
            raise InputError(f"has the key {duplicate[0]!r} twice (line {duplicate[1]})", path)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"is not valid YAML{where}: {problem}", path) from None
    except RecursionError:
        raise InputError("is nested too deeply", path) from None
