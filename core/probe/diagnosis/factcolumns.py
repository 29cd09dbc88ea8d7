"""The diagnosis facts of a rank kept in a few flat arrays instead of one object per entry.

A streamed compare of a million entries keeps the facts of every entry until the diagnosis
runs: as :class:`~probe.diagnosis.facts.NodeFacts` objects that is about 330 bytes an entry
(the object, its order and its deviations as float objects); here the deviations are float64
numbers in one array, the flags bytes, the order the position, and the texts and counts
references to the (shared) objects the facts were made of, about 150 bytes an entry. Reading a
node gives the :class:`NodeFacts` the builder used to keep (made on demand);
:meth:`FactColumns.lists` gives whole columns to :class:`probe.diagnosis.columns.RankView`
without making any node.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, repeat
from operator import index as as_index
from operator import itemgetter
from typing import Any, overload

NodeFacts = Any
"""A :class:`probe.diagnosis.facts.NodeFacts` (that module imports this one)."""

# where each field sits in a tuple of NodeFacts slot values (see probe.diagnosis.facts._restored)
_SLOTS = ("entry", "order", "kind", "op", "backward", "in_dev", "out_dev", "param_dev", "leaf_dev", "nan_in",
          "nan_out", "argument", "unmatched", "matched", "reduced_dev", "width", "dtype", "exact", "module", "w_in",
          "w_out", "w_param", "w_leaf", "w_reduced", "tails")
_AT = {name: i for i, name in enumerate(_SLOTS)}
_OBJECTS = ("entry", "kind", "op", "argument", "unmatched", "matched", "width", "dtype", "w_in", "w_out", "w_param",
            "w_leaf", "w_reduced")
"""Kept as references to the objects themselves (shared texts, small or cached numbers)."""
_FLOATS = ("in_dev", "out_dev", "param_dev", "leaf_dev", "reduced_dev")
_BYTES = ("backward", "nan_in", "nan_out", "exact", "tails")
_FLAGS = _BYTES[:4]
_OBJECTS_OF, _FLOATS_OF, _BYTES_OF = (itemgetter(*(_AT[name] for name in names))
                                     for names in (_OBJECTS, _FLOATS, _BYTES))
_ENTRY_OF = itemgetter(0)
_N_OBJECTS, _N_FLOATS, _N_BYTES = len(_OBJECTS), len(_FLOATS), len(_BYTES)
LEAF_BIT = 8
"""The bit of ``w_leaf`` in ``tails`` (:attr:`NodeFacts.tails`)."""
_ROW_NAMES = {"worst_in": ("w_in", 1), "worst_out": ("w_out", 2), "worst_param": ("w_param", 4),
              "worst_leaf": ("w_leaf", LEAF_BIT), "worst_reduced": ("w_reduced", 16)}
"""Each row-name property of :class:`NodeFacts`: the field it keeps and the bit in ``tails`` saying it is a tail."""


class FactColumns(Sequence[Any]):
    """A rank's :class:`NodeFacts` in dump order (``order`` is the position): the fields of :data:`_OBJECTS`
    node after node in one list, the deviations in one float64 array, the flags and ``tails`` in one
    bytearray (a node's fields side by side: one slice each reads a node back), ``module`` in a list.
    ``make`` makes a node of its slot values (:func:`probe.diagnosis.facts._restored`)."""

    def __init__(self, make: Callable[[tuple[Any, ...]], NodeFacts]) -> None:
        self.make = make
        self.objects: list[Any] = []
        self.floats = array("d")
        self.bytes = bytearray()
        self.modules: list[str] = []

    def __len__(self) -> int:
        return len(self.modules)

    @overload
    def __getitem__(self, index: int) -> NodeFacts: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeFacts]: ...

    def __getitem__(self, index: int | slice) -> NodeFacts | list[NodeFacts]:
        if index.__class__ is not int:
            if isinstance(index, slice):
                return [self._node(i) for i in range(*index.indices(len(self)))]
            index = as_index(index)
        if index < 0:
            index += len(self)
            if index < 0:
                raise IndexError("node index out of range")
        return self._node(index)

    def __iter__(self) -> Iterator[NodeFacts]:
        return map(self._node, range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FactColumns):
            return (self.objects, self.floats, self.bytes, self.modules) == (
                other.objects, other.floats, other.bytes, other.modules)
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it replaces

    def __repr__(self) -> str:
        return f"FactColumns({list(self)!r})"

    def _node(self, index: int) -> NodeFacts:
        module = self.modules[index]  # IndexError past the end
        at = _N_OBJECTS * index
        entry, kind, op, argument, unmatched, matched, width, dtype, w_in, w_out, w_param, w_leaf, w_reduced = \
            self.objects[at:at + _N_OBJECTS]
        at = _N_FLOATS * index
        in_dev, out_dev, param_dev, leaf_dev, reduced_dev = self.floats[at:at + _N_FLOATS]
        at = _N_BYTES * index
        backward, nan_in, nan_out, exact, tails = self.bytes[at:at + _N_BYTES]
        return self.make((entry, index, kind, op, backward == 1, in_dev, out_dev, param_dev, leaf_dev, nan_in == 1,
                          nan_out == 1, argument, unmatched, matched, reduced_dev, width, dtype, exact == 1, module,
                          w_in, w_out, w_param, w_leaf, w_reduced, tails))

    def extend(self, rows: Sequence[tuple[Any, ...]], parent_of: Callable[[str, str], str]) -> None:
        """Append the nodes whose slot values (``order`` and ``module`` ignored) are ``rows``, their
        ``module`` from ``parent_of(entry, "")``."""
        self.objects.extend(chain.from_iterable(map(_OBJECTS_OF, rows)))
        self.floats.fromlist(list(chain.from_iterable(map(_FLOATS_OF, rows))))  # twice as fast as extend()
        self.bytes.extend(chain.from_iterable(map(_BYTES_OF, rows)))
        self.modules.extend(map(parent_of, map(_ENTRY_OF, rows), repeat("")))

    def set_leaf(self, index: int, dev: float, name: str, tail: bool) -> None:
        """``leaf_dev`` and ``worst_leaf`` of node ``index`` (``tail``: ``name`` follows its entry's name)."""
        self.floats[_N_FLOATS * index + _FLOATS.index("leaf_dev")] = dev
        self.objects[_N_OBJECTS * index + _OBJECTS.index("w_leaf")] = name
        at = _N_BYTES * index + _BYTES.index("tails")
        self.bytes[at] = self.bytes[at] | LEAF_BIT if tail else self.bytes[at] & ~LEAF_BIT

    def row_names(self, name: str, positions: Sequence[int]) -> list[str]:
        """The row name ``name`` (``worst_in``, ``worst_out``, ...) of the nodes at ``positions``, as the nodes
        would give it (none is made)."""
        field, bit = _ROW_NAMES[name]
        k = _OBJECTS.index(field)
        objects, tails = self.objects, self.bytes[_BYTES.index("tails")::_N_BYTES]
        out = []
        for i in positions:
            at = _N_OBJECTS * i
            value = objects[at + k]
            out.append(objects[at] + value if tails[i] & bit else value)
        return out

    def lists(self, names: Sequence[str]) -> list[Sequence[Any]]:
        """The values of each field of ``names`` (``order`` too), as reading every node would give them: a
        list, or for deviations a numpy float64 array and for flags a numpy bool array (no Python object
        made for every node)."""
        import numpy as np  # not at start-up: only the ranking reads whole columns

        floats = bytes_ = None
        out: list[Sequence[Any]] = []
        for name in names:
            if name == "order":
                out.append(list(range(len(self))))
            elif name == "module":
                out.append(list(self.modules))
            elif name in _FLOATS:
                if floats is None:  # a copy: a view would pin the array's size
                    floats = np.frombuffer(self.floats, np.float64).reshape(-1, _N_FLOATS).copy()
                out.append(floats[:, _FLOATS.index(name)])
            elif name in _BYTES:
                if bytes_ is None:
                    bytes_ = np.frombuffer(self.bytes, np.uint8).reshape(-1, _N_BYTES).copy()
                column = bytes_[:, _BYTES.index(name)]
                out.append(column != 0 if name in _FLAGS else column.tolist())
            else:
                out.append(self.objects[_OBJECTS.index(name)::_N_OBJECTS])
        return out
