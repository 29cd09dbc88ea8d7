"""The judge: every verdict of probe (compare rows and graph nodes) is given here.

A metric mode owns its Result *rules* (``MetricMode.judge`` on the rows of one entry); this
module decides when they run and what else a verdict carries: the stack text of each
entry, the optional highlight colours, the input problems met on the way, and the
node-level verdict the graph shows (:func:`worst`, :func:`precision_index`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress, groupby
from operator import attrgetter, ne
from typing import Any

from probe.highlight import apply_highlight
from probe.model import ERROR, NA, PASS, VERDICT_RANK, WARNING
from probe.result import UNMATCHED, CompareResult, RowResult, extra_values

PRECISION = {PASS: 0.0, WARNING: 0.5, ERROR: 1.0}
"""A verdict as the graph's ``precision_index`` colour scale."""
_ENTRY = attrgetter("pair.target.entry")


def judge_records(mode: Any, records: Sequence[RowResult], stack: dict[str, list[str]] | None) -> None:
    """Apply ``mode``'s Result rules to each entry's rows, in place, and attach the stack text.

    Rows of one entry are consecutive (target order). With stack info, the first row of
    each entry carries ``str(lines)`` of its stack (``N/A`` when the entry has none). A mode
    with ``judge_entries(records, starts)`` judges all entries in one call (``starts``: the
    index of each entry's first row).
    """
    by_entries = getattr(mode, "judge_entries", None)
    if by_entries is not None:
        entries = [row.pair.target.entry for row in records]
        starts = _starts(entries)
        if stack is not None:
            _attach_stacks(stack, zip(map(entries.__getitem__, starts), map(records.__getitem__, starts)))
        by_entries(records, starts)
        return
    texts: dict[int, str] = {}  # entries of one stack group share the same list
    for entry, group_iter in groupby(records, key=_ENTRY):
        group = list(group_iter)
        if stack is not None:
            _attach_stacks(stack, ((entry, group[0]),), texts)
        mode.judge(group)


def _starts(entries: list[str]) -> list[int]:
    """The index of the first of each run of equal names in ``entries``."""
    if not entries:
        return []
    return [0, *compress(range(1, len(entries)), map(ne, entries[1:], entries[:-1]))]


def _attach_stacks(stack: dict[str, list[str]], firsts: Iterable[tuple[str, RowResult]],
                   texts: dict[int, str] | None = None) -> None:
    """Give each ``(entry, first row)`` the text of the entry's stack (``texts``: the texts made so far)."""
    texts = {} if texts is None else texts
    for entry, row in firsts:
        lines = stack.get(entry)
        if lines is None:
            text = NA
        else:
            text = texts.get(id(lines))
            if text is None:
                text = texts[id(lines)] = str(lines)
        row.extra["stack"] = text


def judge_result(result: CompareResult, highlight: bool = False) -> CompareResult:
    """Judge every row of ``result`` (see :func:`judge_records`), highlight, collect problems."""
    judge_records(result.mode, result.records, result.stack)
    if highlight:
        apply_highlight(result)
    result.problems.extend(p for p in extra_values(result.records, "problem") if p is not None)
    return result


def worst(verdicts: Iterable[str]) -> str:
    """The worst of some verdicts (``pass`` when there are none; unmatched rows count as pass)."""
    best = PASS
    for verdict in verdicts:
        if verdict != UNMATCHED and VERDICT_RANK[verdict] > VERDICT_RANK[best]:
            best = verdict
    return best


def precision_index(verdicts: Iterable[str]) -> float:
    """The graph colour of a node whose rows have these verdicts."""
    return PRECISION[worst(verdicts)]
