"""The entries of a large JSON object member located by byte offset and parsed a window at a time.

msProbe writes dump.json with ``indent=1``: every entry of ``data`` starts a line indented by
two spaces, and no JSON string holds a raw newline. One scan finds where each entry starts
(names and offsets only, no parsed tree), so a streamed compare can parse any run of
consecutive entries later, in any order, holding only that run in memory.
"""

from __future__ import annotations

import mmap
import os
import re
from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from probe.errors import InputError
from probe.jsonio import (ENTRY_START, HEAD_BYTES, MAX_JSON_BYTES, MAX_WHOLE_JSON_BYTES, cuts, member_span,
                          open_regular, parse_piece, run_text)

_ENTRY = re.compile(rb'\n  "([^"\\\n]*)": ')
"""The start of an entry: a name without escapes at indentation two (an escaped name is not
found, so the entries of its run no longer parse as expected and the caller falls back)."""


class JoinedNames(Sequence[str]):
    """Names kept as one newline-joined string; ``before[i]`` is the length of the names before name
    ``i`` (so it starts at ``before[i] + i``; ``before`` ends with the length of all). A name or a run
    of names is cut out when asked for."""

    def __init__(self, text: str, before: array) -> None:
        self.text = text
        self.before = before

    def __len__(self) -> int:
        return len(self.before) - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        before = self.before
        if isinstance(index, slice):
            lo, hi, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(lo, hi, step)]
            return self.text[before[lo] + lo:before[hi] + hi - 1].split("\n") if lo < hi else []
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("name index out of range")
        return self.text[before[index] + index:before[index + 1] + index]

    def __iter__(self) -> Iterator[str]:
        return iter(self.text.split("\n")) if len(self) else iter(())

    def take(self, ordinals: Sequence[int]) -> list[str]:
        """The names at ``ordinals`` (each in range)."""
        text, before = self.text, self.before
        return [text[before[i] + i:before[i + 1] + i] for i in ordinals]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (JoinedNames, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, which has none


def joined_names(names: Sequence[str]) -> JoinedNames | Sequence[str]:
    """``names`` as :class:`JoinedNames` (about 40 bytes a name instead of 100), or as they are when empty
    or a name holds a newline."""
    if isinstance(names, JoinedNames):
        return names
    joined = "\n".join(names)
    if not names or joined.count("\n") != len(names) - 1:
        return names
    return JoinedNames(joined, _lengths_before(names))


def _lengths_before(names: Sequence[str]) -> array:
    """:attr:`JoinedNames.before` of ``names``: the running sum of their lengths, summed by numpy (the
    lengths taken in one C-level pass; 200k names: 7 ms, against 9-24 ms to find the joined text's
    newlines, which copies the text twice)."""
    import numpy as np  # not at start-up

    before = np.zeros(len(names) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, names), np.int64, len(names)), out=before[1:])
    return array("q", before.tobytes())


class MemberIndex:
    """Entry names of one member in file order, and the byte offset where each starts.

    It pickles without its mapping (another process maps ``path`` again when it unpickles
    it; a file changed since then no longer parses as these entries)."""

    def __init__(self, raw: Any, names: Sequence[str], starts: array, end: int, path: Path | None = None) -> None:
        self.raw = raw
        self.names = names
        self.starts = starts
        self.end = end
        self.path = path

    def __getstate__(self) -> dict[str, Any]:
        # the names as one string cut at newlines (no name holds one: see _ENTRY), with where each starts:
        # it pickles and unpickles several times faster than a list of as many strings, and is kept as it
        # came (:class:`JoinedNames`: about 40 bytes a name instead of 100)
        return {**self.__dict__, "raw": None, "names": joined_names(self.names)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.path is not None:
            try:
                self.raw = _map(self.path)
            except (OSError, ValueError, InputError):
                self.raw = None  # parse() then finds nothing: the compare runs whole

    def __len__(self) -> int:
        return len(self.names)

    def parse(self, lo: int, hi: int) -> list[tuple[str, Any]] | None:
        """Entries ``lo:hi`` as ``(name, value)`` pairs (``name`` is the index's string); ``None`` when their text does not parse
        as exactly those entries (another layout, NaN tokens the parsers refuse, bad JSON)."""
        if lo >= hi:
            return []
        if self.raw is None or len(self.raw) < self.end:
            return None
        stop = self.starts[hi] if hi < len(self.starts) else self.end
        if stop - self.starts[lo] > MAX_WHOLE_JSON_BYTES:
            return None  # the whole read refuses it, naming the file
        text = run_text(self.raw, self.starts[lo], stop, hi < len(self.starts))
        release(self.raw, self.starts[lo], stop)
        part = None if text is None else parse_piece(text)
        del text
        names = self.names[lo:hi]
        if not isinstance(part, dict) or len(part) != hi - lo or list(part) != names:
            return None
        # the index's own name strings, so that what is kept per entry shares them
        return list(zip(names, part.values()))

    def opens_with(self, text: bytes) -> bool:
        """Whether ``text`` occurs in the first :data:`PROBE_BYTES` of the member's entries
        (a hint: what the entries hold is known once they are parsed)."""
        return self.raw is not None and self.raw.find(text, self.starts[0], self.starts[0] + PROBE_BYTES) >= 0

    def head(self) -> Any:
        """The document without the member's entries (the member an empty object), parsed;
        ``None`` when it does not parse or its text is too large (the whole read reports it)."""
        if self.raw is None or len(self.raw) - self.end > HEAD_BYTES:
            return None
        return parse_piece(self.raw[:self.starts[0]] + self.raw[self.end:])

    def spans(self, lo: int, hi: int, size: int, count: int | None = None) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` of consecutive runs that cut entries ``lo:hi`` into pieces of about ``size``
        bytes of text and at most ``count`` entries each (never less than one entry)."""
        starts = self.starts
        while lo < hi:
            stop = bisect_left(starts, starts[lo] + size, lo + 1, hi)
            if count is not None:
                stop = min(stop, lo + count)
            yield lo, stop
            lo = stop

    def runs(self, ordinals: Sequence[int], size: int) -> Iterator[tuple[int, int]]:
        """:meth:`spans` of the consecutive runs of the sorted ``ordinals``."""
        i = 0
        while i < len(ordinals):
            j = i + 1
            while j < len(ordinals) and ordinals[j] == ordinals[j - 1] + 1:
                j += 1
            yield from self.spans(ordinals[i], ordinals[j - 1] + 1, size)
            i = j


SCAN_BYTES = 64 << 20
"""The index scan reads this much of the file at a time and then lets its pages go."""


PROBE_BYTES = 1 << 20
""":meth:`MemberIndex.opens_with` looks this far into the member."""


def index_member(path: Path, key: str) -> MemberIndex | None:
    """Index member ``key`` of the JSON file ``path``; ``None`` for a layout other than ``indent=1``
    or names that are not unique (the caller then reads the file whole).

    The member is taken to close at the file's last ``\n }`` (msProbe writes it last), found
    without scanning the file for it. When it closes earlier, the entry holding its close does
    not parse as one (:meth:`MemberIndex.parse` gives ``None``), so a compare that parses every
    entry, as a streamed one does, runs whole then.

    The file is memory-mapped and scanned a piece at a time, each piece's pages released once
    scanned, so the scan never holds the file in memory.
    """
    raw = _map(path)
    if raw is None:
        return None
    span = member_span(raw, key, last=True)
    if span is None:
        return None
    body, end = span
    names: list[str] = []
    starts = array("q")
    try:
        for begin, stop in cuts(raw, body, end, ENTRY_START, SCAN_BYTES):
            for lo in range(begin, stop, BLOCK_BYTES):
                _scan(raw, lo, min(lo + BLOCK_BYTES, stop), stop, names, starts)
            release(raw, begin, stop)
    except UnicodeDecodeError:
        return None
    if not starts or starts[0] != body or len(set(names)) != len(names):
        return None
    return MemberIndex(raw, names, starts, end, path)


BLOCK_BYTES = 4 << 20
"""The scan looks for entry starts in blocks of this much text (its temporaries stay small)."""
_NAME_BYTES = 96
"""Names are read in bulk from this many bytes after their opening quote (a longer one is read
by :data:`_ENTRY`)."""
_NAME_BATCH = 16384
"""Names are cut for at most this many starts at a time (their temporaries stay small)."""
_START_WORD = int.from_bytes(b'\n  "', "little")


def _scan(raw: Any, lo: int, hi: int, stop: int, names: list[str], starts: array) -> None:
    """Append the names and offsets of the :data:`_ENTRY` matches of ``raw[:stop]`` that start in
    ``lo:hi``, in order: exactly what ``_ENTRY.finditer(raw, lo, stop)`` gives for them.

    Entry starts (``\\n  "``) are found with numpy (:func:`_starts`) and their names cut in bulk
    (:func:`_plain_names`); a run of starts that are not all plainly entry lines with short names
    takes the regex instead, start by start.
    """
    import numpy as np  # not at start-up

    at = _starts(raw, lo, hi, stop)
    match = _ENTRY.match
    for first in range(0, len(at), _NAME_BATCH):
        run = at[first:first + _NAME_BATCH]
        plain = _plain_names(raw, run, stop)
        if plain is not None:
            names += plain
            starts.frombytes(run.astype(np.int64).tobytes())
            continue
        for start in run.tolist():
            found = match(raw, start, stop)
            if found is not None:
                names.append(found[1].decode())
                starts.append(start)


def _starts(raw: Any, lo: int, hi: int, stop: int) -> Any:
    """Sorted offsets ``lo <= at < hi`` of ``\\n  "`` in ``raw[:stop]`` (4-byte words compared at
    each of the four alignments)."""
    import numpy as np

    found = []
    top = min(hi + 3, stop)
    for shift in range(4):
        count = (top - lo - shift) // 4
        if count > 0:
            words = np.frombuffer(raw, "<u4", count, lo + shift)
            found.append(np.flatnonzero(words == _START_WORD) * 4 + (lo + shift))
            del words  # no view of the mapping outlives the scan
    return np.sort(np.concatenate(found)) if found else np.empty(0, np.int64)


def _plain_names(raw: Any, at: Any, stop: int) -> list[str] | None:
    """The names of the entries starting at ``at`` (each ``\\n  "`` then a name, ``"`` and ``: ``),
    cut from the :data:`_NAME_BYTES` after each opening quote; ``None`` unless every start is such
    a line, ending before ``stop``, with a name that fits, holds no backslash nor newline and
    decodes (the regex then decides)."""
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    width = _NAME_BYTES
    if not len(at) or int(at[-1]) + 4 + width > len(raw):
        return None
    text = np.frombuffer(raw, np.uint8)
    rows = sliding_window_view(text, width)[at + 4]  # a copy: the bytes after each opening quote
    del text
    quote = (rows == 34).argmax(axis=1)  # the first '"' (0 when none)
    line = np.arange(len(rows))
    plain = (rows[line, quote] == 34) & (quote <= width - 3) & (at + quote + 7 <= stop)
    plain &= (rows[line, np.minimum(quote + 1, width - 1)] == 58) & (rows[line, np.minimum(quote + 2, width - 1)] == 32)
    if not plain.all():
        return None
    rows[line, quote] = 10  # each name ends with a newline
    cut = rows[np.arange(width) <= quote[:, None]].tobytes()
    if b"\\" in cut or cut.count(b"\n") != len(rows):
        return None
    try:
        return cut.decode().split("\n")[:-1]
    except UnicodeDecodeError:
        return None


def _map(path: Path) -> mmap.mmap | None:
    """``path`` memory-mapped for reading; ``None`` when empty or too large (the whole read reports it)."""
    fd = open_regular(path, "JSON file")
    try:
        size = os.fstat(fd).st_size
        if size > MAX_JSON_BYTES or size == 0:
            return None
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


def release(raw: Any, begin: int, stop: int) -> None:
    """Let the pages of ``raw[begin:stop]`` go from this process (they stay in the page cache)."""
    if isinstance(raw, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
        first = begin - begin % mmap.PAGESIZE
        raw.madvise(mmap.MADV_DONTNEED, first, stop - first)
