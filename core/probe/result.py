"""Comparison results: per-row results and the per-job table a notebook user can filter."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_
from pathlib import Path
from typing import Any

from probe.model import ERROR, NA, PASS, VERDICT_RANK, WARNING, DumpInfo, Pair, Summary

UNMATCHED = NA
"""Result shown for a target row with no golden counterpart."""


class RowResult:
    """Metrics and verdict of one target row."""

    __slots__ = ("pair", "metrics", "verdict", "_messages", "_notes", "_extra")

    def __init__(self, pair: Pair, metrics: tuple[Any, ...]) -> None:
        self.pair = pair
        self.metrics = metrics
        self.verdict = PASS if pair.golden is not None else UNMATCHED
        # messages, notes and extra are created on first use: most rows never need them,
        # and three empty containers per row add up at a million rows
        self._messages: list[str] | None = None
        self._notes: list[str] | None = None
        self._extra: dict[str, Any] | None = None

    @property
    def messages(self) -> list[str]:
        """Rule messages, in the order the rules fired."""
        messages = self._messages
        if messages.__class__ is not list:  # none yet, or the one message of a rule hit, shared (a tuple)
            messages = self._messages = [] if messages is None else list(messages)
        return messages

    @messages.setter
    def messages(self, value: list[str]) -> None:
        self._messages = value

    @property
    def notes(self) -> list[str]:
        """Explanations that are not rule hits (unmatched, file problems...)."""
        if self._notes is None:
            self._notes = []
        return self._notes

    @notes.setter
    def notes(self, value: list[str]) -> None:
        self._notes = value

    @property
    def extra(self) -> dict[str, Any]:
        """Extra per-row values (stack text, highlight colour, plugin columns...)."""
        if self._extra is None:
            self._extra = {}
        return self._extra

    @extra.setter
    def extra(self, value: dict[str, Any]) -> None:
        self._extra = value

    @property
    def has_text(self) -> bool:
        """Whether the row has any message or note (without creating the lists)."""
        return bool(self._messages) or bool(self._notes)

    def extra_value(self, key: str, default: Any = None) -> Any:
        """``extra.get(key, default)`` without creating the dict."""
        extra = self._extra
        return default if extra is None else extra.get(key, default)

    @property
    def name(self) -> str:
        return self.pair.target.name

    @property
    def matched(self) -> bool:
        return self.pair.golden is not None

    def __repr__(self) -> str:
        text = self.messages + self.notes if self.has_text else []
        return f"RowResult({self.name!r}, {self.verdict}" + (f", {text!r})" if text else ")")

    @property
    def not_compared(self) -> bool:
        """A matched row whose data could not be compared (its Result stays ``N/A``)."""
        return self.verdict == NA and self.pair.golden is not None

    def mark_not_compared(self, reason: str) -> None:
        """Record why the row's data could not be compared; a row no rule failed becomes ``N/A``.
        A note that already states the cause is replaced by ``reason`` (one message, not two)."""
        notes = self.notes
        if reason not in notes:
            same = [i for i, note in enumerate(notes) if reason.endswith(note)]
            if same:
                notes[same[0]] = reason
            else:
                notes.append(reason)
        if self.verdict == PASS:
            self.verdict = NA

    def raise_to(self, verdict: str, message: str) -> None:
        """Record a rule hit: raise the verdict (never lower it) and append the message."""
        current = self.verdict
        if current == UNMATCHED:
            current = PASS
        self.verdict = verdict if VERDICT_RANK[verdict] > VERDICT_RANK[current] else current
        messages = self._messages
        if messages is None:  # the first hit (every failing row's): one tuple per message text, shared
            self._messages = (_ONE.get(message) or _one(message)) if message.__class__ is str else [message]
        elif messages.__class__ is list:
            messages.append(message)
        else:
            self._messages = [*messages, message]


_UNJUDGED = frozenset({PASS, UNMATCHED})
"""The verdicts of a row no rule has raised (with no messages yet)."""


def raise_all(records: Iterable[RowResult], verdict: str, message: str) -> None:
    """:meth:`RowResult.raise_to` ``(verdict, message)`` on each of ``records``; a row no rule hit yet
    (the usual failing row) is set without the call."""
    if message.__class__ is not str:
        for record in records:
            record.raise_to(verdict, message)
        return
    raised = verdict if VERDICT_RANK[verdict] > VERDICT_RANK[PASS] else PASS
    one = _ONE.get(message) or _one(message)
    for record in records:
        if record._messages is None and record.verdict in _UNJUDGED:
            record.verdict = raised
            record._messages = one
        else:
            record.raise_to(verdict, message)


_ONE: dict[str, tuple[str]] = {}


def _one(message: str) -> tuple[str]:
    """``(message,)``, one tuple per message text (up to 4096 of them)."""
    single = (message,)
    if len(_ONE) < 4096:
        _ONE[message] = single
    return single


_SHARED = frozenset({type(None), tuple})


def text_keys(records: Sequence[RowResult]) -> list[tuple[str, ...] | None]:
    """``(*messages, *notes)`` of every record, ``None`` (or an empty tuple) for one that has neither
    (read without making the lists of the records that have none)."""
    messages = [r._messages for r in records]  # faster than map(attrgetter(...))
    notes = [r._notes for r in records]
    if not any(notes) and set(map(type, messages)) <= _SHARED:  # rule hits alone, as raise_to keeps them
        return messages
    keys: list[tuple[str, ...] | None] = [None] * len(messages)
    for i, (said, noted) in enumerate(zip(messages, notes)):
        if said or noted:
            keys[i] = (*said, *noted) if said and noted else tuple(said or noted)
    return keys


def extra_values(records: Sequence[RowResult], key: str, default: Any = None) -> list[Any]:
    """:meth:`RowResult.extra_value` of every record (no call for those without extra values)."""
    extras = [r._extra for r in records]
    column = [default] * len(extras)
    for i in compress(range(len(extras)), extras):
        column[i] = extras[i].get(key, default)
    return column


@dataclass
class CompareResult:
    """The result of one job: rows in target order plus everything needed to report them."""

    label: str
    mode: Any
    """The :class:`probe.model.MetricMode` that computed the rows."""
    records: list[RowResult]
    target: DumpInfo | None = None
    golden: DumpInfo | None = None
    stack: dict[str, list[str]] | None = None
    golden_only: int = 0
    output_stem: str = "compare_result"
    output_subdir: str = ""
    rank: int | None = None
    extra_metrics: tuple[str, ...] = ()
    extra_columns: tuple[str, ...] = ()
    """Columns appended after the mode's own, read from ``RowResult.extra``."""
    options: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Input problems met on the way (unreadable tensor files...), one line each."""

    @property
    def with_stack(self) -> bool:
        return self.stack is not None

    @property
    def columns(self) -> list[str]:
        """Column names, in report order."""
        return self.mode.columns(self.with_stack, self.extra_metrics) + list(self.extra_columns)

    def table(self) -> Iterator[list[Any]]:
        """Display rows aligned with :attr:`columns`."""
        render = self.mode.render
        with_stack = self.with_stack
        extra = self.extra_columns
        for record in self.records:
            row = render(record, with_stack)
            if extra:
                row.extend(record.extra_value(column, "") for column in extra)
            yield row

    def table_columns(self, start: int = 0, stop: int | None = None) -> list[list[Any]] | None:
        """Display values of rows ``start:stop`` as columns aligned with :attr:`columns`,
        when the mode renders whole columns (``render_columns``); ``None`` otherwise."""
        render_columns = getattr(self.mode, "render_columns", None)
        if render_columns is None or self.extra_columns:
            return None
        return render_columns(self.records[start:stop], self.with_stack)

    def as_dicts(self) -> list[dict[str, Any]]:
        """Every row as ``{column: value}``."""
        columns = self.columns
        return [dict(zip(columns, row)) for row in self.table()]

    def filter(self, keep: Callable[[RowResult], bool]) -> CompareResult:
        """A copy holding only the rows for which ``keep`` is true."""
        clone = CompareResult(**{**self.__dict__, "records": [r for r in self.records if keep(r)]})
        return clone

    def failing(self) -> CompareResult:
        """Rows whose Result is ``warning`` or ``error``."""
        return self.filter(lambda r: r.verdict in (WARNING, ERROR))

    def errors(self) -> CompareResult:
        """Rows whose Result is ``error``."""
        return self.filter(lambda r: r.verdict == ERROR)

    def summary(self) -> Summary:
        """Counts of pass / warning / error / unmatched / not compared rows."""
        s = Summary(rows=len(self.records), golden_only=self.golden_only, files=list(self.files),
                    first_error_job=self.label)
        for record in self.records:
            verdict = record.verdict
            if verdict == ERROR:
                s.errors += 1
                if s.first_error is None:
                    s.first_error = record.name
            elif verdict == WARNING:
                s.warnings += 1
            elif verdict == UNMATCHED:
                if not record.matched:
                    s.unmatched += 1
                else:
                    s.not_compared += 1
            else:
                s.passed += 1
        return s

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.as_dicts())


@dataclass
class JobOutcome:
    """What running one plan sends back: its summary, files, problems and (optionally) the result."""

    label: str
    summary: Summary
    problems: list[str] = field(default_factory=list)
    result: CompareResult | None = None
    error: str | None = None
    exit_code: int = 0
    digests: dict[str, Any] = field(default_factory=dict)
    """Per-analyzer summaries made where the plan ran (see :class:`probe.interfaces.Analyzer`)."""


@dataclass
class Analysis:
    """What one analyzer found over all plans of a compare.

    ``data`` is the analyzer's own structured answer (e.g. the first diverging node per
    step); ``shown`` is what a console prints, in order (text with rich markup or rich
    renderables): the analyzer never prints, the console renders it.
    """

    name: str
    files: list[Path] = field(default_factory=list)
    shown: list[Any] = field(default_factory=list)
    data: Any = None


@dataclass
class CompareRun:
    """Everything one compare produced: per-plan results and outcomes, the analyses, the files.

    ``probe.compare`` returns it and ``probe compare`` renders it; both run the same stages
    and analyzers. ``results`` holds the results that were kept (all of them from Python).
    """

    results: list[CompareResult]
    outcomes: list[JobOutcome] = field(default_factory=list)
    analyses: list[Analysis] = field(default_factory=list)

    @property
    def files(self) -> list[Path]:
        """Report files of every plan."""
        if self.outcomes:
            return [f for o in self.outcomes for f in o.summary.files]
        return [f for r in self.results for f in r.files]

    @property
    def errors(self) -> list[JobOutcome]:
        """Outcomes of plans that failed (bad input)."""
        return [o for o in self.outcomes if o.error]

    @property
    def problems(self) -> list[str]:
        """Input problems met by every plan (unreadable tensor files...)."""
        return [p for o in self.outcomes for p in o.problems]

    def analysis(self, name: str) -> Analysis | None:
        """The analysis of the analyzer called ``name`` (``None`` when it did not run)."""
        return next((a for a in self.analyses if a.name == name), None)

    def summary(self) -> Summary:
        """Counts over every plan."""
        total = Summary()
        if self.outcomes:
            for outcome in self.outcomes:
                total.add(outcome.summary)
            return total
        for result in self.results:
            total.add(result.summary())
        return total

    def failing(self) -> list[dict[str, Any]]:
        """Failing rows of every job, each dict tagged with its job label under ``job``."""
        return [{"job": r.label, **row} for r in self.results for row in r.failing().as_dicts()]

    def __getitem__(self, index: int) -> CompareResult:
        return self.results[index]

    def __len__(self) -> int:
        return len(self.results)


def analysable(result: CompareResult) -> bool:
    """Whether ``result`` holds row results with target/golden pairs (what the analyzers read)."""
    return bool(result.records) and hasattr(result.records[0], "pair")


_stored_metrics = RowResult.metrics.__get__
"""The metrics a row stores (``None`` when a subclass computes them when read)."""


def lazy_rows(records: Sequence[RowResult], lazy_class: type) -> list[int]:
    """The indices of the ``lazy_class`` records without metrics set (metrics computed when read)."""
    if (all(map(is_, map(type, records), repeat(lazy_class)))
            and all(map(is_, map(_stored_metrics, records, repeat(RowResult)), repeat(None)))):
        return list(range(len(records)))
    return [i for i, r in enumerate(records) if r.__class__ is lazy_class and _stored_metrics(r, RowResult) is None]
