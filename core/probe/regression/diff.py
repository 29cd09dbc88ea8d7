"""``probe diff``: what changed between two compare reports (yesterday's nightly vs today's).

Rows are paired by ``NPU Name`` (the n-th row of a name with the n-th row of that name on
the other side); a paired row *changed verdict* when its ``Result`` differs, and a *metric
moved* when a key metric differs by more than that metric's tolerance. Rows only in the new
report were *added*, rows only in the old one *removed*. Output directories are paired
report by report (same sub-folder and report name, e.g. ``step0/compare_result_rank3``).
"""

from __future__ import annotations

import html
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from probe.errors import InputError
from probe.io import atomic_write, prepare_output_dir, timestamp, unique_path
from probe.regression.reports import BENCH_COLUMN, NAME_COLUMN, RESULT_COLUMN, Report, find_reports, open_report
from probe.regression.tables import write_table

KEY_METRICS = (
    "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio",
    "Max diff", "Min diff", "Mean diff", "L2norm diff", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr",
)
"""Metrics compared by default (those both reports have). Others can be added with a tolerance."""
DEFAULT_RELATIVE_TOLERANCE = 1e-6
"""Without ``--tolerance`` a metric moved when it changed by more than this fraction of its size."""
FAIL_ON = ("never", "newly-failing", "changed")
VERDICT_RANK = {"": 0, "pass": 0, "n/a": 0, "warning": 1, "error": 2, "fail": 2}
DIFF_COLUMNS = ("Report", "Change", "NPU Name", "Bench Name", "Old Result", "New Result",
                "Metric", "Old", "New", "Delta", "Newly Failing")
MARKDOWN_ROWS = 50
"""Rows listed per section of the markdown (the CSV/JSON list them all)."""
FORMATS = ("csv", "json", "md")

RESULT, METRIC, ADDED, REMOVED = "result", "metric", "added", "removed"


@dataclass(frozen=True, slots=True)
class RowChange:
    """One change of one row (a row whose Result changed and two metrics moved has three)."""

    report: str
    kind: str
    name: str
    bench: str
    old_result: str = ""
    new_result: str = ""
    metric: str = ""
    old: str = ""
    new: str = ""
    delta: float | None = None
    newly_failing: bool = False

    def cells(self) -> list[Any]:
        delta = "" if self.delta is None else self.delta
        return [self.report, self.kind, self.name, self.bench, self.old_result, self.new_result,
                self.metric, self.old, self.new, delta, "yes" if self.newly_failing else ""]


@dataclass
class DiffSummary:
    """Counts of one diff."""

    reports: int = 0
    old_rows: int = 0
    new_rows: int = 0
    paired: int = 0
    result_changed: int = 0
    newly_failing: int = 0
    fixed: int = 0
    metric_moved: int = 0
    """Paired rows with at least one metric beyond its tolerance."""
    added: int = 0
    removed: int = 0
    transitions: dict[str, int] = field(default_factory=dict)
    """``"pass -> error": 3`` ..."""
    reports_only_old: list[str] = field(default_factory=list)
    reports_only_new: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.result_changed or self.metric_moved or self.added or self.removed
                    or self.reports_only_old or self.reports_only_new)


@dataclass
class ReportDiff:
    """The result of :func:`diff_reports`."""

    old: Path
    new: Path
    changes: list[RowChange]
    summary: DiffSummary
    tolerances: dict[str, float]
    files: list[Path] = field(default_factory=list)

    def exit_code(self, fail_on: str = "never") -> int:
        """``1`` when ``fail_on`` trips (``newly-failing`` / ``changed``), else ``0``."""
        if fail_on == "newly-failing":
            return 1 if self.summary.newly_failing else 0
        if fail_on == "changed":
            return 1 if self.summary.changed else 0
        return 0

    def of_kind(self, kind: str) -> list[RowChange]:
        return [c for c in self.changes if c.kind == kind]

    def to_dict(self) -> dict[str, Any]:
        return {"old": str(self.old), "new": str(self.new), "tolerances": self.tolerances,
                "summary": asdict(self.summary), "changes": [_change_dict(c) for c in self.changes]}


_CHANGE_FIELDS = tuple(f for f in RowChange.__dataclass_fields__)


def _change_dict(change: RowChange) -> dict[str, Any]:
    return {f: getattr(change, f) for f in _CHANGE_FIELDS}


def parse_tolerances(items: Iterable[str] | Mapping[str, float] | None) -> dict[str, float]:
    """``["MaxRelativeErr=0.5", "Cosine=1e-4"]`` (or a dict) -> ``{metric: absolute tolerance}``."""
    if not items:
        return {}
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        pairs = []
        for item in items:
            metric, sep, value = str(item).rpartition("=")
            if not sep or not metric.strip():
                raise InputError(f"--tolerance {item!r}: expected METRIC=VALUE, e.g. MaxRelativeErr=0.5")
            pairs.append((metric.strip(), value))
    out: dict[str, float] = {}
    for metric, value in pairs:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(f"--tolerance {metric}={value}: the value is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise InputError(f"--tolerance {metric}={value}: the value must be a finite number >= 0")
        out[metric] = number
    return out


def _number(text: str) -> float | None:
    """A report cell as a number (``"25.5%"`` -> 25.5, ``"Nan"``, ``" inf"``), else ``None``."""
    text = text.strip()
    if text.endswith("%"):
        text = text[:-1]
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def metric_moved(old: str, new: str, tolerance: float | None) -> tuple[bool, float | None]:
    """Whether a metric cell moved beyond ``tolerance`` (absolute; ``None``: the relative default)."""
    if old == new:
        return False, 0.0
    a, b = _number(old), _number(new)
    if a is None or b is None:
        return old.strip() != new.strip(), None
    if math.isnan(a) or math.isnan(b):
        return not (math.isnan(a) and math.isnan(b)), None
    if math.isinf(a) or math.isinf(b):
        return a != b, None
    delta = b - a
    limit = tolerance if tolerance is not None else DEFAULT_RELATIVE_TOLERANCE * max(abs(a), abs(b), 1e-12)
    return abs(delta) > limit, delta


def _rank(result: str) -> int:
    return VERDICT_RANK.get(result.strip().lower(), 0)


class _Side:
    """One report's rows, keyed by (name, occurrence): only the cells the diff needs."""

    def __init__(self, report: Report, metrics: Sequence[str]) -> None:
        self.rows: dict[tuple[str, int], tuple[str, ...]] = {}
        self.count = 0
        seen: Counter[str] = Counter()
        for cells in report.select([NAME_COLUMN, BENCH_COLUMN, RESULT_COLUMN, *metrics]):
            name = cells[0]
            key = (name, seen[name])
            seen[name] += 1
            self.rows[key] = cells[1:]
            self.count += 1


def _metrics_of(old: Report, new: Report, tolerances: Mapping[str, float]) -> list[str]:
    """The metrics both reports have, default ones first, then those given a tolerance."""
    both = [c for c in old.columns if c in set(new.columns)]
    metrics = [m for m in KEY_METRICS if m in both]
    for metric in tolerances:
        if metric not in both:
            if metric not in old.columns and metric not in new.columns:
                raise InputError(f"--tolerance names {metric!r}, a column neither report has", new.path)
            continue
        if metric not in metrics:
            metrics.append(metric)
    return metrics


def diff_pair(old: Report, new: Report, tolerances: Mapping[str, float], label: str,
              summary: DiffSummary) -> list[RowChange]:
    """The changes between two reports (rows of ``old`` are held, ``new`` is streamed)."""
    metrics = _metrics_of(old, new, tolerances)
    before = _Side(old, metrics)
    summary.old_rows += before.count
    changes: list[RowChange] = []
    seen: Counter[str] = Counter()
    for cells in new.select([NAME_COLUMN, BENCH_COLUMN, RESULT_COLUMN, *metrics]):
        summary.new_rows += 1
        name, bench, result = cells[0], cells[1], cells[2]
        key = (name, seen[name])
        seen[name] += 1
        hit = before.rows.pop(key, None)
        if hit is None:
            failing = _rank(result) >= 1
            summary.added += 1
            summary.newly_failing += failing
            changes.append(RowChange(label, ADDED, name, bench, "", result, newly_failing=failing))
            continue
        summary.paired += 1
        old_result = hit[1]
        if old_result.strip().lower() != result.strip().lower():
            worse = _rank(result) > _rank(old_result) and _rank(result) >= 1
            summary.result_changed += 1
            summary.newly_failing += worse
            summary.fixed += _rank(old_result) >= 1 and _rank(result) == 0
            transition = f"{old_result or '(empty)'} -> {result or '(empty)'}"
            summary.transitions[transition] = summary.transitions.get(transition, 0) + 1
            changes.append(RowChange(label, RESULT, name, bench, old_result, result, newly_failing=worse))
        moved_any = False
        for position, metric in enumerate(metrics, start=2):
            old_value, new_value = hit[position], cells[position + 1]
            if old_value == new_value:
                continue
            moved, delta = metric_moved(old_value, new_value, tolerances.get(metric))
            if moved:
                moved_any = True
                changes.append(RowChange(label, METRIC, name, bench, old_result, result, metric,
                                         old_value, new_value, delta))
        summary.metric_moved += moved_any
    for (name, _), hit in before.rows.items():
        summary.removed += 1
        changes.append(RowChange(label, REMOVED, name, hit[0], hit[1], ""))
    return changes


def pair_reports(old: Path, new: Path) -> tuple[list[tuple[str, Path, Path]], list[str], list[str]]:
    """Reports to diff: two files, or two output directories paired report by report."""
    if old.is_dir() != new.is_dir():
        raise InputError("give two report files or two output directories, not one of each", new)
    if not old.is_dir():
        return [("", old, new)], [], []
    old_reports, new_reports = find_reports(old), find_reports(new)
    if not old_reports:
        raise InputError("holds no compare reports (compare_result_*.csv/.xlsx/.json)", old)
    if not new_reports:
        raise InputError("holds no compare reports (compare_result_*.csv/.xlsx/.json)", new)
    if len(old_reports) == 1 and len(new_reports) == 1:
        (ko, po), (kn, pn) = next(iter(old_reports.items())), next(iter(new_reports.items()))
        return [(kn if ko == kn else f"{ko} | {kn}", po, pn)], [], []
    common = [k for k in old_reports if k in new_reports]
    only_old = [k for k in old_reports if k not in new_reports]
    only_new = [k for k in new_reports if k not in old_reports]
    return [(k, old_reports[k], new_reports[k]) for k in common], only_old, only_new


def diff_reports(old: Any, new: Any, output: Any = None, *, tolerances: Any = None,
                 formats: Sequence[str] = FORMATS) -> ReportDiff:
    """Diff two compare reports (probe's or msProbe's: CSV, CSV.gz, xlsx, JSON) or two output dirs.

    ``tolerances``: ``{metric: absolute tolerance}`` or ``["Metric=VALUE", ...]``; a metric
    without one moved when it changed by more than a millionth of its size. With ``output``
    the diff is written there as ``diff_{timestamp}.csv/.json/.md``.
    Raises :class:`probe.errors.InputError` on unreadable input.
    """
    old, new = Path(old), Path(new)
    tol = parse_tolerances(tolerances)
    for fmt in formats:
        if fmt not in FORMATS:
            raise InputError(f"unknown diff format {fmt!r} (choose from {', '.join(FORMATS)})")
    pairs, only_old, only_new = pair_reports(old, new)
    summary = DiffSummary(reports=len(pairs), reports_only_old=only_old, reports_only_new=only_new)
    changes: list[RowChange] = []
    for label, old_path, new_path in pairs:
        changes.extend(diff_pair(open_report(old_path), open_report(new_path), tol, label, summary))
    result = ReportDiff(old, new, changes, summary, tol)
    if output is not None:
        result.files = write_diff(result, Path(output), formats)
    return result


def write_diff(diff: ReportDiff, directory: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write ``diff_{timestamp}.csv/.json/.md`` into ``directory``; returns the files."""
    directory = prepare_output_dir(directory)
    stem = f"diff_{timestamp()}"
    files = write_table(directory, stem, [f for f in formats if f == "csv"], DIFF_COLUMNS,
                        [c.cells() for c in diff.changes])
    if "json" in formats:
        path = unique_path(directory, stem, ".json")
        head = {"old": str(diff.old), "new": str(diff.new), "tolerances": diff.tolerances,
                "summary": asdict(diff.summary)}
        out = atomic_write(path, "wb")
        with out as handle:  # one change per line: never the whole text at once
            handle.write(orjson.dumps(head)[:-1] + b', "changes": [\n')
            for i, change in enumerate(diff.changes):
                handle.write((b",\n" if i else b"") + orjson.dumps(_change_dict(change)))
            handle.write(b"\n]}\n")
        files.append(out.path)
    if "md" in formats:
        out = atomic_write(unique_path(directory, stem, ".md"), "w", encoding="utf-8")
        with out as handle:
            handle.write(markdown(diff))
        files.append(out.path)
    return files


def _md(text: Any) -> str:
    """Text safe inside a markdown table cell (no markup, no HTML, no line breaks)."""
    value = html.escape(str(text), quote=False).replace("|", "\\|").replace("`", "\\`")
    value = value.replace("*", "\\*").replace("_", "\\_").replace("[", "\\[").replace("]", "\\]")
    return " ".join(value.split())


def _md_number(value: float | None) -> str:
    return "" if value is None else f"{value:+.4g}"


def markdown(diff: ReportDiff) -> str:
    """The diff as markdown for a pull request: a summary table, then one section per kind."""
    s = diff.summary
    verdict = "no changes" if not s.changed else (
        f"**{s.newly_failing} newly failing**" if s.newly_failing else "changed, nothing newly failing")
    lines = [f"## probe diff: {verdict}", "",
             f"{_md(diff.old)} → {_md(diff.new)}", "",
             "| | rows |", "|---|---:|",
             f"| paired | {s.paired} |", f"| Result changed | {s.result_changed} |",
             f"| newly failing | {s.newly_failing} |", f"| fixed | {s.fixed} |",
             f"| metrics moved | {s.metric_moved} |", f"| added | {s.added} |", f"| removed | {s.removed} |", ""]
    if s.transitions:
        lines.append("Result changes: " + ", ".join(f"{_md(k)}: {v}" for k, v in sorted(s.transitions.items())))
        lines.append("")
    for title, keys in (("Reports only in the old run", s.reports_only_old),
                        ("Reports only in the new run", s.reports_only_new)):
        if keys:
            lines += [f"{title}: " + ", ".join(_md(k) for k in keys), ""]
    multi = any(c.report for c in diff.changes)
    sections = (
        ("Newly failing", [c for c in diff.changes if c.newly_failing], ("Old Result", "New Result")),
        ("Result changed", diff.of_kind(RESULT), ("Old Result", "New Result")),
        ("Metrics moved", diff.of_kind(METRIC), ("Metric", "Old", "New", "Delta")),
        ("Added", diff.of_kind(ADDED), ("New Result",)),
        ("Removed", diff.of_kind(REMOVED), ("Old Result",)),
    )
    for title, rows, extra in sections:
        if not rows:
            continue
        head = (["Report"] if multi else []) + ["NPU Name", *extra]
        lines += [f"### {title} ({len(rows)})", "", "| " + " | ".join(head) + " |",
                  "|" + "---|" * len(head)]
        for change in rows[:MARKDOWN_ROWS]:
            values = {"Old Result": change.old_result, "New Result": change.new_result, "Metric": change.metric,
                      "Old": change.old, "New": change.new, "Delta": _md_number(change.delta)}
            cells = ([change.report] if multi else []) + [change.name] + [values[e] for e in extra]
            lines.append("| " + " | ".join(_md(c) for c in cells) + " |")
        if len(rows) > MARKDOWN_ROWS:
            lines.append(f"\n… and {len(rows) - MARKDOWN_ROWS} more (see the CSV/JSON).")
        lines.append("")
    return "\n".join(lines)
