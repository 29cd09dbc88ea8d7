"""TorchAir compares through probe's ordinary stages: readers, a pairer, metric modes.

* readers ``torchair-ge`` (one row per GE dump file: an op of one token of one model) and
  ``torchair-fx`` (one row per FX token directory, with the FX ops found in it);
* pairer ``torchair-tokens``: reads the GE graphs, splits fused ops, pairs GE tensors with
  FX tensors (GE<->FX) or with fusion-off GE tensors (GE<->GE), token by token;
* modes ``torchair-tensor``, ``torchair-statistics`` and ``torchair-md5`` (the documented
  report columns) and ``torchair-*-26.2`` (msProbe 26.2's columns): TorchAir's own metrics and
  PASS/FAIL rule; with ``-hl`` each row is coloured green / red / yellow (PASS / FAIL / N/A).

The GE/FX parsing and pairing modules are imported by the methods that use them: every
compare registers these stages, and only TorchAir compares run them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from probe.api import (
    ERROR,
    PASS,
    UNMATCHED,
    DumpInfo,
    FlatDump,
    InputError,
    KeyMap,
    MatchContext,
    ModeContext,
    Pair,
    Pairing,
    Row,
    RowResult,
)

from probe_torchair.report import COLOURS, DOCUMENTED, HIGHLIGHT, LEGACY, layout_cells, layout_columns, verdict_of

log = logging.getLogger("probe.torchair")

GE_READER, FX_READER = "torchair-ge", "torchair-fx"
PAIRER = "torchair-tokens"
TASK = "torchair"
GRAPH_ROOT, RANK = "torchair_graph_root", "torchair_rank"
"""Plan options the pairer reads: where the GE graph files are, and the rank compared."""
_VERDICTS = {"PASS": PASS, "FAIL": ERROR}


def _info(path: Path, reader: str) -> DumpInfo:
    return DumpInfo(Path(path), TASK, TASK, kind=reader, reader=reader)


class GeReader:
    """GE dump files under a directory: one row per op file (model group, token, op)."""

    name = GE_READER

    def sniff(self, path: Path) -> bool:
        if not Path(path).is_dir():
            return False
        from probe_torchair import layout

        return bool(layout.ge_groups(Path(path)))

    def load(self, path: Path, with_stack: bool = True, **_: Any) -> FlatDump:
        from probe_torchair import layout

        groups = layout.ge_groups(Path(path))
        if not groups:
            raise InputError("no GE dump files found", path)
        rows = []
        for group in groups:
            for token, ops in group.tokens.items():
                for op in ops.values():
                    rows.append(Row(op.real_path, f"{group.key}#{token}", op.name.kind, "", "", (None,) * 4, "N/A",
                                    None, op.real_path, {"group": group, "token": token, "op": op}))
        return FlatDump(_info(path, GE_READER), rows, entry_count=len(rows))


class FxReader:
    """FX dump token directories under a directory: one row per token of each graph."""

    name = FX_READER

    def sniff(self, path: Path) -> bool:
        if not Path(path).is_dir():
            return False
        from probe_torchair import layout

        return bool(layout.fx_groups(Path(path)))

    def load(self, path: Path, with_stack: bool = True, token_offset: int | None = None, **_: Any) -> FlatDump:
        from probe_torchair import layout
        from probe_torchair.fxdump import read_token_dir

        groups = layout.fx_groups(Path(path), token_offset)
        if not groups:
            raise InputError("no FX dump (token directories of .npy files) found", path)
        rows = []
        for group in groups:
            for token, directory in group.dirs.items():
                ops = read_token_dir(directory)
                rows.append(Row(str(directory), f"{group.key}#{token}", "fx", "", "", (None,) * 4, "N/A", None,
                                str(directory), {"group": group, "token": token, "ops": ops}))
        return FlatDump(_info(path, FX_READER), rows, entry_count=len(rows))


def _unique_groups(rows: Sequence[Row]) -> list[Any]:
    seen: dict[int, Any] = {}
    for row in rows:
        group = row.extra["group"]
        seen.setdefault(id(group), group)
    return list(seen.values())


class TokenPairer:
    """GE tensors paired with FX or fusion-off GE tensors through the GE graphs, token by token."""

    name = PAIRER

    def pair(self, target: FlatDump, golden: FlatDump, key_map: KeyMap | None, ctx: MatchContext) -> Pairing:
        from probe_torchair import layout
        from probe_torchair.compare import build_pairs, plan_units
        from probe_torchair.fxdump import FxOp, read_token_dir
        from probe_torchair.graph import Graph

        root = Path(ctx.options[GRAPH_ROOT])
        rank = ctx.options.get(RANK)
        paths = layout.graph_files(root, rank)
        if not paths and rank is not None:
            paths = layout.graph_files(root)
        if not paths:
            raise InputError(f"no {layout.GRAPH_PREFIX}*.txt graph file found", root)
        graphs = [Graph.read(p) for p in paths]
        warnings: list[str] = []
        fx_ops: dict[Path, dict[str, FxOp]] = {}
        if golden.info.reader == GE_READER:
            units = plan_units(graphs, _unique_groups(target.rows), _unique_groups(golden.rows), None, warnings)
        else:
            for row in golden.rows:
                fx_ops[Path(row.name)] = row.extra["ops"]
            units = plan_units(graphs, _unique_groups(target.rows), None, _unique_groups(golden.rows), warnings,
                               fx_keys=lambda d: set(fx_ops.get(d, {})))
        problems: dict[str, str] = {}
        pairs: list[Pair] = []
        for unit in units:
            for token in sorted(unit.target.tokens):
                specs = build_pairs(unit, token, unit.target.tokens[token], problems, warnings,
                                    read_fx=lambda d: fx_ops[d] if d in fx_ops else read_token_dir(d))
                pairs.extend(_pair(spec, token) for spec in specs)
        for message in warnings:
            log.warning("%s", message)
        return Pairing(pairs, 0)


def _pair(spec: Any, token: int) -> Pair:
    target = Row(spec.target_label, str(token), "", "", "", (None,) * 4, "N/A", None, spec.target_label,
                 {"spec": spec, "token": token})
    golden = None
    if spec.golden is not None:
        golden = Row(spec.golden_label, str(token), "", "", "", (None,) * 4, "N/A", None, spec.golden_label)
    return Pair(target, golden)


def mode_name(kind: str, layout: str = DOCUMENTED) -> str:
    """``torchair-tensor`` (documented columns) or ``torchair-tensor-26.2``."""
    return f"torchair-{kind}" if layout == DOCUMENTED else f"torchair-{kind}-{layout}"


class TorchairMode:
    """One TorchAir metric mode (``tensor``, ``statistics`` or ``md5``) in one report layout.

    Verdicts are TorchAir's PASS / FAIL; with ``-hl`` each row carries its colour in
    ``Highlight`` (the judge adds the column).
    """

    def __init__(self, kind: str, layout: str = DOCUMENTED) -> None:
        self.kind = kind
        self.layout = layout
        self.name = mode_name(kind, layout)

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        """Never chosen by auto detection: the TorchAir planner names the mode of each plan."""
        return False

    def columns(self, with_stack: bool = False, extra_metrics: Sequence[str] = ()) -> list[str]:
        return layout_columns(self.kind, self.layout)

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        """Load both tensors of every pair and compute its report row (``data_id`` = position)."""
        from probe_torchair.compare import compute_row

        problems: dict[str, str] = {}
        for pair in pairs:
            spec = pair.target.extra["spec"]
            if spec.problem_path:
                problems.setdefault(spec.problem_path, spec.problem)
        records = []
        for data_id, pair in enumerate(pairs):
            spec, token = pair.target.extra["spec"], pair.target.extra["token"]
            known = set(problems)
            record = RowResult(pair, tuple(compute_row(spec, self.kind, token, data_id, problems)))
            result = str(verdict_of(list(record.metrics), self.kind))
            record.verdict = _VERDICTS.get(result, UNMATCHED)
            if ctx.options.get("highlight"):
                record.extra[HIGHLIGHT] = COLOURS.get(result, "yellow")
            found = [f"{path}: {problems[path]}" for path in problems if path not in known]
            if spec.first_problem:
                found.insert(0, f"{spec.problem_path}: {spec.problem}")
            if found:  # printed once, by the console summary
                record.extra["problem"] = "\n".join(found)
            records.append(record)
            if ctx.progress:
                ctx.progress(1)
        return records

    def judge(self, group: list[RowResult]) -> None:
        """Verdicts are set in ``compute`` (TorchAir's rule needs nothing across rows)."""

    def render(self, row: RowResult, with_stack: bool = False) -> list[Any]:
        return layout_cells(list(row.metrics), self.kind, self.layout)


MODES = [TorchairMode(kind, layout) for layout in (DOCUMENTED, LEGACY) for kind in ("statistics", "tensor", "md5")]
