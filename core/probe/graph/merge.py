"""Parallel merge (``--rank_size/--tp/--pp``): fold tensor-parallel ranks into one graph.

Supported: pure TP layouts (``tp == rank_size``, ``pp == 1``) and the trivial layout
(``rank_size == 1``). Other layouts are refused with a one-line error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from probe.errors import InputError
from probe.model import Row

from probe.graph.node import Graph

_FLOAT_WORDS = ("float", "Float", "bfloat", "BFloat")


def _num(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _merge_rows(rows: Sequence[Row]) -> tuple | None:
    values = [tuple(_num(v) for v in r.stats) for r in rows]
    if any(None in v for v in values):
        return None
    first = values[0]
    if all(math.isclose(v[2], first[2], rel_tol=1e-6) and math.isclose(v[3], first[3], rel_tol=1e-6) for v in values):
        return None
    return (
        max(v[0] for v in values), min(v[1] for v in values),
        sum(v[2] for v in values) / len(values), math.sqrt(sum(v[3] ** 2 for v in values)),
    )


def tp_merge(graphs: Sequence[Graph]) -> Graph:
    """Merge the statistics of same-name nodes of all TP ranks into the first rank's graph."""
    main = graphs[0]
    ranks = [g.rank for g in graphs]
    note = f"This data is the merged data after tensor parallelism(TP), and the data is merged from rank {ranks}."
    for name, node in main.nodes.items():
        twins = [g.nodes.get(name) for g in graphs[1:]]
        if not node.has_data or any(t is None or not t.has_data for t in twins):
            continue
        changed = False
        for attr in ("inputs", "outputs"):
            mine = getattr(node, attr)
            others = [getattr(t, attr) for t in twins]
            if any(len(o) != len(mine) for o in others):
                continue
            for index, row in enumerate(mine):
                if not any(w in row.dtype for w in _FLOAT_WORDS):
                    continue
                merged = _merge_rows([row, *(o[index] for o in others)])
                if merged is not None:
                    row.stats = merged
                    changed = True
        if changed:
            node.merge_info = [note, "Max = max over ranks, Min = min over ranks, Mean = average of the ranks' "
                               "means, Norm = sqrt(sum of the ranks' squared norms)."]
    return main


def merge_side(graphs: list[Graph], options, path: Path | None) -> list[Graph]:
    """Merge the graphs of one side (one step dir) according to ``options``."""
    by_step: dict[int, list[Graph]] = {}
    for graph in graphs:
        by_step.setdefault(graph.step, []).append(graph)
    out: list[Graph] = []
    for step_graphs in by_step.values():
        if len(step_graphs) != options.rank_size:
            raise InputError(f"has {len(step_graphs)} rank dirs but --rank_size is {options.rank_size}", path)
        if options.rank_size == 1 or (options.tp == 1 and options.pp == 1):
            out.extend(step_graphs)
        elif options.tp == options.rank_size and options.pp == 1:
            out.append(tp_merge(sorted(step_graphs, key=lambda g: g.rank)))
        else:
            raise InputError(
                f"parallel merge with tp={options.tp} pp={options.pp} vpp={options.vpp} is not supported yet "
                "(pure tensor parallelism only)", path,
            )
    return out
