"""The columns statistics mode's Result rules read, over the rows of many entries at once (numpy).

:func:`probe.modes.statistics.judge_group` judges one entry a row at a time. Most entries of
a real dump hold only rows whose eight statistics are finite floats (or ints, or ``None``),
matched and computed when read (:class:`~probe.modes.statistics.StatRowResult`); for those the
rules reduce to array work (:class:`EntryColumns`): rule 1 (nan/inf) and the "not compared"
mark cannot apply, the NormRelativeErr fractions are one float64 expression of the two Norm
columns (the same IEEE operations as the per-row code), the cross rules are maxima per
entry, and rules 3-6 need only the rows whose dtype, shape or requires_grad differ, or whose
dtype is a class (a scalar argument). The statistics matrices made here (:func:`stat_matrix`)
are kept for the CSV rendering of the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, repeat
from operator import eq, is_not

import numpy as np

from probe.modes import common
from probe.modes.stat_columns import FLOAT, INT, NONE, stat_matrix
from probe.result import RowResult, lazy_rows

_ALL, _OUTPUTS, _SKIP = 0, 1, 2
"""Rules an entry's API takes: all, the outputs' rules 1 and 3-6 only, none."""


class EntryColumns:
    """What the statistics rules read, as columns over the rows of many entries (each entry's
    rows consecutive, ``starts`` the index of each one's first row).

    ``lazy_class`` is the row class whose metrics are computed when read. Entries with a row
    of another class, unmatched or with metrics set, are left to the per-entry judge
    (:meth:`slow_entries`); rows with statistics other than finite numbers or ``None``, to
    the per-row rules (:meth:`other_rows`, then :meth:`set_fractions`); :meth:`hits` gives
    the rows where the cross rules and rules 3-6 apply.
    """

    def __init__(self, records: Sequence[RowResult], starts: list[int], lazy_class: type) -> None:
        n = self.n = len(records)
        self.starts = starts
        # list comprehensions: attribute reads there are specialised, faster than map(attrgetter)
        pairs = [r.pair for r in records]
        targets = [p.target for p in pairs]
        goldens = [p.golden for p in pairs]
        lazy = _lazy(records, goldens, lazy_class)
        if lazy is None:
            lazy_targets, lazy_goldens = targets, goldens
        else:
            lazy_targets, lazy_goldens = list(compress(targets, lazy)), list(compress(goldens, lazy))
        fast = np.zeros(n, dtype=bool)
        self.plain, self.counted = np.zeros(n), np.zeros(n)
        self.suspicious = np.zeros(n, dtype=bool)
        if lazy_targets:
            (t, t_kind), (g, g_kind) = (stat_matrix([row.stats for row in lazy_targets]),
                                        stat_matrix([row.stats for row in lazy_goldens]))
            where = slice(None) if lazy is None else np.fromiter(lazy, dtype=bool, count=n)
            with np.errstate(all="ignore"):
                fast[where] = _plain(t, t_kind) & _plain(g, g_kind) & (t_kind[:, 3] == g_kind[:, 3])
                d, i = t[:, 3], g[:, 3]
                # "0" for equal values (zeros of one sign) and for None against None, as the per-row code
                exact = ((d == i) & ((d != 0) | (np.signbit(d) == np.signbit(i)))) | (t_kind[:, 3] == NONE)
                infinite = ~exact & (i == 0)
                fraction = np.where(exact | infinite, 0.0, np.abs((d - i) / i * 100) / 100)
            self.plain[where] = fraction
            self.counted[where] = np.where(infinite, np.inf, fraction)
            self.suspicious[where] = [t.dtype != g.dtype or t.shape != g.shape or t.requires_grad != g.requires_grad
                                      or "class" in t.dtype for t, g in zip(lazy_targets, lazy_goldens)]
        self.kinds = np.fromiter(map(_api_rules, [targets[start].entry for start in starts]), dtype=np.int8,
                                 count=len(starts))
        self.sizes = np.diff(starts + [n])
        self.group_kind = np.repeat(self.kinds, self.sizes)
        self.output = np.fromiter(map(eq, [row.state for row in targets], repeat("output")), dtype=bool, count=n)
        if lazy is None:
            self.whole = np.ones(len(starts), dtype=bool)
        else:
            self.whole = np.logical_and.reduceat(np.fromiter(lazy, dtype=bool, count=n), starts)
            fast |= ~np.repeat(self.whole, self.sizes)  # left to the per-entry judge
        self.fast = fast

    def slow_entries(self) -> list[tuple[int, int]]:
        """``(start, stop)`` of the entries the per-entry judge takes (a row not computed when read)."""
        starts, n = self.starts, self.n
        return [(starts[k], starts[k + 1] if k + 1 < len(starts) else n) for k in np.flatnonzero(~self.whole).tolist()]

    def other_rows(self) -> list[tuple[int, bool, bool]]:
        """``(index, skipped, rule 1 applies)`` of the rows of the other entries whose statistics are
        not all finite numbers or ``None`` (text, booleans, nan, inf...): their per-row rules come first."""
        rows = np.flatnonzero(~self.fast)
        kinds = self.group_kind[rows]
        return list(zip(rows.tolist(), (kinds == _SKIP).tolist(), ((kinds == _ALL) | self.output[rows]).tolist()))

    def set_fractions(self, index: int, fractions: tuple[float, float]) -> None:
        """The NormRelativeErr fractions (``norm_fractions``) of an :meth:`other_rows` row."""
        self.plain[index], self.counted[index] = fractions

    def hits(self) -> tuple[list[int], list[int], list[int]]:
        """The rows the early NormRelativeErr rule fails, those rules 3-6 run on, those the late rule fails."""
        starts, sizes, output, kinds, plain = self.starts, self.sizes, self.output, self.kinds, self.plain
        whole = self.whole & (kinds != _SKIP)  # entries of skipped APIs take no further rule
        norms = whole & (kinds == _ALL)
        norm_in = np.maximum.reduceat(np.where(output, 0.0, plain), starts)
        norm_out = np.maximum.reduceat(np.where(output, plain, -1.0), starts)
        with np.errstate(all="ignore"):
            ratio = ((norm_in == 0) & (norm_out > 0.1)) | ((norm_in > 0) & (norm_out / norm_in > 10))
        early = output & (self.counted > 0.5) & np.repeat(norms & (norm_in < 0.1), sizes)
        checked = self.suspicious & np.repeat(whole, sizes) & (output | (self.group_kind == _ALL))
        late_groups = norms & np.logical_or.reduceat(output, starts) & ratio
        top = np.flatnonzero(output & (plain == np.repeat(norm_out, sizes)) & np.repeat(late_groups, sizes))
        group_of = np.repeat(np.arange(len(starts)), sizes)[top]
        late = top[np.unique(group_of, return_index=True)[1]]  # the first output at the entry's maximum
        return np.flatnonzero(early).tolist(), np.flatnonzero(checked).tolist(), late.tolist()


def _plain(values: np.ndarray, kinds: np.ndarray) -> np.ndarray:
    """Rows of four finite floats, ints exact in float64 or ``None`` (no rule 1, no "not compared")."""
    return ((kinds == INT) | (kinds == NONE) | ((kinds == FLOAT) & np.isfinite(values))).all(1)


def _lazy(records: Sequence[RowResult], goldens: list, lazy_class: type) -> list[bool] | None:
    """Which records are matched :func:`lazy_rows` (``None``: all)."""
    rows = lazy_rows(records, lazy_class)
    if len(rows) == len(records) and all(map(is_not, goldens, repeat(None))):
        return None
    lazy = [False] * len(records)
    for index in rows:
        lazy[index] = goldens[index] is not None
    return lazy


def _api_rules(entry: str) -> int:
    parts = entry.split(".", 2)
    api = parts[1] if len(parts) > 1 else entry
    return _SKIP if api in common.SKIP_ALL_APIS else _OUTPUTS if api in common.OUTPUT_ONLY_APIS else _ALL
