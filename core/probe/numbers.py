"""Reading numbers from dump values and report cells (plain data, no dependencies)."""

from __future__ import annotations

from typing import Any


def as_number(value: Any) -> float | None:
    """``value`` as a float when it is a number or numeric text; ``None`` otherwise.

    Booleans and ``None`` are not numbers (a dump's ``True`` is a flag, not 1.0); ``"inf"`` and
    ``"nan"`` read as the special floats.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def cell_number(value: Any) -> float | None:
    """A float from a number or a report cell: like :func:`as_number`, and ``"0.12%"`` is 0.0012."""
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        return float(value)
    if kind is not str:
        return as_number(value)
    text = value.strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        return float(text) * scale
    except ValueError:
        return None
