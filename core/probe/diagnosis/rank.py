"""Rank suspects: which calls introduced a difference the noise floor does not explain.

For every entry of every rank and step (see :mod:`probe.diagnosis.facts`):

* the *input deviation* is the worst deviation of its inputs; for a backward call the
  tensors its forward call saved count as inputs too;
* its *floor* is what the dtypes explain (:mod:`probe.diagnosis.floor`);
* it is a suspect when its outputs turn finite inputs into NaN/inf (``nan_source``), when a
  parameter or an input no earlier call produced differs beyond rounding (``parameter``),
  when a non-tensor argument differs (``argument``), when its output deviation is far
  above its floor (``introduced``), or when the call has no golden counterpart at all
  (``structure``).

Suspects are ranked by step, then forward before backward, numerical suspects before calls
with no golden counterpart, then in execution order: the first call that went wrong comes
before everything that may be its consequence. A module call whose own suspect lies
inside it is dropped: the inner call is the more precise answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import compress
from typing import TYPE_CHECKING, Any

from probe.diagnosis.facts import RankFacts
from probe.diagnosis.floor import LOCAL, local_floor, parameter_floor, unit_roundoff
from probe.diagnosis.report import (
    ARGUMENT, DIVERGENT, IDENTICAL, INTRODUCED, NAN_SOURCE, NOISE, PARAMETER, STRUCTURE, Diagnosis, Points, Suspect,
)
from probe.diagnosis.rules import (
    BY_ARGUMENT, BY_LEAF, BY_NAN_INPUT, BY_NAN_SOURCE, BY_OUTPUT, BY_PARAMETER, BY_REDUCTION, BY_STRUCTURE, EXCESS,
    EXCESS_BACKWARD, EXCESS_REDUCED, MAX_SCORE, RULE_KIND, forward_of,
)

if TYPE_CHECKING:
    from probe.diagnosis.columns import RankView

__all__ = ["EXCESS", "EXCESS_BACKWARD", "EXCESS_REDUCED", "KIND_TIER", "MAX_SCORE", "diagnose_facts", "forward_of",
           "sort_key"]  # the thresholds and forward_of live in probe.diagnosis.rules

KIND_TIER = {NAN_SOURCE: 0, PARAMETER: 1, ARGUMENT: 1, INTRODUCED: 2, STRUCTURE: 3}


def _pct(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value * 100:.3g}%"


def _suspects(view: RankView, found: list[int]) -> list[Suspect]:
    """The suspects nodes ``found`` are, by the rule the view found for each, with their evidence."""
    facts = view.facts
    nodes, rank, step = facts.nodes, facts.rank, facts.step
    cast_pct = {dtype: _pct(parameter_floor(dtype)) for dtype in {view.dtypes[i] for i in found}}
    out = []
    for i, rule, score, in_eff in zip(found, view.rules[found].tolist(), view.scores[found].tolist(),
                                      view.in_eff[found].tolist()):
        node = nodes[i]
        floor = view.floors[i]
        if rule == BY_PARAMETER:
            evidence = (f"parameter {node.worst_param} differs by {_pct(node.param_dev)} "
                        f"(a cast to {node.dtype or 'its dtype'} explains {cast_pct[node.dtype]})")
        elif rule == BY_LEAF:
            evidence = (f"input {node.worst_leaf} differs by {_pct(node.leaf_dev)} and no earlier call produced it "
                        f"(a parameter, buffer or data; a cast to {node.dtype or 'its dtype'} explains "
                        f"{cast_pct[node.dtype]})")
        elif rule in (BY_OUTPUT, BY_REDUCTION):  # an output, or a backward call's reduction, far above the floor
            what, dev = ((node.worst_out, node.out_dev) if rule == BY_OUTPUT else
                         (f"the reduction {node.worst_reduced}", node.reduced_dev))
            evidence = (f"inputs differ by {_pct(in_eff)}, {what} by {_pct(dev)}: {score:.3g}x the {_pct(floor)} "
                        f"its inputs and {node.dtype or 'dtype'} rounding explain")
        elif rule == BY_STRUCTURE:
            evidence = f"{node.entry} has no golden counterpart"
        elif rule == BY_NAN_SOURCE:
            evidence = (f"its inputs are finite (worst {node.worst_in or 'none'} off by {_pct(in_eff)}) "
                        f"but {node.worst_out} holds NaN/inf that the golden run does not")
        elif rule == BY_NAN_INPUT:
            evidence = (f"input {node.worst_in} holds NaN/inf that the golden run does not, and no earlier call "
                        f"produced it (a parameter, buffer or data)")
        elif rule == BY_ARGUMENT:
            evidence = f"{node.argument}; its output {node.worst_out} differs by {_pct(node.out_dev)}"
        else:
            raise AssertionError(f"no evidence for rule {rule}")
        out.append(Suspect(node.entry, rank, step, RULE_KIND[rule], round(min(score, MAX_SCORE), 3), evidence,
                           "backward" if node.backward else "forward", node.order, node.out_dev, floor))
    return out


def _explained_modules(view: RankView, entries: list[str]) -> set[str]:
    """Module calls that contain a call of ``entries`` (through construct.json's parent links)."""
    explained: set[str] = set()
    last, modules = view.last, view.modules
    for entry in entries:
        seen = 0
        at = last.get(entry)
        parent = "" if at is None else modules[at]
        while parent and parent not in explained and seen < 1000:
            explained.add(parent)
            at = last.get(parent)
            parent = "" if at is None else modules[at]
            seen += 1
    return explained


def sort_key(suspect: Suspect) -> tuple[Any, ...]:
    """Earlier steps first, forward before backward, numerical suspects before calls with no golden
    counterpart (mapping gaps are common and say nothing about precision), then in execution order:
    what follows the first call that went wrong may be its consequence (NaN/inf propagation, a
    parameter read by later ops)."""
    return (suspect.step, suspect.direction != "forward", suspect.kind == STRUCTURE, suspect.order,
            KIND_TIER.get(suspect.kind, 9), suspect.rank)


def diagnose_facts(ranks: Sequence[RankFacts]) -> Diagnosis:
    """The diagnosis over every rank and step of a compare."""
    suspects: list[Suspect] = []
    series: list[dict[str, Any]] = []
    views: list[RankView] = []
    identical = True
    floor_stats: dict[str, dict[str, Any]] = {}
    from probe.diagnosis.columns import RankView  # numpy: not at start-up

    for facts in sorted(ranks, key=lambda f: (f.step, f.rank)):
        view = RankView(facts)
        entries = view.entries
        explained = _explained_modules(view, [entries[i] for i, rule in zip(view.found, view.rules[view.found].tolist())
                                              if rule != BY_STRUCTURE])
        found = [i for i in view.found if entries[i] not in explained]
        suspects += _suspects(view, found)
        if facts.golden_only or not all(view.exact) or any(view.unmatched):
            identical = False
        for dtype, calls, error in view.dtype_errors(found):
            entry = floor_stats.get(dtype)
            if entry is None:
                entry = floor_stats[dtype] = {"unit_roundoff": unit_roundoff(dtype),
                                              "local_floor": local_floor(dtype), "calls": 0,
                                              "max_error_within_floor": 0.0}
            entry["calls"] += calls
            if error > entry["max_error_within_floor"]:
                entry["max_error_within_floor"] = error
        series.append(_series(view))
        views.append(view)
    suspects.sort(key=sort_key)
    _mark_suspects(series, views, suspects)
    for dtype, entry in floor_stats.items():
        entry["why"] = (f"{dtype} rounds to {entry['unit_roundoff']:.3g} (unit roundoff); a call may add "
                        f"{LOCAL:g} of those and amplify its inputs' deviation as calls of its kind typically do")
    verdict = DIVERGENT if suspects else IDENTICAL if identical else NOISE
    return Diagnosis(verdict=verdict, suspects=suspects if verdict == DIVERGENT else [],
                     noise_floor=floor_stats, series=series)


def _series(view: RankView) -> dict[str, Any]:
    facts = view.facts
    inf = math.inf
    columns = [view.entries, view.orders, view.out_devs, view.floors, view.modules, view.backward, view.kinds]
    if view.gradient.any():  # parameters_grad entries have no point
        keep = (~view.gradient).tolist()
        columns = [compress(column, keep) for column in columns]
    node, order, error, floor, module, backward, kind = columns
    names = list(node)
    points = Points(names, list(order), [d if d < inf else None for d in error],
                    [f if f < inf else None for f in floor], list(module), [_DIRECTIONS[b] for b in backward],
                    list(kind), [None] * len(names))
    return {"rank": facts.rank, "step": facts.step, "label": f"step{facts.step}/rank{facts.rank}", "points": points}


_DIRECTIONS = ("forward", "backward")


def _mark_suspects(series: list[dict[str, Any]], views: list[RankView], suspects: list[Suspect]) -> None:
    """Number each suspect's point (its node's last point in the last series of its step and rank that has one)."""
    lines: dict[tuple[int, int], list[int]] = {}
    for number, line in enumerate(series):
        lines.setdefault((line["step"], line["rank"]), []).append(number)
    for position, suspect in enumerate(suspects, 1):
        for number in reversed(lines.get((suspect.step, suspect.rank), ())):
            points = series[number]["points"]
            at = views[number].point(suspect.node, points)
            if at is not None:
                points.suspect[at] = position
                break
