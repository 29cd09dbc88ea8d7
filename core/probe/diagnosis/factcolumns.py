"""The diagnosis facts of a rank kept in a few flat arrays instead of one object per entry.

A streamed compare of a million entries keeps the facts of every entry until the diagnosis
runs: as :class:`~probe.diagnosis.facts.NodeFacts` objects that is about 330 bytes an entry
(the object, its order and its deviations as float objects); here the deviations are float64
numbers in one array, the flags bytes, the order the position, the entry and module names
references to the (shared) strings the facts were made of, and the other texts and counts, which
take few distinct values together, the number of their combination: about 70 bytes an entry. Reading a
node gives the :class:`NodeFacts` the builder used to keep (made on demand);
:meth:`FactColumns.coded` and :meth:`FactColumns.deviations` give whole columns to
:class:`probe.diagnosis.columns.RankView` without making any node.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
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
"""Kept as references to the objects themselves: ``entry`` one a node, the others in its combination."""
_FLOATS = ("in_dev", "out_dev", "param_dev", "leaf_dev", "reduced_dev")
_BYTES = ("backward", "nan_in", "nan_out", "exact", "tails")
_COMBINED = _OBJECTS[1:] + _BYTES
"""The fields a node keeps as the number of their combination (few distinct ones: the op, its kind, the
dtype, the worst rows' tails, the flags...)."""
_COMBO_OF, _FLOATS_OF = (itemgetter(*(_AT[name] for name in names)) for names in (_COMBINED, _FLOATS))
_ENTRY_OF = itemgetter(0)
_N_FLOATS = len(_FLOATS)
_LEAF_AT, _TAILS_AT = _COMBINED.index("w_leaf"), _COMBINED.index("tails")
_CODE = "I"
"""The type code of a node's combination number (4 bytes instead of 17 fields)."""
LEAF_BIT = 8
"""The bit of ``w_leaf`` in ``tails`` (:attr:`NodeFacts.tails`)."""
_ROW_NAMES = {"worst_in": ("w_in", 1), "worst_out": ("w_out", 2), "worst_param": ("w_param", 4),
              "worst_leaf": ("w_leaf", LEAF_BIT), "worst_reduced": ("w_reduced", 16)}
"""Each row-name property of :class:`NodeFacts`: the field it keeps and the bit in ``tails`` saying it is a tail."""


class FactColumns(Sequence[Any]):
    """A rank's :class:`NodeFacts` in dump order (``order`` is the position): the fields of :data:`_OBJECTS`
    node after node, the deviations in one float64 array, the flags and ``tails`` in one bytearray (a
    node's fields side by side: one slice each reads a node back), ``entry`` and ``module`` in lists.
    The fields of :data:`_OBJECTS` but ``entry`` take few distinct values together (the op, its kind,
    the dtype, the worst rows' tails...): each node keeps the number of its combination of them
    (:data:`_CODE`), one tuple per combination kept in ``combos``.
    ``make`` makes a node of its slot values (:func:`probe.diagnosis.facts._restored`)."""

    def __init__(self, make: Callable[[tuple[Any, ...]], NodeFacts]) -> None:
        self.make = make
        self.entries: list[str] = []
        self.codes = array(_CODE)
        self.combos: list[tuple[Any, ...]] = []
        self.numbers: dict[tuple[Any, ...], int] = {}
        """Each combination's position in ``combos``."""
        self.floats = array("d")
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
            return (self.entries, self.floats, self.modules) == (other.entries, other.floats, other.modules) and \
                list(map(self.combos.__getitem__, self.codes)) == list(map(other.combos.__getitem__, other.codes))
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like the list it replaces

    def __repr__(self) -> str:
        return f"FactColumns({list(self)!r})"

    def _node(self, index: int) -> NodeFacts:
        module = self.modules[index]  # IndexError past the end
        kind, op, argument, unmatched, matched, width, dtype, w_in, w_out, w_param, w_leaf, w_reduced, backward, \
            nan_in, nan_out, exact, tails = self.combos[self.codes[index]]
        at = _N_FLOATS * index
        in_dev, out_dev, param_dev, leaf_dev, reduced_dev = self.floats[at:at + _N_FLOATS]
        return self.make((self.entries[index], index, kind, op, backward == 1, in_dev, out_dev, param_dev, leaf_dev,
                          nan_in == 1, nan_out == 1, argument, unmatched, matched, reduced_dev, width, dtype, exact == 1,
                          module, w_in, w_out, w_param, w_leaf, w_reduced, tails))

    def extend(self, rows: Sequence[tuple[Any, ...]], modules_of: Callable[[list[str]], list[str]],
               names: Sequence[str] | None = None) -> None:
        """Append the nodes whose slot values (``order`` and ``module`` ignored) are ``rows``, their
        ``module`` from ``modules_of(entries)`` (one for each entry, in order). An entry equal to one of
        ``names`` is kept as that string (strings the caller keeps anyway, instead of the rows' copies)."""
        entries = list(map(_ENTRY_OF, rows))
        if names:
            shared = dict(zip(names, names))
            entries = list(map(shared.get, entries, entries))
        self.entries += entries
        combos = list(map(_COMBO_OF, rows))
        codes = list(map(self.numbers.get, combos))
        if None in codes:  # combinations not seen before (the first windows, mostly)
            for i in [i for i, code in enumerate(codes) if code is None]:
                codes[i] = self._number(combos[i])
        self.codes.fromlist(codes)
        self.floats.fromlist(list(chain.from_iterable(map(_FLOATS_OF, rows))))  # twice as fast as extend()
        self.modules += modules_of(entries)

    def set_leaf(self, index: int, dev: float, name: str, tail: bool) -> None:
        """``leaf_dev`` and ``worst_leaf`` of node ``index`` (``tail``: ``name`` follows its entry's name)."""
        self.floats[_N_FLOATS * index + _FLOATS.index("leaf_dev")] = dev
        combo = list(self.combos[self.codes[index]])
        combo[_LEAF_AT] = name
        combo[_TAILS_AT] = combo[_TAILS_AT] | LEAF_BIT if tail else combo[_TAILS_AT] & ~LEAF_BIT
        self.codes[index] = self._number(tuple(combo))

    def row_names(self, name: str, positions: Sequence[int]) -> list[str]:
        """The row name ``name`` (``worst_in``, ``worst_out``, ...) of the nodes at ``positions``, as the nodes
        would give it (none is made)."""
        field, bit = _ROW_NAMES[name]
        k = _COMBINED.index(field)
        combos, codes, entries = self.combos, self.codes, self.entries
        out = []
        for i in positions:
            combo = combos[codes[i]]
            value = combo[k]
            out.append(entries[i] + value if combo[_TAILS_AT] & bit else value)
        return out

    def deviations(self) -> Any:
        """Every node's deviations as a float64 matrix, a row per node and a column per field of :data:`_FLOATS`:
        a read-only view of the kept array (no copy: the ranking reads it once the facts are complete; the array
        cannot grow while the view lives)."""
        import numpy as np  # not at start-up: only the ranking reads whole columns

        view = np.frombuffer(self.floats, np.float64).reshape(-1, _N_FLOATS)
        view.flags.writeable = False
        return view

    def coded(self, names: Sequence[str]) -> tuple[Any, list[list[Any]]]:
        """``(codes, values)``: the number of each node's combination (a numpy ``intp`` array) and, for each field
        of ``names`` (fields kept in the combination), its value in each combination: a node's value of a field is
        ``values[k][codes[node]]``, and a field is judged once per combination instead of once per node."""
        import numpy as np  # not at start-up: only the ranking reads whole columns

        codes = np.frombuffer(self.codes, f"u{self.codes.itemsize}").astype(np.intp)
        return codes, [[combo[at] for combo in self.combos] for at in map(_COMBINED.index, names)]

    def _number(self, combo: tuple[Any, ...]) -> int:
        """``combo``'s position in ``combos`` (added when new)."""
        number = self.numbers.get(combo)
        if number is None:
            number = self.numbers[combo] = len(self.combos)
            self.combos.append(combo)
        return number
