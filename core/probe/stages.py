"""The stages every :class:`~probe.model.PairPlan` goes through, one function each.

    read -> normalize -> pair -> measure -> judge -> diagnose -> export

Each function takes plain data plus the registries (:class:`probe.interfaces.Registries`,
usually the plugin host) and returns plain data, so it can be tested alone. The pipeline
(:mod:`probe.pipeline`) strings them together; it never calls a plugin object any other way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import probe.dumps as dumps
import probe.runtime as runtime
from probe.errors import InputError
from probe.formats.msprobe.stack import load_stack
from probe.interfaces import Registries
from probe.io import prepare_output_dir, unique_path
from probe.judge import judge_result
from probe.match import assign_keys
from probe.model import CompareRequest, FlatDump, KeyMap, MatchContext, ModeContext, PairPlan, Pairing
from probe.result import CompareResult, RowResult

log = logging.getLogger("probe")

Progress = Callable[[int], None]


# --------------------------------------------------------------------------------------
# read
# --------------------------------------------------------------------------------------


def read(plan: PairPlan, registries: Registries, stack_path: str | None = None,
         framework: str | None = None) -> tuple[FlatDump, FlatDump]:
    """Read both sources of ``plan`` into rows (the target with its stack info).

    ``framework`` (``-f``/``--framework``) names the target's framework when its dump does not.
    """
    target_reader = pick_reader(plan.target, registries, plan.reader)
    golden_reader = pick_reader(plan.golden, registries, plan.golden_reader_name)
    target, golden = dumps.load_pair(plan.target, plan.golden, target_reader, golden_reader,
                                     plan.options.get("reader_args"))
    settle_read(plan, target, golden, stack_path, framework)
    runtime.release_memory()  # what parsing freed, before the rows of the compare fill it up
    return target, golden


def settle_read(plan: PairPlan, target: FlatDump, golden: FlatDump, stack_path: str | None = None,
                framework: str | None = None) -> None:
    """What :func:`read` does once both dumps of ``plan`` are read: ``--framework``, the stack file, warnings."""
    if framework and not target.info.framework_declared and target.info.framework != framework:
        log.info("%s: no 'framework' key; --framework says %s", target.info.path, framework)
        target.info = replace(target.info, framework=framework, framework_declared=True)
    for dump in (target, golden):
        if dump.skipped_entries:
            log.warning(
                "%s: %d entries with unexpected names were not compared (first: %s)",
                dump.info.path, len(dump.skipped_entries), dump.skipped_entries[0],
            )
    if stack_path:  # msProbe's compare.json may name the stack file explicitly
        target.stack = load_stack(Path(stack_path))
        if target.stack is None:
            raise InputError("stack file does not exist", stack_path)
    if target.stack is None:
        log.info("no stack.json beside %s: the report has no NPU_Stack_Info column", plan.target)


def pick_reader(path: Path, registries: Registries, name: str | None = None) -> Any:
    """The reader called ``name``, else the first registered reader whose ``sniff`` accepts ``path``."""
    if name is not None:
        return registries.readers.get(name)
    for reader in registries.readers.values():
        if reader.sniff(path):
            return reader
    raise InputError("is not a dump file any reader understands (expected dump.json or debug.json)", path)


# --------------------------------------------------------------------------------------
# normalize and pair
# --------------------------------------------------------------------------------------


def build_key_map(registries: Registries, ctx: MatchContext) -> KeyMap | None:
    """Build every active mapper (``priority`` order) and compose their maps into one.

    For each target row the first map that returns a key decides it; ``left_join`` holds if
    any map asks for it (a data mapping is active).
    """
    key_maps = []
    for mapper in sorted(registries.mappers.values(), key=lambda m: m.priority):
        built = mapper.build(ctx)
        if built is not None:
            key_maps.append(built)
    return compose_key_maps(key_maps)


def compose_key_maps(key_maps: Sequence[KeyMap]) -> KeyMap | None:
    """One :class:`KeyMap` from the active ones: the first that gives a row a key wins."""
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


def choose_pairer(registries: Registries, options: dict[str, Any], key_map: KeyMap | None,
                  names: Sequence[str] = ()) -> Any:
    """The pairer of a plan: the one it names, else the first whose ``option`` is set, else ``exact``.

    A data mapping (``left_join``) keeps the exact pairer: msProbe ignores ``-fm`` with ``-dm``.
    """
    if names:
        return registries.pairers.get(names[0])
    if key_map is None or not key_map.left_join:
        for pairer in registries.pairers.values():
            option = getattr(pairer, "option", None)
            if option is not None and options.get(option):
                return pairer
    return registries.pairers.get("exact")


def active_normalizers(target: FlatDump, golden: FlatDump, registries: Registries, options: dict[str, Any]) -> list[Any]:
    """The normalizers that apply to the framework pair and whose ``option`` (if any) is set."""
    return [
        n for n in registries.normalizers.values()
        if n.applies(target.info.framework, golden.info.framework)
        and (getattr(n, "option", None) is None or options.get(n.option)
             or any(options.get(o) for o in getattr(n, "also_with", ())))
    ]


def normalize(target: FlatDump, golden: FlatDump, registries: Registries, options: dict[str, Any],
              renumber: bool = True, renumber_target: bool = True) -> None:
    """Give every row its matching key: its name (backward indices renumbered), then normalizers.

    Normalizers run when they apply to the framework pair and their ``option`` (if any) is set.
    """
    assign_keys(golden.rows, renumber)
    assign_keys(target.rows, renumber and renumber_target)
    for normalizer in active_normalizers(target, golden, registries, options):
        for side, dump in (("target", target), ("golden", golden)):
            for row in dump.rows:
                row.key = normalizer.normalize(row.key, side)


def pair(target: FlatDump, golden: FlatDump, registries: Registries, options: dict[str, Any],
         pairers: Sequence[str] = ()) -> Pairing:
    """Normalize both dumps and pair their rows (mappers, then the chosen pairer)."""
    ctx = MatchContext(target=target, golden=golden, options=options, normalizers=registries.normalizers.values())
    key_map = build_key_map(registries, ctx)
    pairer = choose_pairer(registries, options, key_map, pairers)
    renumber = target.info.kind != "debug" and getattr(pairer, "renumber", True)
    normalize(target, golden, registries, options, renumber, key_map is None or key_map.renumber_target)
    return pairer.pair(target, golden, key_map, ctx)


# --------------------------------------------------------------------------------------
# measure
# --------------------------------------------------------------------------------------


def choose_mode(registries: Registries, target: FlatDump, golden: FlatDump, requested: str | None) -> Any:
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
        return registries.modes.get(requested)
    for mode in registries.modes.values():
        if mode.accepts(target, golden):
            return mode
    raise InputError(f"no metric mode accepts this dump (task {target.info.task!r})", target.info.path)


def extra_metrics_for(registries: Registries, mode: Any) -> list[Any]:
    """The extra tensor-metric columns a mode computes (only the ``tensor`` mode has them)."""
    if mode.name != "tensor":
        return []
    return [registries.tensor_metrics.get(n) for n in registries.tensor_metrics.names()]


def measure(mode: Any, pairing: Pairing, target: FlatDump, golden: FlatDump, registries: Registries,
            options: dict[str, Any], progress: Progress | None = None, jobs: int = 1,
            extra_metrics: Sequence[Any] = ()) -> list[RowResult]:
    """Compute the metrics of every pair with ``mode``."""
    ctx = ModeContext(
        target=target, golden=golden, options=options, tensor_loaders=registries.tensor_loaders.as_dict(),
        progress=progress, jobs=jobs, extra_metrics=extra_metrics,
    )
    return mode.compute(pairing.pairs, ctx)


# --------------------------------------------------------------------------------------
# diagnose and export
# --------------------------------------------------------------------------------------


def enabled_analyzers(registries: Registries, request: CompareRequest, plans: int | None = None) -> list[Any]:
    """The analyzers that run for ``request`` (none when ``request.options['analyze']`` is false); with
    ``plans``, the number of pairs of the compare, only those that can find something in that many
    (``min_plans``)."""
    if request.options.get("analyze") is False:
        return []
    return [a for a in registries.analyzers.values()
            if a.enabled(request) and (plans is None or getattr(a, "min_plans", 1) <= plans)]


def diagnose(result: CompareResult, request: CompareRequest, analyzers: Sequence[Any]) -> tuple[dict[str, Any], bool]:
    """The per-pair digests of the analyzers that have a ``digest`` (the diagnosis seam).

    Returns the digests by analyzer name and whether some analyzer needs the whole result.
    """
    made: dict[str, Any] = {}
    needs_result = False
    # the last registered first: the diagnosis (registered first) keeps the largest digest,
    # and the others' passes over the whole result then run before it is held
    for analyzer in reversed(analyzers):
        digest = getattr(analyzer, "digest", None)
        if digest is None:
            needs_result = True
        else:
            made[analyzer.name] = digest(request, result)
    return {a.name: made[a.name] for a in analyzers if a.name in made}, needs_result


def export(result: CompareResult, registries: Registries, request: CompareRequest, stamp: str) -> list[Path]:
    """Write ``result`` in every requested format; returns the files written."""
    if request.output_dir is None:
        return []
    report_dir(request, result)
    written: list[Path] = []
    if not result.records:
        log.warning("%s: nothing to compare (no rows); no report written", result.label)
        return written
    for fmt in request.formats:
        exporter = registries.exporters.get(fmt)
        written.extend(exporter.write(result, report_path(request, result, exporter, stamp)))
    result.files = written
    return written


def report_dir(request: CompareRequest, result: CompareResult) -> Path:
    """The (created) directory of ``result``'s reports."""
    assert request.output_dir is not None
    return prepare_output_dir(request.output_dir / result.output_subdir if result.output_subdir else request.output_dir)


def report_path(request: CompareRequest, result: CompareResult, exporter: Any, stamp: str) -> Path:
    """A free file name for ``result``'s report by ``exporter``."""
    return unique_path(report_dir(request, result), f"{result.output_stem}_{stamp}", exporter.suffix)


def compare_dumps(target: FlatDump, golden: FlatDump, registries: Registries, options: dict[str, Any],
                  label: str = "", progress: Callable[[str, int], Progress] | None = None, jobs: int = 1,
                  pairers: Sequence[str] = (), mode_name: str | None = None) -> CompareResult:
    """normalize -> pair -> measure -> judge two read dumps; nothing is written."""
    mode = choose_mode(registries, target, golden, mode_name or options.get("metric_mode"))
    pairing = pair(target, golden, registries, options, pairers)
    extra = extra_metrics_for(registries, mode)
    tick = progress(f"{label} compare", len(pairing.pairs)) if progress else None
    records = measure(mode, pairing, target, golden, registries, options, tick, jobs, extra)
    result = CompareResult(
        label=label, mode=mode, records=records, target=target.info, golden=golden.info, stack=target.stack,
        golden_only=pairing.golden_only, extra_metrics=tuple(m.column for m in extra), options=options,
    )
    return judge_result(result, highlight=bool(options.get("highlight")))
