"""Per-parameter metrics of matched node pairs, computed by the compare core's metric modes.

The graph never computes metric formulas itself: it pairs the rows of two matched nodes
(positionally within inputs, parameters, parameter gradients and outputs), hands all pairs
to the registered :class:`probe.model.MetricMode` in one call and keeps the columns the
graph shows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from itertools import zip_longest

from probe.errors import InputError
from probe.interfaces import Registries
from probe.model import ModeContext, Pair, Row

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


def pair_rows(npu: GraphNode, bench: GraphNode) -> list[Pair]:
    """Positional pairs within each group; NPU rows without a partner get ``None``."""
    pairs: list[Pair] = []
    for group in GROUPS:
        left = [r for r in (npu.outputs if group == "output" else npu.inputs) if r.state == group]
        right = [r for r in (bench.outputs if group == "output" else bench.inputs) if r.state == group]
        for t_row, g_row in zip_longest(left, right):
            if t_row is not None:
                pairs.append(Pair(t_row, g_row))
    return pairs


def _find_mode(host: Registries | None, task: str):
    if host is None:
        return None
    try:
        return host.modes.find(MODE_NAMES[task])
    except Exception as exc:  # noqa: BLE001 - a broken mode must not stop the graph
        log.warning("metric mode %s is unavailable: %s", MODE_NAMES[task], exc)
        return None


def compute_metrics(
    matched: Sequence[tuple[GraphNode, GraphNode]],
    npu: Graph,
    bench: Graph,
    task: str,
    host: Registries | None,
    jobs: int = 1,
) -> dict[GraphNode, list[Pair]]:
    """Pair the rows of every matched node and fill ``node.metrics`` on the NPU nodes.

    Returns the row pairs of each NPU node (the verdict rules read them).
    """
    by_node: dict[GraphNode, list[Pair]] = {}
    all_pairs: list[Pair] = []
    for n_node, b_node in matched:
        pairs = pair_rows(n_node, b_node)
        if pairs:
            by_node[n_node] = pairs
            all_pairs.extend(pairs)
    columns = GRAPH_COLUMNS[task]
    mode = _find_mode(host, task) if columns else None
    if mode is None or not all_pairs:
        if columns and all_pairs:
            log.warning("no '%s' metric mode is registered: metric columns are left empty", MODE_NAMES[task])
        return by_node
    ctx = ModeContext(target=npu.dump, golden=bench.dump, options={},
                      tensor_loaders=host.tensor_loaders.as_dict() if host is not None else {}, jobs=jobs)
    results = mode.compute([p for p in all_pairs if p.golden is not None], ctx)
    names = list(mode.columns(False, ()))
    wanted = [(c, names.index(c)) for c in columns if c in names]
    it = iter(results)
    for n_node, pairs in by_node.items():
        metrics = n_node.metrics
        for pair in pairs:
            if pair.golden is None:
                continue
            values = mode.render(next(it), False)
            metrics[pair.target.name] = {c: _text(values[i]) for c, i in wanted}
    return by_node


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
