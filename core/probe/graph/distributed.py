"""Cross-rank communication links (``matched_distributed``) between graphs of one step."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from probe.model import Row

from probe.graph.node import Graph, GraphNode

SEND, RECEIVE, BOTH = "send", "receive", "send_receive"
P2P = {"send": (SEND, "dst"), "isend": (SEND, "dst"), "recv": (RECEIVE, "src"), "irecv": (RECEIVE, "src")}
ROOTED = {"broadcast": (SEND, None), "scatter": (SEND, "src"), "gather": (RECEIVE, "dst"), "reduce": (RECEIVE, None)}
REVERSED = {SEND: RECEIVE, RECEIVE: SEND, BOTH: BOTH}


def _int(value: object) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def _arg(node: GraphNode, key: str) -> Row | None:
    suffix = f".input.{key}"
    return next((r for r in node.inputs if r.name.endswith(suffix)), None)


def _peer(node: GraphNode, kwarg: str | None) -> int | None:
    row = _arg(node, kwarg) if kwarg else None
    if row is None:
        row = _arg(node, "1")
    return _int(row.stats[0]) if row is not None and row.dtype != "torch.ProcessGroup" else None


def _group(node: GraphNode) -> tuple[int, ...] | None:
    row = _arg(node, "group")
    if row is None or row.dtype != "torch.ProcessGroup":
        return None
    text = str(row.stats[0]).strip("[]() ")
    ranks = tuple(int(x) for x in text.replace(" ", "").split(",") if x.lstrip("-").isdigit())
    return ranks or None


def _ops(graph: Graph, node: GraphNode) -> list[tuple[str, tuple, int | None]]:
    """(communication type, link key, peer) of one Distributed node."""
    api = node.name.split(".")[1] if node.name.count(".") >= 1 else ""
    if api in P2P:
        kind, kwarg = P2P[api]
        peer = _peer(node, kwarg)
        return [] if peer is None else [(kind, ("p2p",), peer)]
    if api == "batch_isend_irecv":
        ops = []
        for row in node.inputs:
            extra = row.extra or {}
            peer = _int(extra.get("peer"))
            if peer is None:
                continue
            kind = SEND if "send" in str(extra.get("op", "")) else RECEIVE
            ops.append((kind, ("p2p",), peer))
        return ops
    group = _group(node) or ()  # () = default (world) group: every rank of the step
    if api in ROOTED:
        kind, kwarg = ROOTED[api]
        root = _peer(node, kwarg)
        return [] if root is None else [(kind, ("rooted", api, group), root)]
    return [(BOTH, ("coll", api, group), None)]


def _value(node: GraphNode, compare: bool, overflow: bool) -> str:
    if overflow:
        return node.overflow or "Nan"
    if compare and node.precision is not None:
        return str(node.precision)
    return "Nan"


def link_ranks(graphs: Sequence[Graph], compare: bool = False, overflow: bool = False) -> int:
    """Fill ``node.distributed`` for the graphs of one side and step; returns links written."""
    by_rank = {g.rank: g for g in graphs}
    # occurrence-numbered keys per rank: (kind, key, peer, occurrence) -> node
    index: dict[int, dict[tuple, GraphNode]] = {}
    ops_of: dict[int, list[tuple[GraphNode, str, tuple, int | None, int]]] = {}
    for graph in graphs:
        counter: dict[tuple, int] = defaultdict(int)
        table: dict[tuple, GraphNode] = {}
        ops_list = []
        for node in sorted(graph.nodes.values(), key=lambda n: n.order):
            if not node.name.startswith("Distributed."):
                continue
            for kind, key, peer in _ops(graph, node):
                ckey = (kind if key[0] == "p2p" else "", key, peer)
                occ = counter[ckey]
                counter[ckey] += 1
                table[(kind, key, peer, occ)] = node
                ops_list.append((node, kind, key, peer, occ))
        index[graph.rank] = table
        ops_of[graph.rank] = ops_list
    links: dict[GraphNode, dict] = {}

    def add(node: GraphNode, kind: str, rank: int, partner: GraphNode) -> None:
        entry = links.setdefault(node, {"communications_type": kind, "nodes_info": {}})
        entry["nodes_info"][str(rank)] = [_value(partner, compare, overflow), partner.name]

    for rank, ops_list in ops_of.items():
        for node, kind, key, peer, occ in ops_list:
            if key[0] == "p2p":
                partner = index.get(peer, {}).get((REVERSED[kind], key, rank, occ))
                if partner is not None:
                    add(node, kind, peer, partner)
            elif key[0] == "coll":
                for other in key[2] or tuple(by_rank):
                    if other != rank and other in by_rank:
                        partner = index[other].get((kind, key, None, occ))
                        if partner is not None:
                            add(node, kind, other, partner)
            elif peer == rank:  # rooted collective, evaluated on the root only
                for other in key[2] or tuple(by_rank):
                    if other != rank and other in by_rank:
                        partner = index[other].get((kind, key, peer, occ))
                        if partner is not None:
                            add(node, kind, other, partner)
                            add(partner, REVERSED[kind], rank, node)
    for node, entry in links.items():
        node.distributed = entry
    return len(links)
