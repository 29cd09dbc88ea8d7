"""The built-in analyzers: first divergence (``-da``), the advisor, collective consistency.

Registered by :mod:`probe.builtin.analysis`; they run after every job of a compare.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path
from typing import Any

from rich.panel import Panel
from rich.text import Text

from probe.analysis import nodes_by_rank
from probe.analysis.advisor import AdviceBuilder, AdvicePart, advise, advisor_text, explain, tally
from probe.analysis.collective import check_collectives, shares_output
from probe.analysis.da_json import write_diff_analyze, write_rank_json
from probe.analysis.first_diff import FirstDiff, find_first_diff
from probe.analysis.nodes import (ENTRY_OF, Node, PortableNode, api_of, build_nodes, is_comm_entry, portable,
                                  restored)
from probe.diagnosis.analyzer import diagnosis_of
from probe.diagnosis.facts import step_of
from probe.formats.msprobe.names import COMM_PREFIXES
from probe.diagnosis.oneanswer import advisor_lines, diff_analyze_nodes
from probe.io import atomic_write, prepare_output_dir, timestamp, unique_path
from probe.result import Analysis, CompareResult, analysable


@dataclass
class Digest:
    """What an analyzer keeps of one job's result: its step folder, rank and a small payload."""

    subdir: str
    rank: int | None
    md5: bool
    payload: Any
    step: int = 0


def _digest(result: CompareResult, payload: Any) -> Digest | None:
    if not analysable(result):
        return None
    return _digest_of(result, payload)


def _digest_of(result: CompareResult, payload: Any) -> Digest:
    step = step_of(result.target.path if result.target is not None else None)
    return Digest(result.output_subdir, result.rank, result.mode.name == "md5", payload, step)


class _AdviceStream:
    """The advisor's digest of a streamed compare: :class:`AdviceBuilder` fed window by window
    (or with the parts a copy of it made, see :meth:`AdviceBuilder.part`)."""

    def __init__(self, result: CompareResult) -> None:
        self.builder = AdviceBuilder(result)

    def add(self, window: CompareResult) -> None:
        builder = self.builder
        if builder.advice.failing is not None:  # the search ended: what follows is only counted
            builder.count(tally(window.records))
        else:
            builder.add(build_nodes(window, judge=False))

    def skip(self, names: Sequence[str]) -> None:
        """Nothing to learn from a window this copy does not judge (whether it fails is unknown)."""

    def part(self, window: CompareResult) -> AdvicePart:
        return self.builder.part(window)

    def merge(self, part: AdvicePart) -> bool:
        return self.builder.merge(part)

    def finish(self, result: CompareResult) -> Digest:
        return _digest_of(result, self.builder.finish())


class _CollectiveStream:
    """The collective digest of a streamed compare: the shared-output collective nodes of each
    window, their ``index`` counted over every entry before them."""

    def __init__(self, result: CompareResult) -> None:
        self.nodes: list = []
        self.entries = 0
        self.rank = result.rank or 0
        self.stack = result.stack or {}

    def add(self, window: CompareResult) -> None:
        self._extend(*_window_nodes(window))

    def _extend(self, nodes: list[Node], entries: int) -> None:
        for node in nodes:
            node.index += self.entries
            self.nodes.append(node)
        self.entries += entries

    def skip(self, names: Sequence[str]) -> None:
        """Nothing to learn from a window this copy does not judge."""

    def part(self, window: CompareResult) -> CollectivePart:
        """The window's shared-output collective nodes (``index`` counted in the window) and its entry count."""
        nodes, entries = _window_nodes(window)
        return portable(nodes), entries

    def merge(self, part: CollectivePart) -> bool:
        """Add a window's :meth:`part` (windows in order)."""
        nodes, entries = part
        self._extend(restored(nodes, self.rank, self.stack), entries)
        return True

    def finish(self, result: CompareResult) -> Digest:
        return _digest_of(result, self.nodes)


CollectivePart = tuple[list[PortableNode], int]
"""A window's part for the collective digest: its shared-output nodes (``index`` counted in the
window) and its entry count."""


def _window_nodes(window: CompareResult) -> tuple[list[Node], int]:
    """The window's shared-output collective nodes (``-da`` not judged: not read) and its entry count,
    as ``build_nodes(window, keep=_shares_output)`` gives them; only those entries' rows are built into nodes."""
    positions: list[int] = []
    kept: list[Any] = []
    count = 0
    for count, (entry, group) in enumerate(groupby(window.records, key=ENTRY_OF), 1):
        if entry.startswith(COMM_PREFIXES) and _shares_output(entry):
            positions.append(count - 1)
            kept.extend(group)
    if not positions:
        return [], count
    nodes = build_nodes(replace(window, records=kept), keep=_shares_output, judge=False)
    if len(nodes) != len(positions):  # entries that ran together once the others were left out
        return build_nodes(window, keep=_shares_output, judge=False), count
    for node, index in zip(nodes, positions):
        node.index = index
    return nodes, count


def _shares_output(entry: str) -> bool:
    return entry.startswith(COMM_PREFIXES) and is_comm_entry(entry) and shares_output(api_of(entry))


def _digests_by_step(digests: list[Digest | None]) -> dict[str, list[Digest]]:
    groups: dict[str, list[Digest]] = defaultdict(list)
    for digest in digests:
        if digest is not None:
            groups[digest.subdir].append(digest)
    return dict(groups)


class _Shown(list):
    """What an analysis shows, collected in order for the console to render (never printed here)."""

    def print(self, item: Any) -> None:
        self.append(item)


def _out() -> _Shown:
    return _Shown()


def _by_step(results: list[CompareResult]) -> dict[str, list[CompareResult]]:
    """Analysable results grouped by their output sub-folder (one group per step)."""
    groups: dict[str, list[CompareResult]] = defaultdict(list)
    for result in results:
        if analysable(result):
            groups[result.output_subdir].append(result)
    return dict(groups)


def _directory(request: Any, subdir: str) -> Path | None:
    if request.output_dir is None:
        return None
    base = request.output_dir / subdir if subdir else request.output_dir
    return prepare_output_dir(base)


class DiffAnalyzer:
    """``-da``: the first diverging node per rank and across ranks."""

    name = "diff_analyze"

    def enabled(self, request: Any) -> bool:
        return bool(request.options.get("diff_analyze"))

    def analyze(self, request: Any, results: list[CompareResult]) -> Analysis:
        written: list[Path] = []
        out = _out()
        data: dict[str, Any] = {}
        for subdir, group in _by_step(results).items():
            directory = _directory(request, subdir)
            stamp = timestamp()
            by_rank = nodes_by_rank(group)
            md5 = group[0].mode.name == "md5"
            if directory is not None:
                for result, (rank, nodes) in zip(group, by_rank.items()):
                    stem = f"compare_result_rank{rank}" if result.rank is not None else result.output_stem
                    path = unique_path(directory, f"{stem}_{stamp}", ".json")
                    written.append(write_rank_json(nodes, md5, path))
            found = find_first_diff(by_rank)
            diagnosis = diagnosis_of(request)
            if diagnosis is not None:  # one answer: the diagnosis's suspects, in msProbe's file format
                step = step_of(group[0].target.path if group[0].target is not None else None)
                found = FirstDiff("ranked by the diagnosis", diff_analyze_nodes(diagnosis, step, by_rank))
            data[subdir] = found
            where = f" ({subdir})" if subdir else ""
            if not found.found:
                out.print(f"diff analyze{where}: no diverging node found")
                continue
            if directory is not None:
                path = unique_path(directory, f"diff_analyze_{stamp}", ".json")
                written.append(write_diff_analyze(found, md5, path))
            out.print(f"[bold]first diverging node{where}[/bold] ({found.phase}):")
            for rank, nodes in found.nodes.items():
                for node in nodes:
                    trip = node.trip
                    line = Text(f"  rank {rank}: ")
                    line.append(node.entry, style="bold red")
                    if trip is not None:
                        line.append(f"  {trip.metric} {trip.value} on {trip.row}")
                    out.print(line)
                    stack = node.stack_line()
                    if stack:
                        out.print(Text(f"    {stack}", style="dim"))
                    earlier = [r.name for n in by_rank[rank][: node.index] for r in n.records if not r.matched]
                    if earlier:
                        out.print(Text(f"    note: {len(earlier)} target row(s) before it have no golden "
                                       f"counterpart (first: {earlier[0]})", style="yellow"))
        for path in written:
            out.print(f"diff analyze: {path}")
        return Analysis(self.name, written, out, data)


class AdvisorAnalyzer:
    """The advisor: first failing row, where it starts and the likely cause (off with ``-c``)."""

    name = "advisor"

    def enabled(self, request: Any) -> bool:
        return not request.options.get("compare_only")

    def digest(self, request: Any, result: CompareResult) -> Digest | None:
        """The advice for one rank, made where the rank was compared."""
        return _digest(result, advise(result)) if analysable(result) else None

    def digest_stream(self, request: Any, result: CompareResult) -> _AdviceStream:
        """:meth:`digest` made a window of whole entries at a time (``add``, then ``finish``)."""
        return _AdviceStream(result)

    def analyze(self, request: Any, digests: list[Digest | None]) -> Analysis:
        written: list[Path] = []
        out = _out()
        data: dict[str, Any] = {}
        for subdir, group in _digests_by_step(digests).items():
            advices = data[subdir] = [d.payload for d in group]
            diagnosis = diagnosis_of(request)
            directory = _directory(request, subdir)

            def lines(advice: Any) -> list[tuple[str, str]]:
                found = explain(advice)
                return advisor_lines(found, diagnosis, group[0].step) if diagnosis is not None else found

            if directory is not None:
                path = unique_path(directory, f"advisor_{timestamp()}", ".txt")
                report = atomic_write(path, "w", encoding="utf-8")
                with report as handle:
                    handle.write(advisor_text(advices, lines))
                written.append(report.path)
            failing = [a for a in advices if not a.ok]
            title = f"advisor ({subdir})" if subdir else "advisor"
            suspected = diagnosis is not None and any(s.step == group[0].step for s in diagnosis.suspects)
            if not failing and not suspected:
                out.print(f"{title}: all data in the comparison meets the precision rules")
                continue
            first = failing[0] if failing else advices[0]
            if suspected:  # the rank of the step's best suspect
                best = next(s for s in diagnosis.suspects if s.step == group[0].step)
                first = next((a for a, d in zip(advices, group) if (d.rank or 0) == best.rank), first)
            body = Text()
            for index, (head, text) in enumerate(lines(first)):
                if index:
                    body.append("\n")
                body.append(f"{head}: ", style="bold")
                body.append(text)
            if len(failing) > 1:
                body.append(f"\n{len(failing) - 1} more rank(s) fail as well; see the advisor file", style="dim")
            red = first.failing or suspected
            # the title as text, not markup: a ``[...]`` or ``:name:`` in a folder name stays as it is (and rich's
            # table of emoji codes is not loaded for it)
            out.print(Panel(body, title=Text(title), title_align="left", border_style="red" if red else "yellow"))
        for path in written:
            out.print(f"advisor: {path}")
        return Analysis(self.name, written, out, data)


class CollectiveAnalyzer:
    """Ranks of one group must agree on the outputs a collective shares (off with ``-c``)."""

    name = "collective"
    min_plans = 2
    """The ranks of one step are checked against each other: one pair alone has nothing to agree with."""

    def enabled(self, request: Any) -> bool:
        return not request.options.get("compare_only")

    def digest(self, request: Any, result: CompareResult) -> Digest | None:
        """Only the collective nodes whose outputs the ranks must share."""
        if not analysable(result):
            return None
        return _digest(result, build_nodes(result, keep=_shares_output, judge=False))  # -da verdicts are not read

    def digest_stream(self, request: Any, result: CompareResult) -> _CollectiveStream:
        """:meth:`digest` made a window of whole entries at a time (``add``, then ``finish``)."""
        return _CollectiveStream(result)

    def analyze(self, request: Any, digests: list[Digest | None]) -> Analysis:
        out = _out()
        data: dict[str, Any] = {}
        for subdir, group in _digests_by_step(digests).items():
            if len(group) < 2:
                continue
            by_rank: dict[int, list] = {}
            for position, digest in enumerate(group):
                rank = digest.rank if digest.rank is not None else position
                by_rank[rank] = digest.payload
            checked, problems = check_collectives(by_rank, md5=group[0].md5)
            data[subdir] = problems
            if not checked:
                continue
            where = f" ({subdir})" if subdir else ""
            if not problems:
                out.print(f"collectives{where}: {checked} collective op(s) agree across ranks")
                continue
            first = problems[0]
            ranks = ", ".join(str(r) for r in first.ranks) or "?"
            out.print(
                f"[bold red]collectives{where}: ranks disagree[/bold red] on {first.op} (group {list(first.group)}): "
                f"rank {ranks} differs in {first.row}"
                + (f"; {len(problems) - 1} more op(s) disagree" if len(problems) > 1 else "")
            )
        return Analysis(self.name, [], out, data)
