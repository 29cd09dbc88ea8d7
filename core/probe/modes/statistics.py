"""Statistics mode: differences of Max/Min/Mean/Norm from dump.json, msProbe's rules."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from probe.csvtext import JoinedFields, column_texts
from probe.model import ERROR, NA, PASS, WARNING, FlatDump, ModeContext, Pair
from probe.modes import common
from probe.result import UNMATCHED, RowResult, lazy_rows

METRIC_COLUMNS = [
    "Max diff",
    "Min diff",
    "Mean diff",
    "L2norm diff",
    "MaxRelativeErr",
    "MinRelativeErr",
    "MeanRelativeErr",
    "NormRelativeErr",
]
NORM_REL_INDEX = 7
PROGRESS_STEP = 16384
"""Rows computed between two progress-bar updates (accurate bars, negligible cost)."""

MSG_NORM_OUTPUT = "error: The NormRelativeErr of output is greater than 0.5."
MSG_NORM_RATIO = "warning: The norm relative error of output is 10 times that of input."

NUM, NAN, INF, NEG_INF, DEVICE, NA_KIND, OTHER = range(7)

# result of a non-numeric pair, by (npu kind, bench kind); absent pairs give N/A
_SPECIAL = {
    (NUM, NAN): "Nan", (NUM, INF): "-inf", (NUM, NEG_INF): "inf",
    (NAN, NUM): "Nan", (NAN, INF): "Nan", (NAN, NEG_INF): "Nan",
    (INF, NUM): "inf", (INF, NAN): "Nan", (INF, NEG_INF): "inf",
    (NEG_INF, NUM): "-inf", (NEG_INF, NAN): "Nan", (NEG_INF, INF): "-inf",
}


def classify(value: Any) -> int:
    """The kind of a statistic for the difference table (number, nan, inf, device text...)."""
    if isinstance(value, bool) or value is None:
        return OTHER
    if isinstance(value, (int, float)):
        if math.isnan(value):
            return NAN
        if math.isinf(value):
            return INF if value > 0 else NEG_INF
        return NUM
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "nan":
            return NAN
        if text in ("inf", "+inf"):
            return INF
        if text == "-inf":
            return NEG_INF
        if text not in ("true", "false"):
            try:
                float(text)
                return NUM
            except ValueError:
                pass
        if "npu" in text or "cpu" in text or "cuda" in text:
            return DEVICE
        if value == NA:
            return NA_KIND
    return OTHER


_ZERO = ("0", "0")
_NUMBER_TYPES = (float, int)
_INF = math.inf


def stat_difference(npu: Any, bench: Any) -> tuple[str, str]:
    """``(diff, relative error)`` of one statistic, as msProbe writes them."""
    tn = type(npu)
    if tn is type(bench) and tn in _NUMBER_TYPES:
        # fast path for two numbers of one type (bool is neither float nor int here);
        # same result as the general path below
        if npu == bench and npu:  # equal and non-zero: equal text too (no -0.0 case)
            return _ZERO
        if -_INF < npu < _INF and -_INF < bench < _INF:  # both finite (NaN fails too)
            diff = float(npu) - float(bench)
            if npu == bench:  # zeros of the same sign print alike; 0.0 and -0.0 do not
                if str(npu) == str(bench):
                    return _ZERO
            if bench == 0:
                return str(diff), "inf"
            return str(diff), f"{abs(diff / float(bench) * 100)}%"
    if str(npu) == str(bench):
        return "0", "0"
    kn, kb = classify(npu), classify(bench)
    if kn == NUM and kb == NUM:
        n, b = float(npu), float(bench)
        diff = n - b
        if b == 0:
            return str(diff), "inf"
        return str(diff), f"{abs(diff / b * 100)}%"
    if kn == NA_KIND or kb == NA_KIND:
        return NA, NA
    if kn == DEVICE and kb == DEVICE:
        return NA, NA
    if kn in (DEVICE, OTHER) or kb in (DEVICE, OTHER):
        return "Diff", "Diff"
    value = _SPECIAL.get((kn, kb), NA)
    return value, value


def relative_fraction(text: Any, inf_counts: bool) -> float:
    """A relative-error cell as a fraction: ``"25.0%"`` -> 0.25; ``inf`` -> inf if asked; else 0."""
    if isinstance(text, str):
        if text.endswith("%"):
            try:
                return abs(float(text[:-1])) / 100
            except ValueError:
                return 0.0
        if inf_counts and text in ("inf", "-inf"):
            return math.inf
    return 0.0


def stat_metrics(pair: Pair) -> tuple[str, ...]:
    """The eight metric cells of a matched pair: four differences, then four relative errors."""
    (n0, n1, n2, n3), (b0, b1, b2, b3) = pair.target.stats, pair.golden.stats
    d0, r0 = stat_difference(n0, b0)
    d1, r1 = stat_difference(n1, b1)
    d2, r2 = stat_difference(n2, b2)
    d3, r3 = stat_difference(n3, b3)
    return (d0, d1, d2, d3, r0, r1, r2, r3)


_STORED_METRICS = RowResult.metrics
"""The ``metrics`` slot of :class:`RowResult` (which :class:`StatRowResult` hides)."""
_SET_METRICS = _STORED_METRICS.__set__


class StatRowResult(RowResult):
    """A matched statistics row whose metric cells are computed when read, not stored.

    Eight strings per row were most of the memory of a large run (about 0.6 KB a row),
    while computing them again from the two rows' statistics is cheap and gives the same
    text. A value assigned to ``metrics`` is stored and returned from then on.
    """

    __slots__ = ()

    def __init__(self, pair: Pair) -> None:
        # what RowResult.__init__(self, pair, None) sets, without its call and the metrics setter's
        # (one row a matched pair: 0.07 -> 0.035 s a 155k rows)
        self.pair = pair
        _SET_METRICS(self, None)
        self.verdict = PASS if pair.golden is not None else UNMATCHED
        self._messages = self._notes = self._extra = None

    @property
    def metrics(self) -> tuple[Any, ...]:
        stored = _STORED_METRICS.__get__(self, RowResult)
        return stat_metrics(self.pair) if stored is None else stored

    @metrics.setter
    def metrics(self, value: tuple[Any, ...] | None) -> None:
        _STORED_METRICS.__set__(self, value)

    def relative_error(self, index: int) -> str:
        """Relative-error cell ``index`` (0 max, 1 min, 2 mean, 3 norm), computing only that one."""
        stored = _STORED_METRICS.__get__(self, RowResult)
        if stored is not None:
            return stored[4 + index]
        return stat_difference(self.pair.target.stats[index], self.pair.golden.stats[index])[1]


def norm_fraction(row: RowResult, inf_counts: bool) -> float:
    """``relative_fraction`` of a matched row's NormRelativeErr cell (see :func:`norm_fractions`)."""
    return norm_fractions(row)[inf_counts]


def norm_fractions(row: RowResult) -> tuple[float, float]:
    """``relative_fraction`` of a matched row's NormRelativeErr cell, without and with
    ``inf`` counting (``norm_fraction(row, False)``, ``norm_fraction(row, True)``).

    For the usual row (two finite float norms, metrics not overridden) the fraction is
    computed without writing the cell's text and parsing it back: the text is
    ``repr(x) + "%"`` with ``x = abs(diff / bench * 100)``, and ``float(repr(x)) == x``,
    so the result is the same float. Every other case goes through the text.
    """
    if row.__class__ is StatRowResult and _STORED_METRICS.__get__(row, RowResult) is None:
        n, b = row.pair.target.stats[3], row.pair.golden.stats[3]
        if n.__class__ is float and b.__class__ is float and -_INF < n < _INF and -_INF < b < _INF:
            # the branches of stat_difference's fast path, in its order
            if n == b and n:
                return _NO_ERROR
            if n == b and repr(n) == repr(b):
                return _NO_ERROR
            if b == 0:
                return _INF_ERROR
            fraction = abs((n - b) / b * 100) / 100
            return fraction, fraction
        text = row.relative_error(3)
    else:
        text = row.metrics[NORM_REL_INDEX]
    return relative_fraction(text, False), relative_fraction(text, True)


_NO_ERROR = (0.0, 0.0)
_INF_ERROR = (0.0, _INF)


class StatisticsMode:
    """Compare the Max/Min/Mean/Norm statistics recorded in dump.json."""

    name = "statistics"
    streams = True
    """Rows are computed and judged per entry: large dumps may be compared a window at a time."""

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        return target.info.task == "statistics" and not target.has_md5

    def columns(self, with_stack: bool, extra_metrics: Sequence[str]) -> list[str]:
        cols = common.COMMON_COLUMNS + METRIC_COLUMNS + common.STAT_COLUMNS + common.TAIL_COLUMNS
        return cols + [common.STACK_COLUMN] if with_stack else cols

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        results: list[RowResult] = []
        append = results.append
        unmatched = (NA,) * 8
        for start in range(0, len(pairs), PROGRESS_STEP):
            for pair in pairs[start : start + PROGRESS_STEP]:
                # matched rows compute their metrics when read (see StatRowResult)
                append(RowResult(pair, unmatched) if pair.golden is None else StatRowResult(pair))
            if ctx.progress:
                ctx.progress(min(PROGRESS_STEP, len(pairs) - start))
        return results

    def judge(self, group: list[RowResult]) -> None:
        judge_group(group)

    def judge_entries(self, records: Sequence[RowResult], starts: list[int]) -> None:
        """Judge the rows of many entries at once, ``starts`` the index of each one's first row
        (see :func:`judge_entries`)."""
        judge_entries(records, starts)

    @staticmethod
    def _cross_rules(inputs: list[RowResult], outputs: list[RowResult]) -> tuple[list, list]:
        """The NormRelativeErr rules over an entry's matched inputs and outputs (what
        :func:`judge_group` applies in its own pass when given no ``cross_rules``)."""
        norm_in = max([norm_fractions(r)[0] for r in inputs], default=0.0)
        return norm_rules(norm_in, outputs, [norm_fractions(r) for r in outputs])

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        return common.render_cells(row, with_stack)

    def render_columns(self, records: Sequence[RowResult], with_stack: bool) -> list[list[Any]]:
        """The report as columns: what :meth:`render` gives row by row, the differences
        computed for all matched rows at once (see :mod:`probe.modes.stat_columns`)."""
        from probe.modes.stat_columns import difference_columns, stat_display_columns, stat_matrix  # numpy

        columns = common.common_columns(records)
        metrics: list[list[Any]] = [[NA] * len(records) for _ in range(8)]
        lazy = lazy_rows(records, StatRowResult)
        if lazy and len(lazy) == len(records):  # every row matched: one matrix per side serves all columns
            targets = [r.pair.target.stats for r in records]
            goldens = [r.pair.golden.stats for r in records]
            matrices = stat_matrix(targets), stat_matrix(goldens)
            columns.extend(difference_columns(targets, goldens, stat_difference, matrices))
            columns.extend(stat_display_columns(targets, matrices[0]))
            columns.extend(stat_display_columns(goldens, matrices[1]))
            columns.extend(common.tail_columns(records, with_stack, (columns[6], columns[7])))
            return columns
        if lazy:
            pairs = [records[i].pair for i in lazy]
            computed = difference_columns([p.target.stats for p in pairs], [p.golden.stats for p in pairs],
                                          stat_difference)
            for column, values in zip(metrics, computed):
                for i, value in zip(lazy, values):
                    column[i] = value
        lazy_set = set(lazy)
        for i, r in enumerate(records):
            if i not in lazy_set:
                for column, value in zip(metrics, r.metrics):
                    column[i] = value
        columns.extend(metrics)
        columns.extend(common.stat_columns(records, stat_display_columns))
        columns.extend(common.tail_columns(records, with_stack, (columns[6], columns[7])))
        return columns

    def csv_columns(self, records: Sequence[RowResult], with_stack: bool, inf_text: tuple[str, str]) -> list[list[Any]]:
        """The report as CSV columns: :meth:`render_columns` with the sixteen numeric columns
        (differences, relative errors, statistics; ``inf_text`` for infinite statistics)
        already written as CSV text, three columns of joined fields (see
        :func:`probe.modes.stat_columns.numeric_fields`)."""
        from probe.modes.stat_columns import numeric_fields  # numpy

        lazy = lazy_rows(records, StatRowResult)
        targets, goldens = [r.pair.target for r in records], [r.pair.golden for r in records]
        columns = common.side_columns(targets, goldens)
        if len(lazy) == len(records):
            columns.extend(numeric_fields([t.stats for t in targets], [g.stats for g in goldens], stat_difference,
                                          inf_text))
        else:  # unmatched rows, or metrics set by hand: those rows through render_columns
            blocks = [JoinedFields([""] * len(records)) for _ in range(3)]
            if lazy:
                fast = numeric_fields([targets[i].stats for i in lazy], [goldens[i].stats for i in lazy],
                                      stat_difference, inf_text)
                for fields, texts in zip(blocks, fast):
                    for i, text in zip(lazy, texts):
                        fields[i] = text
            taken = set(lazy)
            rest = [i for i in range(len(records)) if i not in taken]
            shown = self.render_columns([records[i] for i in rest], with_stack)[8:24]
            texts = [column_texts(column, k >= 8, inf_text) for k, column in enumerate(shown)]
            for fields, lo, hi in zip(blocks, (0, 4, 8), (4, 8, 16)):
                for i, text in zip(rest, map(",".join, zip(*texts[lo:hi]))):
                    fields[i] = text
            columns.extend(blocks)
        columns.extend(common.tail_columns(records, with_stack, (columns[6], columns[7])))
        return columns


def norm_rules(norm_in: float, outputs: list[RowResult],
               fractions: list[tuple[float, float]]) -> tuple[list, list]:
    """Statistics mode's cross rules: ``(early, late)`` hits from the largest NormRelativeErr
    fraction of the inputs and the :func:`norm_fractions` of each output."""
    early: list[tuple[RowResult, str, str]] = []
    late: list[tuple[RowResult, str, str]] = []
    if not outputs:
        return early, late
    if norm_in < 0.1:
        early = [(r, ERROR, MSG_NORM_OUTPUT) for r, (_, counted) in zip(outputs, fractions) if counted > 0.5]
    norms = [plain for plain, _ in fractions]
    norm_out = max(norms)
    if norm_ratio_fires(norm_in, norm_out):
        late.append((outputs[norms.index(norm_out)], WARNING, MSG_NORM_RATIO))
    return early, late


def norm_ratio_fires(norm_in: float, norm_out: float) -> bool:
    """Whether the largest output NormRelativeErr is 10 times the inputs' (or over 0.1 above exact inputs)."""
    return (norm_in == 0 and norm_out > 0.1) or (norm_in > 0 and norm_out / norm_in > 10)


_FLOAT = float
_NEVER_NAN_OR_INF = frozenset({int, bool, type(None)})
"""Statistic types :func:`probe.modes.common.is_nan_or_inf` always says ``False`` for."""
_STAT_ROW = StatRowResult
_STORED = _STORED_METRICS.__get__


def judge_group(group: list[RowResult], cross_rules: Any = None) -> None:
    """Apply the shared rules to the rows of one entry.

    Order of messages on a row: nan/inf (1), the mode's early cross rule (2), requires_grad
    (3), scalar value (4), dtype (5), shape (6), the mode's late cross rule (7). Cross-rule
    hits land on the output row that caused them. ``cross_rules(inputs, outputs)`` gives a
    mode's ``(early, late)`` hits; without it, statistics mode's NormRelativeErr rules
    (:func:`norm_rules`) run on fractions taken in the same pass.

    One pass over the rows applies rule 1, sorts them and takes their NormRelativeErr
    fractions; rules 3-6 then run only on the rows where one of them can fire
    (requires_grad, dtype or shape texts differ, or a scalar argument), after the early
    cross rule.
    """
    if not group:
        return
    entry = group[0].pair.target.entry
    parts = entry.split(".", 2)
    api = parts[1] if len(parts) > 1 else entry
    skip = api in common.SKIP_ALL_APIS
    output_only = api in common.OUTPUT_ONLY_APIS
    norms = cross_rules is None and not output_only
    plain = common.PLAIN_STATS
    nan_or_inf = common.is_nan_or_inf
    finite = _NEVER_NAN_OR_INF
    inputs: list[RowResult] = []
    outputs: list[RowResult] = []
    fractions: list[tuple[float, float]] = []  # of the outputs, with ``norms``
    norm_in = norm_out = None  # the largest plain fractions (as ``max`` picks them), with ``norms``
    counted_over = False  # an output's fraction (inf counted) is above 0.5, with ``norms``
    suspicious: list[RowResult] = []  # rows where rules 3-6 may fire
    for r in group:
        pair = r.pair
        g = pair.golden
        if g is None:
            if not skip:
                r.notes.append(common.MSG_UNMATCHED)
            continue
        t = pair.target
        a, b, c, d = t.stats
        e, f, h, i = g.stats
        if (a.__class__ is _FLOAT and b.__class__ is _FLOAT and c.__class__ is _FLOAT and d.__class__ is _FLOAT
                and e.__class__ is _FLOAT and f.__class__ is _FLOAT and h.__class__ is _FLOAT
                and i.__class__ is _FLOAT):
            floats = True  # the usual row: eight floats
        else:
            floats = False
            if not (a.__class__ in plain and b.__class__ in plain and c.__class__ in plain
                    and d.__class__ in plain and e.__class__ in plain and f.__class__ in plain
                    and h.__class__ in plain and i.__class__ in plain):
                reason = common.not_compared_reason(r)
                if reason:
                    r.mark_not_compared(reason)
        if skip:
            continue
        if norms:
            # norm_fractions(r) inline for the usual rows (metrics not stored): two finite float
            # norms, or one norm object on both sides (``None``, a small int: the cell is "0")
            if r.__class__ is not _STAT_ROW or _STORED(r, RowResult) is not None:
                fraction = norm_fractions(r)
            elif d is i:
                fraction = _NO_ERROR
            elif (floats or d.__class__ is _FLOAT and i.__class__ is _FLOAT) and d - d == 0.0 and i - i == 0.0:
                if d == i and (d or repr(d) == repr(i)):
                    fraction = _NO_ERROR
                elif i == 0:
                    fraction = _INF_ERROR
                else:
                    plain_fraction = abs((d - i) / i * 100) / 100
                    fraction = (plain_fraction, plain_fraction)
            else:
                fraction = norm_fractions(r)
        if t.state == "output":
            outputs.append(r)
            if norms:
                fractions.append(fraction)
                if norm_out is None or fraction[0] > norm_out:
                    norm_out = fraction[0]
                if fraction[1] > 0.5:
                    counted_over = True
        else:
            inputs.append(r)
            if output_only:
                continue
            if norms and (norm_in is None or fraction[0] > norm_in):
                norm_in = fraction[0]
        # rule 1: nan/inf in the target's Max or Min, not in the golden's
        if floats or e.__class__ is _FLOAT and f.__class__ is _FLOAT:
            golden_bad = e - e != 0.0 or f - f != 0.0  # NaN or +/-inf (x - x is NaN only for those)
        else:  # ints, bools and None are never NaN/inf: no call for them
            golden_bad = (e.__class__ not in finite and nan_or_inf(e)) or (f.__class__ not in finite and nan_or_inf(f))
        if not golden_bad:
            if floats or a.__class__ is _FLOAT and b.__class__ is _FLOAT:
                target_bad = a - a != 0.0 or b - b != 0.0
            else:
                target_bad = ((a.__class__ not in finite and nan_or_inf(a))
                              or (b.__class__ not in finite and nan_or_inf(b)))
            if target_bad:
                r.raise_to(ERROR, common.MSG_NAN_INF)
        if (t.dtype != g.dtype or t.shape != g.shape or t.requires_grad != g.requires_grad
                or "class" in t.dtype):
            suspicious.append(r)
    if skip:
        return
    if output_only:
        early, late = [], []
    elif norms:
        norm_in = 0.0 if norm_in is None else norm_in
        if outputs and ((norm_in < 0.1 and counted_over) or norm_ratio_fires(norm_in, norm_out)):
            early, late = norm_rules(norm_in, outputs, fractions)
        else:  # neither rule fires (the usual entry)
            early = late = []
    else:
        early, late = cross_rules(inputs, outputs)
    for r, verdict, message in early:
        r.raise_to(verdict, message)
    for r in suspicious:
        structure_rules(r)
    for r, verdict, message in late:
        r.raise_to(verdict, message)


def judge_entries(records: Sequence[RowResult], starts: list[int]) -> None:
    """Judge the rows of every entry of ``records`` as :func:`judge_group` judges each entry,
    mostly over whole columns (:class:`probe.modes.stat_judge.EntryColumns`); ``starts``: the
    index of each entry's first row.

    Messages on a row come in ``judge_group``'s order: the "not compared" mark and rule 1 (on
    rows with other statistics than finite numbers or ``None``), the early NormRelativeErr
    rule, rules 3-6, the late rule.
    """
    if not records:
        return
    from probe.modes.stat_judge import EntryColumns  # numpy

    columns = EntryColumns(records, starts, StatRowResult)
    for start, stop in columns.slow_entries():
        judge_group(records[start:stop])
    for index, skipped, nan_rule in columns.other_rows():
        columns.set_fractions(index, _row_rules(records[index], skipped, nan_rule))
    early, checked, late = columns.hits()
    for index in early:
        records[index].raise_to(ERROR, MSG_NORM_OUTPUT)
    for index in checked:
        structure_rules(records[index])
    for index in late:
        records[index].raise_to(WARNING, MSG_NORM_RATIO)


def _row_rules(r: RowResult, skipped: bool, nan_rule: bool) -> tuple[float, float]:
    """What :func:`judge_group`'s pass over the rows does to one row: the "not compared" mark,
    rule 1 when ``nan_rule``; its :func:`norm_fractions` (unless its API is ``skipped``)."""
    reason = common.not_compared_reason(r)
    if reason:
        r.mark_not_compared(reason)
    t, g = r.pair.target.stats, r.pair.golden.stats
    if skipped or t is g:  # one statistics tuple on both sides (shared scalar cells): rule 1 cannot fire, "0"
        return _NO_ERROR  # not read when skipped
    nan_or_inf = common.is_nan_or_inf
    if nan_rule and not (nan_or_inf(g[0]) or nan_or_inf(g[1])) and (nan_or_inf(t[0]) or nan_or_inf(t[1])):
        r.raise_to(ERROR, common.MSG_NAN_INF)
    return norm_fractions(r)


def structure_rules(r: RowResult) -> None:
    """Rules 3-6 on one matched row: requires_grad, scalar value, dtype, shape (in that order)."""
    t, g = r.pair.target, r.pair.golden
    if t.requires_grad != NA and g.requires_grad != NA and t.requires_grad != g.requires_grad:
        r.raise_to(ERROR, common.MSG_REQUIRES_GRAD)
    if (
        not common.is_output(t)
        and "class" in t.dtype
        and "class" in g.dtype
        and t.shape == "[]"
        and t.stats[0] != g.stats[0]
    ):
        r.raise_to(ERROR, common.MSG_SCALAR)
    if (t.dtype != g.dtype and not common.same_dtype(t.dtype, g.dtype)
            and "qkv" not in g.name and "gate_up" not in g.name):
        r.raise_to(ERROR, common.MSG_DTYPE)
    if t.shape != g.shape:
        r.raise_to(ERROR, common.MSG_SHAPE)
