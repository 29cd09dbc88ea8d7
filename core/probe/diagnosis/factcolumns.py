"""The diagnosis facts of a rank kept a column at a time instead of one object per entry.

A streamed compare of a million entries keeps the facts of every entry until the diagnosis
runs: as :class:`~probe.diagnosis.facts.NodeFacts` objects that is about 330 bytes an entry
(the object, its order and its deviations as float objects); here the deviations are float64
arrays, the flags bytes, the order the position, and the texts and counts references to the
(shared) objects the facts were made of, about 150 bytes an entry. Reading a node gives the
:class:`NodeFacts` the builder used to keep (made on demand); :meth:`FactColumns.lists` gives
whole columns to :class:`probe.diagnosis.columns.RankView` without making any.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from probe.diagnosis.facts import NodeFacts

# where each field sits in a tuple of NodeFacts slot values (see probe.diagnosis.facts._restored)
_SLOTS = ("entry", "order", "kind", "op", "backward", "in_dev", "out_dev", "param_dev", "leaf_dev", "nan_in",
          "nan_out", "argument", "unmatched", "matched", "reduced_dev", "width", "dtype", "exact", "module", "w_in",
          "w_out", "w_param", "w_leaf", "w_reduced", "tails")
_AT = {name: i for i, name in enumerate(_SLOTS)}
_OBJECTS = ("entry", "kind", "op", "argument", "unmatched", "matched", "width", "dtype", "w_in", "w_out", "w_param",
            "w_leaf", "w_reduced")
"""Kept as references to the objects themselves (shared texts, small or cached numbers)."""
_FLOATS = ("in_dev", "out_dev", "param_dev", "leaf_dev", "reduced_dev")
_FLAGS = ("backward", "nan_in", "nan_out", "exact")
LEAF_BIT = 8
"""The bit of ``w_leaf`` in ``tails`` (:attr:`NodeFacts.tails`)."""


class FactColumns(Sequence["NodeFacts"]):
    """A rank's :class:`NodeFacts` in dump order, one column per field (``order`` is the position)."""

    def __init__(self) -> None:
        self.columns: dict[str, Any] = {name: [] for name in _OBJECTS}
        self.columns.update({name: array("d") for name in _FLOATS})
        self.columns.update({name: bytearray() for name in (*_FLAGS, "tails")})
        self.columns["module"] = []

    def __len__(self) -> int:
        return len(self.columns["entry"])

    @overload
    def __getitem__(self, index: int) -> NodeFacts: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeFacts]: ...

    def __getitem__(self, index: int | slice) -> NodeFacts | list[NodeFacts]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("node index out of range")
        return self._node(index)

    def __iter__(self) -> Iterator[NodeFacts]:
        return map(self._node, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FactColumns):
            return self.columns == other.columns
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it replaces

    def __repr__(self) -> str:
        return f"FactColumns({list(self)!r})"

    def _node(self, index: int) -> NodeFacts:
        from probe.diagnosis.facts import _restored

        columns = self.columns
        values = [index if name == "order" else columns[name][index] for name in _SLOTS]
        for name in _FLAGS:
            values[_AT[name]] = bool(values[_AT[name]])
        return _restored(tuple(values))

    def extend(self, rows: Sequence[tuple[Any, ...]], parent_of: Callable[[str, str], str]) -> None:
        """Append the nodes whose slot values (``order`` and ``module`` ignored) are ``rows``, their
        ``module`` from ``parent_of(entry, "")``."""
        if not rows:
            return
        fields = list(zip(*rows))
        columns = self.columns
        for name, column in columns.items():
            if name != "module":
                column.extend(fields[_AT[name]])
        columns["module"].extend(map(parent_of, fields[0], repeat("")))

    def set_leaf(self, index: int, dev: float, name: str, tail: bool) -> None:
        """``leaf_dev`` and ``worst_leaf`` of node ``index`` (``tail``: ``name`` follows its entry's name)."""
        columns = self.columns
        columns["leaf_dev"][index] = dev
        columns["w_leaf"][index] = name
        tails = columns["tails"]
        tails[index] = tails[index] | LEAF_BIT if tail else tails[index] & ~LEAF_BIT

    def lists(self, names: Sequence[str]) -> list[Sequence[Any]]:
        """The values of each field of ``names`` (``order`` too), as reading every node would give them: a
        list, or for deviations the float64 array kept (read only: no float object made for every node)."""
        columns, count = self.columns, len(self)
        out: list[Sequence[Any]] = []
        for name in names:
            if name == "order":
                out.append(list(range(count)))
            elif name in _FLAGS:
                out.append(list(map(bool, columns[name])))
            elif name in _FLOATS:
                out.append(columns[name])
            else:
                out.append(list(columns[name]))
        return out
