"""The compare pipeline: plan, then run every :class:`~probe.model.PairPlan` through the stages.

    request -> plan (probe_plan_compare) -> for each plan, through :mod:`probe.runtime`:
        read -> normalize -> pair -> measure -> judge -> diagnose -> export  (:mod:`probe.stages`)
    -> outcomes (summaries, digests, results) for the analyzers and the console
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import probe.runtime as runtime
import probe.stages as stages
import probe.streaming as streaming
from probe.errors import ProbeError
from probe.interfaces import Registries
from probe.io import prepare_output_dir, timestamp
from probe.model import CompareRequest, PairPlan, Summary
from probe.plugins import Host, default_host
from probe.result import Analysis, CompareResult, CompareRun, JobOutcome

log = logging.getLogger("probe")

ProgressFactory = Callable[[str, int], Callable[[int], None]]


def _no_progress(label: str, total: int) -> Callable[[int], None]:
    return lambda n: None


def run_plan(plan: PairPlan, request: CompareRequest, registries: Registries,
             progress: ProgressFactory | None = None) -> CompareResult:
    """read -> normalize -> pair -> measure -> judge one :class:`PairPlan` (nothing is written)."""
    progress = progress or _no_progress
    advance = progress(f"{plan.label} read dumps", 2)
    target, golden = stages.read(plan, registries, request.option("stack_path"),
                                 request.option("framework_option"))
    advance(2)
    options = {**request.options, **plan.options} if plan.options else request.options
    result = stages.compare_dumps(target, golden, registries, options, plan.label, progress, request.jobs,
                                  plan.pairers, plan.mode)
    result.output_stem = plan.output_stem
    result.output_subdir = plan.output_subdir
    result.rank = plan.rank
    return result


def run_unit(plan: PairPlan, request: CompareRequest, keep: bool, host: Host | None = None,
             progress: ProgressFactory | None = None, plans: int | None = None) -> JobOutcome:
    """Run one plan through every stage up to export; errors become an outcome instead of an exception.

    Very large dumps run a window at a time when every stage allows it (:mod:`probe.streaming`).
    ``plans``: the number of plans of the compare, when known (digests no analyzer can use with
    that many are not made, see :func:`probe.stages.enabled_analyzers`).
    """
    host = host or default_host()
    analyzers = stages.enabled_analyzers(host, request, plans)
    try:
        with runtime.gc_paused():
            streamed = streaming.run_streamed(plan, request, host, analyzers, keep, timestamp(), progress)
            if streamed is not None:
                return streamed
            result = run_plan(plan, request, host, progress)
            digests, needs_result = stages.diagnose(result, request, analyzers)
            runtime.release_memory()  # before export forks a child that starts with this memory
            stages.export(result, host, request, timestamp())
    except ProbeError as exc:
        return JobOutcome(plan.label, Summary(), error=str(exc), exit_code=exc.exit_code)
    keep = keep or needs_result
    return JobOutcome(plan.label, result.summary(), list(result.problems), result if keep else None, digests=digests)


def run_unit_in_worker(plan: PairPlan, request: CompareRequest, keep: bool, plans: int | None = None) -> JobOutcome:
    """:func:`run_unit` with the worker's own plugin host (for process pools and clusters)."""
    return run_unit(plan, request, keep, plans=plans)


def run_compare(
    request: CompareRequest,
    host: Host | None = None,
    keep: bool = True,
    progress: ProgressFactory = _no_progress,
    on_outcome: Callable[[JobOutcome], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
) -> CompareRun:
    """Plan ``request``, run every plan, then the analyzers; returns everything as a :class:`CompareRun`.

    Plans run in parallel processes when ``jobs > 1``. ``keep=False`` drops each plan's
    result once it is exported (its summary stays), unless an analyzer needs it. ``on_plan``
    is told the number of plans once they are planned (progress totals).
    """
    host = host or default_host()
    if request.output_dir is not None:
        prepare_output_dir(request.output_dir)
    for fmt in request.formats:
        host.exporters.get(fmt)  # fail early on an unknown format
    units: Sequence[PairPlan] = host.plan_compare(request=request)
    if on_plan:
        on_plan(len(units))
    # plans run in parallel workers; inside each worker tensor loading stays serial
    inner = CompareRequest(**{**request.__dict__, "jobs": 1})
    executor = request.options.get("executor") or "process"
    if executor == "dask" and len(units) == 1:
        executor = "process"  # one rank: it runs here and its rows are split over the cluster (modes)
    outcomes: list[JobOutcome] = []
    for outcome in runtime.run_each(
        run_unit_in_worker, units, inner, keep, len(units),
        workers=1 if request.options.get("in_process") or len(units) == 1 else request.jobs,
        executor=executor, address=request.options.get("scheduler"),
        local=lambda plan: run_unit(plan, request, keep, host, progress, len(units)),
    ):
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
    results = [o.result for o in outcomes if o.result is not None]
    return CompareRun(results, outcomes, analyze(request, host, outcomes, results))


def analyze(request: CompareRequest, registries: Registries, outcomes: Sequence[JobOutcome],
            results: list[CompareResult]) -> list[Analysis]:
    """Run every enabled analyzer over the results (or the digests made where plans ran).

    The cyclic collector is off meanwhile: the analyzers make many small acyclic objects (suspects,
    points, columns) and a collection would walk them again and again (a tenth of their time)."""
    analyses: list[Analysis] = []
    with runtime.gc_paused():
        for analyzer in stages.enabled_analyzers(registries, request):
            if getattr(analyzer, "digest", None) is None:
                found = analyzer.analyze(request, results)
            else:
                found = analyzer.analyze(request, [o.digests[analyzer.name] for o in outcomes
                                                   if analyzer.name in o.digests])
            analyses.append(found if isinstance(found, Analysis) else Analysis(analyzer.name, list(found or [])))
    return analyses


def compare(target: str | os.PathLike, golden: str | os.PathLike, output: str | os.PathLike | None = None,
            *, framework: str | None = None, formats: Sequence[str] = ("csv",), jobs: int = 1,
            host: Host | None = None, **options: Any) -> CompareRun:
    """Compare two dumps from Python; returns a :class:`CompareRun` to filter in a notebook.

    It runs exactly what ``probe compare`` runs, analyzers included (the advisor unless
    ``compare_only=True``, ``diff_analyze=True`` for ``-da``; ``analyze=False`` switches them
    all off): ``run.analysis("advisor").data`` holds what the console would show.
    ``output`` is a directory for reports (nothing is written when it is ``None``).
    ``options`` are the compare options by their CLI ``dest`` names, e.g.
    ``fuzzy_match=True``, ``data_mapping="map.yaml"``, ``highlight=True``.
    Raises :class:`probe.errors.ProbeError` subclasses on bad input.
    """
    request = CompareRequest(
        target=Path(target), golden=Path(golden), output_dir=Path(output) if output is not None else None,
        framework=framework, formats=tuple(formats), jobs=jobs, options={"framework_option": framework, **options},
    )
    run = run_compare(request, host=host, keep=True)
    if run.errors and len(run.errors) == len(run.outcomes):
        first = run.errors[0]
        exc = ProbeError(first.error)
        exc.exit_code = first.exit_code
        raise exc
    return run
