"""Statistics-mode cells computed over whole columns with numpy.

The eight difference cells of a matched row (``Max diff`` ... ``NormRelativeErr``) are
``stat_difference`` of its four statistic pairs. For the usual pair (two finite floats)
that is one subtraction and one division, done here for every row at once in float64
(the same IEEE operations, in the same order, as the per-row code) and written as
``repr`` writes them (:func:`probe.csvtext.float_texts`); every other pair (ints, text, NaN, infinities, ``None``) goes through
``stat_difference`` itself, so the cells are the same text either way (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from probe.csvtext import float_texts
from probe.modes.common import display_stat

_NAN = float("nan")
_FLOAT = {float}


def _float_matrix(stats: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, is_float)`` of rows of four statistics; non-floats are NaN with ``is_float`` false."""
    flat = list(chain.from_iterable(stats))
    if set(map(type, flat)) == _FLOAT:
        return np.array(flat, dtype=np.float64).reshape(-1, 4), np.ones((len(stats), 4), dtype=bool)
    is_float = np.fromiter(map(_is_float, flat), dtype=bool, count=len(flat))
    values = np.array(flat, dtype=object)
    values[~is_float] = _NAN
    return values.astype(np.float64).reshape(-1, 4), is_float.reshape(-1, 4)


def _is_float(value: Any) -> bool:
    return value.__class__ is float


def stat_display_columns(stats: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Four columns of statistics as the report shows them (``display_stat`` of each)."""
    columns = [list(c) for c in zip(*stats)] if stats else [[], [], [], []]
    for column in columns:
        if set(map(type, column)) == _FLOAT:
            values = np.array(column, dtype=np.float64)
            bad = np.flatnonzero(np.isnan(values)).tolist()
        else:
            bad = [i for i, v in enumerate(column) if v is None or (v.__class__ is float and v != v)]
        for i in bad:
            column[i] = display_stat(column[i])
    return columns


def difference_columns(target_stats: Sequence[tuple[Any, ...]], golden_stats: Sequence[tuple[Any, ...]],
                       slow: Any) -> list[list[str]]:
    """The eight difference columns of matched rows (``diff`` x4 then ``relative`` x4).

    ``slow(npu, bench)`` is the per-value rule (``stat_difference``) used for every pair
    that is not two finite floats.
    """
    n = len(target_stats)
    if n == 0:
        return [[] for _ in range(8)]
    t, t_float = _float_matrix(target_stats)
    g, g_float = _float_matrix(golden_stats)
    with np.errstate(all="ignore"):
        ok = t_float & g_float & np.isfinite(t) & np.isfinite(g)
        diff = t - g
        rel = np.abs(diff / g * 100)
    equal = ok & (t == g)
    # equal and non-zero, or equal zeros of the same sign: "0", "0"
    zero = equal & ((t != 0) | (np.signbit(t) == np.signbit(g)))
    inf_rel = ok & ~zero & (g == 0)
    diffs: list[list[str]] = []
    rels: list[list[str]] = []
    for j in range(4):
        d_text = np.array(float_texts(diff[:, j].tolist()), dtype=object)
        r_text = np.array(float_texts(rel[:, j].tolist()), dtype=object) + "%"
        d_text[zero[:, j]] = "0"
        r_text[zero[:, j]] = "0"
        r_text[inf_rel[:, j]] = "inf"
        d_list, r_list = d_text.tolist(), r_text.tolist()
        for i in np.flatnonzero(~ok[:, j]).tolist():
            d_list[i], r_list[i] = slow(target_stats[i][j], golden_stats[i][j])
        diffs.append(d_list)
        rels.append(r_list)
    return diffs + rels
