"""Per-entry view of a finished comparison: nodes, their divergence and communication facts.

A *node* is one dump entry (``Functional.linear.0.forward``) of one rank with the results of
its rows. Everything here reads the in-memory :class:`probe.result.CompareResult`; nothing is
re-parsed from written reports. Works for every metric mode: statistics and tensor results
are judged on the dump's Max/Min/Mean/Norm (tensor dumps carry them too), md5 results on the
checksums.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import groupby
from operator import attrgetter
from typing import Any

from probe.formats.msprobe.dtypes import PROCESS_GROUP
from probe.formats.msprobe.names import COMM_PREFIXES, IGNORED_OPS, IGNORED_OUTPUTS
from probe.model import NA
from probe.modes.common import is_nan_or_inf
from probe.modes.statistics import StatisticsMode, stat_difference
from probe.numbers import as_number
from probe.result import CompareResult, RowResult
from probe.rowpack import pack, unpack

REL_COLUMNS = ("MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
DIFF_COLUMNS = ("Max diff", "Min diff", "Mean diff", "L2norm diff")
DA_THRESHOLD = 0.5
"""A relative error above this (as a fraction) makes an output differ for ``-da`` (msProbe's value)."""

COMM_KEYWORDS = (
    "send", "recv", "broadcast", "all_reduce", "reduce", "all_gather", "gather", "scatter",
    "all_to_all", "send_object_list", "recv_object_list",
)
P2P_PARTNER = {
    "send": "recv", "recv": "send", "isend": "irecv", "irecv": "isend",
    "send_object_list": "recv_object_list", "recv_object_list": "send_object_list",
}
PEER_KEYS = ("dst", "src", "group_dst", "group_src", "peer")
_INDEX = re.compile(r"\.(\d+)$")
ENTRY_OF = attrgetter("pair.target.entry")
"""The entry name of a row result (the key that groups its rows into nodes)."""


def api_of(entry: str) -> str:
    """The API (second dot component) of an entry name."""
    parts = entry.split(".")
    return parts[1] if len(parts) > 1 else entry


def is_ignored(entry: str) -> bool:
    """Whether ``entry`` is an op whose contents are not data flow (:data:`IGNORED_OPS`)."""
    return any(k in entry for k in IGNORED_OPS)


def is_comm_entry(entry: str) -> bool:
    """Whether ``entry`` is a communication op (``Distributed.all_reduce.0.forward``...)."""
    return entry.startswith(COMM_PREFIXES) and any(k in api_of(entry) for k in COMM_KEYWORDS)


def output_index(name: str, entry: str) -> int | None:
    """``k`` of ``<entry>.output.k[...]``, else ``None``."""
    rest = name[len(entry):] if name.startswith(entry) else name
    parts = rest.split(".")
    if len(parts) >= 3 and parts[1] == "output" and parts[2].isdigit():
        return int(parts[2])
    return None


def relative_errors(record: RowResult) -> tuple[list[str], list[str]]:
    """Statistics-style ``(diffs, relative errors)`` of a matched row, from the dump's stats."""
    golden = record.pair.golden
    if golden is None:
        return [NA] * 4, [NA] * 4
    diffs, rels = [], []
    for n, b in zip(record.pair.target.stats, golden.stats):
        d, r = stat_difference(n, b)
        diffs.append(d)
        rels.append(r)
    return diffs, rels


def _fraction(text: str) -> float | None:
    if isinstance(text, str) and text.endswith("%"):
        try:
            return abs(float(text[:-1])) / 100
        except ValueError:
            return None
    return None


def row_deviation(record: RowResult, md5: bool = False) -> float:
    """How far a matched target row is from its golden row, scale-aware, 0 when identical.

    Uses the changes of Norm (relative) and of Max/Min (relative to the golden value range),
    so a tensor whose mean is near zero does not look broken. md5 rows give 0 or inf; rows
    without statistics fall back to ``1 - Cosine``. Unmatched rows give 0, and so do rows whose
    shapes differ: that is a structure difference, not a precision one.
    """
    t, g = record.pair.target, record.pair.golden
    if g is None or t.shape != g.shape:
        return 0.0
    if md5:
        return 0.0 if t.md5 == g.md5 else math.inf
    tmax, tmin, _, tnorm = (as_number(v) for v in t.stats)
    gmax, gmin, _, gnorm = (as_number(v) for v in g.stats)
    if None in (tmax, tmin, gmax, gmin):
        if [str(v) for v in t.stats] != [str(v) for v in g.stats]:
            return _cosine_fallback(record)
        return 0.0
    for value in (tmax, tmin, tnorm):
        if value is not None and (math.isnan(value) or math.isinf(value)):
            golden_bad = any(v is not None and (math.isnan(v) or math.isinf(v)) for v in (gmax, gmin, gnorm))
            return 0.0 if golden_bad else math.inf
    scale = max(abs(gmax), abs(gmin))
    dev = 0.0
    if tnorm is not None and gnorm is not None:
        dev = _rel(tnorm - gnorm, abs(gnorm))
    dev = max(dev, _rel(tmax - gmax, scale), _rel(tmin - gmin, scale))
    return dev


def _rel(delta: float, scale: float) -> float:
    if delta == 0:
        return 0.0
    if scale == 0 or math.isnan(delta):
        return math.inf
    return abs(delta) / scale


def _cosine_fallback(record: RowResult) -> float:
    metrics = record.metrics
    if metrics:
        cos = as_number(metrics[0])
        if cos is not None and not math.isnan(cos):
            return max(0.0, 1.0 - cos)
    return 0.0


@dataclass
class Trip:
    """Why a node counts as different: the row and the metric that crossed the line."""

    row: str
    metric: str
    value: Any


@dataclass
class Node:
    """One entry of one rank, with its row results."""

    entry: str
    rank: int
    index: int
    records: list[RowResult]
    stack: list[str] | None = None
    is_same: bool = True
    trip: Trip | None = None
    layer: int = 0
    peers: dict[str, Any] = field(default_factory=dict)

    @property
    def api(self) -> str:
        return api_of(self.entry)

    @property
    def is_comm(self) -> bool:
        return is_comm_entry(self.entry)

    @property
    def is_ignored(self) -> bool:
        return is_ignored(self.entry)

    def stack_line(self) -> str | None:
        """The innermost stack line of user code (last "File" line outside site-packages), else the first."""
        if not self.stack:
            return None
        for line in self.stack:
            if "site-packages" not in line and "dist-packages" not in line:
                return " ".join(line.split())
        return " ".join(self.stack[0].split())

    def label(self) -> str:
        return f"rank {self.rank}: {self.entry}"

    def __repr__(self) -> str:
        state = "same" if self.is_same else "differs"
        if self.trip is not None:
            state += f" ({self.trip.row}: {self.trip.metric} {self.trip.value})"
        return f"Node({self.label()}, {len(self.records)} rows, {state})"


def _judge_da(node: Node, md5: bool, stat_metrics: bool = False) -> None:
    """msProbe's ``-da`` rule: an output row whose md5 differs or any relative error > 50%.

    ``stat_metrics`` says the records' metrics are statistics mode's eight cells, whose last
    four are exactly the relative errors :func:`relative_errors` would compute again.
    """
    ignored = IGNORED_OUTPUTS.get(node.api, frozenset())
    for record in node.records:
        if record.pair.golden is None or record.pair.target.state != "output":
            continue
        index = output_index(record.name, node.entry)
        if index is not None and index in ignored:
            continue
        t, g = record.pair.target, record.pair.golden
        if md5:
            if t.md5 != g.md5:
                node.is_same = False
                node.trip = Trip(record.name, "md5", f"{t.md5} vs {g.md5}")
                return
            continue
        rels = record.metrics[4:8] if stat_metrics else relative_errors(record)[1]
        for column, text in zip(REL_COLUMNS, rels):
            fraction = _fraction(text)
            if fraction is not None and fraction > DA_THRESHOLD:
                node.is_same = False
                node.trip = Trip(record.name, column, text)
                return
        if has_nan_inf(t.stats) and not has_nan_inf(g.stats):
            node.is_same = False
            node.trip = Trip(record.name, "NaN/inf", f"NPU max {display_stat(t.stats[0])}, min {display_stat(t.stats[1])}")
            return


def _peer_values(records: Iterable[RowResult]) -> dict[str, Any]:
    """Communication facts of an entry: peer ranks and the group's ranks, as found in its inputs."""
    facts: dict[str, Any] = {}
    for record in records:
        t = record.pair.target
        if t.state != "input":
            continue
        last = t.name.rsplit(".", 1)[-1]
        if t.dtype == PROCESS_GROUP or last == "group":
            ranks = _parse_ranks(t.stats[0])
            if ranks is not None:
                facts["group"] = ranks
        elif last in PEER_KEYS:
            value = as_number(t.stats[0])
            if value is not None:
                facts[last] = int(value)
        if t.extra and t.extra.get("peer") is not None:
            facts.setdefault("peer", t.extra["peer"])
    # positional peer (send(tensor, dst) / recv(tensor, src) / broadcast(tensor, src))
    for record in records:
        t = record.pair.target
        if t.state == "input" and t.name.endswith(".input.1") and t.dtype == "<class 'int'>" and "positional" not in facts:
            value = as_number(t.stats[0])
            if value is not None:
                facts["positional"] = int(value)
    return facts


def _parse_ranks(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, str):
        items = re.findall(r"\d+", value)
    else:
        return None
    try:
        ranks = tuple(int(v) for v in items)
    except (TypeError, ValueError):
        return None
    return ranks or None


def build_nodes(
    result: CompareResult,
    rank: int | None = None,
    keep: Callable[[str], bool] | None = None,
    judge: bool = True,
) -> list[Node]:
    """The nodes of one result in target order, each judged with the ``-da`` rule.

    With ``keep``, only the entries it accepts become nodes (their ``index`` still counts
    every entry), which spares judging entries a caller would discard. With ``judge``
    false the ``-da`` rule is not applied (``is_same`` and ``trip`` keep their defaults),
    for callers that never read them.
    """
    rank = result.rank if rank is None else rank
    rank = 0 if rank is None else rank
    md5 = result.mode.name == "md5"
    stat_metrics = type(result.mode) is StatisticsMode  # its metrics hold the relative errors
    stack = (result.stack or {}).get
    nodes: list[Node] = []
    append = nodes.append
    for index, (entry, group) in enumerate(groupby(result.records, key=ENTRY_OF)):
        if keep is not None and not keep(entry):
            continue
        records = list(group)
        node = Node(entry, rank, index, records, stack(entry))
        if judge and len(entry.split(".")) >= 4:
            _judge_da(node, md5, stat_metrics)
        if entry.startswith(COMM_PREFIXES) and is_comm_entry(entry):  # node.is_comm
            node.peers = _peer_values(records)
        append(node)
    return nodes


PortableNode = tuple[str, int, bool, list, dict[str, Any]]
"""A node as plain values (:func:`portable`)."""


def portable(nodes: list[Node]) -> list[PortableNode]:
    """``nodes`` as plain values to pickle between probe's own processes (:func:`restored` makes them
    again): the rows packed by :func:`probe.rowpack.pack` when it can; stack and ``-da`` verdict left out."""
    out = []
    for node in nodes:
        try:
            out.append((node.entry, node.index, True, pack(node.records), node.peers))
        except TypeError:  # a record class probe.rowpack does not know: pickled as it is
            out.append((node.entry, node.index, False, node.records, node.peers))
    return out


def restored(items: list[PortableNode], rank: int, stack: dict[str, list[str]]) -> list[Node]:
    """The nodes :func:`portable` gave, of rank ``rank`` with the stacks of ``stack`` (unjudged)."""
    return [Node(entry, rank, index, unpack(records) if packed else records, stack.get(entry), peers=peers)
            for entry, index, packed, records, peers in items]


def display_stat(value: Any) -> Any:
    """A statistic as JSON can hold it (``None`` -> "None", NaN -> "Nan", inf -> "inf")."""
    if value is None:
        return "None"
    if isinstance(value, float):
        if math.isnan(value):
            return "Nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def has_nan_inf(stats: tuple[Any, ...]) -> bool:
    """Whether Max or Min is NaN or infinite (``False`` for a row without statistics, e.g. an unreadable tensor)."""
    return len(stats) >= 2 and (is_nan_or_inf(stats[0]) or is_nan_or_inf(stats[1]))
