"""Per-parameter metrics of matched node pairs, computed by the compare core's metric modes.

The graph never computes metric formulas itself: it pairs the rows of two matched nodes
(positionally within inputs, parameters, parameter gradients and outputs), hands all pairs
to the registered :class:`probe.model.MetricMode` in one call and keeps the columns the
graph shows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from probe.errors import InputError
from probe.interfaces import Registries
from probe.model import ModeContext, Pair, Row
from probe.result import RowResult

from probe.graph.node import Graph, GraphNode

log = logging.getLogger(__name__)

SUMMARY, ALL, MD5 = "summary", "all", "md5"
MODE_NAMES = {SUMMARY: "statistics", ALL: "tensor", MD5: "md5"}
"""Graph task (``tb_config.task``) -> compare metric mode name."""
GRAPH_COLUMNS = {
    SUMMARY: (
        "Max diff", "Min diff", "Mean diff", "L2norm diff",
        "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr",
    ),
    ALL: (
        "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
        "One Thousandth Err Ratio", "Five Thousandths Err Ratio",
    ),
    MD5: (),
}
GROUPS = ("input", "parameters", "parameters_grad", "output")


def graph_task(graph: Graph) -> str:
    """``all`` for tensor dumps, ``md5`` when md5 fields are present, else ``summary``."""
    if graph.task == "tensor":
        return ALL
    return MD5 if graph.has_md5 else SUMMARY


def compare_task(npu: Graph, bench: Graph) -> str:
    """The task both sides agree on; a one-line error naming the golden dump otherwise."""
    t_npu, t_bench = graph_task(npu), graph_task(bench)
    if t_npu != t_bench:
        raise InputError(
            f"is a '{t_bench}' dump but the target dump is '{t_npu}'; both sides need the same dump task",
            bench.source,
        )
    return t_npu


def _suffix(row: Row, node: GraphNode) -> str:
    """The row name after its node name (``.input.0``, ``.weight``), as the compare keys it."""
    return row.name[len(node.name):] if row.name.startswith(node.name) else row.name


def pair_rows(npu: GraphNode, bench: GraphNode) -> list[Pair]:
    """Pairs within each group (inputs, parameters, parameter gradients, outputs).

    A row pairs with the bench row of the same name after the node name (``.input.0``,
    ``.weight``), as the compare pairs the rows of two matched entries (so the graph judges the
    pairs the report judges). NPU rows without a partner get ``None``.
    """
    pairs: list[Pair] = []
    for group in GROUPS:
        left = [r for r in (npu.outputs if group == "output" else npu.inputs) if r.state == group]
        right = [r for r in (bench.outputs if group == "output" else bench.inputs) if r.state == group]
        by_suffix = {_suffix(r, bench): r for r in right}
        pairs.extend(Pair(t_row, by_suffix.get(_suffix(t_row, npu))) for t_row in left)
    return pairs


def _find_mode(host: Registries | None, task: str):
    if host is None:
        return None
    try:
        return host.modes.find(MODE_NAMES[task])
    except Exception as exc:  # noqa: BLE001 - a broken mode must not stop the graph
        log.warning("metric mode %s is unavailable: %s", MODE_NAMES[task], exc)
        return None


def _same_shape(pair: Pair) -> Pair:
    """A pair whose golden row takes the target's shape (merged ranks: shards are not compared)."""
    g = pair.golden
    if g is None or g.shape == pair.target.shape:
        return pair
    twin = Row(g.name, g.entry, g.state, g.dtype, pair.target.shape, g.stats, g.requires_grad, g.md5,
               g.data_name, g.extra)
    return Pair(pair.target, twin, pair.fuzzy)


def compute_metrics(
    matched: Sequence[tuple[GraphNode, GraphNode]],
    npu: Graph,
    bench: Graph,
    task: str,
    host: Registries | None,
    jobs: int = 1,
    merged: bool = False,
    row_pairs: Sequence[Pair] | None = None,
) -> tuple[Any, dict[GraphNode, list[RowResult]]]:
    """Pair the rows of every matched node, compute them with the compare's metric mode and fill
    ``node.metrics`` on the NPU nodes.

    ``row_pairs``: the row pairs the compare's pairing made (``-lm`` across frameworks); each
    node then judges exactly those pairs of its rows, as the report does. Returns the mode and
    the row results of each NPU node (the judge reads them); the mode is ``None`` (and nothing
    is computed) when the host has no such mode.
    """
    by_entry: dict[str, list[Pair]] = {}
    for pair in row_pairs or ():
        by_entry.setdefault(pair.target.entry, []).append(pair)
    by_node: dict[GraphNode, list[Pair]] = {}
    all_pairs: list[Pair] = []
    for n_node, b_node in matched:
        pairs = pair_rows(n_node, b_node) if row_pairs is None else by_entry.get(n_node.name, [])
        if merged:
            pairs = [_same_shape(p) for p in pairs]
        if pairs:
            by_node[n_node] = pairs
            all_pairs.extend(pairs)
    mode = _find_mode(host, task)
    if mode is None or not all_pairs:
        if all_pairs:
            log.warning("no '%s' metric mode is registered: nodes are not judged", MODE_NAMES[task])
        return None, {}
    ctx = ModeContext(target=npu.dump, golden=bench.dump, options={},
                      tensor_loaders=host.tensor_loaders.as_dict() if host is not None else {}, jobs=jobs)
    results = mode.compute(all_pairs, ctx)
    names = list(mode.columns(False, ()))
    wanted = [(c, names.index(c)) for c in GRAPH_COLUMNS[task] if c in names]
    it = iter(results)
    records: dict[GraphNode, list[RowResult]] = {}
    for n_node, pairs in by_node.items():
        metrics = n_node.metrics
        own = records[n_node] = [next(it) for _ in pairs]
        for record in own:
            if record.pair.golden is not None and wanted:
                values = mode.render(record, False)
                metrics[record.pair.target.name] = {c: _text(values[i]) for c, i in wanted}
    return mode, records


def _text(value: object) -> str:
    if value is None:
        return "N/A"
    return str(value).strip() if isinstance(value, str) else str(value)


def as_float(value: object) -> float | None:
    """Parse a rendered metric (``"45.07%"`` -> 0.4507, ``"0.99"``, ``"N/A"`` -> None)."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    scale = 1.0
    if text.endswith("%"):
        text, scale = text[:-1], 0.01
    try:
        return float(text) * scale
    except ValueError:
        return None


def row_map(rows: Sequence[Row]) -> dict[str, Row]:
    """Rows by name."""
    return {r.name: r for r in rows}
