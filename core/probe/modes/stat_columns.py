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
from itertools import chain, compress, repeat
from operator import is_
from typing import Any

import numpy as np

from probe.csvtext import float_texts
from probe.modes.common import display_stat

_NAN = float("nan")
_NONE_TYPE = type(None)


def _float_matrix(stats: Sequence[tuple[Any, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """``(values, is_float)`` of rows of four statistics; non-floats are NaN with ``is_float`` false."""
    flat = list(chain.from_iterable(stats))
    is_float = list(map(is_, map(type, flat), repeat(float)))
    if all(is_float):
        return np.array(flat, dtype=np.float64).reshape(-1, 4), np.ones((len(stats), 4), dtype=bool)
    where = np.array(is_float, dtype=bool)
    values = np.full(len(flat), _NAN)
    values[where] = list(compress(flat, is_float))
    return values.reshape(-1, 4), where.reshape(-1, 4)


def stat_display_columns(stats: Sequence[tuple[Any, ...]]) -> list[list[Any]]:
    """Four columns of statistics as the report shows them (``display_stat`` of each)."""
    columns = [list(c) for c in zip(*stats)] if stats else [[], [], [], []]
    for column in columns:
        kinds = list(map(type, column))
        types = set(kinds)
        bad: list[int] = []
        if float in types:  # NaN floats
            is_float = list(map(is_, kinds, repeat(float)))
            values = np.array(list(compress(column, is_float)), dtype=np.float64)
            bad = np.flatnonzero(is_float)[np.isnan(values)].tolist()
        if _NONE_TYPE in types:
            bad.extend(compress(range(len(column)), map(is_, kinds, repeat(_NONE_TYPE))))
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
    # cells written as "0", "inf" or by ``slow`` are formatted as 0.0 (cheapest) and replaced
    diff[~ok | zero] = 0.0
    rel[~ok | zero | inf_rel] = 0.0
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
