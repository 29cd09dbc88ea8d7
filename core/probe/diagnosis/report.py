"""The diagnosis result: verdict, noise floor, ranked suspects and the error series, as data."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Queue
from typing import IO, Any, overload

import orjson

from probe.io import atomic_write, unique_path

IDENTICAL, NOISE, DIVERGENT = "identical", "noise", "divergent"

NAN_SOURCE = "nan_source"
PARAMETER = "parameter"
ARGUMENT = "argument"
INTRODUCED = "introduced"
STRUCTURE = "structure"
INHERITED = "inherited"


@dataclass
class Suspect:
    """One ranked suspect: an API or module call that introduced a difference."""

    node: str
    rank: int
    step: int
    kind: str
    score: float
    evidence: str
    direction: str = "forward"
    order: int = 0
    error: float | None = None
    floor: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "rank": self.rank, "step": self.step, "kind": self.kind, "score": self.score,
                "evidence": self.evidence, "direction": self.direction, "order": self.order,
                "error": _number(self.error), "floor": _number(self.floor)}

    def where(self) -> str:
        """``step S, rank R`` for messages."""
        return f"step {self.step}, rank {self.rank}"


POINT_KEYS = ("node", "order", "error", "floor", "module", "direction", "kind", "suspect")
"""The keys of a point of the error series, in the order they are written."""


class Points(Sequence[dict[str, Any]]):
    """The points of one error series kept as columns (one list per key of :data:`POINT_KEYS`).

    It reads as a sequence of point dicts (made when read; changing one changes nothing) and
    writes the JSON of that list without making them: a million points cost a few lists, not a
    million dicts. ``suspect`` is the column to number suspects in."""

    __slots__ = ("node", "order", "error", "floor", "module", "direction", "kind", "suspect")

    def __init__(self, node: list[str], order: list[int], error: list[float | None], floor: list[float | None],
                 module: list[str], direction: list[str], kind: list[str], suspect: list[int | None]) -> None:
        self.node, self.order, self.error, self.floor = node, order, error, floor
        self.module, self.direction, self.kind, self.suspect = module, direction, kind, suspect

    def __len__(self) -> int:
        return len(self.node)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return dict(zip(POINT_KEYS, (self.node[index], self.order[index], self.error[index], self.floor[index],
                                     self.module[index], self.direction[index], self.kind[index],
                                     self.suspect[index])))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Points({len(self)} points)"

    def json_batches(self, batch: int) -> Iterator[memoryview]:
        """The points ``batch`` at a time as ``orjson.dumps(self[start:start + batch])[1:-1]`` (comma separated;
        a view of orjson's bytes, not a copy)."""
        # one dict per point of a batch, refilled for each batch: filling a dict costs about half of making one
        pool = [dict.fromkeys(POINT_KEYS) for _ in range(min(batch, len(self)))]
        for start in range(0, len(self), batch):
            stop = start + batch
            columns = (self.node[start:stop], self.order[start:stop], self.error[start:stop],
                       self.floor[start:stop], self.module[start:stop], self.direction[start:stop],
                       self.kind[start:stop], self.suspect[start:stop])
            points = pool if len(columns[0]) == len(pool) else pool[:len(columns[0])]
            for point, node, order, error, floor, module, direction, kind, suspect in zip(points, *columns):
                point["node"] = node
                point["order"] = order
                point["error"] = error
                point["floor"] = floor
                point["module"] = module
                point["direction"] = direction
                point["kind"] = kind
                point["suspect"] = suspect
            yield memoryview(orjson.dumps(points))[1:-1]


@dataclass
class Diagnosis:
    """Verdict, noise floor per dtype, suspects best first and the error along the network."""

    verdict: str
    suspects: list[Suspect] = field(default_factory=list)
    noise_floor: dict[str, dict[str, Any]] = field(default_factory=dict)
    series: list[dict[str, Any]] = field(default_factory=list)
    path: Path | None = None
    """The file it was written to, if any."""

    @property
    def first(self) -> Suspect | None:
        """The best suspect, or ``None`` unless the verdict is divergent."""
        return self.suspects[0] if self.suspects else None

    def to_dict(self) -> dict[str, Any]:
        """The diagnosis JSON document (``diagnosis_{ts}.json``)."""
        return self._document([_plain(line) for line in self.series], [s.to_dict() for s in self.suspects])

    def _document(self, series: list[Any], suspects: list[Any]) -> dict[str, Any]:
        return {"verdict": self.verdict, "noise_floor": self.noise_floor, "suspects": suspects, "series": series}

    def json_pieces(self, batch: int = 4096) -> Iterator[bytes | memoryview]:
        """The bytes of ``orjson.dumps(self.to_dict())`` and a newline, the points of the series
        ``batch`` at a time (the text of millions of points is never held at once; large pieces are
        views of orjson's bytes rather than copies)."""
        # orjson: compact UTF-8, NaN/inf as null (strict JSON has none), about 10x the json module
        head = orjson.dumps(self._document([], _as_written(self.suspects)))
        yield memoryview(head)[:-3]  # drop the empty list and the closing brace: ``,"series":[]}``
        yield b"["
        for number, line in enumerate(self.series):
            if not (isinstance(line, dict) and list(line)[-1:] == ["points"]
                    and isinstance(line["points"], (list, Points))):
                yield (b"," if number else b"") + orjson.dumps(_plain(line))
                continue
            text = orjson.dumps({**line, "points": []})
            yield (b"," if number else b"") + text[:-3] + b"["
            points = line["points"]
            if isinstance(points, Points):
                for number_of_batch, text in enumerate(points.json_batches(batch)):
                    if number_of_batch:
                        yield b","
                    yield text
            else:
                for start in range(0, len(points), batch):
                    yield (b"," if start else b"") + orjson.dumps(points[start:start + batch])[1:-1]
            yield b"]}"
        yield b"]}\n"

    def headline(self) -> str:
        """One line for a console or a log: the verdict and the first suspect."""
        if self.verdict != DIVERGENT or self.first is None:
            if self.verdict == IDENTICAL:
                return "identical: every compared value is bit-identical"
            return "noise: every difference is within the rounding noise of the dtypes"
        first = self.first
        return f"{first.node} ({first.where()}, {first.kind}): {first.evidence}"

    def write(self, directory: Path, stamp: str) -> Path:
        """Write ``diagnosis_{stamp}.json`` into ``directory`` (atomic, never replacing a file)."""
        path = unique_path(directory, f"diagnosis_{stamp}", ".json")
        out = atomic_write(path, "wb")
        with out as handle:
            _write_behind(handle, self.json_pieces())
        self.path = out.path  # the name claimed (``_1`` if a concurrent run took ``path``)
        return out.path


def _write_behind(handle: IO[bytes], pieces: Iterable[bytes | memoryview]) -> None:
    """Write ``pieces`` to ``handle`` from a second thread while this one makes the next ones: the copy into
    the kernel's page cache (a third of the time of a large diagnosis) runs meanwhile, on another core."""
    queue: Queue[bytes | memoryview | None] = Queue(maxsize=8)
    failed: list[BaseException] = []

    def drain() -> None:
        while (piece := queue.get()) is not None:
            if not failed:
                try:
                    handle.write(piece)
                except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
                    failed.append(exc)

    writer = threading.Thread(target=drain, name="diagnosis-writer", daemon=True)
    writer.start()
    try:
        for piece in pieces:
            if failed:
                break
            queue.put(piece)
    finally:
        queue.put(None)
        writer.join()
    if failed:
        raise failed[0]


_SUSPECT_FIELDS = len(Suspect.__dataclass_fields__)


def _as_written(suspects: list[Suspect]) -> list[Any]:
    """The suspects as orjson writes their :meth:`Suspect.to_dict`: the suspects themselves when each is a plain
    :class:`Suspect` (orjson writes a dataclass's fields in order and a non-finite float as ``null``, as
    ``to_dict`` does, without making the dicts)."""
    if set(map(type, suspects)) <= {Suspect} and set(map(len, map(vars, suspects))) <= {_SUSPECT_FIELDS}:
        return suspects
    return [s.to_dict() for s in suspects]


def _plain(line: Any) -> Any:
    """A series line with its :class:`Points` as a list of dicts (what ``json`` and ``orjson`` take)."""
    if isinstance(line, dict) and isinstance(line.get("points"), Points):
        return {**line, "points": list(line["points"])}
    return line


def _number(value: float | None) -> float | None:
    """A finite float, else ``None`` (JSON has no NaN/inf; a non-finite error shows as a gap)."""
    return value if value is not None and math.isfinite(value) else None

