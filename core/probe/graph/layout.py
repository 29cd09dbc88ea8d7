"""Find the graphs of a dump directory with the compare's planner (one rank/step discovery).

A dump directory (dump.json + construct.json + stack.json), ``rank*``/``proc*`` directories
or ``step*/rank*`` directories: :func:`probe.builtin.layout.plan_default`, the planner of
``probe compare``, finds them, so both commands accept and refuse the same layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from probe.builtin.layout import plan_default
from probe.errors import InputError
from probe.model import CompareRequest, PairPlan


@dataclass(frozen=True)
class GraphSource:
    """One dump directory (holding construct/dump/stack.json) and its step and rank."""

    directory: Path
    step: int
    rank: int


def _source(plan_path: Path, plan: PairPlan) -> GraphSource:
    return GraphSource(plan_path.parent, plan.step or 0, plan.rank or 0)


def _kind(root: Path, plans: list[PairPlan]) -> str:
    """``files``, ``ranks`` or ``steps`` (msProbe's input layout kinds)."""
    if len(plans) == 1 and plans[0].target.parent == root:
        return "files"
    return "steps" if any(p.step is not None for p in plans) else "ranks"


def _plans(target: Path, golden: Path) -> list[PairPlan]:
    for path in (target, golden):
        if not path.is_dir():
            raise InputError("is not a directory", path)
    return plan_default(CompareRequest(target=target, golden=golden))


def discover(path: Path) -> tuple[str, list[GraphSource]]:
    """The layout kind of ``path`` and one :class:`GraphSource` per (step, rank)."""
    path = Path(path)
    plans = _plans(path, path)
    return _kind(path, plans), [_source(p.target, p) for p in plans]


def pair_sources(target: Path, golden: Path) -> tuple[str, list[tuple[GraphSource, GraphSource]]]:
    """Pair the target and golden graphs by (step, rank), as ``probe compare`` pairs the dumps."""
    target, golden = Path(target), Path(golden)
    plans = _plans(target, golden)
    kind_t, kind_g = _kind(target, plans), _kind(golden, [replace(p, target=p.golden) for p in plans])
    if kind_t != kind_g:
        raise InputError(f"has layout '{kind_g}' but the target path has layout '{kind_t}'", golden)
    return kind_t, [(_source(p.target, p), _source(p.golden, p)) for p in plans]
