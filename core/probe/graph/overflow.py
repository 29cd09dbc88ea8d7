"""NaN/Inf anomaly levels of nodes (``-oc``): medium, high, critical."""

from __future__ import annotations

import math

from probe.model import Row

from probe.graph.node import Graph, GraphNode
from probe.graph.verdict import api_name

MEDIUM, HIGH, CRITICAL = "medium", "high", "critical"
LEVEL_RANK = {MEDIUM: 1, HIGH: 2, CRITICAL: 3}
MUTATION_RATIO = 100.0
# Known false positives: outputs that are uninitialised memory, inputs that are receive buffers.
IGNORE_OUTPUTS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_with_format"})
IGNORE_INPUTS = frozenset({"recv", "irecv", "all_gather", "_all_gather_base", "all_gather_into_tensor",
                           "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor"})
_BAD = ("inf", "-inf", "nan")


def _anomalous(row: Row) -> bool:
    return any(str(v).strip().lower() in _BAD for v in row.stats[:3] if v is not None)


def _is_tensor(row: Row) -> bool:
    return not row.dtype.startswith("<class") and row.dtype not in ("N/A", "torch.Size", "slice", "ellipsis", "torch.ProcessGroup")


def _norm(row: Row) -> float | None:
    try:
        value = float(row.stats[3])
    except (TypeError, ValueError):
        return None
    return abs(value) if math.isfinite(value) else None


def overflow_level(node: GraphNode) -> str | None:
    """The anomaly level of one node from its rows (first matching scene wins)."""
    api = api_name(node.name)
    inputs = [] if api in IGNORE_INPUTS else node.inputs
    outputs = [] if api in IGNORE_OUTPUTS else node.outputs
    bad_in = any(_anomalous(r) for r in inputs)
    bad_out = any(_anomalous(r) for r in outputs)
    if bad_out and not bad_in:
        return CRITICAL
    if bad_in and bad_out:
        return HIGH
    if bad_in:
        return MEDIUM
    in_norms = [n for r in inputs if _is_tensor(r) and (n := _norm(r)) is not None]
    out_norms = [n for r in outputs if _is_tensor(r) and (n := _norm(r)) is not None]
    if in_norms and out_norms:
        top_in, top_out = max(in_norms), max(out_norms)
        if (top_in == 0 and top_out > MUTATION_RATIO) or (top_in > 0 and top_out / top_in > MUTATION_RATIO):
            return HIGH
    return None


def check_overflow(graph: Graph) -> int:
    """Set ``overflow`` on every node with data; return the number of anomalous nodes."""
    count = 0
    for node in graph.nodes.values():
        if node.has_data:
            node.overflow = overflow_level(node)
            count += node.overflow is not None
    return count
