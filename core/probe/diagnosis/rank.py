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
from itertools import compress, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from probe.diagnosis.facts import RankFacts
from probe.diagnosis.floor import LOCAL, local_floor, parameter_floor, unit_roundoff
from probe.diagnosis.report import (
    ARGUMENT, DIVERGENT, IDENTICAL, INTRODUCED, NAN_SOURCE, NOISE, PARAMETER, STRUCTURE, Diagnosis, Points, Suspect,
)
from probe.diagnosis.rules import (
    BY_ARGUMENT, BY_LEAF, BY_NAN_INPUT, BY_NAN_SOURCE, BY_OUTPUT, BY_PARAMETER, BY_REDUCTION, BY_STRUCTURE, EXCESS,
    EXCESS_BACKWARD, EXCESS_REDUCED, MAX_SCORE, NO_RULE, RULE_KIND, forward_of,
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
    """The suspects nodes ``found`` are, by the rule the view found for each, with their evidence (written a
    rule at a time from the view's columns: no node is read)."""
    import numpy as np  # not at start-up

    from probe.diagnosis.columns import directions

    facts = view.facts
    count = len(found)
    rules = view.rules[found]
    scores, in_effs, floors = view.scores[found], view.in_eff[found].tolist(), view.floors[found].tolist()
    entries = _picked(view.entries, found)
    orders = _orders_at(view, found)
    dtypes = view.values("dtype", found)
    evidence = [""] * count
    for rule in dict.fromkeys(rules.tolist()):
        mine = np.flatnonzero(rules == rule).tolist()  # positions in ``found``
        at = [found[k] for k in mine]
        types = [dtypes[k] for k in mine]
        if rule in (BY_PARAMETER, BY_LEAF):
            names, devs = (view.row_names("worst_param", at), view.param_devs[at].tolist()) if rule == BY_PARAMETER \
                else (view.row_names("worst_leaf", at), view.leaf_devs[at].tolist())
            cast_pct = {dtype: _pct(parameter_floor(dtype)) for dtype in set(types)}
            texts = ([f"parameter {name} differs by {_pct(dev)} (a cast to {dtype or 'its dtype'} explains "
                      f"{cast_pct[dtype]})" for name, dev, dtype in zip(names, devs, types)] if rule == BY_PARAMETER
                     else [f"input {name} differs by {_pct(dev)} and no earlier call produced it (a parameter, buffer "
                           f"or data; a cast to {dtype or 'its dtype'} explains {cast_pct[dtype]})"
                           for name, dev, dtype in zip(names, devs, types)])
        elif rule in (BY_OUTPUT, BY_REDUCTION):  # an output, or a backward call's reduction, far above the floor
            if rule == BY_OUTPUT:
                names, devs = view.row_names("worst_out", at), view.out_devs[at].tolist()
            else:
                names = [f"the reduction {name}" for name in view.row_names("worst_reduced", at)]
                devs = view.reduced_devs[at].tolist()
            texts = [f"inputs differ by {_pct(in_effs[k])}, {what} by {_pct(dev)}: {score:.3g}x the "
                     f"{_pct(floors[k])} its inputs and {dtype or 'dtype'} rounding explain"
                     for k, what, dev, score, dtype in zip(mine, names, devs, scores[mine].tolist(), types)]
        elif rule == BY_STRUCTURE:
            texts = [f"{entries[k]} has no golden counterpart" for k in mine]
        elif rule == BY_NAN_SOURCE:
            texts = [f"its inputs are finite (worst {name or 'none'} off by {_pct(in_effs[k])}) "
                     f"but {out} holds NaN/inf that the golden run does not"
                     for k, name, out in zip(mine, view.row_names("worst_in", at), view.row_names("worst_out", at))]
        elif rule == BY_NAN_INPUT:
            texts = [f"input {name} holds NaN/inf that the golden run does not, and no earlier call "
                     f"produced it (a parameter, buffer or data)" for name in view.row_names("worst_in", at)]
        elif rule == BY_ARGUMENT:
            texts = [f"{argument}; its output {out} differs by {_pct(dev)}" for argument, out, dev in
                     zip(view.values("argument", at), view.row_names("worst_out", at), view.out_devs[at].tolist())]
        else:
            raise AssertionError(f"no evidence for rule {rule}")
        for k, text in zip(mine, texts):
            evidence[k] = text
    kinds = map(RULE_KIND.__getitem__, rules.tolist())
    return list(map(Suspect, entries, repeat(facts.rank, count), repeat(facts.step, count), kinds,
                    _rounded(np.minimum(scores, MAX_SCORE)), evidence, directions(view.backward[found]), orders,
                    view.out_devs[found].tolist(), floors))


def _orders_at(view: RankView, found: list[int]) -> Sequence[int]:
    """The orders of the nodes of ``view`` at ``found`` (the positions themselves when orders are positions)."""
    orders = view.orders
    return found if orders == range(len(orders)) else _picked(orders, found)


def _picked(values: Sequence[Any], positions: list[int]) -> Sequence[Any]:
    """``values`` at ``positions`` (gathered in C)."""
    return itemgetter(*positions)(values) if len(positions) > 1 else [values[i] for i in positions]


def _rounded(scores: Any) -> list[float]:
    """``round(score, 3)`` of each of ``scores`` (a float64 array), without the slow decimal rounding where numpy's
    gives the same double: ``rint(score * 1000) / 1000`` is the correctly rounded result whenever ``score * 1000``
    is farther from a half than that product's rounding error (``round`` takes the rest)."""
    import numpy as np  # not at start-up

    with np.errstate(all="ignore"):
        scaled = scores * 1000.0
        whole = np.rint(scaled)
        # |scaled - whole| is exact (Sterbenz); 2**-50 of |scaled| bounds the product's error with room to spare
        sure = (0.5 - np.abs(scaled - whole) > np.abs(scaled) * 2.0 ** -50) & (np.abs(scaled) < 2.0 ** 52)
        out = np.where(sure, whole / 1000.0, scores).tolist()
    for k in np.flatnonzero(~sure & (scores != np.floor(scores))).tolist():
        out[k] = round(out[k], 3)
    return out


def _explained_modules(view: RankView, nodes: Any) -> set[str]:
    """Module calls that contain one of the calls at ``nodes`` (positions, a numpy array) (through construct.json's
    parent links)."""
    explained: set[str] = set()
    last, modules = view.last, view.modules
    # the walk up from a node is the walk up from its entry's (last node's) parent: once per parent
    for parent in dict.fromkeys(map(modules.__getitem__, view.at[nodes].tolist())):
        seen = 0
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


_STRUCTURE_OF = [RULE_KIND.get(rule) == STRUCTURE for rule in range(NO_RULE, BY_REDUCTION + 1)]
_TIER_OF = [KIND_TIER.get(RULE_KIND.get(rule), 9) for rule in range(NO_RULE, BY_REDUCTION + 1)]
"""Whether the suspects of each rule (at ``rule + 1``) are structure ones, and their kind's tier (as :func:`sort_key`
has them)."""


def _sort_columns(view: RankView, found: list[int]) -> Any:
    """:func:`sort_key` of the suspects of ``view`` at ``found``, field by field: a 6-row int64 array (``None`` when a
    number does not fit in 64 bits)."""
    import numpy as np  # not at start-up

    rules = view.rules[found] + 1
    try:
        columns = np.empty((6, len(found)), np.int64)
        columns[0] = view.facts.step
        columns[1] = view.backward[found]  # direction != "forward"
        columns[2] = np.take(_STRUCTURE_OF, rules)
        columns[3] = _orders_at(view, found)
        columns[4] = np.take(_TIER_OF, rules)
        columns[5] = view.facts.rank
    except OverflowError:
        return None
    return columns


def _ranking(keys: list[Any], suspects: list[Suspect]) -> list[int]:
    """The positions of ``suspects`` in :func:`sort_key` order, stable as ``sorted`` is: one numpy ``lexsort`` over
    ``keys`` (each view's :func:`_sort_columns`), or ``sorted`` when a key did not fit."""
    import numpy as np  # not at start-up

    if not suspects or any(key is None for key in keys):
        return sorted(range(len(suspects)), key=lambda k: sort_key(suspects[k]))  # stable, as sort() is
    return np.lexsort(np.concatenate(keys, axis=1)[::-1]).tolist()  # the last row is the first field


def diagnose_facts(ranks: Sequence[RankFacts]) -> Diagnosis:
    """The diagnosis over every rank and step of a compare."""
    suspects: list[Suspect] = []
    series: list[dict[str, Any]] = []
    views: list[RankView] = []
    founds: list[list[int]] = []
    keys: list[Any] = []
    identical = True
    floor_stats: dict[str, dict[str, Any]] = {}
    import numpy as np  # not at start-up

    from probe.diagnosis.columns import RankView

    for facts in sorted(ranks, key=lambda f: (f.step, f.rank)):
        view = RankView(facts)
        found = view.found
        explained = _explained_modules(view, np.array(found, np.intp)[view.rules[found] != BY_STRUCTURE])
        if explained:
            entries = view.entries
            found = [i for i in found if entries[i] not in explained]
        suspects += _suspects(view, found)
        keys.append(_sort_columns(view, found))
        founds.append(found)
        if facts.golden_only or not view.exact.all() or view.unmatched():
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
    ranking = _ranking(keys, suspects)
    suspects = [suspects[k] for k in ranking]
    _mark_suspects(series, views, founds, ranking)
    for dtype, entry in floor_stats.items():
        entry["why"] = (f"{dtype} rounds to {entry['unit_roundoff']:.3g} (unit roundoff); a call may add "
                        f"{LOCAL:g} of those and amplify its inputs' deviation as calls of its kind typically do")
    verdict = DIVERGENT if suspects else IDENTICAL if identical else NOISE
    return Diagnosis(verdict=verdict, suspects=suspects if verdict == DIVERGENT else [],
                     noise_floor=floor_stats, series=series)


def _series(view: RankView) -> dict[str, Any]:
    import numpy as np  # not at start-up

    from probe.diagnosis.columns import directions, finite_or_none

    facts = view.facts
    keep = ~view.gradient  # parameters_grad entries have no point
    every = bool(keep.all())
    kept = keep.tolist()
    at = None if every else np.flatnonzero(keep)
    names, module = (list(column) if every else list(compress(column, kept)) for column in (view.entries, view.modules))
    orders = view.orders
    order = list(orders) if every else at.tolist() if orders == range(len(orders)) else list(compress(orders, kept))
    kind = view.values("kind", at)
    error, floor, backward = (view.out_devs, view.floors, view.backward) if every else (
        view.out_devs[keep], view.floors[keep], view.backward[keep])
    points = Points(names, order, finite_or_none(error), finite_or_none(floor), module, directions(backward), kind,
                    [None] * len(names))
    return {"rank": facts.rank, "step": facts.step, "label": f"step{facts.step}/rank{facts.rank}", "points": points}


def _mark_suspects(series: list[dict[str, Any]], views: list[RankView], founds: list[list[int]],
                   ranking: list[int]) -> None:
    """Number each suspect's point (its node's last point in the last series of its step and rank that has one).

    ``founds`` are the suspects' nodes in each view (and series line), ``ranking`` their order."""
    lines: dict[tuple[int, int], list[int]] = {}
    for number, line in enumerate(series):
        lines.setdefault((line["step"], line["rank"]), []).append(number)
    import numpy as np  # not at start-up

    numbers = np.empty(len(ranking), np.intp)
    numbers[ranking] = np.arange(1, len(ranking) + 1)
    positions = numbers.tolist()
    start = 0
    shared: list[tuple[int, str, tuple[int, int]]] = []  # suspects of a step and rank that has several lines
    for number, (view, found) in enumerate(zip(views, founds)):
        mine = positions[start:start + len(found)]
        start += len(found)
        where = (view.facts.step, view.facts.rank)
        if len(lines[where]) > 1:
            shared += [(position, view.entries[i], where) for position, i in zip(mine, found)]
            continue
        points = series[number]["points"]
        suspect, ats = points.suspect, view.points_of(found, points)
        for k in sorted(range(len(mine)), key=mine.__getitem__):  # in ranking order: a shared point keeps the later
            if ats[k] is not None:
                suspect[ats[k]] = mine[k]
    for position, entry, where in sorted(shared):
        for number in reversed(lines[where]):
            points = series[number]["points"]
            at = views[number].point(entry, points)
            if at is not None:
                points.suspect[at] = position
                break
