"""TorchAir compare of one rank: find graphs and groups, pair tensors, compute rows."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.api import InputError

from probe_torchair import layout
from probe_torchair.fxdump import FxOp, FxTensorRef, parse_name as parse_fx_name, read_token_dir
from probe_torchair.gedump import GeFormatError, GeOpFile, GeTensorRef
from probe_torchair.graph import Graph
from probe_torchair.match import BadFile, PairSpec, bad_file_spec, pair_with_fx, pair_with_ge, split_fused
from probe_torchair.metrics import COMPARERS, MODE_COLUMNS, NA, Outcome
from probe_torchair.report import DOCUMENTED_EXTRAS, columns
from probe_torchair.tensors import Loaded

log = logging.getLogger("probe.torchair")

MODES = ("tensor", "statistics", "md5")
_MODE_ALIASES = {"all": "tensor", "real_data": "tensor", "summary": "statistics", "statistic": "statistics"}


def normalize_mode(value: str | None) -> str | None:
    """Map a ``--metric-mode`` value to ``tensor``/``statistics``/``md5`` (``None`` = auto)."""
    if value is None or value == "auto":
        return None
    mode = _MODE_ALIASES.get(value, value)
    if mode not in MODES:
        raise InputError(f"metric mode {value!r} is not one of {', '.join(MODES)} for TorchAir")
    return mode


@dataclass
class RankReport:
    """Rows of one rank, ready for the CSV writer."""

    rank: int | None
    mode: str
    columns: list[str]
    rows: list[list[object]]
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Unit:
    graph: Graph
    target: layout.GeGroup
    golden_ge: layout.GeGroup | None = None
    golden_fx: layout.FxGroup | None = None


def _best(candidates: list, score) -> object | None:
    """The candidate with the highest positive score (first one on ties), else ``None``."""
    best, best_score = None, 0
    for item in candidates:
        value = score(item)
        if value > best_score:
            best, best_score = item, value
    return best


def _fx_keys(directory: Path) -> set[str]:
    keys: set[str] = set()
    try:
        for entry in directory.iterdir():
            parsed = parse_fx_name(entry.name)
            if parsed:
                keys.add(parsed.key)
    except OSError:
        pass
    return keys


def _plan(graphs: list[Graph], targets: list[layout.GeGroup], golden_ge: list[layout.GeGroup] | None,
          golden_fx: list[layout.FxGroup] | None, warnings: list[str]) -> list[_Unit]:
    """Pair every GE group with its graph and golden group by content (names in common);
    fall back to position when nothing matches."""
    units: list[_Unit] = []
    fx_key_cache: dict[str, set[str]] = {}
    for position, group in enumerate(targets):
        names = group.op_names()
        graph = _best(graphs, lambda g: sum(1 for n in names if split_fused(n, g, names)))
        if graph is None:
            graph = graphs[min(position, len(graphs) - 1)]
            warnings.append(f"no graph names the ops of {group.key}; using {graph.path.name}")
        unit = _Unit(graph, group)
        if golden_ge is not None:
            unit.golden_ge = _best(golden_ge, lambda g: len(names & g.op_names()))
            if unit.golden_ge is None and position < len(golden_ge):
                unit.golden_ge = golden_ge[position]
        elif golden_fx is not None:
            graph_keys = {k for op in graph.ops.values() for k in op.fx_keys}

            def fx_score(fg: layout.FxGroup) -> int:
                if not fg.dirs:
                    return 0
                first = fg.dirs[min(fg.dirs)]
                if fg.key not in fx_key_cache:
                    fx_key_cache[fg.key] = _fx_keys(first)
                return len(graph_keys & fx_key_cache[fg.key])

            unit.golden_fx = _best(golden_fx, fx_score)
            if unit.golden_fx is None and position < len(golden_fx):
                unit.golden_fx = golden_fx[position]
        units.append(unit)
    return units


def build_pairs(unit: _Unit, token: int, ops: dict[str, GeOpFile], problems: dict[str, str],
                warnings: list[str]) -> list[PairSpec]:
    """Pair specs of one token of one unit, in report order."""
    dumped = set(ops)
    specs: list[PairSpec] = []
    if unit.golden_ge is not None:
        golden_ops = unit.golden_ge.tokens.get(token)
        if golden_ops is None:
            warnings.append(f"token {token} of {unit.target.key} has no golden data")
            return []
        pair = lambda op: pair_with_ge(op, unit.graph, golden_ops, dumped)  # noqa: E731
    else:
        fx_dir = unit.golden_fx.dirs.get(token) if unit.golden_fx is not None else None
        if fx_dir is None:
            warnings.append(f"token {token} of {unit.target.key} has no FX data")
            return []
        fx: dict[str, FxOp] = read_token_dir(fx_dir)
        pair = lambda op: pair_with_fx(op, unit.graph, fx, dumped)  # noqa: E731
    for op in ops.values():
        try:
            specs.extend(pair(op))
        except BadFile as bad:
            problems.setdefault(bad.path, bad.problem)
            specs.append(bad_file_spec(op, bad.problem))
    specs.sort(key=lambda s: s.sort_key)
    return specs


def _stats_only(ref: object) -> bool:
    if isinstance(ref, GeTensorRef):
        return ref.op.name.kind == "min_max"
    if isinstance(ref, FxTensorRef):
        return ref.name.min_max
    return False


def _load(ref, problems: dict[str, str]) -> tuple[Loaded | None, str]:
    try:
        return ref.load(), ""
    except GeFormatError as exc:
        path = ref.op.real_path if isinstance(ref, GeTensorRef) else ref.path_label
        problems.setdefault(path, str(exc))
        return None, f"unreadable dump file: {exc}"


def _stat_cells(loaded: Loaded | None) -> list[object]:
    if loaded is None:
        return [NA] * 5
    shape = str(list(loaded.shape)) if loaded.shape is not None else NA
    return [loaded.dtype, shape, loaded.maximum, loaded.minimum, loaded.mean]


def compute_row(spec: PairSpec, mode: str, token: int, data_id: int,
                problems: dict[str, str]) -> list[object]:
    """One report row: load both sides, compare, judge."""
    width = len(MODE_COLUMNS[mode])
    target = golden = None
    reasons = [spec.reason] if spec.reason else []
    if spec.target is not None:
        target, why = _load(spec.target, problems)
        if why:
            reasons.append("my_data " + why)
    if spec.golden is not None:
        golden, why = _load(spec.golden, problems)
        if why:
            reasons.append("golden_data " + why)
    outcome = Outcome((NA,) * width, [], NA)
    if target is not None and golden is not None and not reasons:
        if (target.dtype == "torch.int8") != (golden.dtype == "torch.int8"):
            reasons.append(f"{target.dtype} vs {golden.dtype}: quantized data is not compared.")
        else:
            outcome = COMPARERS[mode](golden, target)
            reasons.extend(outcome.reasons)
    accuracy = {"PASS": "Yes", "FAIL": "No"}.get(outcome.result, NA)
    return [
        token, data_id, spec.golden_label, spec.golden_op_type or NA, *_stat_cells(golden),
        spec.target_label, spec.my_op_type or NA, *_stat_cells(target), *outcome.values,
        " ".join(reasons) if reasons else NA, outcome.result, accuracy,
        *(outcome.documented or (NA,) * len(DOCUMENTED_EXTRAS)),
    ]


def compare_rank(target_dir: Path, golden_dir: Path, graph_root: Path, rank: int | None,
                 golden_is_ge: bool, mode: str | None = None,
                 token_offset: int | None = None, progress: Any = None, label: str = "torchair") -> RankReport:
    """Compare one rank (or the whole dump when it has no ranks).

    ``progress`` is the core's progress factory ``(label, total) -> advance(n)``.
    """
    paths = layout.graph_files(graph_root, rank)
    if not paths and rank is not None:
        paths = layout.graph_files(graph_root)
    if not paths:
        raise InputError(f"no {layout.GRAPH_PREFIX}*.txt graph file found", graph_root)
    graphs = [Graph.read(p) for p in paths]
    targets = layout.ge_groups(target_dir)
    if not targets:
        raise InputError("no GE dump files found", target_dir)
    warnings: list[str] = []
    if golden_is_ge:
        golden_ge = layout.ge_groups(golden_dir)
        if not golden_ge:
            raise InputError("no GE dump files found in the golden dump", golden_dir)
        units = _plan(graphs, targets, golden_ge, None, warnings)
    else:
        golden_fx = layout.fx_groups(golden_dir, token_offset)
        if not golden_fx:
            raise InputError("no FX dump (token directories of .npy files) found", golden_dir)
        units = _plan(graphs, targets, None, golden_fx, warnings)
    problems: dict[str, str] = {}
    planned: list[tuple[int, list[PairSpec]]] = []
    for unit in units:
        for token in sorted(unit.target.tokens):
            planned.append((token, build_pairs(unit, token, unit.target.tokens[token], problems, warnings)))
    if mode is None:
        stats = any(_stats_only(s.target) or _stats_only(s.golden) for _, specs in planned for s in specs)
        mode = "statistics" if stats else "tensor"
    rows: list[list[object]] = []
    total = sum(len(specs) for _, specs in planned)
    advance = progress(f"{label} compare", total) if progress is not None else (lambda n: None)
    for token, specs in planned:
        for spec in specs:
            rows.append(compute_row(spec, mode, token, len(rows), problems))
            advance(1)
    for message in warnings:
        log.warning("%s", message)
    return RankReport(rank, mode, columns(mode), rows,
                      [f"{path}: {problem}" for path, problem in problems.items()], warnings)

