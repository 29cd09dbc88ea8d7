"""Compare very large dumps a window of entries at a time: memory bounded by the window.

The same stages run, per window instead of per dump:

    read (entry index of both dumps) -> for each window of whole target entries:
        flatten -> keys -> pair (golden entries flattened on demand, :mod:`probe.windows`)
        -> measure -> judge -> digest builders ``add`` -> exporter streams ``write``
    -> golden rows never met counted -> digests ``finish`` -> streams ``close``

A plan is streamed only when every stage supports it and nothing needs the whole result:
readers with ``stream``, a mode with ``streams``, the exact pairer with no mapper or
normalizer active, no ``-hl``, every analyzer with ``digest_stream`` and every exporter
with ``open_stream``, and the caller not keeping results (the Python API keeps them). It is
on for dump.json files of :data:`STREAM_MIN_BYTES` or more (windows sized from the entry
count, :func:`auto_window`), or whenever the request's ``stream_window`` option
(``--window``) gives a window size; ``0`` switches it off.
Whatever turns up during the stream that only a whole compare does exactly (see
:class:`probe.errors.NotStreamable`) abandons it, nothing written, and the plan runs whole.
Where a second core is free, a forked child judges, renders and sums up windows for the
digests ahead of this process (:mod:`probe.window_render`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import probe.runtime as runtime
import probe.stages as stages
import probe.window_render as window_render
from probe.errors import NotStreamable, ProbeError
from probe.interfaces import Registries
from probe.judge import judge_result
from probe.model import CompareRequest, MatchContext, ModeContext, PairPlan, Summary
from probe.result import CompareResult, JobOutcome
from probe.windows import GoldenIndex, TargetWindows

log = logging.getLogger("probe")

STREAM_MIN_BYTES = 16 << 20
"""Plans whose two dump files together are at least this large are streamed by default (an
exporter may ask for more with a ``stream_min_bytes`` attribute: its stream costs more than
its whole write)."""
AUTO = -1
"""Window size chosen from the target's entry count once both dumps are indexed (:func:`auto_window`)."""
MIN_WINDOW, MAX_WINDOW, WINDOWS = 1024, 8192, 48
"""An automatic window holds ``entries // WINDOWS`` entries, within these bounds: enough windows
for the two processes to share them evenly, each large enough to cost little apart from its rows."""

Progress = Callable[[str, int], Callable[[int], None]]


def window_size(plan: PairPlan, request: CompareRequest, keep: bool, exporters: Sequence[Any] = ()) -> int:
    """Entries per window for ``plan``: the requested size, :data:`AUTO`, or ``0`` when it runs
    whole (decided before looking inside the dumps)."""
    forced = request.options.get("stream_window")
    if keep or forced == 0 or request.options.get("highlight") or plan.options.get("reader_args"):
        return 0
    if plan.pairers not in ((), ("exact",)):
        return 0
    if forced:
        return int(forced)
    try:
        size = plan.target.stat().st_size + plan.golden.stat().st_size
    except OSError:
        return 0
    least = max([STREAM_MIN_BYTES] + [getattr(e, "stream_min_bytes", 0) for e in exporters])
    return AUTO if size >= least else 0


def auto_window(entries: int) -> int:
    """The window size :data:`AUTO` stands for, for a target dump of ``entries`` entries."""
    return min(MAX_WINDOW, max(MIN_WINDOW, entries // WINDOWS))


def run_streamed(plan: PairPlan, request: CompareRequest, registries: Registries, analyzers: list[Any],
                 keep: bool, stamp: str, progress: Progress | None = None) -> JobOutcome | None:
    """Run ``plan`` a window at a time; ``None`` when it must run whole (nothing was written then)."""
    exporters = [registries.exporters.get(fmt) for fmt in request.formats] if request.output_dir is not None else []
    window = window_size(plan, request, keep, exporters)
    if not window or not all(hasattr(a, "digest_stream") for a in analyzers):
        return None
    if not all(hasattr(e, "open_stream") for e in exporters):
        return None
    try:
        return _stream(plan, request, registries, analyzers, exporters, window, stamp, progress)
    except (NotStreamable, ProbeError) as exc:
        # the whole compare reports a bad input exactly as it always has
        log.debug("%s: compared whole (%s)", plan.label, exc)
        return None


def _open(plan: PairPlan, request: CompareRequest, registries: Registries,
          analyzers: Sequence[Any] = ()) -> tuple[Any, Any] | None:
    """Both dumps indexed (the target here, the golden in a forked child); while the child still
    works, analyzers with a ``prefetch`` method read ahead what they read beside the target dump, and
    the registries of the stages after it fill (:data:`_AFTER_OPEN`)."""
    readers = (stages.pick_reader(plan.target, registries, plan.reader),
               stages.pick_reader(plan.golden, registries, plan.golden_reader_name))
    if not all(hasattr(r, "stream") for r in readers):
        return None
    import numpy  # noqa: F401 - both processes index with it: imported once, before the fork

    # the golden dump is indexed in a forked child while this process indexes the target
    side = runtime.start(_indexed_golden, readers[1], plan.golden)
    try:
        target = readers[0].stream(plan.target, with_stack=True)
        if target is not None:
            target.skipped_entries  # noqa: B018 - computed here while the child indexes the golden dump
            for analyzer in analyzers:
                if hasattr(analyzer, "prefetch"):
                    analyzer.prefetch(plan.target)
            for kind in _AFTER_OPEN:  # their plugins register now (imports), not after the wait
                getattr(registries, kind)
    except BaseException:
        side.cancel()
        raise
    if target is None:
        side.cancel()
        return None
    try:
        golden = side.result()
    except ProbeError:  # also when the child could not send it back: index it here
        golden = _indexed_golden(readers[1], plan.golden)
    if golden is None or target.has_md5 != golden.dump.has_md5:
        return None
    return target, golden


_AFTER_OPEN = ("modes", "mappers", "pairers", "normalizers")
"""The registries :func:`_stream` asks for once both dumps are indexed: filled while the child indexes the golden
dump."""


def _indexed_golden(reader: Any, path: Any) -> GoldenIndex | None:
    """The golden dump's entry and key indexes (made in a forked child when one can help)."""
    dump = reader.stream(path, with_stack=False)
    return None if dump is None else GoldenIndex(dump)


def _stream(plan: PairPlan, request: CompareRequest, registries: Registries, analyzers: list[Any],
            exporters: list[Any], window: int, stamp: str, progress: Progress | None) -> JobOutcome | None:
    opened = _open(plan, request, registries, analyzers)
    if opened is None:
        return None
    target, golden_index = opened
    golden = golden_index.dump
    t_head, g_head = target.header(), golden.header()
    stages.settle_read(plan, t_head, g_head, request.option("stack_path"), request.option("framework_option"))
    options = {**request.options, **plan.options} if plan.options else request.options
    mode = stages.choose_mode(registries, t_head, g_head, plan.mode or options.get("metric_mode"))
    ctx = MatchContext(target=t_head, golden=g_head, options=options, normalizers=registries.normalizers.values())
    if (not getattr(mode, "streams", False) or stages.build_key_map(registries, ctx) is not None
            or stages.choose_pairer(registries, options, None, plan.pairers).name != "exact"
            or stages.active_normalizers(t_head, g_head, registries, options)):
        return None
    shell = CompareResult(label=plan.label, mode=mode, records=[], target=t_head.info, golden=g_head.info,
                          stack=t_head.stack, options=options, output_stem=plan.output_stem,
                          output_subdir=plan.output_subdir, rank=plan.rank)
    if window == AUTO:
        window = auto_window(len(target.names))
    log.debug("%s: compared %d entries at a time", plan.label, window)
    streams = _open_streams(shell, exporters, request, stamp)
    try:
        outcome = _run_windows(plan, shell, TargetWindows(target, golden_index, window), golden_index, analyzers,
                               request, streams, t_head, g_head, progress)
        if target.has_md5 != outcome[0].has_md5 or golden.has_md5 != golden_index.has_md5:
            raise NotStreamable("md5 checksums found where the dump's bytes did not suggest them")
        summary, problems, builders = outcome[1:]
        if summary.rows == 0:
            for stream in streams:
                stream.abort()
            log.warning("%s: nothing to compare (no rows); no report written", plan.label)
            digests = {a.name: a.digest(request, shell) for a in analyzers}
        else:
            digests = {a.name: builder.finish(shell) for a, builder in zip(analyzers, builders)}
            for stream in streams:
                shell.files.extend(stream.close(shell, summary))
    except BaseException:
        for stream in streams:
            stream.abort()
        raise
    summary.files = list(shell.files)
    return JobOutcome(plan.label, summary, problems, None, digests=digests)


def _open_streams(shell: CompareResult, exporters: list[Any], request: CompareRequest, stamp: str) -> list[Any]:
    streams: list[Any] = []
    try:
        for exporter in exporters:
            streams.append(exporter.open_stream(shell, stages.report_path(request, shell, exporter, stamp)))
    except BaseException:
        for stream in streams:
            stream.abort()
        raise
    return streams


def _run_windows(plan: PairPlan, shell: CompareResult, windows: TargetWindows, golden: GoldenIndex,
                 analyzers: list[Any], request: CompareRequest, streams: list[Any], t_head: Any, g_head: Any,
                 progress: Progress | None) -> tuple[TargetWindows, Summary, list[str], list[Any]]:
    """Every window through measure, judge, digests and export; the counts of the whole."""
    mode_ctx = ModeContext(target=t_head, golden=g_head, options=shell.options, jobs=1)
    builders = [a.digest_stream(request, shell) for a in analyzers]
    summary = Summary(first_error_job=plan.label)
    problems: list[str] = []
    tick = progress(f"{plan.label} compare", len(windows.dump.names)) if progress else None
    judged = partial(_judged, windows, shell, mode_ctx)
    renderer = window_render.start(windows, streams, builders, judged, partial(_part, shell))
    try:
        for index, (lo, hi) in enumerate(renderer.bounds if renderer else windows.bounds()):
            done = renderer.judged(index, judged) if renderer else window_render.Done.here(judged(lo, hi), builders)
            summary.add(done.summary)
            problems.extend(done.problems)
            for builder in done.pending:
                builder.add(done.result)
            if renderer:
                renderer.write(index, done)
            else:
                for stream in streams:
                    stream.write(done.result)
            if tick:
                tick(hi - lo)
    finally:
        if renderer:
            renderer.close()
    shell.golden_only = summary.golden_only = golden.finish(windows.window)
    return windows, summary, problems, builders


def _judged(windows: TargetWindows, shell: CompareResult, mode_ctx: ModeContext, lo: int, hi: int) -> CompareResult:
    """The measured and judged rows of target entries ``lo:hi``."""
    part = _part(shell, shell.mode.compute(windows.pairs(lo, hi), mode_ctx))
    judge_result(part)
    return part


def _part(shell: CompareResult, records: list[Any]) -> CompareResult:
    """A window's result: ``records`` and everything else from ``shell``."""
    return CompareResult(label=shell.label, mode=shell.mode, records=records, target=shell.target,
                         golden=shell.golden, stack=shell.stack, options=shell.options, output_stem=shell.output_stem,
                         output_subdir=shell.output_subdir, rank=shell.rank)
