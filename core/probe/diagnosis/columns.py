"""The numbers of one rank of a diagnosis a column at a time (numpy arrays over its nodes).

:class:`RankView` reads every :class:`~probe.diagnosis.facts.NodeFacts` once and derives, per
node, what :mod:`probe.diagnosis.rank` judges by: the input deviation with what a backward
call's forward call saved, the floor, the rule that makes the node a suspect and its score.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress, repeat
from typing import Any

import numpy as np

from probe.diagnosis.factcolumns import FactColumns
from probe.diagnosis.facts import NodeFacts, RankFacts
from probe.diagnosis.floor import group_gains, local_floors, parameter_floor, unit_roundoff
from probe.diagnosis.rules import (
    BY_ARGUMENT, BY_LEAF, BY_NAN_INPUT, BY_NAN_SOURCE, BY_OUTPUT, BY_PARAMETER, BY_REDUCTION, BY_STRUCTURE, EXCESS,
    EXCESS_BACKWARD, EXCESS_REDUCED, MAX_SCORE, NAN_PROPAGATED, NO_RULE, forward_of,
)
from probe.diagnosis.report import Points


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


def _nonzero(values: list[Any], zero: Any) -> np.ndarray:
    """Which of ``values`` are true; a list holding only ``zero`` (the usual, false value) is recognised by one
    count in C instead of a test per value."""
    if values.count(zero) == len(values):
        return np.zeros(len(values), bool)
    return np.fromiter(map(bool, values), bool, len(values))


def _structure(matched: list[int], unmatched: list[int]) -> np.ndarray:
    """Which calls have unmatched rows and no matched one (no golden counterpart)."""
    found = _nonzero(unmatched, 0)
    return found & (np.fromiter(matched, np.int64, len(matched)) == 0) if found.any() else found


def _first_max(first: np.ndarray, *others: np.ndarray) -> np.ndarray:
    """Elementwise ``max(first, *others)`` as Python's ``max`` picks it (the first of equals, NaN kept first)."""
    best = first
    for other in others:
        best = np.where(other > best, other, best)
    return best


def _excess(dev: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """How many floors ``dev`` is (infinite above a zero floor, NaN for inf/inf)."""
    return np.where(floors > 0.0, dev / floors, np.where(dev > 0.0, np.inf, 0.0))


_DIRECTIONS = np.array(["forward", "backward"], object)


def directions(backward: np.ndarray) -> list[str]:
    """``forward`` or ``backward`` for each flag of ``backward`` (a bool array)."""
    return _DIRECTIONS[backward.view(np.uint8)].tolist()


def finite_or_none(values: np.ndarray) -> list[float | None]:
    """``values`` (float64, none negative) as floats, ``None`` for each inf or NaN (JSON has neither)."""
    finite = values < np.inf
    if finite.sum() * 2 >= len(values):
        out = values.tolist()
        for at in np.flatnonzero(~finite).tolist():
            out[at] = None
        return out
    out = [None] * len(values)
    at = np.flatnonzero(finite)
    for k, value in zip(at.tolist(), values[at].tolist()):
        out[k] = value
    return out


class RankView:
    """One rank of one step judged a column at a time: per node the derived numbers (nodes of one
    entry, if an entry repeats, share the numbers of its last node), the rule that makes it a
    suspect and its score; ``found`` lists the suspects' positions."""

    def __init__(self, facts: RankFacts) -> None:
        self.facts = facts
        nodes = facts.nodes
        count = len(nodes)
        columns = _columns(nodes)
        entries, kinds, backward, out_dev, in_dev, param_dev, nan_out, nan_in, ops, dtypes, widths, leaf_dev, \
            reduced_dev, matched, unmatched, arguments, modules, orders, exact, gradient, saved, forward_names = columns
        self.entries, self.kinds, self.backward, self.out_devs, self.dtypes = entries, kinds, backward, out_dev, dtypes
        self.modules, self.orders, self.exact, self.unmatched = modules, orders, exact, unmatched
        self.gradient, self.arguments = gradient, arguments
        self.param_devs, self.leaf_devs, self.reduced_devs = param_dev, leaf_dev, reduced_dev
        self.last = last = dict(zip(entries, range(count)))  # entry -> its last node
        self.repeated = len(last) != count
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
                 _structure(matched, unmatched),
                 nan_out & ~nan_eff,
                 nan_eff & ~nan_before & ~backward,
                 nan_eff,
                 param_dev > cast,
                 # an input no dumped call produced is a parameter or buffer when it differs by more than a
                 # cast AND more than anything before it (else it may be a slice or cast of an earlier output)
                 (leaf_dev > np.maximum(cast, prior)) & (leaf_dev >= in_eff * 0.999) & ~backward,
                 _nonzero(arguments, "") & (out_dev > local),
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
        self.in_eff, self.floors = in_eff, floors
        self.finite_error = np.where(finite_out & (out_dev > 0.0), out_dev, 0.0)
        self._points_before: list[int] | None = None

    def dtype_errors(self, found: list[int]) -> list[tuple[str, int, float]]:
        """``(dtype, calls, largest finite error)`` of the nodes of each dtype that are not suspects (nor share
        a suspect's entry) and not ``parameters_grad`` ones, dtypes in order of first appearance (not "")."""
        kept = ~self.gradient
        if self.repeated:
            kept[np.isin(self.at, self.at[found])] = False
        else:
            kept[found] = False
        errors = self.finite_error[kept]
        dtypes = list(dict.fromkeys(self.dtypes))
        if len(dtypes) == 1:
            counted = [(dtypes[0], errors)]
        else:
            codes, dtypes = codes_of(list(compress(self.dtypes, kept.tolist())))
            counted = [(dtype, errors[codes == code]) for code, dtype in enumerate(dtypes)]
        return [(dtype, len(mine), float(mine.max())) for dtype, mine in counted if dtype and mine.size]

    def row_names(self, name: str, positions: Sequence[int]) -> list[str]:
        """The row name ``name`` (``worst_in``, ``worst_out``, ...) of the nodes at ``positions``."""
        nodes = self.facts.nodes
        if isinstance(nodes, FactColumns):
            return nodes.row_names(name, positions)
        return [getattr(nodes[i], name) for i in positions]

    def point(self, entry: str, points: Points) -> int | None:
        """The position of the last of ``points`` (this view's series) whose node is ``entry``, if any."""
        at = self.last.get(entry)
        return None if at is None else self.points_of([at], points)[0]

    def points_of(self, nodes: list[int], points: Points) -> list[int | None]:
        """For each of ``nodes``, the position of the last of ``points`` (this view's series) whose node is
        the node's entry, if any."""
        last = self.at[nodes].tolist()
        if self._points_before is None:  # the last node of an entry has a point: the last one of that name
            self._points_before = (np.cumsum(~self.gradient) - 1).tolist()
        before, gradient = self._points_before, self.gradient
        out: list[int | None] = [before[at] for at in last]
        for k in np.flatnonzero(gradient[last]).tolist():  # a parameters_grad node: the last point of its name
            entry = self.entries[last[k]]
            out[k] = next((j for j in range(len(points) - 1, -1, -1) if points.node[j] == entry), None)
        return out


_FIELDS = ("entry", "kind", "backward", "out_dev", "in_dev", "param_dev", "nan_out", "nan_in", "op", "dtype", "width",
           "leaf_dev", "reduced_dev", "matched", "unmatched", "argument", "module", "order", "exact")
_ARRAYS = {"backward": bool, "out_dev": float, "in_dev": float, "param_dev": float, "nan_out": bool, "nan_in": bool,
           "leaf_dev": float, "reduced_dev": float, "exact": bool}
"""The fields read as numpy arrays (deviations and flags), the others as lists."""


def _columns(nodes: Sequence[NodeFacts]) -> tuple[Any, ...]:
    """One column per name of :data:`_FIELDS` (a numpy array for those of :data:`_ARRAYS`, else a list), then
    whether each node is a ``parameters_grad`` one (a bool array), then the positions of the nodes whose entry
    has "backward" in it and the names of their forward calls: the nodes read once each (a pass per field
    reads every node from memory again)."""
    if isinstance(nodes, FactColumns):  # kept as arrays: read whole columns, no node
        return _linked(*nodes.lists(_FIELDS))
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
    count = len(entry)
    arrays = {name: np.fromiter(columns[k], _ARRAYS[name], count) for k, name in enumerate(_FIELDS)
              if name in _ARRAYS}
    return (*(arrays.get(name, columns[k]) for k, name in enumerate(_FIELDS)), np.fromiter(gradient, bool, count),
            saved, forward)


def _linked(*fields: Any) -> tuple[Any, ...]:
    """:func:`_columns` of nodes given as the columns of :data:`_FIELDS`."""
    entries, kinds = fields[0], fields[1]
    gradient = np.fromiter(map("parameters_grad".__eq__, kinds), bool, len(kinds))
    saved = [i for i, name in enumerate(entries) if "backward" in name]
    forward = [forward_of(entries[i]) or "" for i in saved]
    return (*fields, gradient, saved, forward)
