"""Statistics mode's Result rules over the rows of many entries at once (whole columns, numpy).

:func:`probe.modes.statistics.judge_group` judges one entry a row at a time. Most entries of
a real dump hold only rows whose eight statistics are finite floats (or ints, or ``None``),
matched and computed when read (:class:`~probe.modes.statistics.StatRowResult`); for those the rules reduce to
array work: rule 1 (nan/inf) cannot fire, the NormRelativeErr fractions are one float64
expression of the two Norm columns (the same IEEE operations as the per-row code), the cross
rules are maxima per entry, and rules 3-6 need only the rows whose dtype, shape or
requires_grad differ, or whose dtype is a class (a scalar argument). Rows with other
statistics (text, booleans, nan, inf) take the per-row part of the rules one by one; an entry
with an unmatched row, or one whose metrics were set, goes through ``judge_group``. The statistics matrices made here (:func:`stat_matrix`) are kept for
the CSV rendering of the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import attrgetter, eq, is_, is_not

import numpy as np

from probe.model import ERROR, WARNING
from probe.modes import common
from probe.modes.stat_columns import FLOAT, INT, NONE, stat_matrix
from probe.modes.statistics import (MSG_NORM_OUTPUT, MSG_NORM_RATIO, StatRowResult, judge_group,
                                    norm_fractions, structure_rules)
from probe.result import RowResult

_PAIR, _TARGET, _GOLDEN = attrgetter("pair"), attrgetter("target"), attrgetter("golden")
_STATE, _STATS = attrgetter("state"), attrgetter("stats")
_STORED = RowResult.metrics.__get__
"""The metrics a row holds (``None``: a :class:`StatRowResult` computes them when read)."""


def judge_entries(records: Sequence[RowResult], starts: list[int]) -> None:
    """Judge the rows of every entry of ``records`` as ``judge_group`` judges each entry
    (``starts``: the index of each entry's first row, see :func:`probe.judge.entry_starts`).

    Messages on a row come in ``judge_group``'s order: the "not compared" mark and rule 1
    (nan/inf; only rows with other statistics than finite numbers or ``None``, one by one),
    the early NormRelativeErr rule, rules 3-6, the late rule.
    """
    n = len(records)
    if not n:
        return
    pairs = list(map(_PAIR, records))
    targets = list(map(_TARGET, pairs))
    goldens = list(map(_GOLDEN, pairs))
    lazy = _lazy(records, goldens)
    if lazy is None:
        lazy_targets, lazy_goldens = targets, goldens
    else:
        lazy_targets, lazy_goldens = list(compress(targets, lazy)), list(compress(goldens, lazy))
    fast = np.zeros(n, dtype=bool)
    plain = np.zeros(n)
    counted = np.zeros(n)
    suspicious = np.zeros(n, dtype=bool)
    if lazy_targets:
        (t, t_kind), (g, g_kind) = stat_matrix(list(map(_STATS, lazy_targets))), stat_matrix(list(map(_STATS, lazy_goldens)))
        where = slice(None) if lazy is None else np.fromiter(lazy, dtype=bool, count=n)
        with np.errstate(all="ignore"):
            fast[where] = (_plain(t, t_kind) & _plain(g, g_kind) & (t_kind[:, 3] == g_kind[:, 3]))
            d, i = t[:, 3], g[:, 3]
            # "0" for equal values (zeros of one sign) and for None against None, as the per-row code
            exact = ((d == i) & ((d != 0) | (np.signbit(d) == np.signbit(i)))) | (t_kind[:, 3] == NONE)
            infinite = ~exact & (i == 0)
            fraction = np.where(exact | infinite, 0.0, np.abs((d - i) / i * 100) / 100)
        plain[where] = fraction
        counted[where] = np.where(infinite, np.inf, fraction)
        suspicious[where] = [t.dtype != g.dtype or t.shape != g.shape or t.requires_grad != g.requires_grad
                             or "class" in t.dtype for t, g in zip(lazy_targets, lazy_goldens)]
    # per entry: which rules apply (its API); entries with rows not computed when read go through judge_group
    kinds = np.fromiter(map(_api_rules, (targets[start].entry for start in starts)), dtype=np.int8, count=len(starts))
    sizes = np.diff(starts + [n])
    group_kind = np.repeat(kinds, sizes)
    output = np.fromiter(map(eq, map(_STATE, targets), repeat("output")), dtype=bool, count=n)
    if lazy is not None:
        whole = np.logical_and.reduceat(np.fromiter(lazy, dtype=bool, count=n), starts)
        for start, stop in _slow_groups(whole, starts, n):
            judge_group(records[start:stop])
        fast |= ~np.repeat(whole, sizes)  # done
    else:
        whole = np.ones(len(starts), dtype=bool)
    for index in np.flatnonzero(~fast).tolist():  # other statistics (text, bool, nan, inf...): row by row
        plain[index], counted[index] = _row_rules(records[index], group_kind[index], output[index])
    whole &= kinds != _SKIP  # entries of skipped APIs take no further rule
    group_whole = np.repeat(whole, sizes)
    norms = whole & (kinds == _ALL)
    norm_in = np.maximum.reduceat(np.where(output, 0.0, plain), starts)
    norm_out = np.maximum.reduceat(np.where(output, plain, -1.0), starts)
    has_output = np.logical_or.reduceat(output, starts)
    with np.errstate(all="ignore"):
        ratio = ((norm_in == 0) & (norm_out > 0.1)) | ((norm_in > 0) & (norm_out / norm_in > 10))
    early = output & (counted > 0.5) & np.repeat(norms & (norm_in < 0.1), sizes)
    checked = suspicious & group_whole & (output | (group_kind == _ALL))
    late_groups = norms & has_output & ratio
    top = output & (plain == np.repeat(norm_out, sizes)) & np.repeat(late_groups, sizes)
    late = np.zeros(n, dtype=bool)
    if top.any():
        rows = np.flatnonzero(top)
        group_of = np.repeat(np.arange(len(starts)), sizes)[rows]
        late[rows[np.unique(group_of, return_index=True)[1]]] = True  # the first output at the maximum
    for index in np.flatnonzero(early).tolist():
        records[index].raise_to(ERROR, MSG_NORM_OUTPUT)
    for index in np.flatnonzero(checked).tolist():
        structure_rules(records[index])
    for index in np.flatnonzero(late).tolist():
        records[index].raise_to(WARNING, MSG_NORM_RATIO)


def _row_rules(r: RowResult, kind: int, output: bool) -> tuple[float, float]:
    """What ``judge_group``'s pass over the rows does to a row whose statistics are not all finite
    numbers or ``None``: the "not compared" mark and rule 1; its :func:`norm_fractions`."""
    t, g = r.pair.target, r.pair.golden
    reason = common.not_compared_reason(r)
    if reason:
        r.mark_not_compared(reason)
    if kind == _SKIP:
        return 0.0, 0.0  # not read
    if kind == _ALL or output:
        nan_or_inf = common.is_nan_or_inf
        if (not (nan_or_inf(g.stats[0]) or nan_or_inf(g.stats[1]))
                and (nan_or_inf(t.stats[0]) or nan_or_inf(t.stats[1]))):
            r.raise_to(ERROR, common.MSG_NAN_INF)
    return norm_fractions(r)


def _plain(values: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Rows of four finite floats, ints exact in float64 or ``None`` (no rule 1, no "not compared")."""
    return ((kinds == INT) | (kinds == NONE) | ((kinds == FLOAT) & np.isfinite(values))).all(1)


def _lazy(records: Sequence[RowResult], goldens: list) -> list[bool] | None:
    """Which records are matched rows whose metrics are computed when read (``None``: all)."""
    if (all(map(is_, map(type, records), repeat(StatRowResult))) and all(map(is_not, goldens, repeat(None)))
            and all(map(is_, map(_STORED, records, repeat(RowResult)), repeat(None)))):
        return None
    return [r.__class__ is StatRowResult and g is not None and _STORED(r, RowResult) is None
            for r, g in zip(records, goldens)]


_ALL, _OUTPUTS, _SKIP = 0, 1, 2
"""Rules an entry's API takes: all, the outputs' rules 1 and 3-6 only, none."""


def _api_rules(entry: str) -> int:
    parts = entry.split(".", 2)
    api = parts[1] if len(parts) > 1 else entry
    return _SKIP if api in common.SKIP_ALL_APIS else _OUTPUTS if api in common.OUTPUT_ONLY_APIS else _ALL


def _slow_groups(whole: np.ndarray, starts: list[int], n: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of the entries that are not judged over columns."""
    slow = np.flatnonzero(~whole).tolist()
    return [(starts[k], starts[k + 1] if k + 1 < len(starts) else n) for k in slow]
