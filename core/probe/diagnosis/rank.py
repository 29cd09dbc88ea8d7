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
from collections.abc import Callable, Hashable, Sequence
from itertools import compress, repeat
from typing import Any

import numpy as np

from probe.diagnosis.facts import NodeFacts, RankFacts
from probe.diagnosis.floor import LOCAL, group_gains, local_floor, local_floors, parameter_floor, unit_roundoff
from probe.diagnosis.report import (
    ARGUMENT, DIVERGENT, IDENTICAL, INTRODUCED, NAN_SOURCE, NOISE, PARAMETER, STRUCTURE, Diagnosis, Points, Suspect,
)

EXCESS = 4.0
"""An output deviation this many times its floor is a new error, not rounding."""
EXCESS_BACKWARD = 8.0
"""The same for the gradients a backward call passes on (they also carry the forward pass's
rounding through the saved tensors)."""
EXCESS_REDUCED = 64.0
"""The same for a backward call's reductions (weight and bias gradients): sums with heavy
cancellation, whose relative error the statistics cannot bound. A backward-only fault (a
scaled or wrong gradient) shows in the gradients passed on."""
MAX_SCORE = 1e6
KIND_TIER = {NAN_SOURCE: 0, PARAMETER: 1, ARGUMENT: 1, INTRODUCED: 2, STRUCTURE: 3}


def forward_of(entry: str) -> str | None:
    """The forward call whose saved tensors a backward call uses (``X.0.backward`` -> ``X.0.forward``,
    ``Module.m.Linear.backward.0`` -> ``Module.m.Linear.forward.0``), else ``None``."""
    if entry.endswith("backward") and (len(entry) == 8 or entry[-9] == "."):  # the last name part
        return entry[:-8] + "forward"
    head, dot, tail = entry.rpartition(".")
    if dot and head.endswith("backward") and (len(head) == 8 or head[-9] == "."):  # the one before it
        return head[:-8] + "forward." + tail
    return None


def _pct(value: float) -> str:
    if math.isinf(value):
        return "inf"
    return f"{value * 100:.3g}%"


def codes_of(values: Sequence[Hashable]) -> tuple[np.ndarray, list[Any]]:
    """``(codes, distinct)``: each value's position in ``distinct`` (values in order of first appearance)."""
    distinct = list(dict.fromkeys(values))
    position = dict(zip(distinct, range(len(distinct))))
    return np.fromiter(map(position.__getitem__, values), np.intp, len(values)), distinct


def each(values: list[Hashable], of: Callable[[Any], float]) -> np.ndarray:
    """``of(value)`` for each of ``values``, called once per distinct value."""
    table = {value: of(value) for value in dict.fromkeys(values)}
    if len(table) == 1:
        return np.full(len(values), next(iter(table.values())))
    return np.fromiter(map(table.__getitem__, values), float, len(values))


def _first_max(first: np.ndarray, *others: np.ndarray) -> np.ndarray:
    """Elementwise ``max(first, *others)`` as Python's ``max`` picks it (the first of equals, NaN kept first)."""
    best = first
    for other in others:
        best = np.where(other > best, other, best)
    return best


def _excess(dev: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """How many floors ``dev`` is (infinite above a zero floor, NaN for inf/inf)."""
    return np.where(floors > 0.0, dev / floors, np.where(dev > 0.0, np.inf, 0.0))


# The rules a call is judged by, first match wins (see the module docstring); the evidence of each is in _make.
NO_RULE, BY_STRUCTURE, BY_NAN_SOURCE, BY_NAN_INPUT, NAN_PROPAGATED, BY_PARAMETER, BY_LEAF, BY_ARGUMENT, \
    BY_OUTPUT, BY_REDUCTION = range(-1, 9)
RULE_KIND = {BY_STRUCTURE: STRUCTURE, BY_NAN_SOURCE: NAN_SOURCE, BY_NAN_INPUT: PARAMETER, BY_PARAMETER: PARAMETER,
             BY_LEAF: PARAMETER, BY_ARGUMENT: ARGUMENT, BY_OUTPUT: INTRODUCED, BY_REDUCTION: INTRODUCED}


class _RankView:
    """One rank of one step judged a column at a time: per node the derived numbers (nodes of one
    entry, if an entry repeats, share the numbers of its last node), the rule that makes it a
    suspect and its score; ``found`` lists the suspects' positions."""

    def __init__(self, facts: RankFacts) -> None:
        self.facts = facts
        nodes = facts.nodes
        count = len(nodes)
        columns = _columns(nodes)
        entries, kinds, backs, outs, ins, params, nan_outs, nan_ins, ops, dtypes, widths, leaves, reduceds, \
            matched, unmatched, arguments, modules, orders, exact, gradients, saved, forward_names = columns
        self.entries, self.kinds, self.backward, self.out_devs, self.dtypes = entries, kinds, backs, outs, dtypes
        self.modules, self.orders, self.exact, self.unmatched = modules, orders, exact, unmatched
        self.gradients = gradients
        self.last = last = dict(zip(entries, range(count)))  # entry -> its last node
        self.repeated = len(last) != count
        backward = np.fromiter(backs, bool, count)
        out_dev, in_dev, param_dev, leaf_dev, reduced_dev = (
            np.fromiter(values, float, count) for values in (outs, ins, params, leaves, reduceds))
        nan_out, nan_in = np.fromiter(nan_outs, bool, count), np.fromiter(nan_ins, bool, count)
        self.gradient = gradient = np.fromiter(gradients, bool, count)
        with np.errstate(all="ignore"):
            finite_out = np.isfinite(out_dev)
            # the worst output deviation of the calls before each one, and whether one held NaN/inf
            running = np.maximum.accumulate(np.where(finite_out & ~gradient & (out_dev > 0.0), out_dev, 0.0))
            prior = np.concatenate(([0.0], running[:-1]))
            nan_before = np.concatenate(([False], np.logical_or.accumulate(nan_out)[:-1]))
            # a backward call's inputs include what its forward call saved
            in_eff, nan_eff = in_dev, nan_in
            fwd = np.fromiter(map(last.get, forward_names, repeat(-1)), np.intp, len(forward_names))
            at = np.array(saved, np.intp)[fwd >= 0]
            fwd = fwd[fwd >= 0]
            if at.size:
                in_eff, nan_eff = in_dev.copy(), nan_in.copy()
                in_eff[at] = _first_max(in_dev[at], in_dev[fwd], out_dev[fwd], param_dev[fwd])
                nan_eff[at] |= nan_in[fwd] | nan_out[fwd]
            self.at = at = np.arange(count)
            repeated = self.repeated
            if repeated:  # a repeated entry: every node of it reads its last node's numbers
                self.at = at = np.fromiter(map(last.__getitem__, entries), np.intp, count)
                in_eff, nan_eff, prior, nan_before = in_eff[at], nan_eff[at], prior[at], nan_before[at]
            op_codes, ops = codes_of(ops)
            groups = op_codes * 2 + backward  # one group per op and direction
            local = local_floors(each(dtypes, unit_roundoff), widths)
            finite_in = np.isfinite(in_eff)
            sampled = finite_out & finite_in & ~gradient
            gains = group_gains(groups[sampled], out_dev[sampled] / (in_eff[sampled] + local[sampled]), 2 * len(ops))
            floors = np.where(finite_in, gains[groups] * in_eff + local, np.inf)
            if repeated:
                floors = floors[at]
            cast = each(dtypes, parameter_floor)
            out_excess = _excess(out_dev, floors)
            reduced_excess = _excess(reduced_dev, floors)
            rules = np.select(
                [gradient,
                 (np.fromiter(matched, np.int64, count) == 0) & np.fromiter(map(bool, unmatched), bool, count),
                 nan_out & ~nan_eff,
                 nan_eff & ~nan_before & ~backward,
                 nan_eff,
                 param_dev > cast,
                 # an input no dumped call produced is a parameter or buffer when it differs by more than a
                 # cast AND more than anything before it (else it may be a slice or cast of an earlier output)
                 (leaf_dev > np.maximum(cast, prior)) & (leaf_dev >= in_eff * 0.999) & ~backward,
                 np.fromiter(map(bool, arguments), bool, count) & (out_dev > local),
                 out_excess > np.where(backward, EXCESS_BACKWARD, EXCESS),
                 reduced_excess > EXCESS_REDUCED],
                [NO_RULE, BY_STRUCTURE, BY_NAN_SOURCE, BY_NAN_INPUT, NAN_PROPAGATED, BY_PARAMETER, BY_LEAF,
                 BY_ARGUMENT, BY_OUTPUT, BY_REDUCTION], NO_RULE)
            scores = np.select(
                [rules == BY_STRUCTURE, (rules == BY_NAN_SOURCE) | (rules == BY_NAN_INPUT), rules == BY_PARAMETER,
                 rules == BY_LEAF, rules == BY_ARGUMENT, rules == BY_OUTPUT, rules == BY_REDUCTION],
                [1.0, MAX_SCORE, param_dev / cast, leaf_dev / cast, _first_max(out_excess, np.ones(count)),
                 out_excess, reduced_excess], 0.0)
        self.found = np.flatnonzero((rules >= 0) & (rules != NAN_PROPAGATED)).tolist()
        self.rules, self.scores, self.casts = rules, scores, cast
        self.in_eff, self.floors = in_eff, floors.tolist()
        self.finite_error = np.where(finite_out & (out_dev > 0.0), out_dev, 0.0)
        self._points_before: list[int] | None = None

    def module_of(self, entry: str) -> str:
        """The module call around the last node of ``entry`` ("" if none or no such node)."""
        at = self.last.get(entry)
        return "" if at is None else self.modules[at]

    def point(self, entry: str, points: Points) -> int | None:
        """The position of the last of ``points`` (this view's series) whose node is ``entry``, if any."""
        at = self.last.get(entry)
        if at is None:
            return None
        if not self.gradients[at]:  # the last node of the entry has a point: the last one of that name
            if self._points_before is None:
                self._points_before = (np.cumsum(~self.gradient) - 1).tolist()
            return self._points_before[at]
        return next((k for k in range(len(points) - 1, -1, -1) if points.node[k] == entry), None)


_FIELDS = ("entry", "kind", "backward", "out_dev", "in_dev", "param_dev", "nan_out", "nan_in", "op", "dtype", "width",
           "leaf_dev", "reduced_dev", "matched", "unmatched", "argument", "module", "order", "exact")


def _columns(nodes: list[NodeFacts]) -> tuple[list[Any], ...]:
    """One list per name of :data:`_FIELDS`, then whether each node is a ``parameters_grad`` one, then
    the positions of the nodes whose entry has "backward" in it and the names of their forward calls:
    the nodes read once each (a pass per field reads every node from memory again)."""
    columns = tuple([] for _ in range(len(_FIELDS) + 3))
    entry, kind, backward, out_dev, in_dev, param_dev, nan_out, nan_in, op, dtype, width, leaf_dev, reduced_dev, \
        matched, unmatched, argument, module, order, exact, gradient, saved, forward = columns
    for i, n in enumerate(nodes):
        name = n.entry
        entry.append(name)
        if "backward" in name:  # forward_of(name), its two usual cases inline
            saved.append(i)
            if name.endswith(".backward"):
                forward.append(name[:-8] + "forward")
            else:
                head, _, tail = name.rpartition(".")
                forward.append(head[:-8] + "forward." + tail if head.endswith(".backward") else forward_of(name) or "")
        what = n.kind
        kind.append(what)
        gradient.append(what == "parameters_grad")
        backward.append(n.backward)
        out_dev.append(n.out_dev)
        in_dev.append(n.in_dev)
        param_dev.append(n.param_dev)
        nan_out.append(n.nan_out)
        nan_in.append(n.nan_in)
        op.append(n.op)
        dtype.append(n.dtype)
        width.append(n.width)
        leaf_dev.append(n.leaf_dev)
        reduced_dev.append(n.reduced_dev)
        matched.append(n.matched)
        unmatched.append(n.unmatched)
        argument.append(n.argument)
        module.append(n.module)
        order.append(n.order)
        exact.append(n.exact)
    return columns


def _suspects(view: _RankView, found: list[int]) -> list[Suspect]:
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
        elif rule == BY_OUTPUT:
            evidence = (f"inputs differ by {_pct(in_eff)}, {node.worst_out} by {_pct(node.out_dev)}: "
                        f"{score:.3g}x the {_pct(floor)} its inputs and {node.dtype or 'dtype'} rounding explain")
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
            evidence = (f"inputs differ by {_pct(in_eff)}, the reduction {node.worst_reduced} by "
                        f"{_pct(node.reduced_dev)}: {score:.3g}x the {_pct(floor)} its inputs and "
                        f"{node.dtype or 'dtype'} rounding explain")
        out.append(Suspect(node.entry, rank, step, RULE_KIND[rule], round(min(score, MAX_SCORE), 3), evidence,
                           "backward" if node.backward else "forward", node.order, node.out_dev, floor))
    return out


def _explained_modules(view: _RankView, entries: list[str]) -> set[str]:
    """Module calls that contain a call of ``entries`` (through construct.json's parent links)."""
    explained: set[str] = set()
    for entry in entries:
        seen = 0
        parent = view.module_of(entry)
        while parent and parent not in explained and seen < 1000:
            explained.add(parent)
            parent = view.module_of(parent)
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
    views: list[_RankView] = []
    identical = True
    floor_stats: dict[str, dict[str, Any]] = {}
    for facts in sorted(ranks, key=lambda f: (f.step, f.rank)):
        view = _RankView(facts)
        entries = view.entries
        explained = _explained_modules(view, [entries[i] for i, rule in zip(view.found, view.rules[view.found].tolist())
                                              if rule != BY_STRUCTURE])
        found = [i for i in view.found if entries[i] not in explained]
        suspects += _suspects(view, found)
        if facts.golden_only or not all(view.exact) or any(view.unmatched):
            identical = False
        _add_floor_stats(floor_stats, view, found)
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


def _add_floor_stats(floor_stats: dict[str, dict[str, Any]], view: _RankView, found: list[int]) -> None:
    """Count the calls of each dtype that are not suspects (nor share a suspect's entry) and their largest
    finite error (``floor_stats`` keeps its dtypes in order of first appearance)."""
    kept = ~view.gradient
    if view.repeated:
        kept[np.isin(view.at, view.at[found])] = False
    else:
        kept[found] = False
    errors = view.finite_error[kept]
    dtypes = list(dict.fromkeys(view.dtypes))
    if len(dtypes) == 1:
        counted = [(dtypes[0], errors)]
    else:
        codes, dtypes = codes_of(list(compress(view.dtypes, kept.tolist())))
        counted = [(dtype, errors[codes == code]) for code, dtype in enumerate(dtypes)]
    for dtype, mine in counted:
        if not dtype or not mine.size:
            continue
        entry = floor_stats.get(dtype)
        if entry is None:
            entry = floor_stats[dtype] = {"unit_roundoff": unit_roundoff(dtype), "local_floor": local_floor(dtype),
                                          "calls": 0, "max_error_within_floor": 0.0}
        entry["calls"] += len(mine)
        error = float(mine.max())
        if error > entry["max_error_within_floor"]:
            entry["max_error_within_floor"] = error


def _series(view: _RankView) -> dict[str, Any]:
    facts = view.facts
    inf = math.inf
    columns = (view.entries, view.orders, [d if d < inf else None for d in view.out_devs],
               [f if f < inf else None for f in view.floors], view.modules,
               [_DIRECTIONS[b] for b in view.backward], view.kinds)
    if view.gradient.any():  # parameters_grad entries have no point
        keep = (~view.gradient).tolist()
        columns = tuple(list(compress(column, keep)) for column in columns)
    points = Points(*columns, [None] * len(columns[0]))
    return {"rank": facts.rank, "step": facts.step, "label": f"step{facts.step}/rank{facts.rank}", "points": points}


_DIRECTIONS = ("forward", "backward")


def _mark_suspects(series: list[dict[str, Any]], views: list[_RankView], suspects: list[Suspect]) -> None:
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
