"""Match the nodes of a target (NPU) graph with those of a golden (Bench) graph."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from probe.errors import InputError
from probe.jsonio import read_yaml
from probe.model import Pair

from probe.graph.node import API, Graph, GraphNode

_INDEX_SEGMENT = re.compile(r"\.\d+(?=\.|$)")
_RANK_SUFFIX = re.compile(r"_rank\d+")
ROW_MARKERS = (".input.", ".output.", ".parameters.")


def _bfs(graph: Graph):
    queue = deque([graph.root])
    while queue:
        node = queue.popleft()
        yield node
        queue.extend(node.children)


def _pair(npu: GraphNode, bench: GraphNode) -> None:
    npu.match = bench
    bench.match = npu


def match_default(npu: Graph, bench: Graph) -> int:
    """Same name and identical ancestor chain; returns the number of matched pairs."""
    count = 0
    for node in _bfs(npu):
        other = bench.nodes.get(node.name)
        if other is None or other.match is not None:
            continue
        if node.parent is None:
            ok = other.parent is None
        else:
            ok = other.parent is not None and (
                node.parent.match is other.parent or node.ancestors() == other.ancestors()
            )
        if ok:
            _pair(node, other)
            count += 1
    return count


def fuzzy_api_key(name: str) -> str:
    """An API name without its numeric segments and ``_rank<k>`` suffixes."""
    return _RANK_SUFFIX.sub("", _INDEX_SEGMENT.sub("", name))


def match_fuzzy(npu: Graph, bench: Graph) -> int:
    """Non-API nodes by name (no ancestry check); their direct API children by
    index-free name and occurrence."""
    count = 0
    for node in _bfs(npu):
        if node.kind == API or node.match is not None:
            continue
        other = bench.nodes.get(node.name)
        if other is None or other.kind == API or other.match is not None:
            continue
        _pair(node, other)
        count += 1
    for node in list(_bfs(npu)):
        other = node.match
        if other is None or node.kind == API:
            continue
        keyed: dict[tuple[str, int], GraphNode] = {}
        seen: dict[str, int] = {}
        for child in other.children:
            if child.kind == API and child.match is None:
                key = fuzzy_api_key(child.name)
                keyed[(key, seen.get(key, 0))] = child
                seen[key] = seen.get(key, 0) + 1
        seen.clear()
        for child in node.children:
            if child.kind != API or child.match is not None:
                continue
            key = fuzzy_api_key(child.name)
            partner = keyed.get((key, seen.get(key, 0)))
            seen[key] = seen.get(key, 0) + 1
            if partner is not None and partner.match is None:
                _pair(child, partner)
                count += 1
    return count


def match_translated(npu: Graph, bench: Graph, translate: Callable[[GraphNode], str | None]) -> int:
    """Match by a translated NPU name (layer mapping, manual pairs), no ancestry check."""
    count = 0
    for node in _bfs(npu):
        if node.match is not None:
            continue
        target = translate(node)
        if target is None:
            continue
        other = bench.nodes.get(target)
        if other is not None and other.match is None:
            _pair(node, other)
            count += 1
    return count


# --------------------------------------------------------------------------------------
# mapping files
# --------------------------------------------------------------------------------------


def load_mapping(path: Path) -> dict[str, Any]:
    """Read a mapping YAML (layer mapping or node/row pairs); one-line errors."""
    doc = read_yaml(path)
    if not isinstance(doc, dict) or not doc:
        raise InputError("is not a mapping file (expected a non-empty YAML mapping)", path)
    return doc


def is_pair_mapping(doc: dict[str, Any]) -> bool:
    """``{npu name: bench name}`` (node or row names) rather than ``{Class: {attr: attr}}``."""
    return all(isinstance(v, str) for v in doc.values())


def node_pairs(doc: dict[str, str], npu: Graph) -> dict[str, str]:
    """Node pairs from a pair mapping: node names as-is, row names cut to their node."""
    pairs: dict[str, str] = {}
    for key, value in doc.items():
        key, value = str(key), str(value)
        if key in npu.nodes:
            pairs.setdefault(key, value)
            continue
        for marker in ROW_MARKERS:
            cut_k, cut_v = key.find(marker), value.find(marker)
            if cut_k > 0 and cut_v > 0:
                if key[:cut_k] in npu.nodes:
                    pairs.setdefault(key[:cut_k], value[:cut_v])
                break
        else:
            if ".parameters_grad." in key:
                stem_k = key[: key.rindex(".")]
                if stem_k in npu.nodes and "." in value:
                    pairs.setdefault(stem_k, value[: value.rindex(".")])
    return pairs


def layer_translator(doc: dict[str, Any], npu: Graph, prefix: str | None = None) -> Callable[[GraphNode], str | None]:
    """A translator applying ``{Class: {npu attr: bench attr}}`` to module paths.

    ``TopLayer`` maps the first path segment. The class owning a segment is read from the
    module nodes of the NPU graph (``<prefix>.<path>.<Class>.forward.N``).
    """
    tables = {str(k): {str(a): str(b) for a, b in (v or {}).items()} for k, v in doc.items() if isinstance(v, dict)}
    class_of: dict[tuple[str, ...], str] = {}
    for name in npu.nodes:
        parts = name.split(".")
        for direction in ("forward", "backward"):
            if direction in parts:
                i = parts.index(direction)
                if i >= 3 and parts[0] in ("Module", "Cell"):
                    class_of[tuple(parts[1 : i - 1])] = parts[i - 1]
                break

    def translate(node: GraphNode) -> str | None:
        parts = node.name.split(".")
        if parts[0] not in ("Module", "Cell"):
            return None
        end = next((i for i, p in enumerate(parts) if p in ("forward", "backward", "parameters_grad")), None)
        if end is None or end < 3:
            return None
        path = parts[1 : end - 1]
        mapped: list[str] = []
        changed = False
        for i, segment in enumerate(path):
            owner = "TopLayer" if i == 0 else class_of.get(tuple(path[:i]), "")
            new = tables.get(owner, {}).get(segment)
            if new is None and i == 0:
                new = None
            if new is not None:
                changed = True
                mapped.append(new)
            else:
                mapped.append(segment)
        head = prefix or parts[0]
        if not changed and head == parts[0]:
            return None
        return ".".join([head, *mapped, *parts[end - 1 :]])

    return translate


def mapping_translator(path: Path, npu: Graph, bench: Graph | None = None) -> Callable[[GraphNode], str | None]:
    """Translator for ``-lm FILE``: node/row pairs or a layer mapping.

    Across frameworks the module prefix follows the golden side (``Cell.`` <-> ``Module.``).
    """
    doc = load_mapping(path)
    if is_pair_mapping(doc):
        pairs = node_pairs(doc, npu)
        return lambda node: pairs.get(node.name)
    prefix = None
    if bench is not None and bench.framework != npu.framework:
        prefix = "Cell" if bench.framework == "mindspore" else "Module"
    return layer_translator(doc, npu, prefix)


def match_by_row_pairs(npu: Graph, bench: Graph, pairs: Sequence[Pair]) -> int:
    """Pair the nodes whose rows the compare's pairing paired (first partner wins)."""
    count = 0
    for pair in pairs:
        if pair.golden is None:
            continue
        node, other = npu.nodes.get(pair.target.entry), bench.nodes.get(pair.golden.entry)
        if node is not None and other is not None and node.match is None and other.match is None:
            _pair(node, other)
            count += 1
    return count


def _module_key(name: str) -> tuple[str, ...] | None:
    """``Module.a.b.Class.forward.0`` -> ``("a", "b", "forward", "0")``: the path without prefix and class."""
    parts = name.split(".")
    if parts[0] not in ("Module", "Cell"):
        return None
    end = next((i for i, p in enumerate(parts) if p in ("forward", "backward", "parameters_grad")), None)
    if end is None or end < 3:
        return None
    return (*parts[1 : end - 1], *parts[end:])


def class_free_translator(bench: Graph) -> Callable[[GraphNode], str | None]:
    """Translator for ``-lm`` without a file: modules pair by path, whatever their class
    (``Module.mlp.MLP.forward.0`` with ``Module.mlp.ParallelMLP.forward.0``); a path that
    several golden modules share pairs none of them."""
    by_key: dict[tuple[str, ...], str | None] = {}
    for name in bench.nodes:
        key = _module_key(name)
        if key is not None:
            by_key[key] = None if key in by_key else name
    return lambda node: by_key.get(_module_key(node.name) or ())


def match_graphs(
    npu: Graph,
    bench: Graph,
    fuzzy: bool = False,
    mapping: Path | bool | None = None,
    rename: Callable[[str], str] | None = None,
    auto: dict[str, str] | None = None,
) -> int:
    """Run the matching passes: mapping first, then exact, then fuzzy when asked.

    With ``auto`` (``--auto-match`` node pairs) the pairs follow the mapping file and replace
    name matching: a node automatic matching left alone stays unmatched.
    """
    count = 0
    if mapping is not None:
        translate = class_free_translator(bench) if mapping is True else mapping_translator(mapping, npu, bench)
        if rename is not None:
            base = translate
            translate = lambda node: base(node) or rename(node.name)  # noqa: E731
        count += match_translated(npu, bench, translate)
    elif rename is not None:
        count += match_translated(npu, bench, lambda node: rename(node.name))
    if auto is not None:
        count += match_translated(npu, bench, lambda node: auto.get(node.name))
    if npu.root.match is None and bench.root.match is None:
        _pair(npu.root, bench.root)
        count += 1
    if auto is not None:
        return count
    count += match_default(npu, bench)
    if fuzzy:
        count += match_fuzzy(npu, bench)
    return count
