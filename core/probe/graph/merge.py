"""Parallel merge (``--rank_size/--tp/--pp/--vpp/--order``): fold the per-rank graphs of a
tensor/pipeline-parallel run into one graph per data-parallel replica.

* TP merge: same-name nodes of the ranks of a TP group get merged statistics
  (Max = max, Min = min, Mean = average, Norm = sqrt of the sum of squares).
* PP merge: the graphs of the stages of a PP group are attached to the first stage's graph;
  split layers (``layers.<n>.``) are renumbered consecutively, APIs taken from other ranks get
  ``_rank<r>``, wrappers present on every stage take the last stage's outputs (backward: inputs).
* VPP: every model chunk (``Module.<c>.``) is folded into chunk 0, in virtual-pipeline execution order.
* Root-level API collections of a group become ``Apis_Between_Modules_All_Ranks.<k>`` holding one
  ``Apis_Between_Modules_Rank<r>.<k>`` per rank.

Groups are discovered from the dumps (TP: ``group_ranks`` of the first all_reduce/reduce_scatter,
PP: chains of the first send destination) and fall back to the default groups built from
``(rank_size, tp, pp, order)`` when discovery fails or disagrees with the parameters.
"""

from __future__ import annotations

import logging
import math
import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from probe.errors import InputError
from probe.formats.msprobe.dtypes import PROCESS_GROUP
from probe.model import Row

from probe.graph.distributed import SEND, _group, _ops
from probe.graph.rules import NO_RULES, GraphRuleSet
from probe.graph.node import API, COLLECTION, COLLECTION_PREFIX, MODULE, Graph, GraphNode

log = logging.getLogger(__name__)

ALL_RANKS = f"{COLLECTION_PREFIX}_All_Ranks"
_FLOAT_WORDS = ("float", "Float", "bfloat", "BFloat", "half", "Half")
_ORDER_RE = re.compile(r"^[a-z]+(-[a-z]+)*$")
_ORDER_TOKENS = ("tp", "cp", "ep", "dp", "pp")
_TP_APIS = ("all_reduce", "reduce_scatter", "_reduce_scatter_base", "reduce_scatter_tensor")
_LAYER_RE = re.compile(r"(?:^|\.)(?:layers?)\.(\d+)\.")
_CHUNK_RE = re.compile(r"^(Module|Cell)\.(\d+)\.")
_RANK_SUFFIX = re.compile(r"_rank(\d+)")
_COLLECTION_RE = re.compile(rf"^{COLLECTION_PREFIX}\.(\d+)$")
PARTIAL_NOTE = ("{row}: each rank holds a partial sum; the merged value is the output of {reduce}: "
                "Max = {stats[0]!r}, Min = {stats[1]!r}, Mean = {stats[2]!r}, Norm = {stats[3]!r}")
UNREDUCED_NOTE = ("{row}: each rank holds a partial sum (gradient of the replicated input of a "
                  "ColumnParallelLinear) and no all_reduce/reduce_scatter of it was dumped: left as rank {rank}'s value")
TP_NOTE = "This data is the merged data after tensor parallelism(TP), and the data is merged from rank {ranks}."
PP_NOTE = "This node comes from rank {rank} of the pipeline parallelism(PP) group {ranks}{renamed}."
WRAPPER_NOTE = ("This data is the merged data after pipeline parallelism(PP): the {what} are taken from rank "
                "{rank}, the last stage of the group {ranks}.")


@dataclass
class Groups:
    """TP and PP groups of one step (lists of ranks; the first rank of a group is its main rank)."""

    tp: list[list[int]]
    pp: list[list[int]]
    discovered: bool


# --------------------------------------------------------------------------------------
# validation and groups
# --------------------------------------------------------------------------------------


def validate(options, path: Path | None = None) -> None:
    """One-line errors for impossible merge parameters."""
    rank_size, tp, pp, vpp, order = options.rank_size, options.tp, options.pp, options.vpp, options.order
    if min(rank_size, tp, pp, vpp) < 1:
        raise InputError("--rank_size/--tp/--pp/--vpp must be positive", path)
    if rank_size % tp or rank_size % pp or tp * pp > rank_size:
        raise InputError(f"--tp {tp} and --pp {pp} must divide --rank_size {rank_size} (and tp*pp <= rank_size)", path)
    if vpp > 1 and pp == 1:
        raise InputError("--vpp > 1 needs --pp > 1", path)
    if not _ORDER_RE.match(order):
        raise InputError(f"--order {order!r} must be lower-case letters joined by '-'", path)
    tokens = order.split("-")
    unknown = [t for t in tokens if t not in _ORDER_TOKENS]
    if unknown or len(set(tokens)) != len(tokens):
        raise InputError(f"--order {order!r} must name each of {', '.join(_ORDER_TOKENS)} at most once", path)
    missing = [t for t, size in (("tp", tp), ("pp", pp), ("dp", rank_size // (tp * pp))) if size > 1 and t not in tokens]
    if missing:
        raise InputError(f"--order {order!r} does not name {', '.join(missing)}", path)


def default_groups(rank_size: int, tp: int, pp: int, order: str = "tp-cp-ep-dp-pp") -> Groups:
    """The default rank groups of ``--order``: the first token varies fastest.

    >>> default_groups(8, 2, 2).tp, default_groups(8, 2, 2).pp
    ([[0, 1], [2, 3], [4, 5], [6, 7]], [[0, 4], [1, 5], [2, 6], [3, 7]])
    """
    sizes = {"tp": tp, "pp": pp, "dp": rank_size // (tp * pp), "cp": 1, "ep": 1}
    tokens = [t for t in order.split("-") if t in sizes]
    tokens += [t for t in ("tp", "dp", "pp") if t not in tokens]
    strides: dict[str, int] = {}
    stride = 1
    for token in tokens:
        strides[token] = stride
        stride *= sizes[token]

    def groups_of(token: str) -> list[list[int]]:
        seen: set[int] = set()
        out: list[list[int]] = []
        for rank in range(rank_size):
            if rank in seen:
                continue
            base = rank - ((rank // strides[token]) % sizes[token]) * strides[token]
            group = [base + i * strides[token] for i in range(sizes[token])]
            seen.update(group)
            out.append(group)
        return out

    return Groups(tp=groups_of("tp"), pp=groups_of("pp"), discovered=False)


def _api(node: GraphNode) -> str:
    parts = node.name.split(".")
    return parts[1] if len(parts) > 1 else ""


def _first_tp_group(graph: Graph) -> tuple[int, ...] | None:
    for node in sorted(graph.nodes.values(), key=lambda n: n.order):
        if node.name.startswith("Distributed.") and _api(node) in _TP_APIS:
            group = _group(node)
            if group:
                return group
    return None


def _first_send(graph: Graph) -> int | None:
    for node in sorted(graph.nodes.values(), key=lambda n: n.order):
        if not node.name.startswith("Distributed.") or ".backward" in node.name:
            continue
        for kind, _key, peer in _ops(graph, node):
            if kind == SEND and peer is not None and peer != graph.rank:
                return peer
    return None


def _is_partition(groups: list[list[int]], ranks: set[int], size: int) -> bool:
    flat = [r for g in groups for r in g]
    return all(len(g) == size for g in groups) and len(flat) == len(set(flat)) and set(flat) == ranks


def discover_tp(graphs: Sequence[Graph], tp: int) -> list[list[int]] | None:
    """TP groups from the ``group_ranks`` of each rank's first all_reduce/reduce_scatter."""
    if tp == 1:
        return [[g.rank] for g in graphs]
    found: dict[tuple[int, ...], None] = {}
    for graph in graphs:
        group = _first_tp_group(graph)
        if group is None or graph.rank not in group:
            return None
        found[tuple(sorted(group))] = None
    groups = [list(g) for g in found]
    return groups if _is_partition(groups, {g.rank for g in graphs}, tp) else None


def discover_pp(graphs: Sequence[Graph], pp: int) -> list[list[int]] | None:
    """PP groups by chaining each rank's first send destination (send/isend/batch_isend_irecv)."""
    ranks = {g.rank for g in graphs}
    if pp == 1:
        return [[r] for r in sorted(ranks)]
    following = {g.rank: peer for g in graphs if (peer := _first_send(g)) is not None and peer in ranks}
    targets = set(following.values())
    groups: list[list[int]] = []
    for start in sorted(ranks - targets):
        chain = [start]
        while chain[-1] in following and following[chain[-1]] not in chain:
            chain.append(following[chain[-1]])
        groups.append(chain)
    return groups if _is_partition(groups, ranks, pp) else None


def find_groups(graphs: Sequence[Graph], options) -> Groups:
    """Discovered groups when they fit the parameters, else the defaults of ``--order``."""
    tp_groups = discover_tp(graphs, options.tp)
    pp_groups = discover_pp(graphs, options.pp)
    default = default_groups(options.rank_size, options.tp, options.pp, options.order)
    if tp_groups is None or pp_groups is None:
        log.info("parallel merge: rank groups not found in the dumps, using the default groups of --order %s",
                 options.order)
        return default
    return Groups(tp=tp_groups, pp=pp_groups, discovered=True)


# --------------------------------------------------------------------------------------
# node helpers
# --------------------------------------------------------------------------------------


def _num(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _to_dtype(value: float, dtype: str) -> float:
    """Round ``value`` to the precision of a low-precision float dtype."""
    lowered = dtype.lower()
    if "bfloat16" in lowered:
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("<f", struct.pack("<I", bits))[0]
    if "float16" in lowered or "half" in lowered:
        try:
            return struct.unpack("<e", struct.pack("<e", value))[0]
        except OverflowError:
            return value
    return value


def _fmt(value: float) -> str:
    return repr(value)


def merge_stats(rows: Sequence[Row]) -> tuple[tuple, str] | None:
    """Merged (Max, Min, Mean, Norm) of a row's shards and its formula, or ``None`` when the
    ranks agree (replicated data) or a value is missing."""
    values = [tuple(_num(v) for v in r.stats) for r in rows]
    if any(None in v for v in values):
        return None
    first = values[0]
    if all(math.isclose(v[2], first[2], rel_tol=1e-6) and math.isclose(v[3], first[3], rel_tol=1e-6) for v in values):
        return None
    dtype = rows[0].dtype
    merged = tuple(_to_dtype(x, dtype) for x in (
        max(v[0] for v in values), min(v[1] for v in values),
        sum(v[2] for v in values) / len(values), math.sqrt(sum(v[3] ** 2 for v in values)),
    ))
    formula = (
        f"{rows[0].name}: Max = max({', '.join(_fmt(v[0]) for v in values)}) = {_fmt(merged[0])}; "
        f"Min = min({', '.join(_fmt(v[1]) for v in values)}) = {_fmt(merged[1])}; "
        f"Mean = ({' + '.join(_fmt(v[2]) for v in values)}) / {len(values)} = {_fmt(merged[2])}; "
        f"Norm = sqrt({' + '.join(_fmt(v[3]) + '^2' for v in values)}) = {_fmt(merged[3])}"
    )
    return merged, formula


def _rows_equal(left: Sequence[Row], right: Sequence[Row]) -> bool:
    if len(left) != len(right):
        return False
    return all(a.dtype == b.dtype and a.shape == b.shape and tuple(map(str, a.stats)) == tuple(map(str, b.stats))
               for a, b in zip(left, right))


def rank_api_name(name: str, rank: int) -> str:
    """``Distributed.all_reduce.0.forward`` -> ``Distributed.all_reduce_rank1.0.forward``."""
    parts = name.split(".")
    if len(parts) < 2:
        return f"{name}_rank{rank}"
    parts[1] = f"{parts[1]}_rank{rank}"
    return ".".join(parts)


def rename_node(graph: Graph, node: GraphNode, new: str) -> None:
    """Give ``node`` (and its rows) a new name inside ``graph``."""
    old = node.name
    graph.nodes[new] = node
    if new == old:
        return
    if graph.nodes.get(old) is node:
        del graph.nodes[old]
    node.name = new
    for row in (*node.inputs, *node.outputs):
        if row.name.startswith(old):
            row.name = new + row.name[len(old):]
        row.entry = new
        row.key = row.name


def _plain(name: str, stage_of: dict[int, int]) -> str:
    """A node name whose ``_rank<k>`` suffixes name the pipeline stage of rank k instead (what the
    TP twins of an API moved by a PP merge share)."""
    if "_rank" not in name:
        return name
    return _RANK_SUFFIX.sub(lambda m: f"_stage{stage_of.get(int(m.group(1)), m.group(1))}", name)


def _subtree(node: GraphNode) -> list[GraphNode]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(current.children)
    return out


# --------------------------------------------------------------------------------------
# API collections
# --------------------------------------------------------------------------------------


def merge_collections(main: Graph, others: Sequence[tuple[Graph, int]]) -> None:
    """Fold the root-level ``Apis_Between_Modules.<k>`` of every rank into
    ``Apis_Between_Modules_All_Ranks.<k>`` > ``Apis_Between_Modules_Rank<r>.<k>``."""
    per_k: dict[int, list[tuple[int, GraphNode, Graph]]] = {}
    for graph, rank in ((main, main.rank), *others):
        for child in graph.root.children:
            found = _COLLECTION_RE.match(child.name) if child.kind == COLLECTION else None
            if found:
                per_k.setdefault(int(found.group(1)), []).append((rank, child, graph))
    for k, members in sorted(per_k.items()):
        holder = GraphNode(f"{ALL_RANKS}.{k}", COLLECTION)
        position = None
        for rank, coll, graph in members:
            if graph is main:
                position = main.root.children.index(coll)
            else:
                for api in list(coll.children):
                    rename_node(graph, api, rank_api_name(api.name, rank))
                    graph.nodes.pop(api.name, None)
                    main.nodes[api.name] = api
            graph.nodes.pop(coll.name, None)
            if coll.parent is not None and coll in coll.parent.children and graph is not main:
                coll.parent.children.remove(coll)
            coll.name = f"{COLLECTION_PREFIX}_Rank{rank}.{k}"
            main.nodes[coll.name] = coll
            holder.add_child(coll)
        holder.micro_step = holder.children[0].micro_step
        holder.parent = main.root
        main.nodes[holder.name] = holder
        if position is None:
            main.root.children.append(holder)
        else:
            main.root.children[position] = holder


# --------------------------------------------------------------------------------------
# TP
# --------------------------------------------------------------------------------------


def _row_key(row: Row) -> tuple:
    return (row.dtype, str(row.shape), *map(str, row.stats))


def _reductions(graph: Graph) -> dict[tuple, GraphNode]:
    """Every tensor fed to an all_reduce / reduce_scatter of ``graph``, by (dtype, shape, statistics)."""
    out: dict[tuple, GraphNode] = {}
    for node in graph.nodes.values():
        if node.name.startswith("Distributed.") and _api(node).split("_rank")[0] in _TP_APIS and node.outputs:
            for row in node.inputs:
                if row.dtype != PROCESS_GROUP and _num(row.stats[3]) is not None:
                    out.setdefault(_row_key(row), node)
    return out


def _reduced(rows: Sequence[Row], reductions: Sequence[dict[tuple, GraphNode]]) -> tuple[tuple, str] | None:
    """Statistics of the reduced tensor when every rank's ``rows[i]`` is fed to the same reduction."""
    found = [table.get(_row_key(row)) for row, table in zip(rows, reductions)]
    if any(f is None or not f.outputs for f in found) or len({_api(f).split("_rank")[0] for f in found}) != 1:
        return None
    outs = [f.outputs[0] for f in found]
    merged = merge_stats(outs)
    stats = merged[0] if merged is not None else tuple(_num(v) for v in outs[0].stats)
    if None in stats:
        return None
    return stats, found[0].name


def _merge_partial_sums(node: GraphNode, twins: Sequence[GraphNode], reductions, rank: int,
                        rules: GraphRuleSet) -> tuple[set[int], list[str]]:
    """Outputs the graph rules call TP partial sums (e.g. of a matmul whose inputs are split) that a following
    all_reduce / reduce_scatter sums over the TP ranks take the reduced statistics."""
    partial = rules.partial_sums(node)
    if partial is None or not partial.rows or any(len(t.outputs) != len(node.outputs) for t in twins):
        return set(), []
    done: set[int] = set()
    notes: list[str] = []
    for index in partial.rows:
        rows = [node.outputs[index], *(t.outputs[index] for t in twins)]
        reduced = _reduced(rows, reductions)
        if reduced is not None:
            stats, reduce_name = reduced
            row = node.outputs[index]
            row.stats = tuple(_to_dtype(x, row.dtype) for x in stats)
            notes.append(PARTIAL_NOTE.format(row=row.name, reduce=reduce_name, stats=row.stats))
            done.add(index)
        elif partial.unreduced and merge_stats(rows) is not None:
            notes.append(UNREDUCED_NOTE.format(row=node.outputs[index].name, rank=rank))
            done.add(index)
    return done, notes


def tp_merge(graphs: Sequence[Graph], stage_of: dict[int, int] | None = None,
             rules: GraphRuleSet = NO_RULES) -> Graph:
    """Merge the statistics of same-name, same-parent nodes of a TP group into its first graph.

    ``stage_of`` (rank -> pipeline stage) pairs the APIs a PP merge suffixed with different ranks;
    ``rules`` say which outputs are partial sums.
    """
    stage_of = stage_of or {}
    main = graphs[0]
    if len(graphs) == 1:
        return main
    ranks = [g.rank for g in graphs]
    note = TP_NOTE.format(ranks=ranks)
    lookups = [{_plain(n, stage_of): node for n, node in g.nodes.items()} for g in graphs[1:]]
    reductions = [_reductions(g) for g in graphs]
    for name, node in main.nodes.items():
        if not node.has_data or (node.parent is not None and node.parent.kind == COLLECTION):
            continue
        if name.startswith("Distributed."):  # communication buffers are not shards of one tensor
            continue
        key = _plain(name, stage_of)
        twins = [lookup.get(key) for lookup in lookups]
        parent_name = _plain(node.parent.name, stage_of) if node.parent is not None else None
        if any(t is None or not t.has_data or (_plain(t.parent.name, stage_of) if t.parent else None) != parent_name
               for t in twins):
            continue
        reduced, formulas = _merge_partial_sums(node, twins, reductions, main.rank, rules)
        for attr in ("inputs", "outputs"):
            mine = getattr(node, attr)
            others = [getattr(t, attr) for t in twins]
            if any(len(o) != len(mine) for o in others):
                continue
            for index, row in enumerate(mine):
                if (attr == "outputs" and index in reduced) or not any(w in row.dtype for w in _FLOAT_WORDS):
                    continue
                merged = merge_stats([row, *(o[index] for o in others)])
                if merged is not None:
                    row.stats = merged[0]
                    formulas.append(merged[1])
        if formulas:
            node.merge_info = [note, *formulas, *node.merge_info]
    merge_collections(main, [(g, g.rank) for g in graphs[1:]])
    main.number()
    return main


# --------------------------------------------------------------------------------------
# PP / VPP
# --------------------------------------------------------------------------------------


def _chunk_of(name: str) -> int | None:
    found = _CHUNK_RE.match(name)
    return int(found.group(2)) if found else None


def _chunk_renamer(chunk: int) -> Callable[[str], str]:
    if chunk == 0:
        return lambda name: name
    prefix = re.compile(rf"^(Module|Cell)\.{chunk}\.")
    return lambda name: prefix.sub(r"\1.0.", name, count=1)


class _LayerNumbers:
    """Consecutive renumbering of ``layers.<n>.`` across the stages (and chunks) of a PP group."""

    def __init__(self) -> None:
        self.next: dict[str, int] = {}

    @staticmethod
    def _key(name: str) -> tuple[str, int, re.Match] | None:
        found = _LAYER_RE.search(name)
        if not found:
            return None
        return name[: found.start(1)], int(found.group(1)), found

    def plan(self, names: Sequence[str]) -> dict[str, int]:
        """Offset per layer-list prefix for one unit (0 when its numbers are already global)."""
        local: dict[str, list[int]] = {}
        for name in names:
            key = self._key(name)
            if key is not None:
                local.setdefault(key[0], []).append(key[1])
        offsets: dict[str, int] = {}
        for prefix, numbers in local.items():
            start = self.next.get(prefix, 0)
            offsets[prefix] = start if min(numbers) < start else 0
            self.next[prefix] = max(numbers) + offsets[prefix] + 1
        return offsets

    def apply(self, name: str, offsets: dict[str, int]) -> str:
        key = self._key(name)
        if key is None or not offsets.get(key[0]):
            return name
        prefix, number, found = key
        return f"{prefix}{number + offsets[prefix]}{name[found.end(1):]}"


@dataclass
class _Unit:
    """One stage (and, with VPP, one model chunk) of a PP group, in execution order."""

    graph: Graph
    rank: int
    chunk: int | None
    tops: list[GraphNode]


def _units(graphs: Sequence[Graph], vpp: int) -> list[_Unit]:
    if vpp <= 1:
        return [_Unit(g, g.rank, None, list(g.root.children)) for g in graphs]
    chunks: dict[tuple[int, int], list[GraphNode]] = {}
    for index, graph in enumerate(graphs):
        for top in graph.root.children:
            chunk = _chunk_of(top.name)
            chunks.setdefault((chunk or 0, index), []).append(top)
    return [_Unit(graphs[i], graphs[i].rank, c, tops) for (c, i), tops in sorted(chunks.items())]


def _is_backward(node: GraphNode) -> bool:
    return ".backward" in node.name


def _wrapper_merge(target: GraphNode, source: GraphNode, rank: int, ranks: list[int]) -> None:
    """A node present on several stages keeps the last stage's outputs (backward: inputs)."""
    if not source.has_data:
        return
    if not target.has_data:
        target.inputs, target.outputs, target.has_data = source.inputs, source.outputs, True
        return
    backward = _is_backward(target)
    same, taken = ("outputs", "inputs") if backward else ("inputs", "outputs")
    if _rows_equal(getattr(target, same), getattr(source, same)) and not _rows_equal(
        getattr(target, taken), getattr(source, taken)
    ):
        rows = getattr(source, taken)
        for row in rows:
            row.name = target.name + row.name[len(source.name):] if row.name.startswith(source.name) else row.name
            row.entry = target.name
        setattr(target, taken, rows)
        target.merge_info = [WRAPPER_NOTE.format(what=taken, rank=rank, ranks=ranks)]


def pp_merge(graphs: Sequence[Graph], vpp: int = 1) -> Graph:
    """Attach the stages of one PP group (first rank = first stage) to the first stage's graph."""
    main = graphs[0]
    if len(graphs) == 1 and vpp <= 1:
        return main
    ranks = [g.rank for g in graphs]
    numbers = _LayerNumbers()
    merge_collections(main, [(g, g.rank) for g in graphs[1:]])
    units = _units(graphs, vpp)
    main.root.children = []
    for unit in units:
        rename_chunk = _chunk_renamer(unit.chunk or 0)
        modules = [n.name for top in unit.tops for n in _subtree(top) if n.kind == MODULE]
        offsets = numbers.plan([rename_chunk(n) for n in modules])

        def new_name(node: GraphNode, unit: _Unit = unit, offsets: dict[str, int] = offsets,
                     rename_chunk: Callable[[str], str] = rename_chunk) -> str:
            if node.kind == API:
                return node.name if unit.graph is main else rank_api_name(node.name, unit.rank)
            if node.kind == MODULE:
                return numbers.apply(rename_chunk(node.name), offsets)
            return node.name

        insert_at: dict[int, int] = {}
        for top in unit.tops:
            _absorb(main, main.root, top, unit, ranks, new_name, insert_at)
    main.number()
    return main


def _absorb(
    main: Graph, parent: GraphNode, node: GraphNode, unit: _Unit, ranks: list[int],
    new_name: Callable[[GraphNode], str], insert_at: dict[int, int], attach: bool = False,
) -> None:
    """Merge ``node`` (from ``unit``) under ``parent`` of the main graph.

    A node of the main graph keeps its place; a node whose name already exists in the main
    graph (a wrapper present on every stage) is merged into it; anything else is attached
    with its subtree (``attach`` then holds for the whole subtree).
    """
    name = new_name(node)
    existing = main.nodes.get(name)
    children = list(node.children)
    if not attach and existing is not None and existing is not node and existing.kind == node.kind:
        if unit.graph.nodes.get(node.name) is node:
            del unit.graph.nodes[node.name]
        _wrapper_merge(existing, node, unit.rank, ranks)
        for child in children:
            _absorb(main, existing, child, unit, ranks, new_name, insert_at)
        return
    old = node.name
    own = unit.graph is main and existing is node
    if not own:
        if unit.graph.nodes.get(old) is node:
            del unit.graph.nodes[old]
        if name in main.nodes:
            name = f"{name}_rank{unit.rank}"
        rename_node(main, node, name)
        if node.kind != COLLECTION and (unit.graph is not main or old != name):
            renamed = f", renamed from {old}" if old != name else ""
            node.merge_info = [PP_NOTE.format(rank=unit.rank, ranks=ranks, renamed=renamed)]
    node.children = []
    _place(parent, node, insert_at)
    for child in children:
        _absorb(main, node, child, unit, ranks, new_name, insert_at, attach=attach or not own)


def _place(parent: GraphNode, node: GraphNode, insert_at: dict[int, int]) -> None:
    """Append under forward parents; under backward parents a later stage goes first."""
    node.parent = parent
    if _is_backward(parent):
        index = insert_at.get(id(parent), 0)
        parent.children.insert(index, node)
        insert_at[id(parent)] = index + 1
    else:
        parent.children.append(node)


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------


def strategy(options) -> str:
    """``none``, ``tp``, ``pp``, ``vpp``, ``pp-tp`` or ``full``."""
    rank_size, tp, pp = options.rank_size, options.tp, options.pp
    if rank_size == 1 or (tp == 1 and pp == 1):
        return "none"
    if tp == rank_size or pp == 1:
        return "tp"
    if pp == rank_size or tp == 1:
        return "vpp" if options.vpp > 1 else "pp"
    if tp * pp == rank_size:
        return "pp-tp"
    return "full"


def merge_step(graphs: Sequence[Graph], options, path: Path | None = None,
               rules: GraphRuleSet = NO_RULES) -> list[Graph]:
    """Merge the graphs of one step; returns one graph per data-parallel replica."""
    kind = strategy(options)
    if kind == "none":
        return list(graphs)
    by_rank = {g.rank: g for g in graphs}
    groups = find_groups(graphs, options)
    if kind == "tp":
        return [tp_merge([by_rank[r] for r in group], rules=rules) for group in groups.tp]
    merged = {group[0]: pp_merge([by_rank[r] for r in group], options.vpp) for group in groups.pp}
    if kind in ("pp", "vpp"):
        return [merged[group[0]] for group in groups.pp]
    stage_of = {rank: stage for group in groups.pp for stage, rank in enumerate(group)}
    out: list[Graph] = []
    for group in groups.tp:
        members = [merged[r] for r in group if r in merged]
        if len(members) == len(group):
            out.append(tp_merge(members, stage_of, rules))
    if not out:
        raise InputError("parallel merge: no TP group is made of first pipeline stages; check --order", path)
    return out


def merge_side(graphs: list[Graph], options, path: Path | None, rules: GraphRuleSet = NO_RULES) -> list[Graph]:
    """Merge the graphs of one side (every step) according to ``options`` and the graph rules."""
    validate(options, path)
    by_step: dict[int, list[Graph]] = {}
    for graph in graphs:
        by_step.setdefault(graph.step, []).append(graph)
    out: list[Graph] = []
    for step_graphs in by_step.values():
        if len(step_graphs) != options.rank_size:
            raise InputError(f"has {len(step_graphs)} rank dirs but --rank_size is {options.rank_size}", path)
        ranks = sorted(g.rank for g in step_graphs)
        if ranks != list(range(options.rank_size)):
            raise InputError(f"has ranks {ranks}; parallel merge needs ranks 0..{options.rank_size - 1}", path)
        out.extend(merge_step(sorted(step_graphs, key=lambda g: g.rank), options, path, rules))
    return out
