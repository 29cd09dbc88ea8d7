"""The graph model: one :class:`Graph` (a containment tree) per side, step and rank."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from probe.formats.msprobe.names import API_PREFIXES
from probe.model import FlatDump, Row

MODULE, API, COLLECTION = "0", "1", "9"
"""Node kinds as stored in ``tb_nodes.node_type``."""

_API_WORD = re.compile("^(?:" + "|".join(re.escape(p[:-1]) for p in API_PREFIXES) + ")(?!$)")
ROOT_NAME = "DefaultModel"
COLLECTION_PREFIX = "Apis_Between_Modules"

NPU, BENCH = "NPU", "Bench"


def node_kind(name: str) -> str:
    """Kind of a node from its name (modules are the fallback)."""
    if name.startswith(COLLECTION_PREFIX):
        return COLLECTION
    if name.startswith(API_PREFIXES):
        return API
    if _API_WORD.match(name):  # msProbe's patterns take the dot for any character: ``Tensor1`` is an API
        return API
    return MODULE


class GraphNode:
    """One node: a module, an API call, an API collection or the root."""

    __slots__ = (
        "name", "kind", "parent", "children", "micro_step", "inputs", "outputs", "stack",
        "match", "precision", "overflow", "order", "merge_info", "distributed", "metrics",
        "has_data",
    )

    def __init__(self, name: str, kind: str | None = None) -> None:
        self.name = name
        self.kind = kind if kind is not None else node_kind(name)
        self.parent: GraphNode | None = None
        self.children: list[GraphNode] = []
        self.micro_step = 0
        self.inputs: list[Row] = []
        """Input-side rows (positional args, kwargs, parameters, parameter gradients)."""
        self.outputs: list[Row] = []
        self.stack: list[str] = []
        self.match: GraphNode | None = None
        self.precision: float | None = None
        self.overflow: str | None = None
        self.order = -1
        self.merge_info: list[str] = []
        self.distributed: dict[str, Any] = {}
        self.metrics: dict[str, dict[str, str]] = {}
        """Per-row compare fields added to NPU items (row name -> column -> value)."""
        self.has_data = False

    def add_child(self, child: GraphNode) -> None:
        """Attach ``child`` as the last child of this node."""
        child.parent = self
        self.children.append(child)

    def ancestors(self) -> list[str]:
        """Names from the root down to (excluding) this node."""
        chain: list[str] = []
        node = self.parent
        while node is not None:
            chain.append(node.name)
            node = node.parent
        chain.reverse()
        return chain

    def link(self) -> list[str]:
        """Ancestor chain plus own name (what the counterpart stores as its link)."""
        return [*self.ancestors(), self.name]

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"GraphNode({self.name!r}, kind={self.kind})"


class Graph:
    """One tree for one (side, step, rank)."""

    def __init__(self, side: str = NPU, step: int = 0, rank: int = 0) -> None:
        self.side = side
        self.step = step
        self.rank = rank
        self.root = GraphNode(ROOT_NAME, MODULE)
        self.nodes: dict[str, GraphNode] = {ROOT_NAME: self.root}
        self.micro_steps = 1
        self.task = "statistics"
        self.framework = "pytorch"
        self.has_md5 = False
        self.dump_data_dir: str | None = None
        self.source = ""
        self.dump: FlatDump | None = None
        """All rows of the dump (what metric modes compare)."""
        self.auto_matches: dict[str, tuple[float, str]] = {}
        """``--auto-match``: node name -> (confidence, why) of each automatic pair (target graph)."""

    @property
    def graph_id(self) -> str:
        """``<side>_<step>_<rank>`` as stored in the db."""
        return f"{self.side}_{self.step}_{self.rank}"

    def get_or_create(self, name: str) -> GraphNode:
        """The node named ``name``, created (detached) on first mention."""
        node = self.nodes.get(name)
        if node is None:
            node = GraphNode(name)
            self.nodes[name] = node
        return node

    def postorder(self) -> Iterator[GraphNode]:
        """Nodes in post-order (children left to right, then the parent; root last)."""
        stack: list[tuple[GraphNode, int]] = [(self.root, 0)]
        while stack:
            node, index = stack.pop()
            if index < len(node.children):
                stack.append((node, index + 1))
                stack.append((node.children[index], 0))
            else:
                yield node

    def number(self) -> None:
        """Set ``order`` of every node to its post-order position."""
        for index, node in enumerate(self.postorder()):
            node.order = index

    def __len__(self) -> int:
        return len(self.nodes)
