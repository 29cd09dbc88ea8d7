"""Judged rows as plain tuples, to pickle between probe's own processes.

Pickling :class:`~probe.result.RowResult` objects as they are costs about 20 us a row (every
slotted object goes through ``copyreg``). As tuples of their slot values, packing and
pickling cost about 3 us a row and unpickling and unpacking as much, and one pickle still
shares what the rows shared (entry names, stack texts). Values are taken from the slots as
stored: a metric computed when read (``StatRowResult``) stays uncomputed.
"""

from __future__ import annotations

from dataclasses import fields
from operator import attrgetter
from typing import Any

from probe.model import Pair, Row
from probe.result import RowResult

_ROW_SLOTS = tuple(Row.__dict__.get("__slots__", ()))
_ROW_SETTERS = tuple(getattr(Row.__dict__.get(name), "__set__", None) for name in _ROW_SLOTS)
_ROW_KNOWN = len(_ROW_SLOTS) > 1 and None not in _ROW_SETTERS and Row.__dictoffset__ == 0 and Row.__bases__ == (object,)
_row_values = attrgetter(*_ROW_SLOTS) if _ROW_KNOWN else None
_PAIR_KNOWN = tuple(f.name for f in fields(Pair)) == ("target", "golden", "fuzzy")
_RESULT_SLOTS = tuple(name for name in RowResult.__dict__.get("__slots__", ()) if name != "pair")
_RESULT_GETTERS = tuple(getattr(RowResult.__dict__.get(name), "__get__", None) for name in _RESULT_SLOTS)
_RESULT_SETTERS = tuple(getattr(RowResult.__dict__.get(name), "__set__", None) for name in _RESULT_SLOTS)
_RESULT_KNOWN = bool(_RESULT_SLOTS) and None not in _RESULT_GETTERS + _RESULT_SETTERS and RowResult.__dictoffset__ == 0
_plain_classes: dict[type, bool] = {}


def _plain(cls: type) -> bool:
    """Whether ``cls`` is :class:`RowResult` or a subclass that adds no state of its own."""
    plain = _plain_classes.get(cls)
    if plain is None:
        mro = cls.__mro__
        plain = _plain_classes[cls] = RowResult in mro and cls.__dictoffset__ == 0 and all(
            k.__dict__.get("__slots__") == () for k in mro[:mro.index(RowResult)])
    return plain


def _row(row: Row | None) -> tuple[Any, ...] | None:
    if row is None:
        return None
    if row.__class__ is not Row or _row_values is None:
        raise TypeError(f"cannot pack a {type(row).__name__}")
    return _row_values(row)


def pack(records: list[RowResult]) -> list[tuple[Any, ...]]:
    """The records as tuples of plain values (:func:`unpack` makes them again); ``TypeError``
    for a record, pair or row class that keeps state elsewhere than in the known slots."""
    if not (_PAIR_KNOWN and _RESULT_KNOWN):
        raise TypeError("cannot pack these records")
    out = []
    append = out.append
    getters = _RESULT_GETTERS
    for record in records:
        cls = record.__class__
        if not _plain(cls):
            raise TypeError(f"cannot pack a {cls.__name__}")
        pair = record.pair
        append((cls, _row(pair.target), _row(pair.golden), pair.fuzzy, [get(record, RowResult) for get in getters]))
    return out


def _unrow(values: tuple[Any, ...] | None, new: Any = object.__new__) -> Row | None:
    if values is None:
        return None
    row = new(Row)
    for setter, value in zip(_ROW_SETTERS, values):
        setter(row, value)
    return row


def unpack(items: list[tuple[Any, ...]]) -> list[RowResult]:
    """The records :func:`pack` packed."""
    out = []
    append = out.append
    new = object.__new__
    setters = _RESULT_SETTERS
    for cls, target, golden, fuzzy, values in items:
        record = new(cls)
        record.pair = Pair(_unrow(target), _unrow(golden), fuzzy)
        for setter, value in zip(setters, values):
            setter(record, value)
        append(record)
    return out
