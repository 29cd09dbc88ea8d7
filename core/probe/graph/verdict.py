"""Node verdicts of a graph compare, given by THE judge that also gives the compare rows theirs.

The rows of every matched node go through the same metric mode and the same Result rules
(:func:`probe.judge.judge_records`) as ``probe compare`` rows, so a graph node can never
contradict the report: its ``precision_index`` is the worst Result of its rows
(:func:`probe.judge.precision_index`), and every row keeps the report's ``Result`` and
``Err_message`` text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from probe.judge import judge_records, precision_index
from probe.modes.common import err_message, requires_grad_consistent
from probe.result import RowResult

from probe.graph.node import COLLECTION, GraphNode


def judge_graph(by_node: dict[GraphNode, list[RowResult]], mode: Any) -> None:
    """Judge the rows of every matched NPU node with ``mode``'s rules; set ``node.precision``.

    A node without matched rows keeps ``precision`` unset (nothing was compared).
    """
    for node, records in by_node.items():
        judge_records(mode, records, None)
        matched = [r for r in records if r.pair.golden is not None]
        if not matched:
            continue
        for record in matched:
            fields = node.metrics.setdefault(record.pair.target.name, {})
            fields["Requires_grad Consistent"] = str(requires_grad_consistent(record))
            fields["Result"] = record.verdict
            fields["Err_message"] = err_message(record)
        node.precision = precision_index(r.verdict for r in matched)


def judge_collections(nodes: Sequence[GraphNode]) -> None:
    """Matched API collections take the max precision of their children (missing = 0)."""
    for node in nodes:
        if node.kind == COLLECTION and node.match is not None:
            node.precision = max((c.precision or 0.0 for c in node.children), default=0.0)
