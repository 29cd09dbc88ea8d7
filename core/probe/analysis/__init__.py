"""Analysis of finished comparisons: first divergence, advisor, collective consistency, merge.

All of it works on in-memory :class:`probe.result.CompareResult` objects, for any framework::

    run = probe.compare("target/step0", "golden/step0")
    found = first_divergence(run.results)
    print(found.phase, found.first().entry)
    print(advise(run[0]).cause)
"""

from __future__ import annotations

from probe.analysis.advisor import Advice, advise
from probe.analysis.collective import Disagreement, check_collectives
from probe.analysis.first_diff import FirstDiff, find_first_diff
from probe.analysis.nodes import Node, build_nodes
from probe.result import CompareResult


def nodes_by_rank(results: list[CompareResult]) -> dict[int, list[Node]]:
    """Nodes of each result keyed by rank (results without a rank are numbered in order)."""
    out: dict[int, list[Node]] = {}
    for position, result in enumerate(results):
        rank = result.rank if result.rank is not None else position
        while rank in out:
            rank += 1
        out[rank] = build_nodes(result, rank)
    return out


def first_divergence(results: list[CompareResult]) -> FirstDiff:
    """The first diverging node(s) over the results of one step (one result per rank)."""
    return find_first_diff(nodes_by_rank(results))


__all__ = [
    "Advice", "Disagreement", "FirstDiff", "Node", "advise", "build_nodes", "check_collectives",
    "find_first_diff", "first_divergence", "nodes_by_rank",
]
