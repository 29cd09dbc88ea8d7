"""Collective consistency: ranks of one group must agree on the outputs a collective shares.

After ``all_reduce``, ``all_gather`` (and its ``_base``/``into_tensor`` forms) and
``broadcast``, every rank of the group holds the same data. If the target dump shows ranks
that disagree, the communication itself (or a rank that joined with wrong data and a
wrong-order call) is broken, whatever the golden run says. The check reads the target side's
statistics (or md5) of each output row; ranks are compared per op occurrence and group.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from probe.analysis.nodes import Node

SHARED_OUTPUT_APIS = ("all_reduce", "all_gather", "broadcast", "_all_gather_base", "all_gather_into_tensor")
RTOL = 1e-5


@dataclass
class Disagreement:
    """One collective whose ranks disagree."""

    op: str
    group: tuple[int, ...]
    ranks: tuple[int, ...]
    """Ranks whose output differs from the majority (from the lowest rank with two ranks)."""
    row: str
    values: dict[int, Any]


def shares_output(api: str) -> bool:
    """Whether every rank of the group ends with the same output after ``api``."""
    base = api.split("_rank")[0]
    return any(base == name or base.startswith(name) for name in SHARED_OUTPUT_APIS) and "scatter" not in base


def _fingerprint(record: Any, md5: bool) -> tuple:
    t = record.pair.target
    if md5:
        return (t.md5,)
    return tuple(_rounded(v) for v in t.stats) + (t.shape, t.dtype)


def _rounded(value: Any) -> Any:
    if isinstance(value, float) and math.isfinite(value) and value != 0:
        digits = -int(math.floor(math.log10(abs(value)))) + 4
        return round(value, digits)
    return value


def check_collectives(nodes_by_rank: dict[int, list[Node]], md5: bool = False) -> tuple[int, list[Disagreement]]:
    """Compare shared outputs of collectives across ranks; returns (ops checked, disagreements in order)."""
    all_ranks = tuple(sorted(nodes_by_rank))
    occurrences: dict[tuple, dict[int, Node]] = defaultdict(dict)
    order: dict[tuple, tuple[int, int]] = {}
    for rank, nodes in nodes_by_rank.items():
        seen: Counter = Counter()
        for node in nodes:
            if not node.is_comm or not shares_output(node.api) or ".backward" in node.entry:
                continue
            group = tuple(node.peers.get("group") or all_ranks)
            ident = (node.api, group)
            key = ident + (seen[ident],)
            seen[ident] += 1
            occurrences[key][rank] = node
            order[key] = min(order.get(key, (node.index, rank)), (node.index, rank))
    checked = 0
    found: list[Disagreement] = []
    for key in sorted(occurrences, key=lambda k: order[k]):
        members = occurrences[key]
        group = key[1]
        present = {r: n for r, n in members.items() if r in group or not group}
        if len(present) < 2:
            continue
        checked += 1
        disagreement = _compare(present, group, md5)
        if disagreement is not None:
            found.append(disagreement)
    return checked, found


def _outputs(node: Node) -> dict[str, Any]:
    prefix = len(node.entry)
    return {r.pair.target.name[prefix:]: r for r in node.records if r.pair.target.state == "output"}


def _compare(members: dict[int, Node], group: tuple[int, ...], md5: bool) -> Disagreement | None:
    per_rank = {rank: _outputs(node) for rank, node in sorted(members.items())}
    suffixes = sorted(set().union(*(set(o) for o in per_rank.values())))
    for suffix in suffixes:
        prints = {rank: _fingerprint(o[suffix], md5) for rank, o in per_rank.items() if suffix in o}
        if len(set(prints.values())) <= 1 or _close(list(prints.values())):
            continue
        counts = Counter(prints.values())
        top, top_count = counts.most_common(1)[0]
        if top_count * 2 <= len(prints):  # no majority: compare with the lowest rank
            top = prints[min(prints)]
        odd = tuple(rank for rank, fp in prints.items() if fp != top and not _close([fp, top]))
        node = members[min(odd)] if odd else members[min(members)]
        values = {rank: o[suffix].pair.target.stats if not md5 else o[suffix].pair.target.md5
                  for rank, o in per_rank.items() if suffix in o}
        return Disagreement(op=node.entry, group=group, ranks=odd, row=node.entry + suffix, values=values)
    return None


def _close(prints: list[tuple]) -> bool:
    """Whether all fingerprints agree within :data:`RTOL` (numbers) and exactly (text)."""
    first = prints[0]
    for other in prints[1:]:
        if len(other) != len(first):
            return False
        for a, b in zip(first, other):
            if isinstance(a, float) and isinstance(b, float):
                if not math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-12):
                    return False
            elif a != b:
                return False
    return True
