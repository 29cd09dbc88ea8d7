"""Build one graph from ``construct.json`` + ``dump.json`` + ``stack.json`` (msProbe rules)."""

from __future__ import annotations

import logging
import re
from dataclasses import replace
from pathlib import Path

from probe.errors import InputError
from probe.formats.msprobe.flatten import entry_kind
from probe.formats.msprobe.names import CONSTRUCT_MICRO_STEP_KEY
from probe.formats.msprobe.reader import MsprobeJsonReader
from probe.formats.msprobe.stack import load_stack
from probe.interfaces import DumpReader
from probe.jsonio import read_json
from probe.model import DumpInfo, FlatDump, Row, RowList

from probe.graph.rules import NO_RULES, GraphRuleSet
from probe.graph.node import API, COLLECTION, COLLECTION_PREFIX, MODULE, NPU, Graph, GraphNode

log = logging.getLogger(__name__)

_PARAM_GRAD_RE = re.compile(r"^(?P<prefix>.+)\.parameters_grad(?:\.\d+)?$")
NO_STACK_TWIN = "The backward node has no stack of its own and no forward counterpart."


def forward_twin(name: str) -> str | None:
    """The forward name of a backward node (``X.backward.N`` -> ``X.forward.N``,
    ``X.N.backward`` -> ``X.N.forward``), or ``None`` for other names."""
    parts = name.split(".")
    if len(parts) >= 2 and parts[-2] == "backward":
        parts[-2] = "forward"
        return ".".join(parts)
    if parts[-1] == "backward":
        parts[-1] = "forward"
        return ".".join(parts)
    return None


def to_backward(name: str) -> str:
    """Rename every ``forward`` segment of ``name`` to ``backward``."""
    return ".".join("backward" if p == "forward" else p for p in name.split("."))


def _is_module_backward(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 2 and parts[-2] == "backward" and parts[-1].isdigit()


def read_construct(path: Path) -> tuple[dict[str, str | None], dict[str, int] | None]:
    """Parent of every node (and micro-step ids when the file carries them)."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError("is not a construct file (top level is not an object)", path)
    micro: dict[str, int] | None = None
    if CONSTRUCT_MICRO_STEP_KEY in doc:
        doc = {k: v for k, v in doc.items() if k != CONSTRUCT_MICRO_STEP_KEY}
        micro = {}
        parents: dict[str, str | None] = {}
        for name, value in doc.items():
            if not (isinstance(value, list) and len(value) == 2):
                raise InputError(f"entry {name} is not a [parent, micro step] pair", path)
            parents[name] = value[0] or None  # msProbe writes "" for top-level APIs
            micro[name] = int(value[1])
        return parents, micro
    for name, value in doc.items():
        if value is not None and not isinstance(value, str):
            raise InputError(f"entry {name} has a parent that is not a string or null", path)
    return {name: value or None for name, value in doc.items()}, None


def resolve_parent(name: str, parent: str | None, construct: dict[str, str | None]) -> str | None:
    """The parent msProbe uses for ``name`` (§ parent resolution), ``None`` for the root."""
    twin = forward_twin(name)
    if parent is not None:
        if twin is not None and _is_module_backward(name):
            child_prefix = name.split(".")[:-4]
            parent_prefix = parent.split(".")[:-3]
            if child_prefix != parent_prefix and twin in construct:
                fwd_parent = construct[twin]
                if fwd_parent is None:
                    return None
                candidate = to_backward(fwd_parent)
                if candidate in construct:
                    return candidate
        return parent
    if twin is not None and twin in construct:
        fwd_parent = construct[twin]
        if fwd_parent is not None:
            candidate = to_backward(fwd_parent)
            if candidate in construct:
                return candidate
    return None


def _attach(graph: Graph, node: GraphNode, parent_name: str | None) -> None:
    parent = graph.root if parent_name is None else graph.get_or_create(parent_name)
    probe_node: GraphNode | None = parent
    while probe_node is not None:  # never create a cycle
        if probe_node is node:
            parent = graph.root
            break
        probe_node = probe_node.parent
    parent.add_child(node)


def _looks_first_level(name: str) -> bool:
    """A top-level module name that may really be first-level (recompute candidates are not):
    at most 5 segments, or 6-7 segments with a numeric layer index."""
    parts = name.split(".")
    if len(parts) > 7:
        return False
    if len(parts) < 6:
        return True
    return any(p.isdigit() for p in parts[:-1])


def _module_call(name: str) -> tuple[str, str, int] | None:
    """(prefix, direction, call index) of ``<prefix>.forward|backward.<n>`` module names."""
    parts = name.split(".")
    if len(parts) < 3 or parts[-2] not in ("forward", "backward") or not parts[-1].isdigit():
        return None
    return ".".join(parts[:-2]), parts[-2], int(parts[-1])


def reparent_recomputed(graph: Graph, stacks: dict[str, list[str]], rules: GraphRuleSet = NO_RULES) -> int:
    """Move recomputed module calls (and their backward twins) from the root under the backward
    node of the original call's parent (``rules`` recognise a recompute stack); returns the
    number of calls moved."""
    top = {child.name: child for child in graph.root.children if child.kind == MODULE}
    originals: dict[str, list[GraphNode]] = {}
    candidates: list[tuple[str, GraphNode, GraphNode]] = []
    for node in graph.nodes.values():
        call = _module_call(node.name)
        if call is None or call[1] != "forward" or node.kind != MODULE:
            continue
        if node.name in top:
            twin = top.get(f"{call[0]}.backward.{call[2]}")
            if (twin is not None and not _looks_first_level(node.name)
                    and rules.is_recompute_stack(stacks.get(node.name, []))):
                candidates.append((call[0], node, twin))
                continue
        if node.parent is not None and node.parent is not graph.root:
            originals.setdefault(call[0], []).append(node)
    moved: set[str] = set()
    used: dict[str, int] = {}
    for prefix, node, twin in candidates:
        pool = originals.get(prefix, [])
        index = used.get(prefix, 0)
        if index >= len(pool):
            continue
        used[prefix] = index + 1
        target = graph.nodes.get(to_backward(pool[index].parent.name))
        if target is None or target is node or target is twin:
            continue
        target.add_child(node)
        target.add_child(twin)
        moved.update((node.name, twin.name))
    if moved:
        graph.root.children = [c for c in graph.root.children if c.name not in moved or c.parent is graph.root]
    return len(moved) // 2


def _wrap_collections(graph: Graph) -> None:
    """Wrap every run of >= 2 consecutive API children of the root in ``Apis_Between_Modules.<k>``."""
    new_children: list[GraphNode] = []
    run: list[GraphNode] = []
    count = 0

    def flush() -> None:
        nonlocal count
        if len(run) >= 2:
            name = f"{COLLECTION_PREFIX}.{count}"
            while name in graph.nodes:
                count += 1
                name = f"{COLLECTION_PREFIX}.{count}"
            count += 1
            coll = GraphNode(name, COLLECTION)
            graph.nodes[name] = coll
            coll.parent = graph.root
            for api in run:
                coll.add_child(api)
            new_children.append(coll)
        else:
            new_children.extend(run)
        run.clear()

    for child in graph.root.children:
        if child.kind == API:
            run.append(child)
        else:
            flush()
            new_children.append(child)
    flush()
    graph.root.children = new_children


def _add_parameter_grads(graph: Graph, grads: list[tuple[str, str]]) -> None:
    """Attach each ``<Prefix>.parameters_grad[.N]`` node under the module's last backward call."""
    last_backward: dict[str, tuple[int, GraphNode]] = {}
    for node in graph.nodes.values():
        parts = node.name.split(".")
        if len(parts) >= 3 and parts[-2] == "backward" and parts[-1].isdigit():
            prefix = ".".join(parts[:-2])
            index = int(parts[-1])
            if prefix not in last_backward or index > last_backward[prefix][0]:
                last_backward[prefix] = (index, node)
    for name, prefix in grads:
        node = graph.get_or_create(name)
        node.kind = MODULE
        if node.parent is not None:
            continue
        owner = last_backward.get(prefix)
        (owner[1] if owner else graph.root).add_child(node)


def assign_micro_steps(graph: Graph) -> None:
    """Split the root's children into micro steps; descendants inherit their top node's id."""
    current = 0
    seen_non_forward = False
    for child in graph.root.children:
        if child.kind == MODULE:
            if ".forward." in child.name:
                if seen_non_forward:
                    current += 1
                    seen_non_forward = False
            else:
                seen_non_forward = True
        _set_micro_step(child, current)
    graph.micro_steps = current + 1


def _set_micro_step(top: GraphNode, value: int) -> None:
    stack = [top]
    while stack:
        node = stack.pop()
        node.micro_step = value
        stack.extend(node.children)


def _stack_of(name: str, stacks: dict[str, list[str]]) -> list[str]:
    if name in stacks:
        return stacks[name]
    twin = forward_twin(name)
    if twin is None:
        return []
    if _is_module_backward(name):
        twin = twin.rsplit(".", 1)[0] + ".0"
    return stacks.get(twin, [NO_STACK_TWIN])


def build_graph(directory: Path, side: str = NPU, step: int = 0, rank: int = 0,
                reader: DumpReader | None = None, rules: GraphRuleSet = NO_RULES) -> Graph:
    """Build the graph of one dump directory; ``reader`` reads its ``dump.json`` into rows
    (the registered reader the caller picked; msProbe's JSON reader by default) and ``rules``
    are the registered graph rules (framework knowledge; none by default)."""
    directory = Path(directory)
    dump_path = directory / "dump.json"
    construct_path = directory / "construct.json"
    construct: dict[str, str | None] = {}
    micro: dict[str, int] | None = None
    if construct_path.exists():
        construct, micro = read_construct(construct_path)
    dump = _read_dump(dump_path, reader or MsprobeJsonReader(), structure_only=bool(construct))
    stacks = dump.stack or {}

    graph = Graph(side, step, rank)
    graph.task = dump.info.task
    graph.framework = dump.info.framework
    graph.source = str(directory)
    if dump.info.task == "tensor" or (directory / "dump_tensor_data").is_dir():
        graph.dump_data_dir = str(directory / "dump_tensor_data")

    for name, parent in construct.items():
        node = graph.get_or_create(name)
        if node.parent is not None or node is graph.root:
            continue
        _attach(graph, node, resolve_parent(name, parent, construct))
    dropped = _drop_orphans(graph, construct_path)
    names = dump.entry_names()
    grads: list[tuple[str, str]] = []
    for name in names:
        if name in dropped:
            continue
        match = _PARAM_GRAD_RE.match(name)
        if match:
            if name not in graph.nodes:
                grads.append((name, match.group("prefix")))
            continue
        if name not in graph.nodes and entry_kind(name) is not None:
            graph.root.add_child(graph.get_or_create(name))  # not in construct.json (e.g. L1 dumps)

    reparent_recomputed(graph, stacks, rules)
    _wrap_collections(graph)
    _add_parameter_grads(graph, grads)
    _fill_data(graph, dump, set(names))
    if micro is not None:
        for node in graph.postorder():
            node.micro_step = micro.get(node.name, node.parent.micro_step if node.parent else 0)
        for coll in graph.root.children:
            if coll.kind == COLLECTION and coll.children:
                coll.micro_step = coll.children[0].micro_step
        graph.micro_steps = max(micro.values(), default=0) + 1
    else:
        assign_micro_steps(graph)
    graph.number()
    return graph


def _read_dump(path: Path, reader: DumpReader, structure_only: bool) -> FlatDump:
    """The rows of ``dump.json`` through ``reader``; an empty ``{}`` beside a construct.json is
    the structure alone (msProbe draws it), an empty dump of statistics."""
    if structure_only and _is_empty_object(path):
        info = DumpInfo(path=path, framework="pytorch", task="statistics", reader=getattr(reader, "name", ""))
        return FlatDump(info=info, rows=RowList(), stack=load_stack(path.parent / "stack.json"))
    return reader.load(path, with_stack=True)


def _is_empty_object(path: Path) -> bool:
    """Whether the (small) file at ``path`` holds ``{}``."""
    try:
        if path.stat().st_size > 64:
            return False
    except OSError:
        return False
    return read_json(path) == {}


def _drop_orphans(graph: Graph, construct_path: Path) -> set[str]:
    """Remove the nodes whose ancestors are missing from construct.json (a parent named but never
    listed itself), with their descendants, as msProbe does; returns the names removed."""
    dropped: set[str] = set()
    for node in list(graph.nodes.values()):
        if node.parent is None and node is not graph.root:
            stack = [node]
            while stack:
                current = stack.pop()
                dropped.add(current.name)
                stack.extend(current.children)
    for name in dropped:
        del graph.nodes[name]
    if dropped:
        log.warning("%s: %d node(s) left out: their ancestors are missing from the file",
                    construct_path, len(dropped))
    return dropped


def _fill_data(graph: Graph, dump: FlatDump, entries: set[str]) -> None:
    """Hand each node the rows of its entry (a node whose entry gave no rows still has data)
    and keep the dump, its rows in node order, for the compare stages."""
    stacks = dump.stack or {}
    by_entry: dict[str, list[Row]] = {}
    for row in dump.rows:
        by_entry.setdefault(row.entry, []).append(row)
    rows = RowList()
    for name, node in graph.nodes.items():
        node.stack = _stack_of(name, stacks) if node.kind != COLLECTION and node is not graph.root else []
        if name not in entries:
            continue
        node.has_data = True
        for row in by_entry.get(name, ()):
            (node.outputs if row.state == "output" else node.inputs).append(row)
            rows.append(row)
    rows.has_md5 = dump.has_md5
    graph.has_md5 = dump.has_md5
    graph.dump = replace(dump, rows=rows)
