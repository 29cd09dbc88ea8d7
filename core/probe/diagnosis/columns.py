"""The numbers of one rank of a diagnosis a column at a time (numpy arrays over its nodes).

:class:`RankView` reads every :class:`~probe.diagnosis.facts.NodeFacts` once and derives, per
node, what :mod:`probe.diagnosis.rank` judges by: the input deviation with what a backward
call's forward call saved, the floor, the rule that makes the node a suspect and its score.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress, repeat
from operator import contains
from typing import Any, NamedTuple

import numpy as np

from probe.diagnosis.factcolumns import _FLOATS, FactColumns
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
    suspect and its score; ``found`` lists the suspects' positions.

    The fields that take few values together (op, kind, dtype, counts, flags) are judged once per
    combination of them (:meth:`FactColumns.coded <probe.diagnosis.factcolumns.FactColumns.coded>`)
    and spread to the nodes by their combination's number (``codes``); :meth:`values` reads them."""

    def __init__(self, facts: RankFacts) -> None:
        self.facts = facts
        table = _columns(facts.nodes)
        entries, codes, combos = table.entries, table.codes, table.combos
        count = len(entries)
        in_dev, out_dev, param_dev, leaf_dev, reduced_dev = (
            table.deviations[name] for name in ("in_dev", "out_dev", "param_dev", "leaf_dev", "reduced_dev"))
        backward, nan_out, nan_in, exact = (_nonzero(combos[name], False)[codes] for name in _FLAGS)
        kinds = combos["kind"]
        gradient = np.fromiter(map("parameters_grad".__eq__, kinds), bool, len(kinds))[codes]
        self.entries, self.modules, self.orders, self.codes, self.combos = entries, table.modules, table.orders, \
            codes, combos
        self.backward, self.out_devs, self.exact, self.gradient = backward, out_dev, exact, gradient
        self.param_devs, self.leaf_devs, self.reduced_devs = param_dev, leaf_dev, reduced_dev
        self.last = last = dict(zip(entries, range(count)))  # entry -> its last node
        self.repeated = len(last) != count
        saved, forward_names = backward_calls(entries)
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
            op_codes, ops = codes_of(combos["op"])
            groups = op_codes[codes] * 2 + backward  # one group per op and direction
            dtypes = combos["dtype"]
            local = local_floors(each(dtypes, unit_roundoff), combos["width"])[codes]
            finite_in = np.isfinite(in_eff)
            sampled = finite_out & finite_in & ~gradient
            gains = group_gains(groups[sampled], out_dev[sampled] / (in_eff[sampled] + local[sampled]), 2 * len(ops))
            floors = np.where(finite_in, gains[groups] * in_eff + local, np.inf)
            if repeated:
                floors = floors[at]
            cast = each(dtypes, parameter_floor)[codes]
            out_excess = _excess(out_dev, floors)
            reduced_excess = _excess(reduced_dev, floors)
            rules = np.select(
                [gradient,
                 _structure(combos["matched"], combos["unmatched"])[codes],
                 nan_out & ~nan_eff,
                 nan_eff & ~nan_before & ~backward,
                 nan_eff,
                 param_dev > cast,
                 # an input no dumped call produced is a parameter or buffer when it differs by more than a
                 # cast AND more than anything before it (else it may be a slice or cast of an earlier output)
                 (leaf_dev > np.maximum(cast, prior)) & (leaf_dev >= in_eff * 0.999) & ~backward,
                 _nonzero(combos["argument"], "")[codes] & (out_dev > local),
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

    def values(self, name: str, positions: Sequence[int] | None = None) -> list[Any]:
        """The value of field ``name`` (one of :data:`_COMBINED`: ``kind``, ``dtype``, ``argument``...) of the nodes
        at ``positions`` (every node when ``None``)."""
        column = self.combos[name]
        codes = self.codes if positions is None else self.codes[positions]
        if len(column) == 1:
            return column * len(codes)
        return np.fromiter(column, object, len(column))[codes].tolist()

    def unmatched(self) -> bool:
        """Whether a node has unmatched rows."""
        return bool(_nonzero(self.combos["unmatched"], 0)[self.codes].any())

    def dtype_errors(self, found: list[int]) -> list[tuple[str, int, float]]:
        """``(dtype, calls, largest finite error)`` of the nodes of each dtype that are not suspects (nor share
        a suspect's entry) and not ``parameters_grad`` ones, dtypes in order of first appearance (not "")."""
        kept = ~self.gradient
        if self.repeated:
            kept[np.isin(self.at, self.at[found])] = False
        else:
            kept[found] = False
        errors = self.finite_error[kept]
        dtype_codes, dtypes = codes_of(self.combos["dtype"])
        if len(dtypes) == 1:
            counted = [(dtypes[0], errors)]
        else:  # in order of their first kept node
            codes = dtype_codes[self.codes[kept]]
            present, first = np.unique(codes, return_index=True)
            counted = [(dtypes[code], errors[codes == code]) for code in present[np.argsort(first)].tolist()]
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


_COMBINED = ("kind", "op", "dtype", "width", "matched", "unmatched", "argument", "backward", "nan_out", "nan_in",
             "exact")
"""The fields judged once per combination of them (:meth:`RankView.values` reads them)."""
_FLAGS = _COMBINED[-4:]


class _Table(NamedTuple):
    """A rank's nodes as columns: ``entries``, ``modules`` and ``orders`` one value a node, the deviations as float64
    arrays (by name), and the fields of :data:`_COMBINED` as one list of values per combination (``combos``, by
    name) with each node's combination number (``codes``)."""

    entries: list[str]
    modules: list[str]
    orders: Sequence[int]
    deviations: dict[str, np.ndarray]
    codes: np.ndarray
    combos: dict[str, list[Any]]


def _columns(nodes: Sequence[NodeFacts]) -> _Table:
    """The :class:`_Table` of ``nodes``: read whole from a :class:`FactColumns`, else each node read once (its own
    combination: a pass per field reads every node from memory again)."""
    if isinstance(nodes, FactColumns):  # kept as arrays: read whole columns, no node
        codes, combos = nodes.coded(_COMBINED)
        return _Table(nodes.entries, nodes.modules, range(len(nodes)), dict(zip(_FLOATS, nodes.deviations().T)),
                      codes, dict(zip(_COMBINED, combos)))
    entries: list[str] = []
    modules: list[str] = []
    orders: list[int] = []
    floats: list[float] = []
    combos = tuple([] for _ in _COMBINED)
    kind, op, dtype, width, matched, unmatched, argument, backward, nan_out, nan_in, exact = combos
    for n in nodes:
        entries.append(n.entry)
        modules.append(n.module)
        orders.append(n.order)
        floats += map(n.__getattribute__, _FLOATS)
        kind.append(n.kind)
        op.append(n.op)
        dtype.append(n.dtype)
        width.append(n.width)
        matched.append(n.matched)
        unmatched.append(n.unmatched)
        argument.append(n.argument)
        backward.append(n.backward)
        nan_out.append(n.nan_out)
        nan_in.append(n.nan_in)
        exact.append(n.exact)
    deviations = dict(zip(_FLOATS, np.array(floats, float).reshape(-1, len(_FLOATS)).T.copy()))
    return _Table(entries, modules, orders, deviations, np.arange(len(entries)), dict(zip(_COMBINED, combos)))


def backward_calls(entries: list[str]) -> tuple[list[int], list[str]]:
    """The positions of the entries with "backward" in their name and the names of their forward calls
    (:func:`~probe.diagnosis.rules.forward_of`, ``""`` for none)."""
    saved = list(compress(range(len(entries)), map(contains, entries, repeat("backward"))))
    forward = []
    for i in saved:  # forward_of(name), its two usual cases inline
        name = entries[i]
        if name.endswith(".backward"):
            forward.append(name[:-8] + "forward")
        else:
            head, _, tail = name.rpartition(".")
            forward.append(head[:-8] + "forward." + tail if head.endswith(".backward") else forward_of(name) or "")
    return saved, forward
