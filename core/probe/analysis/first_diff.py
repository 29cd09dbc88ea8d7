"""First-divergence search over the nodes of every rank (``-da``).

Three phases, stopping at the first that finds something:

1. *before communication*: per rank, the first differing compute node before the rank's first
   communication op;
2. *during communication*: communication ops are numbered per rank (their *layer*); each owns
   the compute nodes since the previous one. Ops of different ranks that take part in the same
   collective (same API and group, same occurrence) or in the same send/recv pair are linked.
   The lowest layer whose linked ops show a difference (their own outputs or the compute nodes
   they own) wins; per rank its first differing compute node, else the op itself, is reported;
3. *after communication*: per rank, the first differing compute node after its last op.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from probe.analysis.nodes import P2P_PARTNER, Node

BEFORE, DURING, AFTER = "before communication", "during communication", "after communication"


@dataclass
class FirstDiff:
    """What the search found: the phase and the first diverging node(s) of each rank."""

    phase: str | None
    nodes: dict[int, list[Node]] = field(default_factory=dict)

    @property
    def found(self) -> bool:
        return bool(self.nodes)

    def __repr__(self) -> str:
        if not self.nodes:
            return "FirstDiff(no diverging node)"
        shown = ", ".join(f"rank {rank}: {nodes[0].entry}" for rank, nodes in sorted(self.nodes.items()))
        return f"FirstDiff({self.phase}: {shown})"

    def __str__(self) -> str:
        if not self.nodes:
            return "no diverging node"
        lines = [f"first diverging node(s), {self.phase}:"]
        for rank, nodes in sorted(self.nodes.items()):
            node = nodes[0]
            trip = f" ({node.trip.row}: {node.trip.metric} {node.trip.value})" if node.trip else ""
            lines.append(f"  rank {rank}: {node.entry}{trip}")
            stack = node.stack_line()
            if stack:
                lines.append(f"    {stack}")
        return "\n".join(lines)

    def first(self) -> Node | None:
        """The reported node of the lowest rank."""
        if not self.nodes:
            return None
        return self.nodes[min(self.nodes)][0]


@dataclass
class _CommOp:
    node: Node
    layer: int
    compute: list[Node]
    key: tuple | None = None


def _split(nodes: list[Node]) -> tuple[list[Node], list[_CommOp], list[Node]]:
    """(compute nodes before the first comm op, comm ops with the nodes they own, nodes after the last)."""
    ops: list[_CommOp] = []
    pending: list[Node] = []
    before: list[Node] | None = None
    for node in nodes:
        if node.is_comm:
            if before is None:
                before, owned = pending, []
            else:
                owned = pending
            ops.append(_CommOp(node=node, layer=len(ops), compute=owned))
            pending = []
        elif not node.is_ignored:
            pending.append(node)
    if before is None:
        return pending, [], []
    return before, ops, pending


def _first_diff(nodes: list[Node]) -> Node | None:
    return next((n for n in nodes if not n.is_same), None)


def _link_keys(ops_by_rank: dict[int, list[_CommOp]]) -> None:
    """Give every comm op a key shared by the ops of other ranks it talks to."""
    all_ranks = tuple(sorted(ops_by_rank))
    for rank, ops in ops_by_rank.items():
        seen: dict[tuple, int] = defaultdict(int)
        for op in ops:
            api, peers = op.node.api, op.node.peers
            base = api.split("_rank")[0]
            if base in P2P_PARTNER:
                peer = _peer(peers)
                if peer is None:
                    op.key = None
                    continue
                sender = base.startswith(("send", "isend"))
                src, dst = (rank, peer) if sender else (peer, rank)
                family = base if sender else P2P_PARTNER[base]
                ident = ("p2p", family, src, dst)
            else:
                group = peers.get("group") or all_ranks
                ident = ("coll", base, tuple(group))
            op.key = ident + (seen[ident],)
            seen[ident] += 1


def _peer(peers: dict) -> int | None:
    for key in ("dst", "src", "group_dst", "group_src", "peer", "positional"):
        if key in peers:
            return int(peers[key])
    return None


def find_first_diff(nodes_by_rank: dict[int, list[Node]]) -> FirstDiff:
    """Search the nodes of all ranks for the first divergence (see the module docstring)."""
    split = {rank: _split(nodes) for rank, nodes in nodes_by_rank.items()}
    found = {rank: [n] for rank, (before, _, _) in split.items() if (n := _first_diff(before))}
    if found:
        return FirstDiff(BEFORE, dict(sorted(found.items())))
    ops_by_rank = {rank: ops for rank, (_, ops, _) in split.items() if ops}
    if ops_by_rank:
        during = _search_during(ops_by_rank)
        if during:
            return FirstDiff(DURING, during)
    found = {rank: [n] for rank, (_, _, after) in split.items() if (n := _first_diff(after))}
    if found:
        return FirstDiff(AFTER, dict(sorted(found.items())))
    return FirstDiff(None, {})


def _search_during(ops_by_rank: dict[int, list[_CommOp]]) -> dict[int, list[Node]]:
    _link_keys(ops_by_rank)
    # components: ops sharing a key across ranks (an unlinked op is its own component)
    components: dict[tuple, list[tuple[int, _CommOp]]] = defaultdict(list)
    for rank, ops in ops_by_rank.items():
        for op in ops:
            key = op.key if op.key is not None else ("solo", rank, op.layer)
            components[key].append((rank, op))

    def has_diff(op: _CommOp) -> bool:
        return not op.node.is_same or any(not n.is_same for n in op.compute)

    best: list[list[tuple[int, _CommOp]]] = []
    best_layer = None
    for members in components.values():
        if not any(has_diff(op) for _, op in members):
            continue
        layer = min(op.layer for _, op in members)
        if best_layer is None or layer < best_layer:
            best, best_layer = [members], layer
        elif layer == best_layer:
            best.append(members)
    result: dict[int, list[Node]] = defaultdict(list)
    for members in best:
        for rank, op in sorted(members, key=lambda m: m[0]):
            compute = _first_diff(op.compute)
            if compute is not None:
                compute.layer = op.layer
                result[rank].append(compute)
            elif not op.node.is_same:
                op.node.layer = op.layer
                result[rank].append(op.node)
    return {rank: nodes for rank, nodes in sorted(result.items())}
