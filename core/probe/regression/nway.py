"""N-way compare: one golden dump against several targets in one run.

Every target is compared with the golden exactly as a two-way compare would do it (same
planner, same jobs, same exporters: its reports land in ``OUT/<label>/`` and are byte for
byte the two-way reports), all jobs of all targets share one process pool, and each job
sends back a small :class:`TargetDigest` (per golden row: target row, key metric, Result)
instead of its whole result. The digests of the same job (rank / step) of every target are
then joined on the golden row names into one combined table per job.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import probe.runtime as runtime
import probe.stages as stages
from probe.analysis.advisor import advise
from probe.diagnosis.facts import step_of
from probe.diagnosis.oneanswer import best_per_rank
from probe.errors import InputError, ProbeError
from probe.io import prepare_output_dir, timestamp
from probe.model import CompareRequest, PairPlan, Summary
from probe.modes.common import COMMON_COLUMNS
from probe.pipeline import analyze, run_unit
from probe.plugins import Host, default_host
from probe.regression.labels import target_labels
from probe.regression.tables import write_table
from probe.result import CompareResult, CompareRun, JobOutcome

log = logging.getLogger("probe")

KEY_METRICS = ("Cosine", "MaxRelativeErr", "NormRelativeErr", "Max diff")
"""The first of these a report has is the key metric shown per target in the combined report."""
MISSING = "missing"
"""Result shown for a golden row a target has no row for (or a job the target lacks)."""
SUSPECT_FLAG = "first suspect"
DISAGREE_COLUMN = "Targets Disagree"
GOLDEN_COLUMN = "Bench Name"
PER_TARGET = ("NPU Name", "{metric}", "Result", "First Suspect")


@dataclass
class TargetDigest:
    """What the combined report needs from one job of one target (small, picklable)."""

    job_label: str
    output_subdir: str
    output_stem: str
    metric: str | None
    rows: dict[str, tuple[str, Any, str]]
    """Golden row name -> (target row name, key metric value, Result); first match wins."""
    order: list[str]
    """Golden row names in the order the target's report meets them."""
    suspect_rows: frozenset[str] = frozenset()
    """Target row names of the first suspect node."""
    golden_file: Path | None = None
    """The golden dump file of the job, when the job names one."""
    rank: int = 0
    step: int = 0
    entries: dict[str, str] = field(default_factory=dict)
    """Target row name -> its dump entry (what a diagnosis suspect names)."""


def first_suspect_rows(result: CompareResult) -> frozenset[str]:
    """Target row names of the node where the difference starts, by the advisor (the fallback
    when no diagnosis ran, e.g. from Python with analyzers off)."""
    try:
        advice = advise(result)
    except Exception:  # noqa: BLE001 - a flag must never break the compare
        log.debug("no suspect for %s", result.label, exc_info=True)
        return frozenset()
    if advice.culprit is None:
        return frozenset()
    return frozenset(record.name for record in advice.culprit.node.records)


FAST_MODES = frozenset({"statistics", "tensor", "md5"})
"""Built-in modes whose report rows are the common columns, then the row's metric cells,
then the rest, with ``Result`` = the row's verdict (see ``probe.modes.common.render_cells``)."""


RELATIVE_ERRORS = ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")


def digest_result(result: CompareResult) -> TargetDigest:
    """The combined-report view of one compare result.

    For the built-in modes the key metric cell is read from the row's metrics (the report's
    own text) and the Result from its verdict, without rendering whole rows; a plugin's mode
    has its rows rendered.
    """
    columns = result.columns
    metric = next((m for m in KEY_METRICS if m in columns), None)
    m_index = columns.index(metric) if metric else None
    r_index = columns.index("Result") if "Result" in columns else None
    fast = result.mode.name in FAST_MODES
    first = len(COMMON_COLUMNS)
    relative = RELATIVE_ERRORS.index(metric) if metric in RELATIVE_ERRORS and result.mode.name == "statistics" else None
    rendered = iter(()) if fast else result.table()
    rows: dict[str, tuple[str, Any, str]] = {}
    entries: dict[str, str] = {}
    order: list[str] = []
    for record in result.records:
        row = None if fast else next(rendered)
        golden = record.pair.golden
        if golden is None or golden.name in rows:
            continue
        if row is None:
            if relative is not None and hasattr(record, "relative_error"):
                value = record.relative_error(relative)  # computes this cell only
            else:
                value = record.metrics[m_index - first] if m_index is not None else None
            verdict = record.verdict
        else:
            value = row[m_index] if m_index is not None else None
            verdict = row[r_index] if r_index is not None else record.verdict
        rows[golden.name] = (record.name, value, str(verdict))
        entries[record.name] = record.pair.target.entry
        order.append(golden.name)
    return TargetDigest(
        job_label=result.label, output_subdir=result.output_subdir, output_stem=result.output_stem,
        metric=metric, rows=rows, order=order, suspect_rows=first_suspect_rows(result),
        rank=result.rank if result.rank is not None else 0,
        step=step_of(result.target.path if result.target is not None else None), entries=entries,
    )


@dataclass
class TargetUnit:
    """One plan of one target: what a worker runs (picklable)."""

    index: int
    plan: Any
    """A :class:`PairPlan` (or a plugin's older runnable job)."""
    request: CompareRequest
    keep: bool = False


@dataclass
class GoldenUnit:
    """Read the row order of a golden dump (in the same pool as the compares)."""

    path: Path
    reader: str | None = None


def run_nway_unit(unit: TargetUnit | GoldenUnit, host: Host | None = None, progress: Any = None) -> Any:
    """A worker's part: compare one plan of one target and digest it, or read a golden row order.

    Returns ``(index, outcome, digest)`` for a :class:`TargetUnit`, ``(path, names or None)``
    for a :class:`GoldenUnit`.
    """
    if isinstance(unit, GoldenUnit):
        return unit.path, golden_names(unit.path, unit.reader, host)
    outcome = run_unit(unit.plan, unit.request, keep=True, host=host, progress=progress)
    digest = digest_result(outcome.result) if outcome.result is not None else None
    if digest is not None and isinstance(unit.plan, PairPlan):
        digest.golden_file = Path(unit.plan.golden)
    if not unit.keep:
        outcome.result = None
    return unit.index, outcome, digest


def golden_names(path: Path, reader: str | None = None, host: Host | None = None) -> list[str] | None:
    """Row names of a golden dump, in dump order (``None`` when it cannot be read: the compare
    jobs report that)."""
    host = host or default_host()
    try:
        return [row.name for row in stages.pick_reader(path, host, reader).load(path, with_stack=False).rows]
    except ProbeError:
        return None


@dataclass
class CombinedTable:
    """The combined report of one job (rank / step): one row per golden row."""

    job_label: str
    output_subdir: str
    output_stem: str
    columns: list[str]
    rows: list[list[Any]]
    disagree: int = 0
    files: list[Path] = field(default_factory=list)

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


def combine(labels: Sequence[str], digests: Sequence[TargetDigest | None],
            golden_order: Sequence[str] | None = None) -> tuple[list[str], list[list[Any]], int]:
    """Columns, rows and the count of disagreeing rows of one job's combined table.

    ``digests`` has one entry per label (``None``: that target lacks the job). Rows follow
    ``golden_order`` (the golden dump's rows) when known; golden rows only the targets'
    reports name are appended in the order they are met.
    """
    columns = [GOLDEN_COLUMN]
    for label, digest in zip(labels, digests):
        metric = (digest.metric if digest else None) or "Metric"
        columns.extend(f"{label}: {c.format(metric=metric)}" for c in PER_TARGET)
    columns.append(DISAGREE_COLUMN)
    names: dict[str, None] = dict.fromkeys(golden_order or ())
    for digest in digests:
        if digest is not None:
            names.update(dict.fromkeys(n for n in digest.order if n not in names))
    rows: list[list[Any]] = []
    disagree = 0
    for name in names:
        row: list[Any] = [name]
        verdicts = set()
        for digest in digests:
            hit = digest.rows.get(name) if digest is not None else None
            if hit is None:
                row.extend(("", "", MISSING, ""))
                verdicts.add(MISSING)
                continue
            target_name, value, verdict = hit
            flag = SUSPECT_FLAG if target_name in digest.suspect_rows else ""
            row.extend((target_name, value, verdict, flag))
            verdicts.add(verdict)
        differs = len(verdicts) > 1
        disagree += differs
        row.append("yes" if differs else "no")
        rows.append(row)
    return columns, rows, disagree


def combined_stem(output_stem: str) -> str:
    """``compare_result_rank0`` -> ``nway_result_rank0``."""
    if output_stem.startswith("compare_result"):
        return "nway_result" + output_stem[len("compare_result"):]
    return f"nway_{output_stem}"


@dataclass
class NwayRun:
    """Everything one N-way compare produced."""

    golden: Path
    labels: list[str]
    targets: list[Path]
    requests: list[CompareRequest]
    runs: list[CompareRun]
    """Per target (in label order): its outcomes, analyses and (when kept) results."""
    tables: list[CombinedTable]

    @property
    def files(self) -> list[Path]:
        return [f for t in self.tables for f in t.files]

    @property
    def outcomes(self) -> list[list[JobOutcome]]:
        return [run.outcomes for run in self.runs]

    def run(self, label: str) -> CompareRun:
        """The :class:`CompareRun` of one target (results only when they were kept)."""
        return self.runs[self.labels.index(label)]

    def summary(self, label: str) -> Summary:
        return self.run(label).summary()


def target_requests(base: CompareRequest, targets: Sequence[Path], labels: Sequence[str]) -> list[CompareRequest]:
    """One ordinary two-way request per target, writing into ``OUT/<label>/``."""
    out = base.output_dir
    return [
        replace(base, target=Path(t), output_dir=(out / label) if out is not None else None,
                options=dict(base.options))
        for t, label in zip(targets, labels)
    ]


def run_nway(
    base: CompareRequest,
    targets: Sequence[Path],
    labels: Sequence[str] | None = None,
    host: Host | None = None,
    keep: bool = False,
    on_outcome: Callable[[str, JobOutcome], None] | None = None,
    on_planned: Callable[[int], None] | None = None,
    progress: Any = None,
) -> NwayRun:
    """Compare ``base.golden`` with every target and write the per-target and combined reports.

    ``base`` carries the options and formats shared by all targets (its ``target`` is
    ignored). The plans of every target (and the golden row orders) go through one
    :func:`probe.runtime.run_each` (a process pool, or the dask cluster of ``--executor dask``);
    then each target's analyzers run as in a two-way compare. ``keep`` keeps every
    per-target result in memory (for the Python API).
    """
    host = host or default_host()
    if len(targets) < 2:
        raise InputError("an N-way compare needs at least two targets (-tp T1 -tp T2 ...)")
    names = target_labels([Path(t) for t in targets], labels)
    requests = target_requests(base, targets, names)
    if base.output_dir is not None:
        prepare_output_dir(base.output_dir)
    for fmt in base.formats:
        host.exporters.get(fmt)  # fail early on an unknown format
    units: list[TargetUnit | GoldenUnit] = []
    goldens: dict[Path, str | None] = {}
    for index, request in enumerate(requests):
        needs = any(getattr(a, "digest", None) is None for a in stages.enabled_analyzers(host, request))
        inner = replace(request, jobs=1)  # plans run in parallel; inside each, tensor loading stays serial
        for plan in host.plan_compare(request=request):
            units.append(TargetUnit(index, plan, inner, keep or needs))
            if isinstance(plan, PairPlan):
                goldens.setdefault(Path(plan.golden), plan.golden_reader_name)
    units.extend(GoldenUnit(path, reader) for path, reader in goldens.items())
    if on_planned:
        on_planned(len(units) - len(goldens))
    outcomes: list[list[JobOutcome]] = [[] for _ in names]
    digests: list[list[TargetDigest]] = [[] for _ in names]
    golden_orders: dict[Path, list[str] | None] = {}
    for answer in runtime.run_each(
        run_nway_unit, units,
        workers=1 if base.options.get("in_process") else base.jobs,
        executor=base.options.get("executor") or "process", address=base.options.get("scheduler"),
        local=lambda unit: run_nway_unit(
            replace(unit, request=requests[unit.index]) if isinstance(unit, TargetUnit) else unit, host, progress),
    ):
        if len(answer) == 2:
            golden_orders[answer[0]] = answer[1]
            continue
        index, outcome, digest = answer
        outcomes[index].append(outcome)
        if digest is not None:
            digests[index].append(digest)
        if on_outcome:
            on_outcome(names[index], outcome)
    runs = []
    for index, request in enumerate(requests):
        results = [o.result for o in outcomes[index] if o.result is not None]
        run = CompareRun(results, outcomes[index], analyze(request, host, outcomes[index], results))
        apply_diagnosis(run, digests[index])
        if not keep:
            run.results = []
            for outcome in outcomes[index]:
                outcome.result = None
        runs.append(run)
    tables = _combined_tables(names, digests, golden_orders, base)
    return NwayRun(Path(base.golden), names, [Path(t) for t in targets], requests, runs, tables)


def apply_diagnosis(run: CompareRun, digests: list[TargetDigest]) -> None:
    """Flag the rows of the diagnosis' best suspect of each rank/step (none where it found none);
    without a diagnosis the advisor's node stays flagged."""
    found = run.analysis("diagnosis")
    diagnosis = found.data if found is not None else None
    if diagnosis is None:
        return
    for digest in digests:
        best = best_per_rank(diagnosis, digest.step).get(digest.rank)
        digest.suspect_rows = frozenset(
            name for name, entry in digest.entries.items() if best is not None and entry == best.node
        )


def job_groups(digests: Sequence[list[TargetDigest]]) -> dict[tuple[str, str], list[TargetDigest | None]]:
    """The digests of the same job of every target, keyed by (sub-folder, combined file stem).

    Jobs pair by their report name (``compare_result_rank3``); when every target has a
    single job in a sub-folder (one rank, whatever its folder is called: ``rank0``,
    ``proc1234``) those pair with each other.
    """
    subdirs: dict[str, None] = {}
    for per_target in digests:
        subdirs.update(dict.fromkeys(d.output_subdir for d in per_target))
    groups: dict[tuple[str, str], list[TargetDigest | None]] = {}
    for subdir in subdirs:
        per = [[d for d in per_target if d.output_subdir == subdir] for per_target in digests]
        if all(len(p) <= 1 for p in per):
            stems = {p[0].output_stem for p in per if p}
            stem = combined_stem(stems.pop()) if len(stems) == 1 else "nway_result"
            groups[(subdir, stem)] = [p[0] if p else None for p in per]
            continue
        stems = sorted({d.output_stem for p in per for d in p}, key=_natural)
        for stem in stems:
            groups[(subdir, combined_stem(stem))] = [
                next((d for d in p if d.output_stem == stem), None) for p in per
            ]
    return groups


def _combined_tables(labels: Sequence[str], digests: Sequence[list[TargetDigest]],
                     golden_orders: dict[Path, list[str] | None], base: CompareRequest) -> list[CombinedTable]:
    """Join the digests job by job and write the combined reports."""
    tables: list[CombinedTable] = []
    stamp = timestamp()
    for (subdir, stem), per_job in job_groups(digests).items():
        present = [d for d in per_job if d is not None]
        golden_file = next((d.golden_file for d in present if d.golden_file is not None), None)
        order = golden_orders.get(golden_file) if golden_file is not None else None
        columns, rows, disagree = combine(labels, per_job, order)
        job_label = stem.removeprefix("nway_result").lstrip("_") or (subdir or present[0].job_label)
        table = CombinedTable(job_label, subdir, stem, columns, rows, disagree)
        if base.output_dir is not None:
            directory = prepare_output_dir(base.output_dir / subdir if subdir else base.output_dir)
            head = {"golden": str(base.golden), "job": job_label, "labels": list(labels),
                    "summary": {"rows": len(rows), "disagree": disagree}}
            table.files = write_table(directory, f"{stem}_{stamp}", base.formats, columns, rows,
                                      head=head, sheet="combined")
        tables.append(table)
    return tables


def _natural(text: str) -> tuple[Any, ...]:
    """Sort key that puts rank2 before rank10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def compare_many(golden: Any, targets: Sequence[Any], labels: Sequence[str] | None = None, output: Any = None,
                 *, framework: str | None = None, formats: Sequence[str] = ("csv",), jobs: int = 1,
                 host: Host | None = None, **options: Any) -> NwayRun:
    """Compare one golden dump with several targets; see :func:`run_nway`.

    Returns a :class:`NwayRun`: ``.tables`` (one combined table per rank/step, rows as
    ``as_dicts()``), ``.run(label)`` (that target's :class:`CompareRun`, analyses included, as
    :func:`probe.compare` returns it), ``.files``. ``options`` are the compare options by their
    CLI ``dest`` names (``analyze=False`` switches the analyzers off, and with them the
    diagnosis behind ``First Suspect``: the advisor's node is flagged instead).
    """
    if not targets:
        raise InputError("compare_many needs at least two targets")
    host = host or default_host()
    framework = framework or host.detect_framework(path=str(targets[0])) or "pytorch"
    base = CompareRequest(
        target=Path(targets[0]), golden=Path(golden), output_dir=Path(output) if output is not None else None,
        framework=framework, formats=tuple(formats), jobs=jobs, options=dict(options),
    )
    run = run_nway(base, [Path(t) for t in targets], labels, host=host, keep=True)
    failed = [o for per_target in run.outcomes for o in per_target if o.error]
    if failed and len(failed) == sum(len(p) for p in run.outcomes):
        exc = ProbeError(failed[0].error)
        exc.exit_code = failed[0].exit_code
        raise exc
    return run
