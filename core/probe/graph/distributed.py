"""Cross-rank communication links (``matched_distributed``) between graphs of one step."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from probe.formats.msprobe.dtypes import PROCESS_GROUP
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
    return _int(row.stats[0]) if row is not None and row.dtype != PROCESS_GROUP else None


def _group(node: GraphNode) -> tuple[int, ...] | None:
    row = _arg(node, "group")
    if row is None or row.dtype != PROCESS_GROUP:
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


CommOp = tuple[str, str, tuple, "int | None", int, str]
"""One communication of a node: (node name, type, link key, peer, occurrence, value shown to partners)."""


def comm_ops(graph: Graph, compare: bool = False, overflow: bool = False) -> list[CommOp]:
    """The communications of one graph, in node order (small and picklable: what the cross-rank
    pass needs from a graph built in another process)."""
    counter: dict[tuple, int] = defaultdict(int)
    out: list[CommOp] = []
    for node in sorted(graph.nodes.values(), key=lambda n: n.order):
        if not node.name.startswith("Distributed."):
            continue
        value = _value(node, compare, overflow)
        for kind, key, peer in _ops(graph, node):
            ckey = (kind if key[0] == "p2p" else "", key, peer)
            occ = counter[ckey]
            counter[ckey] += 1
            out.append((node.name, kind, key, peer, occ, value))
    return out


def link_comm_ops(ops_by_rank: dict[int, list[CommOp]]) -> dict[tuple[int, str], dict]:
    """``matched_distributed`` of every linked node of one side and step, by (rank, node name)."""
    index = {
        rank: {(kind, key, peer, occ): (name, value) for name, kind, key, peer, occ, value in ops}
        for rank, ops in ops_by_rank.items()
    }
    values = {(rank, name): value for rank, ops in ops_by_rank.items() for name, *_rest, value in ops}
    ranks = tuple(ops_by_rank)
    links: dict[tuple[int, str], dict] = {}

    def add(rank: int, name: str, kind: str, other: int, partner: str) -> None:
        entry = links.setdefault((rank, name), {"communications_type": kind, "nodes_info": {}})
        entry["nodes_info"][str(other)] = [values[(other, partner)], partner]

    for rank, ops in ops_by_rank.items():
        for name, kind, key, peer, occ, _value_ in ops:
            if key[0] == "p2p":
                found = index.get(peer, {}).get((REVERSED[kind], key, rank, occ))
                if found is not None:
                    add(rank, name, kind, peer, found[0])
            elif key[0] == "coll":
                for other in key[2] or ranks:
                    if other != rank and other in index:
                        found = index[other].get((kind, key, None, occ))
                        if found is not None:
                            add(rank, name, kind, other, found[0])
            elif peer == rank:  # rooted collective, evaluated on the root only
                for other in key[2] or ranks:
                    if other != rank and other in index:
                        found = index[other].get((kind, key, peer, occ))
                        if found is not None:
                            add(rank, name, kind, other, found[0])
                            add(other, found[0], REVERSED[kind], rank, name)
    return links


def link_ranks(graphs: Sequence[Graph], compare: bool = False, overflow: bool = False) -> int:
    """Fill ``node.distributed`` for the graphs of one side and step; returns links written."""
    by_rank = {g.rank: g for g in graphs}
    links = link_comm_ops({g.rank: comm_ops(g, compare, overflow) for g in graphs})
    for (rank, name), entry in links.items():
        by_rank[rank].nodes[name].distributed = entry
    return len(links)
