"""A streamed compare on two cores: a forked child judges, digests and renders windows ahead of the parent.

A streamed compare (:mod:`probe.streaming`) takes each window of target entries through
pairing, measuring, judging, the analyzers' digest builders and the exporter streams. The
digest builders need every window, in order (what they keep depends on the windows before);
the rest does not: a window's rows, verdicts and report text depend on that window only
(and on the backward numbering, which the entry names alone carry on). So a forked child
takes windows ahead of the parent, pairs, measures and judges them, renders their report
bytes (``render`` of :mod:`probe.export_stream`) and sums up each window for each digest
builder (its ``part``, made by the child's copy of the builder, which learns of the windows
it passes over from their entry names, ``skip``). The parent adds those parts in order
(``merge``) instead of judging the window, and appends the child's bytes instead of
rendering. A builder without ``part`` gets the window's judged rows, packed as plain tuples
(:mod:`probe.rowpack`), and digests them in the parent as before.

Which window is whose: the parent publishes the window it is at in a shared page; the child
takes the next window at least :data:`LEAD` windows ahead of it, marking it as its own, and
passes over the others, which the parent judges and renders itself. How many each takes
follows from their speeds. Nothing depends on the page being exact: the parent waits only
for a window the page says the child took, uses it only when the child names that window,
and judges itself whatever does not come (the child failed or ended), whatever a builder
cannot merge (a part made on an assumption that does not hold, see ``merge``) and whatever
cannot be appended as it is (a CSV window that a ``_part_N`` cut falls into). The reports
and digests are therefore those of a serial stream.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import probe.runtime as runtime
from probe.io import temp_dir
from probe.model import Summary
from probe.result import CompareResult
from probe.rowpack import pack, unpack
from probe.windows import TargetWindows

log = logging.getLogger("probe")

LEAD = 4
"""The child takes only windows at least this many ahead of the one the parent is at, so that
they are ready when the parent gets there."""
TAPER = (2, 2, 4, 4, 4, 4)
"""The last windows are cut into this many pieces each (see :func:`tapered`)."""
_FREE, _CHILD, _PARENT = 0, 1, 2
_AT = struct.Struct("<q")
"""The shared page: the parent's window, then one owner byte per window."""
_MESSAGE = struct.Struct("<qq")
"""What the child sends per window done: its number and its row count."""

_SEAL = 32
"""Bytes of the keyed BLAKE2b digest in front of each window file."""

Judged = Callable[[int, int], CompareResult]
"""The judged rows of target entries ``lo:hi`` (the same function in both processes)."""


@dataclass
class Done:
    """One window, judged here or by the child: what the caller adds to the whole."""

    summary: Summary
    problems: list[str]
    rows: int
    result: CompareResult | None
    """The judged rows, when this process has them (always, unless every builder merged the
    child's parts and every stream can append the child's bytes)."""
    pending: list[Any]
    """The digest builders that still have to ``add`` ``result``."""

    @classmethod
    def here(cls, result: CompareResult, builders: list[Any]) -> Done:
        """A window judged in this process: every builder still has to add it."""
        return cls(result.summary(), result.problems, len(result.records), result, builders)


class _ByRows:
    """A digest builder without ``part``: its windows cross as packed rows and are added here."""

    def __init__(self, builder: Any, part: Callable[[list[Any]], CompareResult]) -> None:
        self.builder, self.result_of = builder, part

    def skip(self, names: Sequence[str]) -> None:
        pass

    def part(self, window: CompareResult) -> Any:
        return pack(window.records)

    def merge(self, packed: Any) -> bool:
        self.builder.add(self.result_of(unpack(packed)))
        return True


def _mergeable(builder: Any, part: Callable[[list[Any]], CompareResult]) -> Any:
    return builder if all(hasattr(builder, m) for m in ("part", "skip", "merge")) else _ByRows(builder, part)


class WindowRenderer:
    """The parent's side: each window judged by the child or here, its bytes rendered by either."""

    def __init__(self, windows: TargetWindows, bounds: Sequence[tuple[int, int]], streams: list[Any],
                 builders: list[Any], judged: Judged, part: Callable[[list[Any]], CompareResult],
                 directory: Path) -> None:
        self.windows, self.bounds = windows, bounds
        self.ahead = [s for s in streams if hasattr(s, "render")]
        self.slots = [(s, self.ahead.index(s) if hasattr(s, "render") else None) for s in streams]
        self.builders = builders
        self.mergers = [_mergeable(b, part) for b in builders]
        self.page = mmap.mmap(-1, _AT.size + len(bounds))
        self.directory = temp_dir(directory, "windows")
        self.taken = 0
        self.ready = -1
        self.key = secrets.token_bytes(_SEAL)  # only this process and its child know it
        read_fd, write_fd = os.pipe()
        try:
            self.task = runtime.start(_judge_ahead, write_fd, windows, bounds, self.ahead, self.mergers, judged,
                                      self.page, self.directory, self.key)
        except BaseException:
            os.close(read_fd)
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        finally:
            os.close(write_fd)
        self.pipe: Any = os.fdopen(read_fd, "rb")

    def judged(self, index: int, judged: Judged) -> Done:
        """Window ``index``: taken from the child when it did the window, else ``judged`` here."""
        _AT.pack_into(self.page, 0, index)
        lo, hi = self.bounds[index]
        rows = self._take(index)
        if rows is None:
            return Done.here(judged(lo, hi), self.builders)
        try:
            parts, summary, problems, marks, target_md5, golden_md5 = _unseal(
                self.key, (self.directory / f"{index}.parts").read_bytes())
        except (OSError, ValueError, EOFError, pickle.UnpicklingError):
            return Done.here(judged(lo, hi), self.builders)
        self.ready, self.taken = index, self.taken + 1
        pending = list(self.builders)
        if all(number is not None and stream.fits(rows) for stream, number in self.slots):
            names = self.windows.dump.names[lo:hi]
            for builder in self.mergers:
                if hasattr(builder, "names"):
                    builder.names(names)  # the strings this process keeps, for what the builder keeps of the part
            pending = [b for b, m, p in zip(self.builders, self.mergers, parts) if not m.merge(p)]
            if not pending:
                self.windows.skip(lo, hi)
                self.windows.has_md5 |= target_md5
                golden = self.windows.golden
                golden.apply(marks)
                golden.has_md5 |= golden_md5
                return Done(summary, problems, rows, None, [])
        # judged here after all (the child's bytes still serve): rows for a stream or a builder
        return Done.here(judged(lo, hi), pending)

    def write(self, index: int, done: Done) -> None:
        """Window ``index`` to every stream, in order."""
        ready = self.ready == index
        for stream, number in self.slots:
            if not (ready and number is not None and stream.append(self.directory / f"{index}.{number}", done.rows)):
                stream.write(done.result)
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
        for name in [f"{index}.parts"] + [f"{index}.{number}" for number in range(len(self.ahead))]:
            try:
                os.unlink(self.directory / name)
            except FileNotFoundError:
                pass


def start(windows: TargetWindows, streams: list[Any], builders: list[Any], judged: Judged,
          part: Callable[[list[Any]], CompareResult]) -> WindowRenderer | None:
    """A renderer when a second process can help (forking allowed, two windows or more), else
    ``None`` (the caller does every window itself)."""
    bounds = list(windows.bounds())
    if len(bounds) < 2 or not streams or not runtime.allowed():
        return None
    path = next((s.path for s in streams if hasattr(s, "render")), None)
    if path is None:
        return None
    return WindowRenderer(windows, tapered(bounds), streams, builders, judged, part, path.parent)


def tapered(bounds: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``bounds`` with the last windows cut into :data:`TAPER` pieces: the windows the parent keeps
    at the end (the child stays :data:`LEAD` ahead) and the child's last one are small, so that
    neither process waits long for the other to finish a whole window."""
    head = len(bounds) - min(len(bounds), len(TAPER))
    cut = list(bounds[:head])
    for (lo, hi), pieces in zip(bounds[head:], TAPER[len(TAPER) - (len(bounds) - head):]):
        size, extra = divmod(hi - lo, min(pieces, hi - lo))
        while lo < hi:
            stop = lo + size + (extra > 0)
            extra -= 1
            cut.append((lo, stop))
            lo = stop
    return cut


def _seal(key: bytes, value: Any) -> bytes:
    """``value`` pickled, behind a digest keyed by ``key`` (see :func:`_unseal`)."""
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.blake2b(payload, key=key, digest_size=_SEAL).digest() + payload


def _unseal(key: bytes, data: bytes) -> Any:
    """What :func:`_seal` sealed with ``key``; ``ValueError`` for anything else. Only bytes our
    own child sealed with the key it inherited are ever unpickled, whatever the window file holds."""
    digest, payload = data[:_SEAL], data[_SEAL:]
    if not hmac.compare_digest(digest, hashlib.blake2b(payload, key=key, digest_size=_SEAL).digest()):
        raise ValueError("not sealed by this compare's child")
    return pickle.loads(payload)  # noqa: S301 - authenticated: written by our own child


def _judge_ahead(fd: int, windows: TargetWindows, bounds: Sequence[tuple[int, int]], streams: list[Any],
                 builders: list[Any], judged: Judged, page: mmap.mmap, directory: Path, key: bytes) -> None:
    """The child: judge, digest and render the windows it takes, announcing each; pass over the others."""
    golden = windows.golden
    names = windows.dump.names
    with os.fdopen(fd, "wb", buffering=0) as pipe:
        for index, (lo, hi) in enumerate(bounds):
            owner = _AT.size + index
            if page[owner] != _FREE or index < _AT.unpack_from(page, 0)[0] + LEAD:
                windows.skip(lo, hi)
                for builder in builders:
                    builder.skip(names[lo:hi])
                continue
            page[owner] = _CHILD
            golden.log = []
            part = judged(lo, hi)
            for number, stream in enumerate(streams):
                stream.render(part, directory / f"{index}.{number}")
            parts = [builder.part(part) for builder in builders]
            (directory / f"{index}.parts").write_bytes(_seal(key, (
                parts, part.summary(), part.problems, golden.log, windows.has_md5, golden.has_md5)))
            pipe.write(_MESSAGE.pack(index, len(part.records)))
