"""The compare pipeline: plan jobs, run each (read, match, compute, judge), export."""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

from probe.dumps import load_pair
from probe.errors import InputError, ProbeError
from probe.io import prepare_output_dir, timestamp, unique_path
from probe.jobs import CompareJob, CompareRequest, DumpPairJob
from probe.match import assign_keys, match_exact, match_fuzzy
from probe.model import NA, FlatDump, KeyMap, MatchContext, ModeContext, Pair, Summary
from probe.plugins import Host, default_host
from probe.result import CompareResult, CompareRun

log = logging.getLogger("probe")

ProgressFactory = Callable[[str, int], Callable[[int], None]]


def _no_progress(label: str, total: int) -> Callable[[int], None]:
    return lambda n: None


def choose_mode(host: Host, target: FlatDump, golden: FlatDump, requested: str | None) -> Any:
    """The metric mode to use: the requested one, else the first that accepts the dumps."""
    if target.info.task != golden.info.task:
        raise InputError(
            f"dump tasks differ: target is {target.info.task!r}, golden ({golden.info.path}) is {golden.info.task!r}",
            target.info.path,
        )
    if target.info.task == "statistics" and target.has_md5 != golden.has_md5:
        raise InputError(
            f"one dump has md5 checksums and the other statistics (golden: {golden.info.path}); dump both the same way",
            target.info.path,
        )
    if target.info.task == "structure":
        raise InputError("is a structure-only dump: it holds no data to compare", target.info.path)
    if requested:
        return host.modes.get(requested)
    for mode in host.modes.values():
        if mode.accepts(target, golden):
            return mode
    raise InputError(f"no metric mode accepts this dump (task {target.info.task!r})", target.info.path)


def compose_key_maps(key_maps: Sequence[KeyMap]) -> KeyMap | None:
    """One :class:`KeyMap` from the active ones: the first that gives a row a key wins.

    ``left_join`` holds if any map asks for it (a data mapping is active).
    """
    if not key_maps:
        return None
    if len(key_maps) == 1:
        return key_maps[0]
    funcs = [km.target_key for km in key_maps]

    def target_key(row: Any) -> str | None:
        for func in funcs:
            key = func(row)
            if key is not None:
                return key
        return None

    return KeyMap(
        target_key=target_key,
        left_join=any(km.left_join for km in key_maps),
        renumber_target=all(km.renumber_target for km in key_maps),
    )


def pair_rows(host: Host, target: FlatDump, golden: FlatDump, options: dict[str, Any]) -> tuple[list[Pair], int]:
    """Match target rows to golden rows with the active normalizers and mappers.

    Every active mapper is built (in ``priority`` order) and composed: for each target row
    the first mapper that returns a key decides it. Keys start from the row names with
    backward call indices renumbered on *both* sides (not with ``-fm`` or debug dumps),
    then pass through the normalizers that apply to the framework pair.
    """
    ctx = MatchContext(target=target, golden=golden, options=options, host=host)
    key_maps = []
    for mapper in sorted(host.mappers.values(), key=lambda m: m.priority):
        built = mapper.build(ctx)
        if built is not None:
            key_maps.append(built)
    key_map = compose_key_maps(key_maps)
    fuzzy = bool(options.get("fuzzy_match")) and not (key_map is not None and key_map.left_join)
    renumber = target.info.kind != "debug" and not fuzzy
    assign_keys(golden.rows, renumber)
    assign_keys(target.rows, renumber and (key_map is None or key_map.renumber_target))
    normalizers = [
        n for n in host.normalizers.values()
        if n.applies(target.info.framework, golden.info.framework)
        and (getattr(n, "option", None) is None or options.get(n.option)
             or any(options.get(o) for o in getattr(n, "also_with", ())))
    ]
    for normalizer in normalizers:
        for side, dump in (("target", target), ("golden", golden)):
            for row in dump.rows:
                row.key = normalizer.normalize(row.key, side)
    if fuzzy:
        return match_fuzzy(target.rows, golden.rows, key_map)
    return match_exact(target.rows, golden.rows, key_map)


def compare_dumps(
    target: FlatDump,
    golden: FlatDump,
    host: Host,
    options: dict[str, Any],
    label: str = "",
    progress: ProgressFactory = _no_progress,
    jobs: int = 1,
) -> CompareResult:
    """Compare two flattened dumps and return the judged result (nothing is written)."""
    mode = choose_mode(host, target, golden, options.get("metric_mode"))
    pairs, golden_only = pair_rows(host, target, golden, options)
    extra_metrics = [host.tensor_metrics.get(n) for n in host.tensor_metrics.names()] if mode.name == "tensor" else []
    ctx = ModeContext(
        target=target,
        golden=golden,
        options=options,
        host=host,
        progress=progress(f"{label} compare", len(pairs)),
        jobs=jobs,
        extra_metrics=extra_metrics,
    )
    records = mode.compute(pairs, ctx)
    stack = target.stack
    stack_text: dict[int, str] = {}  # entries of one stack group share the same list
    for entry, group_iter in groupby(records, key=lambda r: r.pair.target.entry):
        group = list(group_iter)
        if stack is not None:
            lines = stack.get(entry)
            if lines is None:
                text = NA
            else:
                text = stack_text.get(id(lines))
                if text is None:
                    text = stack_text[id(lines)] = str(lines)
            group[0].extra["stack"] = text
        mode.judge(group)
    result = CompareResult(
        label=label,
        mode=mode,
        records=records,
        target=target.info,
        golden=golden.info,
        stack=stack,
        golden_only=golden_only,
        extra_metrics=tuple(m.column for m in extra_metrics),
        options=options,
    )
    if options.get("highlight"):
        from probe.highlight import apply_highlight

        apply_highlight(result)
    result.problems.extend(r.extra["problem"] for r in records if r.extra_value("problem") is not None)
    return result


def compare_dump_pair(job: DumpPairJob, host: Host, request: CompareRequest, progress: Any = None) -> CompareResult:
    """Run the built-in job: load both dump files and compare them."""
    progress = progress or _no_progress
    advance = progress(f"{job.label} read dumps", 2)
    target, golden = load_pair(job.target_file, job.golden_file, host)
    advance(2)
    for dump in (target, golden):
        if dump.skipped_entries:
            log.warning(
                "%s: %d entries with unexpected names were not compared (first: %s)",
                dump.info.path, len(dump.skipped_entries), dump.skipped_entries[0],
            )
    stack_path = request.option("stack_path")
    if stack_path:  # msProbe's compare.json may name the stack file explicitly
        from probe.dumps import load_stack

        target.stack = load_stack(Path(stack_path))
        if target.stack is None:
            raise InputError("stack file does not exist", stack_path)
    if target.stack is None:
        log.info("no stack.json beside %s: the report has no NPU_Stack_Info column", job.target_file)
    result = compare_dumps(target, golden, host, request.options, job.label, progress, request.jobs)
    result.output_stem = job.output_stem
    result.output_subdir = job.output_subdir
    result.rank = job.rank
    return result


def export(result: CompareResult, host: Host, request: CompareRequest, stamp: str) -> list[Path]:
    """Write ``result`` in every requested format; returns the files written."""
    if request.output_dir is None:
        return []
    directory = prepare_output_dir(request.output_dir / result.output_subdir if result.output_subdir else request.output_dir)
    written: list[Path] = []
    if not result.records:
        log.warning("%s: nothing to compare (no rows); no report written", result.label)
        return written
    for fmt in request.formats:
        exporter = host.exporters.get(fmt)
        path = unique_path(directory, f"{result.output_stem}_{stamp}", exporter.suffix)
        written.extend(exporter.write(result, path))
    result.files = written
    return written


@dataclass
class JobOutcome:
    """What a job sends back: its summary, files, problems and (optionally) the result."""

    label: str
    summary: Summary
    problems: list[str] = field(default_factory=list)
    result: CompareResult | None = None
    error: str | None = None
    exit_code: int = 0
    digests: dict[str, Any] = field(default_factory=dict)
    """Per-analyzer summaries made where the job ran (see :class:`probe.model.Analyzer`)."""


def enabled_analyzers(host: Host, request: CompareRequest) -> list[Any]:
    """The analyzers that run for ``request`` (none when ``request.options['analyze']`` is false)."""
    if request.options.get("analyze") is False:
        return []
    return [a for a in host.analyzers.values() if a.enabled(request)]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Switch the cyclic garbage collector off for a block.

    A job allocates millions of small acyclic objects (rows, pairs, results); the
    collector would scan them again and again for cycles that do not exist, which costs
    about a quarter of the run time. Reference counting still frees everything.

    On leaving, the objects still alive are frozen (``gc.freeze``) before the collector is
    switched back on: they all count as new, and the first collection would otherwise walk
    the whole result (about 2 s at 1M rows) while the analyzers run. They are unfrozen on
    entering the next block, so nothing stays out of the collector's reach for long.
    """
    enabled = gc.isenabled()
    gc.disable()
    gc.unfreeze()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


def run_job(job: CompareJob, request: CompareRequest, keep: bool, host: Host | None = None, progress: Any = None) -> JobOutcome:
    """Run one job and export it; errors become an outcome instead of an exception."""
    host = host or default_host()
    try:
        with gc_paused():
            result = job.run(host, request, progress)
            export(result, host, request, timestamp())
    except ProbeError as exc:
        return JobOutcome(job.label, Summary(), error=str(exc), exit_code=exc.exit_code)
    digests: dict[str, Any] = {}
    for analyzer in enabled_analyzers(host, request):
        digest = getattr(analyzer, "digest", None)
        if digest is None:
            keep = True  # this analyzer needs the whole result
        else:
            digests[analyzer.name] = digest(request, result)
    return JobOutcome(job.label, result.summary(), list(result.problems), result if keep else None, digests=digests)


def run_job_in_worker(job: CompareJob, request: CompareRequest, keep: bool) -> JobOutcome:
    """:func:`run_job` with the worker's own plugin host (for process pools and clusters)."""
    return run_job(job, request, keep)


def run_compare(
    request: CompareRequest,
    host: Host | None = None,
    keep: bool = True,
    progress: ProgressFactory = _no_progress,
    on_outcome: Callable[[JobOutcome], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> tuple[list[JobOutcome], list[CompareJob]]:
    """Plan and run every job of ``request``; ranks run in parallel processes when ``jobs > 1``.
    ``on_plan`` is told the number of jobs once they are planned (progress totals)."""
    host = host or default_host()
    if request.output_dir is not None:
        prepare_output_dir(request.output_dir)
    for fmt in request.formats:
        host.exporters.get(fmt)  # fail early on an unknown format
    jobs: Sequence[CompareJob] = host.plan_compare(request=request)
    if on_plan:
        on_plan(len(jobs))
    outcomes: list[JobOutcome] = []
    workers = min(request.jobs, len(jobs))
    executor = request.options.get("executor") or "process"
    if executor == "dask":
        from probe.executors import dask_outcomes

        inner = CompareRequest(**{**request.__dict__, "jobs": 1})
        for outcome in dask_outcomes(jobs, inner, keep, request.options.get("scheduler")):
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
    elif executor != "process":
        raise InputError(f"unknown executor {executor!r} (choose process or dask)")
    elif workers > 1 and _pickles(jobs) and not request.options.get("in_process"):
        # Ranks run in parallel; inside each worker tensor loading stays serial.
        inner = CompareRequest(**{**request.__dict__, "jobs": 1})
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(run_job_in_worker, job, inner, keep) for job in jobs]
            for future in futures:
                outcome = future.result()
                outcomes.append(outcome)
                if on_outcome:
                    on_outcome(outcome)
    else:
        for job in jobs:
            outcome = run_job(job, request, keep, host, progress)
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
    return outcomes, list(jobs)


def _pickles(jobs: Sequence[CompareJob]) -> bool:
    import pickle

    try:
        pickle.dumps(list(jobs))
    except Exception:  # noqa: BLE001
        return False
    return True


def compare(target: str | os.PathLike, golden: str | os.PathLike, output: str | os.PathLike | None = None,
            *, framework: str | None = None, formats: Sequence[str] = ("csv",), jobs: int = 1,
            host: Host | None = None, **options: Any) -> CompareRun:
    """Compare two dumps from Python; returns a :class:`CompareRun` to filter in a notebook.

    ``output`` is a directory for reports (nothing is written when it is ``None``).
    ``options`` are the compare options by their CLI ``dest`` names, e.g.
    ``fuzzy_match=True``, ``data_mapping="map.yaml"``, ``highlight=True``.
    Raises :class:`probe.errors.ProbeError` subclasses on bad input.
    """
    request = CompareRequest(
        target=Path(target), golden=Path(golden), output_dir=Path(output) if output is not None else None,
        framework=framework, formats=tuple(formats), jobs=jobs, options={"analyze": False, **options},
    )
    outcomes, _ = run_compare(request, host=host, keep=True)
    errors = [o for o in outcomes if o.error]
    if errors and len(errors) == len(outcomes):
        first = errors[0]
        exc = ProbeError(first.error)
        exc.exit_code = first.exit_code
        raise exc
    return CompareRun([o.result for o in outcomes if o.result is not None])
