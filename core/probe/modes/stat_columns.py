"""Statistics-mode cells computed over whole columns with numpy.

The statistics of a block of rows are read once into a float64 matrix with the kind of
every cell (:func:`stat_matrix`); the display columns and the difference columns are both
made from it. The eight difference cells of a matched row (``Max diff`` ...
``NormRelativeErr``) are ``stat_difference`` of its four statistic pairs. For the usual
pair (two finite floats, or two ints that float64 holds exactly) that is one subtraction
and one division, done here for every row at once in float64 (the same IEEE operations,
in the same order, as the per-row code) and written as ``repr`` writes them
(:func:`probe.csvtext.float_texts`); every other pair (mixed types, text, NaN, infinities,
``None``) goes through ``stat_difference`` itself, so the cells are the same text either
way (tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress, islice, repeat
from operator import is_, not_
from typing import Any, NamedTuple

import numpy as np
import orjson

from probe.csvtext import (JoinedFields, NumberTexts, PercentTexts, column_texts, float_texts, matrix_rows,
                           plain_floats)
from probe.modes.common import display_stat

_NAN = float("nan")
_NONE_TYPE = type(None)
OTHER, FLOAT, INT, NONE = 0, 1, 2, 3
"""Kinds of statistic cells in a :class:`StatMatrix` (``NONE``: ``None``, a statistic not recorded)."""
_EXACT_INT = 2**53
"""Ints below this magnitude are exact in float64 (their difference is computed in numpy)."""
_KIND_OF = {float: FLOAT, int: INT, _NONE_TYPE: NONE}
"""Kind of a statistic by its type (ints exact in float64 only: checked after)."""
_KIND_TEXT = {kind: chr(number) for kind, number in _KIND_OF.items()}
_OTHER_TEXT = chr(OTHER)
""":data:`_KIND_OF` as one-character texts (their code points the kinds)."""


class StatMatrix(NamedTuple):
    """The statistics of a block of rows: ``values`` (float64, NaN where the cell is not a
    number) and ``kinds`` (``FLOAT``, ``INT`` for ints exact in float64, ``NONE``, ``OTHER``), both
    of shape ``(rows, 4)``."""

    values: np.ndarray
    kinds: np.ndarray


KEEP_ROWS = 1 << 16
"""A matrix of at most this many rows is kept for the next calls (see :func:`stat_matrix`)."""
_KEPT: list[tuple[list[tuple[Any, ...]], StatMatrix]] = []
_RUNS = 64
"""Runs of a kept matrix looked at, at most (see :func:`_kept`)."""


def stat_matrix(stats: Sequence[tuple[Any, ...]]) -> StatMatrix:
    """:class:`StatMatrix` of rows of four statistics.

    The last two matrices made (a window's two sides: made for the judge, used again by the
    report) are kept, read-only, with the statistics tuples they were made of; a call on the
    same tuples, or on a run of them that starts at a multiple of its length or ends with
    them (what a report written in chunks asks for), takes its rows from there. Tuples are
    immutable, so the same tuple objects always make the same matrix rows.
    """
    kept = _kept(stats)
    if kept is not None:
        return kept
    matrix = _stat_matrix(stats)
    if 0 < len(stats) <= KEEP_ROWS:
        matrix.values.flags.writeable = matrix.kinds.flags.writeable = False
        _KEPT[:] = [(list(stats), matrix), *_KEPT[:1]]
    return matrix


def _kept(stats: Sequence[tuple[Any, ...]]) -> StatMatrix | None:
    """The kept rows of ``stats``, when a kept matrix was made of the same tuple objects."""
    size = len(stats)
    first = stats[0] if size else None
    for rows, matrix in _KEPT if size else ():
        # runs at the start, at multiples of their size or at the end (a report written in equal chunks)
        starts = range(0, len(rows) - size + 1, size) if len(rows) <= _RUNS * size else (0,)
        for at in (*starts, len(rows) - size):
            if at >= 0 and rows[at] is first and all(map(is_, stats, islice(rows, at, at + size))):
                return StatMatrix(matrix.values[at:at + size], matrix.kinds[at:at + size])
    return None


def _stat_matrix(stats: Sequence[tuple[Any, ...]]) -> StatMatrix:
    flat = list(chain.from_iterable(stats))
    # a one-character text per cell, then its bytes: faster than numpy reading an int per cell
    kinds = np.frombuffer(bytearray("".join(map(_KIND_TEXT.get, map(type, flat), repeat(_OTHER_TEXT))), "ascii"),
                          dtype=np.int8)
    if (kinds == FLOAT).all():
        return StatMatrix(np.array(flat, dtype=np.float64).reshape(-1, 4), kinds.reshape(-1, 4))
    numeric = (kinds == FLOAT) | (kinds == INT)  # float or int (not bool)
    values = np.full(len(flat), _NAN)
    try:
        values[numeric] = np.fromiter(compress(flat, numeric.tolist()), dtype=np.float64)
    except OverflowError:  # an int beyond float64: such ints stay NaN (OTHER)
        values[numeric] = [float(v) if v.__class__ is float or -_EXACT_INT < v < _EXACT_INT else _NAN
                           for v in compress(flat, numeric.tolist())]
    with np.errstate(invalid="ignore"):
        kinds[(kinds == INT) & ~(np.abs(values) < _EXACT_INT)] = OTHER
    return StatMatrix(values.reshape(-1, 4), kinds.reshape(-1, 4))


class StatColumn(list):
    """One statistics column as the report shows it (a list of display values) that also
    knows which cells are finite floats, so its CSV text needs no look at each cell."""

    __slots__ = ("_values", "_finite")

    def __init__(self, cells: Sequence[Any], values: np.ndarray, finite: np.ndarray) -> None:
        super().__init__(cells)
        self._values = values
        self._finite = finite

    def float_cells(self) -> tuple[np.ndarray, np.ndarray]:
        """Which cells are finite floats (a boolean array) and the column's values as float64."""
        return self._finite, self._values

    def csv_texts(self, inf_text: tuple[str, str]) -> list[str]:
        """What :func:`probe.csvtext.column_texts` gives for this column as a stat column."""
        finite = self._finite
        if finite.all():
            return float_texts(self._values.tolist())
        texts = np.empty(len(self), dtype=object)
        texts[finite] = float_texts(self._values[finite].tolist())
        rest = np.flatnonzero(~finite).tolist()
        texts[rest] = column_texts([self[i] for i in rest], True, inf_text)
        return texts.tolist()


def stat_display_columns(stats: Sequence[tuple[Any, ...]], matrix: StatMatrix | None = None) -> list[list[Any]]:
    """Four columns of statistics as the report shows them (``display_stat`` of each);
    ``matrix`` is :func:`stat_matrix` of ``stats`` when at hand."""
    if not stats:
        return [[], [], [], []]
    values, kinds = matrix if matrix is not None else stat_matrix(stats)
    floats = kinds == FLOAT
    with np.errstate(invalid="ignore"):
        finite = floats & np.isfinite(values)
    columns = []
    for j, cells in enumerate(zip(*stats)):
        column = StatColumn(cells, values[:, j], finite[:, j])
        for i in np.flatnonzero(floats[:, j] & np.isnan(values[:, j])).tolist():
            column[i] = "Nan"
        if not finite[:, j].all():
            for i in np.flatnonzero((kinds[:, j] == OTHER) | (kinds[:, j] == NONE)).tolist():
                column[i] = display_stat(column[i])
        columns.append(column)
    return columns


class _Differences(NamedTuple):
    """What both difference renderings start from (arrays of shape ``(rows, 4)``)."""

    matrices: tuple[StatMatrix, StatMatrix]
    ok: np.ndarray
    """Two finite floats, or two ints exact in float64: the difference is computed here."""
    diff: np.ndarray
    rel: np.ndarray
    zero: np.ndarray
    """Equal and non-zero, or equal zeros of the same sign: ``"0"``, ``"0"``."""
    unrecorded: np.ndarray
    """``None`` against ``None``: ``"0"``, ``"0"`` too."""

    @property
    def golden(self) -> np.ndarray:
        return self.matrices[1].values


def _differences(target_stats: Sequence[tuple[Any, ...]], golden_stats: Sequence[tuple[Any, ...]],
                 matrices: tuple[StatMatrix, StatMatrix] | None) -> _Differences:
    """The differences of two sides' statistics, computed in float64 where ``stat_difference``
    would compute them (the same IEEE operations, in the same order)."""
    if matrices is None:
        matrices = stat_matrix(target_stats), stat_matrix(golden_stats)
    (t, t_kind), (g, g_kind) = matrices
    with np.errstate(all="ignore"):
        ok = (t_kind == g_kind) & ((t_kind == FLOAT) | (t_kind == INT)) & np.isfinite(t) & np.isfinite(g)
        diff = t - g
        rel = np.abs(diff / g * 100)
    zero = ok & (t == g) & ((t != 0) | (np.signbit(t) == np.signbit(g)))
    return _Differences(matrices, ok, diff, rel, zero, (t_kind == NONE) & (g_kind == NONE))


def difference_columns(target_stats: Sequence[tuple[Any, ...]], golden_stats: Sequence[tuple[Any, ...]],
                       slow: Any, matrices: tuple[StatMatrix, StatMatrix] | None = None) -> list[list[str]]:
    """The eight difference columns of matched rows (``diff`` x4 then ``relative`` x4).

    ``slow(npu, bench)`` is the per-value rule (``stat_difference``) used for every pair
    that is not two finite floats or two exact ints; ``matrices`` are :func:`stat_matrix`
    of both sides when at hand. The columns are numbers and fixed words, their own CSV
    fields (:class:`probe.csvtext.TextColumn`): the ``diff`` ones are
    :class:`probe.csvtext.NumberTexts` (``repr`` of finite floats and ``NUMBER_WORDS``), the
    ``relative`` ones :class:`probe.csvtext.PercentTexts` (the same followed by ``%``).
    """
    if len(target_stats) == 0:
        return [NumberTexts() for _ in range(4)] + [PercentTexts() for _ in range(4)]
    d = _differences(target_stats, golden_stats, matrices)
    ok, diff, rel, zero, unrecorded = d.ok, d.diff, d.rel, d.zero, d.unrecorded
    inf_rel = ok & ~zero & (d.golden == 0)
    # cells written as "0", "inf" or by ``slow`` are formatted as 0.0 (cheapest) and replaced
    diff[~ok | zero] = 0.0
    rel[~ok | zero | inf_rel] = 0.0
    diffs: list[list[str]] = []
    rels: list[list[str]] = []
    for j in range(4):  # a column at a time: its numbers formatted in bulk, "%" added in one join
        d_list = NumberTexts(float_texts(np.ascontiguousarray(diff[:, j])))
        r_list = PercentTexts(("%\x00".join(float_texts(np.ascontiguousarray(rel[:, j]))) + "%").split("\x00"))
        for i in np.flatnonzero(zero[:, j] | unrecorded[:, j]).tolist():
            d_list[i] = r_list[i] = "0"
        for i in np.flatnonzero(inf_rel[:, j]).tolist():
            r_list[i] = "inf"
        for i in np.flatnonzero(~ok[:, j] & ~unrecorded[:, j]).tolist():
            d_list[i], r_list[i] = slow(target_stats[i][j], golden_stats[i][j])
        diffs.append(d_list)
        rels.append(r_list)
    return diffs + rels


def numeric_fields(target_stats: Sequence[tuple[Any, ...]], golden_stats: Sequence[tuple[Any, ...]], slow: Any,
                   inf_text: tuple[str, str], matrices: tuple[StatMatrix, StatMatrix] | None = None
                   ) -> list[JoinedFields]:
    """The CSV text of the sixteen numeric cells of matched rows as three columns of joined
    fields: the four differences, the four relative errors, both sides' statistics.

    The same text as :func:`difference_columns` and :func:`stat_display_columns` give
    through :func:`probe.csvtext.column_texts` (``stat`` columns written with ``inf_text``),
    made without a text object per cell: the differences, the relative errors (``%`` put
    after their numbers in the text) and the statistics are three float matrices that orjson
    writes at once (:func:`probe.csvtext.matrix_rows`), a text per row each; only the cells
    orjson would write otherwise than the report (words, ints, small or special values) are
    written one by one. Tested equal on random statistics.

    Rows whose two sides hold the very same statistics tuple (equal scalar arguments share
    one, see :mod:`probe.formats.msprobe.flatten`; ``None`` leaves too) have a text that
    depends on that tuple alone: it is made once per distinct tuple. Those rows are mostly
    ints, words and ``None``, the cells the matrices cannot write, so they leave the matrices.
    """
    if len(target_stats) == 0:
        return [JoinedFields(), JoinedFields(), JoinedFields()]
    same = list(map(is_, target_stats, golden_stats))
    if not any(same):
        return _numeric_fields(target_stats, golden_stats, slow, inf_text, matrices)
    shared = list(compress(target_stats, same))
    distinct = list({id(stats): stats for stats in shared}.values())
    matrix = _stat_matrix(distinct)  # not kept: the kept matrices are the window's
    ids = list(map(id, shared))
    texts = [list(map(dict(zip(map(id, distinct), block)).__getitem__, ids))
             for block in _numeric_fields(distinct, distinct, slow, inf_text, (matrix, matrix))]
    if len(shared) == len(same):
        return list(map(JoinedFields, texts))
    other = list(map(not_, same))
    flags = np.array(same, dtype=bool)
    rest = ~flags
    if matrices is None:  # the kept matrices of the window (see stat_matrix)
        matrices = stat_matrix(target_stats), stat_matrix(golden_stats)
    (t, t_kind), (g, g_kind) = matrices
    matrices = StatMatrix(t[rest], t_kind[rest]), StatMatrix(g[rest], g_kind[rest])
    blocks = []
    for shared_texts, rest_texts in zip(texts, _numeric_fields(
            list(compress(target_stats, other)), list(compress(golden_stats, other)), slow, inf_text, matrices)):
        fields = np.empty(len(same), dtype=object)
        fields[flags] = shared_texts
        fields[rest] = rest_texts
        blocks.append(JoinedFields(fields.tolist()))
    return blocks


def _numeric_fields(target_stats: Sequence[tuple[Any, ...]], golden_stats: Sequence[tuple[Any, ...]], slow: Any,
                    inf_text: tuple[str, str], matrices: tuple[StatMatrix, StatMatrix] | None) -> list[JoinedFields]:
    """:func:`numeric_fields` of rows, all through the matrices."""
    d = _differences(target_stats, golden_stats, matrices)
    (t, t_kind), (g, g_kind) = d.matrices
    ok, diff, rel, zero, unrecorded = d.ok, d.diff, d.rel, d.zero, d.unrecorded
    number = ok & ~zero  # a difference written as a number
    relative = number & (g != 0)  # a relative error written as a number and "%"
    # the texts of the cells that are not two finite floats (or two exact ints)
    odd = ~ok & ~unrecorded
    words = {i: slow(target_stats[i // 4][i % 4], golden_stats[i // 4][i % 4]) for i in np.flatnonzero(odd).tolist()}

    def texts(values: np.ndarray, special: np.ndarray, numeric: np.ndarray, fixed: list[tuple[np.ndarray, str]],
              side: int, suffix: str) -> np.ndarray:
        """The texts of the ``special`` cells of a difference matrix, in row-major order."""
        where = np.flatnonzero(special)
        out = np.empty(len(where), dtype=object)
        flat_numeric = numeric.ravel()[where]
        if flat_numeric.any():
            numbers = float_texts(values.ravel()[where[flat_numeric]])
            out[flat_numeric] = (f"{suffix}\x00".join(numbers) + suffix).split("\x00") if suffix else numbers
        for mask, word in fixed:
            out[mask.ravel()[where]] = word
        flat_odd = odd.ravel()[where]
        if flat_odd.any():
            out[flat_odd] = [words[i][side] for i in where[flat_odd].tolist()]
        return out

    d_special = ~number | ~plain_floats(diff)
    r_special = ~relative | ~plain_floats(rel)  # the others: orjson's number, then "%"
    stats = np.hstack([t, g])
    kinds = np.hstack([t_kind, g_kind])
    s_special = (kinds != FLOAT) | ~plain_floats(stats)
    return [
        matrix_rows(diff, d_special, texts(diff, d_special, number, [(zero | unrecorded, "0")], 0, "").tolist()),
        matrix_rows(rel, r_special, texts(rel, r_special, relative, [(zero | unrecorded, "0"), (number & ~relative, "inf")],
                                          1, "%").tolist(), "%"),
        matrix_rows(stats, s_special, _stat_texts(stats, kinds, s_special, target_stats, golden_stats, inf_text).tolist()),
    ]


def _stat_texts(stats: np.ndarray, kinds: np.ndarray, special: np.ndarray, target_stats: Sequence[tuple[Any, ...]],
                golden_stats: Sequence[tuple[Any, ...]], inf_text: tuple[str, str]) -> np.ndarray:
    """The CSV texts of the ``special`` cells of both sides' statistics (``stats``: the
    target's four columns then the golden's), in row-major order."""
    where = np.flatnonzero(special)
    out = np.empty(len(where), dtype=object)
    kind = kinds.ravel()[where]
    ints = kind == INT  # ints exact in float64: written by orjson as ints
    if ints.any():
        out[ints] = orjson.dumps(stats.ravel()[where[ints]].astype(np.int64),
                                 option=orjson.OPT_SERIALIZE_NUMPY).decode()[1:-1].split(",")
    out[kind == NONE] = "None"
    rest = (kind != INT) & (kind != NONE)
    if rest.any():
        cells = [display_stat((target_stats if j < 4 else golden_stats)[row][j % 4])
                 for row, j in map(divmod, where[rest].tolist(), repeat(8))]
        out[rest] = column_texts(cells, True, inf_text)
    return out
