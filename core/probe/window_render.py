"""A streamed compare on two cores: a forked child renders report windows ahead of the parent.

A streamed compare (:mod:`probe.streaming`) takes each window of target entries through
pairing, measuring, judging, the analyzers' digest builders and the exporter streams. The
digest builders need every window, in order (what they keep depends on the windows before);
a window's report text does not: it depends on that window's rows only. So a forked child
pairs, measures and judges windows of its own ahead of the parent and renders their report
bytes into files (``render`` of :mod:`probe.export_stream`); the parent, which still takes
every window through the digests and the counts, appends the child's bytes for those windows
instead of rendering them. Rows never cross between the processes (pickling them would cost
about as much as making them), only a window number and a row count.

Which window is whose: the parent publishes the window it is at in a shared page; the child
takes the next window at least :data:`LEAD` windows ahead of it, marking it as its own, and
passes over the others (the parent renders them). How many each renders follows from their
speeds. Nothing depends on the page being exact: the parent renders any window itself unless
the page says the child took it, then uses the child's bytes only when the child names that
window and its row count matches; it renders the window itself when they never come (the
child failed or was stopped) or cannot be appended as they are (a CSV window that a
``_part_N`` cut falls into). The report bytes are therefore those of a serial stream.
"""

from __future__ import annotations

import logging
import mmap
import os
import shutil
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import probe.runtime as runtime
from probe.io import temp_dir
from probe.result import CompareResult

log = logging.getLogger("probe")

LEAD = 2
"""The child takes only windows at least this many ahead of the one the parent is at, so that
its bytes are ready when the parent gets there."""
_FREE, _CHILD, _PARENT = 0, 1, 2
_AT = struct.Struct("<q")
"""The shared page: the parent's window, then one owner byte per window."""
_MESSAGE = struct.Struct("<qq")
"""What the child sends per window rendered: its number and its row count."""

Judged = Callable[[int, int], CompareResult]
"""The judged rows of target entries ``lo:hi`` (the same function in both processes)."""


class WindowRenderer:
    """The parent's side: each window's report bytes from the child or rendered here, in order."""

    def __init__(self, bounds: Sequence[tuple[int, int]], streams: list[Any], judged: Judged,
                 skip: Callable[[int, int], None], directory: Path) -> None:
        self.ahead = [s for s in streams if hasattr(s, "render")]
        self.slots = [(s, self.ahead.index(s) if hasattr(s, "render") else None) for s in streams]
        self.page = mmap.mmap(-1, _AT.size + len(bounds))
        self.directory = temp_dir(directory, "windows")
        self.rendered = 0
        read_fd, write_fd = os.pipe()
        try:
            self.task = runtime.start(_render_ahead, write_fd, bounds, self.ahead, judged, skip, self.page,
                                      self.directory)
        except BaseException:
            os.close(read_fd)
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        finally:
            os.close(write_fd)
        self.pipe: Any = os.fdopen(read_fd, "rb")

    def write(self, index: int, part: CompareResult) -> None:
        """Window ``index`` (its judged rows ``part``) to every stream."""
        rows = len(part.records)
        ready = self._take(index, rows)
        for stream, number in self.slots:
            if not (ready and number is not None and stream.append(self._file(index, number), rows)):
                stream.write(part)
        self.rendered += ready
        self._drop(index)

    def at(self, index: int) -> None:
        """Tell the child the parent has started window ``index``."""
        _AT.pack_into(self.page, 0, index)

    def close(self) -> None:
        """Stop the child (its work is done or no longer needed) and remove what it left."""
        log.debug("report windows rendered by the child: %d", self.rendered)
        self.task.cancel()
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _take(self, index: int, rows: int) -> bool:
        """Whether the child's bytes of window ``index`` (``rows`` rows) are there to append."""
        owner = _AT.size + index
        if self.pipe is None or self.page[owner] != _CHILD:
            self.page[owner] = _PARENT
            return False
        while True:
            message = self.pipe.read(_MESSAGE.size)
            if len(message) < _MESSAGE.size:  # the child ended: everything from here is rendered here
                self.pipe.close()
                self.pipe = None
                return False
            got, count = _MESSAGE.unpack(message)
            if got == index:
                return count == rows
            self._drop(got)  # a window the child took after this process had begun rendering it

    def _file(self, index: int, number: int) -> Path:
        return self.directory / f"{index}.{number}"

    def _drop(self, index: int) -> None:
        for number in range(len(self.ahead)):
            try:
                os.unlink(self._file(index, number))
            except FileNotFoundError:
                pass


def start(bounds: Sequence[tuple[int, int]], streams: list[Any], judged: Judged,
          skip: Callable[[int, int], None]) -> WindowRenderer | None:
    """A renderer when a second process can help (forking allowed, a stream that renders, two
    windows or more), else ``None`` (the caller writes every window itself)."""
    ahead = [s for s in streams if hasattr(s, "render")]
    if len(bounds) < 2 or not ahead or not runtime.allowed():
        return None
    return WindowRenderer(bounds, streams, judged, skip, ahead[0].path.parent)


def _render_ahead(fd: int, bounds: Sequence[tuple[int, int]], streams: list[Any], judged: Judged,
                  skip: Callable[[int, int], None], page: mmap.mmap, directory: Path) -> None:
    """The child: judge and render the windows it takes, announcing each; pass over the others."""
    with os.fdopen(fd, "wb", buffering=0) as pipe:
        for index, (lo, hi) in enumerate(bounds):
            owner = _AT.size + index
            if page[owner] != _FREE or index < _AT.unpack_from(page, 0)[0] + LEAD:
                skip(lo, hi)
                continue
            page[owner] = _CHILD
            part = judged(lo, hi)
            for number, stream in enumerate(streams):
                stream.render(part, directory / f"{index}.{number}")
            pipe.write(_MESSAGE.pack(index, len(part.records)))
