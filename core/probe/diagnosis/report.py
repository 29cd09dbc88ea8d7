"""The diagnosis result: verdict, noise floor, ranked suspects and the error series, as data."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        return {
            "verdict": self.verdict,
            "noise_floor": self.noise_floor,
            "suspects": [s.to_dict() for s in self.suspects],
            "series": self.series,
        }

    def json_pieces(self, batch: int = 4096) -> Iterator[bytes]:
        """The bytes of ``orjson.dumps(self.to_dict())`` and a newline, the points of the series
        ``batch`` at a time (the text of millions of points is never held at once)."""
        # orjson: compact UTF-8, NaN/inf as null (strict JSON has none), about 10x the json module
        head = orjson.dumps({**self.to_dict(), "series": []})
        yield head[:-3] + b"["  # drop the empty list and the closing brace: ``,"series":[]}``
        for number, line in enumerate(self.series):
            if not (isinstance(line, dict) and list(line)[-1:] == ["points"] and isinstance(line["points"], list)):
                yield (b"," if number else b"") + orjson.dumps(line)
                continue
            text = orjson.dumps({**line, "points": []})
            yield (b"," if number else b"") + text[:-3] + b"["
            points = line["points"]
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
            for piece in self.json_pieces():
                handle.write(piece)
        self.path = out.path  # the name claimed (``_1`` if a concurrent run took ``path``)
        return out.path


def _number(value: float | None) -> float | None:
    """A finite float, else ``None`` (JSON has no NaN/inf; a non-finite error shows as a gap)."""
    return value if value is not None and math.isfinite(value) else None

