"""A streamed compare on two cores: a forked child judges and renders windows ahead of the parent.

A streamed compare (:mod:`probe.streaming`) takes each window of target entries through
pairing, measuring, judging, the analyzers' digest builders and the exporter streams. The
digest builders need every window, in order (what they keep depends on the windows before);
the rest does not: a window's rows, verdicts and report text depend on that window only
(and on the backward numbering, which the entry names alone carry on). So a forked child
takes windows ahead of the parent, pairs, measures and judges them, renders their report
bytes (``render`` of :mod:`probe.export_stream`) and writes their judged rows as plain
tuples (:mod:`probe.rowpack`, a few us a row where pickling the objects costs about 20)
together with the golden rows they met; the parent reads those instead of judging the
window, runs the digests over them and appends the child's bytes instead of rendering.

Which window is whose: the parent publishes the window it is at in a shared page; the child
takes the next window at least :data:`LEAD` windows ahead of it, marking it as its own, and
passes over the others, which the parent judges and renders itself. How many each takes
follows from their speeds. Nothing depends on the page being exact: the parent waits only
for a window the page says the child took, uses it only when the child names that window,
and judges or renders itself whatever does not come (the child failed or ended) or cannot
be appended as it is (a CSV window that a ``_part_N`` cut falls into). The reports are
therefore those of a serial stream.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import mmap
import os
import pickle
import secrets
import shutil
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import probe.runtime as runtime
from probe.io import temp_dir
from probe.result import CompareResult
from probe.rowpack import pack, unpack
from probe.windows import TargetWindows

log = logging.getLogger("probe")

LEAD = 4
"""The child takes only windows at least this many ahead of the one the parent is at, so that
they are ready when the parent gets there."""
_FREE, _CHILD, _PARENT = 0, 1, 2
_AT = struct.Struct("<q")
"""The shared page: the parent's window, then one owner byte per window."""
_MESSAGE = struct.Struct("<qq")
"""What the child sends per window done: its number and its row count."""

_SEAL = 32
"""Bytes of the keyed BLAKE2b digest in front of each rows file."""

Judged = Callable[[int, int], CompareResult]
"""The judged rows of target entries ``lo:hi`` (the same function in both processes)."""


class WindowRenderer:
    """The parent's side: each window judged by the child or here, its bytes rendered by either."""

    def __init__(self, windows: TargetWindows, bounds: Sequence[tuple[int, int]], streams: list[Any],
                 judged: Judged, part: Callable[[list[Any]], CompareResult], directory: Path) -> None:
        self.windows, self.bounds, self.part = windows, bounds, part
        self.ahead = [s for s in streams if hasattr(s, "render")]
        self.slots = [(s, self.ahead.index(s) if hasattr(s, "render") else None) for s in streams]
        self.page = mmap.mmap(-1, _AT.size + len(bounds))
        self.directory = temp_dir(directory, "windows")
        self.taken = 0
        self.ready = -1
        self.key = secrets.token_bytes(_SEAL)  # only this process and its child know it
        read_fd, write_fd = os.pipe()
        try:
            self.task = runtime.start(_judge_ahead, write_fd, windows, bounds, self.ahead, judged, self.page,
                                      self.directory, self.key)
        except BaseException:
            os.close(read_fd)
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        finally:
            os.close(write_fd)
        self.pipe: Any = os.fdopen(read_fd, "rb")

    def judged(self, index: int, judged: Judged) -> CompareResult:
        """Window ``index`` judged: read from the child when it took the window, else ``judged`` here."""
        _AT.pack_into(self.page, 0, index)
        lo, hi = self.bounds[index]
        rows = self._take(index)
        if rows is not None:
            try:
                records, problems, marks, target_md5, golden_md5 = _unseal(
                    self.key, (self.directory / f"{index}.rows").read_bytes())
            except (OSError, ValueError, EOFError, pickle.UnpicklingError):
                records = None
            if records is not None and len(records) == rows:
                self.windows.skip(lo, hi)
                self.windows.has_md5 |= target_md5
                golden = self.windows.golden
                golden.apply(marks)
                golden.has_md5 |= golden_md5
                part = self.part(unpack(records))
                part.problems.extend(problems)
                self.ready, self.taken = index, self.taken + 1
                return part
        return judged(lo, hi)

    def write(self, index: int, part: CompareResult) -> None:
        """Window ``index`` (judged: ``part``) to every stream, in order."""
        ready = self.ready == index
        for stream, number in self.slots:
            if not (ready and number is not None and stream.append(self.directory / f"{index}.{number}",
                                                                    len(part.records))):
                stream.write(part)
        self._drop(index)

    def close(self) -> None:
        """Stop the child (its work is done or no longer needed) and remove what it left."""
        log.debug("windows judged by the child: %d of %d", self.taken, len(self.bounds))
        self.task.cancel()
        if self.pipe is not None:
            self.pipe.close()
            self.pipe = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def _take(self, index: int) -> int | None:
        """The row count of window ``index`` when the child did it, else ``None``."""
        if self.pipe is None or not self._child_took(index):
            self.page[_AT.size + index] = _PARENT
            return None
        while True:
            message = self.pipe.read(_MESSAGE.size)
            if len(message) < _MESSAGE.size:  # the child ended: everything from here is done here
                self.pipe.close()
                self.pipe = None
                return None
            got, rows = _MESSAGE.unpack(message)
            if got == index:
                return rows
            self._drop(got)  # a window the child took after this process had begun it

    def _child_took(self, index: int) -> bool:
        return self.page[_AT.size + index] == _CHILD

    def _drop(self, index: int) -> None:
        for name in [f"{index}.rows"] + [f"{index}.{number}" for number in range(len(self.ahead))]:
            try:
                os.unlink(self.directory / name)
            except FileNotFoundError:
                pass


def start(windows: TargetWindows, streams: list[Any], judged: Judged,
          part: Callable[[list[Any]], CompareResult]) -> WindowRenderer | None:
    """A renderer when a second process can help (forking allowed, two windows or more), else
    ``None`` (the caller does every window itself)."""
    bounds = list(windows.bounds())
    if len(bounds) < 2 or not streams or not runtime.allowed():
        return None
    path = next((s.path for s in streams if hasattr(s, "render")), None)
    if path is None:
        return None
    return WindowRenderer(windows, bounds, streams, judged, part, path.parent)


def _seal(key: bytes, value: Any) -> bytes:
    """``value`` pickled, behind a digest keyed by ``key`` (see :func:`_unseal`)."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.blake2b(payload, key=key, digest_size=_SEAL).digest() + payload


def _unseal(key: bytes, data: bytes) -> Any:
    """What :func:`_seal` sealed with ``key``; ``ValueError`` for anything else. Only bytes our
    own child sealed with the key it inherited are ever unpickled, whatever the rows file holds."""
    digest, payload = data[:_SEAL], data[_SEAL:]
    if not hmac.compare_digest(digest, hashlib.blake2b(payload, key=key, digest_size=_SEAL).digest()):
        raise ValueError("not sealed by this compare's child")
    return pickle.loads(payload)  # noqa: S301 - authenticated: written by our own child


def _judge_ahead(fd: int, windows: TargetWindows, bounds: Sequence[tuple[int, int]], streams: list[Any],
                 judged: Judged, page: mmap.mmap, directory: Path, key: bytes) -> None:
    """The child: judge and render the windows it takes, announcing each; pass over the others."""
    golden = windows.golden
    with os.fdopen(fd, "wb", buffering=0) as pipe:
        for index, (lo, hi) in enumerate(bounds):
            owner = _AT.size + index
            if page[owner] != _FREE or index < _AT.unpack_from(page, 0)[0] + LEAD:
                windows.skip(lo, hi)
                continue
            page[owner] = _CHILD
            golden.log = []
            part = judged(lo, hi)
            for number, stream in enumerate(streams):
                stream.render(part, directory / f"{index}.{number}")
            (directory / f"{index}.rows").write_bytes(
                _seal(key, (pack(part.records), part.problems, golden.log, windows.has_md5, golden.has_md5)))
            pipe.write(_MESSAGE.pack(index, len(part.records)))
