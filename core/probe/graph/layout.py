"""Find the graphs of a dump directory with the compare's planner (one rank/step discovery).

A dump directory (dump.json + construct.json + stack.json), ``rank*``/``proc*`` directories
or ``step*/rank*`` directories: the registered planner of ``probe compare`` (hook
``probe_plan_compare``, passed in as ``plan``) finds them, so both commands accept and refuse
the same layouts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from collections.abc import Callable

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


Planner = Callable[[CompareRequest], list[PairPlan]]
"""The compare's planner (``Host.plan_compare``)."""


def _plans(target: Path, golden: Path, plan: Planner) -> list[PairPlan]:
    for path in (target, golden):
        if not path.is_dir():
            raise InputError("is not a directory", path)
    return plan(CompareRequest(target=target, golden=golden))


def discover(path: Path, plan: Planner) -> tuple[str, list[GraphSource]]:
    """The layout kind of ``path`` and one :class:`GraphSource` per (step, rank)."""
    path = Path(path)
    plans = _plans(path, path, plan)
    return _kind(path, plans), [_source(p.target, p) for p in plans]


def pair_sources(target: Path, golden: Path, plan: Planner) -> tuple[str, list[tuple[GraphSource, GraphSource]]]:
    """Pair the target and golden graphs by (step, rank), as ``probe compare`` pairs the dumps."""
    target, golden = Path(target), Path(golden)
    plans = _plans(target, golden, plan)
    kind_t, kind_g = _kind(target, plans), _kind(golden, [replace(p, target=p.golden) for p in plans])
    if kind_t != kind_g:
        raise InputError(f"has layout '{kind_g}' but the target path has layout '{kind_t}'", golden)
    return kind_t, [(_source(p.target, p), _source(p.golden, p)) for p in plans]
