"""TorchAir pairing and row computation: group GE dumps with graphs and golden groups, pair
tensors token by token (:func:`build_pairs`), compute one report row (:func:`compute_row`).

The stages in :mod:`probe_torchair.stages` call these.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from probe.api import InputError

from probe_torchair import layout
from probe_torchair.fxdump import FxOp, parse_name as parse_fx_name, read_token_dir
from probe_torchair.gedump import GeFormatError, GeOpFile, GeTensorRef
from probe_torchair.graph import Graph
from probe_torchair.match import BadFile, PairSpec, bad_file_spec, pair_with_fx, pair_with_ge, split_fused
from probe_torchair.metrics import COMPARERS, MODE_COLUMNS, NA, Outcome
from probe_torchair.report import DOCUMENTED_EXTRAS
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


def plan_units(graphs: list[Graph], targets: list[layout.GeGroup], golden_ge: list[layout.GeGroup] | None,
               golden_fx: list[layout.FxGroup] | None, warnings: list[str],
               fx_keys: Callable[[Path], set[str]] = _fx_keys) -> list[_Unit]:
    """Pair every GE group with its graph and golden group by content (names in common);
    fall back to position when nothing matches. ``fx_keys`` lists the FX op keys of a token dir."""
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
                    fx_key_cache[fg.key] = fx_keys(first)
                return len(graph_keys & fx_key_cache[fg.key])

            unit.golden_fx = _best(golden_fx, fx_score)
            if unit.golden_fx is None and position < len(golden_fx):
                unit.golden_fx = golden_fx[position]
        units.append(unit)
    return units


def build_pairs(unit: _Unit, token: int, ops: dict[str, GeOpFile], problems: dict[str, str],
                warnings: list[str],
                read_fx: Callable[[Path], dict[str, FxOp]] = read_token_dir) -> list[PairSpec]:
    """Pair specs of one token of one unit, in report order (``read_fx`` reads an FX token dir)."""
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
        fx: dict[str, FxOp] = read_fx(fx_dir)
        pair = lambda op: pair_with_fx(op, unit.graph, fx, dumped)  # noqa: E731
    for op in ops.values():
        try:
            specs.extend(pair(op))
        except BadFile as bad:
            first = bad.path not in problems
            problems.setdefault(bad.path, bad.problem)
            spec = bad_file_spec(op, bad.problem)
            spec.problem_path, spec.problem, spec.first_problem = bad.path, bad.problem, first
            specs.append(spec)
    specs.sort(key=lambda s: s.sort_key)
    return specs


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
