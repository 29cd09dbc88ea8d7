"""Find the graphs in a dump directory: a single rank, ``rank*``/``proc*`` dirs, or ``step*`` dirs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from probe.errors import InputError

_RANK_RE = re.compile(r"rank(\d+)$")
_STEP_RE = re.compile(r"step(\d+)$")


@dataclass(frozen=True)
class GraphSource:
    """One dump directory (holding construct/dump/stack.json) and its step and rank."""

    directory: Path
    step: int
    rank: int


def rank_of(name: str) -> int | None:
    """``rank`` and ``procNNN`` -> 0, ``rankK`` -> K, anything else -> None."""
    if name == "rank" or name.startswith("proc"):
        return 0
    match = _RANK_RE.fullmatch(name)
    return int(match.group(1)) if match else None


def classify(path: Path) -> str:
    """``files``, ``ranks`` or ``steps`` (msProbe's input layout kinds)."""
    if not path.is_dir():
        raise InputError("is not a directory", path)
    entries = sorted(p for p in path.iterdir() if not p.name.startswith("."))
    dirs = [p for p in entries if p.is_dir()]
    if (path / "dump_tensor_data").is_dir() or (entries and not dirs):
        return "files"
    if dirs and all(rank_of(p.name) is not None for p in dirs):
        return "ranks"
    if dirs and all(_STEP_RE.fullmatch(p.name) for p in dirs):
        return "steps"
    if not entries:
        raise InputError("is empty, expected construct.json, dump.json and stack.json", path)
    raise InputError("is neither a dump directory nor a directory of rank*/proc*/step* dirs", path)


def _ranks(path: Path, step: int) -> list[GraphSource]:
    sources = [
        GraphSource(p, step, rank)
        for p in sorted(path.iterdir())
        if p.is_dir() and (rank := rank_of(p.name)) is not None
    ]
    return sorted(sources, key=lambda s: s.rank)


def discover(path: Path) -> tuple[str, list[GraphSource]]:
    """The layout kind of ``path`` and one :class:`GraphSource` per (step, rank)."""
    path = Path(path)
    kind = classify(path)
    if kind == "files":
        if not (path / "dump.json").is_file():
            raise InputError("has no dump.json", path)
        return kind, [GraphSource(path, 0, 0)]
    if kind == "ranks":
        return kind, _ranks(path, 0)
    sources: list[GraphSource] = []
    for step_dir in sorted(path.iterdir(), key=lambda p: int(p.name[4:]) if _STEP_RE.fullmatch(p.name) else -1):
        if step_dir.is_dir():
            sources.extend(_ranks(step_dir, int(step_dir.name[4:])))
    return kind, sources


def pair_sources(
    target: Path, golden: Path
) -> tuple[str, list[tuple[GraphSource, GraphSource]]]:
    """Pair the target and golden graphs by (step, rank); both sides must have the same layout."""
    kind_t, src_t = discover(target)
    kind_g, src_g = discover(golden)
    if kind_t != kind_g:
        raise InputError(f"has layout '{kind_g}' but the target path has layout '{kind_t}'", golden)
    by_key = {(s.step, s.rank): s for s in src_g}
    pairs = [(s, by_key[(s.step, s.rank)]) for s in src_t if (s.step, s.rank) in by_key]
    if not pairs:
        raise InputError("shares no step/rank with the target path", golden)
    return kind_t, pairs
