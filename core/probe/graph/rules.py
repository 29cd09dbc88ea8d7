"""The framework rules the graph applies, as registered by plugins (``probe_register_graph_rules``).

The core knows no framework's recompute stacks or tensor-parallel layers; it asks the
registered :class:`probe.interfaces.GraphRules` objects, in registration order.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from probe.interfaces import PartialSums

from probe.graph.node import API, MODULE, GraphNode

_KIND_NAMES = {API: "api", MODULE: "module"}


class GraphRuleSet:
    """All registered graph rules; a missing member of a rule object means "no opinion"."""

    def __init__(self, rules: Iterable[Any] = ()) -> None:
        self.rules = tuple(rules)

    def is_recompute_stack(self, frames: Sequence[str]) -> bool:
        """Whether any rule sees activation recomputation in a forward call's stack."""
        return any(rule.is_recompute_stack(frames) for rule in self.rules if hasattr(rule, "is_recompute_stack"))

    def partial_sums(self, node: GraphNode) -> PartialSums | None:
        """The output rows of ``node`` that the first rule with an answer calls TP partial sums."""
        kind = _KIND_NAMES.get(node.kind)
        if kind is None:
            return None
        for rule in self.rules:
            if hasattr(rule, "partial_sum_outputs"):
                found = rule.partial_sum_outputs(node.name, kind, len(node.outputs))
                if found is not None:
                    return found
        return None


NO_RULES = GraphRuleSet()
"""No framework knowledge (a graph built without a plugin host)."""
