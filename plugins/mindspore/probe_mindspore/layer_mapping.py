"""``-lm [FILE]``: pair layers of a MindSpore and a PyTorch model through their hierarchies.

Each dump entry becomes an item placed in a tree by its *scope* (cell path, API under its
parent cell from ``construct.json``). Both trees are walked together; a layer-mapping YAML
(``{LayerType: {target child: golden child}}``, ``a.b.c: x`` for several levels at once)
renames children on the way. Items meet when they sit at the same translated place, with
the same direction and the same position among their siblings; their rows then pair by the
part of the row name after the entry name. The result is a data mapping (as ``-dm``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.api import golden_key_lookup
from probe.api import InputError
from probe.api import read_json, read_yaml
from probe.api import FlatDump, KeyMap, MatchContext, Row

ROOT = "TopLayer"
CELL_PREFIXES = ("Cell", "Module")
DIRECTIONS = ("forward", "backward")
_LAST_INT = re.compile(r"(\d+)(?!.*\d)")


@dataclass
class Item:
    """One dump entry placed in the layer tree."""

    entry: str
    type: str
    name: str
    state: str
    scope: list[str] = field(default_factory=list)
    """Scope parts below the root, e.g. ``["attention", "qkv_proj"]``."""


@dataclass
class Node:
    type: str
    children: dict[str, Node] = field(default_factory=dict)
    items: dict[str, list[Item]] = field(default_factory=dict)


def _scope_parts(scope: str) -> list[str]:
    return scope.split(".")[1:] if scope else []


def read_construct(path: Path) -> dict[str, str | None]:
    """``construct.json`` as ``{entry: parent entry or None}`` (Megatron form accepted)."""
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError("is not a construct.json (top level is not an object)", path)
    out: dict[str, str | None] = {}
    for key, value in doc.items():
        if key == "megatron_micro_step_number":
            continue
        if isinstance(value, list):
            value = value[0] if value else None
        out[key] = value if isinstance(value, str) else None
    return out


def make_item(entry: str, parents: dict[str, str | None]) -> Item | None:
    """The tree item of one entry (``None`` for names that are not dump entries)."""
    p = entry.split(".")
    if len(p) < 4:
        return None
    if p[-2] == "parameters_grad" or p[-1] == "parameters_grad":
        cls_index = -3 if p[-2] == "parameters_grad" else -2
        name, kind = p[cls_index - 1], p[cls_index]
        # the cell's own place (msProbe repeats the attribute name here, so renamed layers
        # never reach their parameter gradients)
        return Item(entry, kind, name, "parameters_grad", _scope_parts(".".join(p[: cls_index])))
    if p[0] in CELL_PREFIXES and p[-2] in DIRECTIONS:
        name, kind = p[-4], p[-3]
        return Item(entry, kind, name, p[-2], _scope_parts(".".join(p[:-3])))
    if p[-1] in DIRECTIONS:
        kind = p[-3]
        parent = parents.get(entry)
        scope = _scope_parts(".".join(parent.split(".")[:-2])) if parent else []
        return Item(entry, kind, kind, p[-1], scope + [kind])
    return None


def _forward_name(entry: str) -> str:
    p = entry.split(".")
    for i in (-1, -2):
        if p[i] == "backward":
            p[i] = "forward"
    return ".".join(p)


def build_items(dump: FlatDump, parents: dict[str, str | None]) -> list[Item]:
    """Items of every entry, in file order; backward items take their forward's scope."""
    items: dict[str, Item] = {}
    for entry in dict.fromkeys(row.entry for row in dump.rows):
        item = make_item(entry, parents)
        if item is not None:
            items[entry] = item
    for item in items.values():
        if item.state == "backward":
            forward = items.get(_forward_name(item.entry))
            if forward is not None:
                item.scope = list(forward.scope)
    renumber_transformer_layers(items.values())
    return list(items.values())


def renumber_transformer_layers(items: Iterable[Item]) -> None:
    """Layers of a ``ParallelTransformer`` count from 0 (pipeline stages number them globally)."""
    items = list(items)
    for owner in [i for i in items if i.type == "ParallelTransformer"]:
        prefix = owner.scope + ["layers"]
        n = len(prefix)
        under = [i for i in items if len(i.scope) > n and i.scope[:n] == prefix and _LAST_INT.search(i.scope[n])]
        if not under:
            continue
        low = min(int(_LAST_INT.search(i.scope[n]).group(1)) for i in under)
        for i in under:
            i.scope[n] = str(int(_LAST_INT.search(i.scope[n]).group(1)) - low)


def build_tree(items: list[Item]) -> Node:
    root = Node(ROOT)
    for item in items:
        node = root
        for part in item.scope:
            node = node.children.setdefault(part, Node(part))
        node.type = item.type
        node.items.setdefault(item.state, []).append(item)
    return root


Rule = tuple[list[str], str]


def read_layer_rules(path: str | Path) -> dict[str, list[Rule]]:
    """``{LayerType: [(key parts, golden name)]}``, longest keys first; one-line errors."""
    doc = read_yaml(path)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InputError("must map layer types to {target child: golden child} mappings", path)
    rules: dict[str, list[Rule]] = {}
    for layer_type, mapping in doc.items():
        if not isinstance(layer_type, str):
            raise InputError(f"layer type {layer_type!r} is not a name", path)
        if not isinstance(mapping, dict):
            raise InputError(f"{layer_type} must map target child names to golden child names", path)
        key_type = ROOT if layer_type == "Cell" else layer_type
        if key_type in rules:
            raise InputError(f"layer type {key_type!r} is listed twice (Cell means TopLayer)", path)
        entries = []
        for key, value in mapping.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key or not value:
                raise InputError(f"{layer_type}: entry {key!r} must map a child name to a child name", path)
            entries.append((key.split("."), value.split("(", 1)[0].strip()))
        rules[key_type] = sorted(entries, key=lambda r: -len(r[0]))
    return rules


def translate(scope: list[str], target_root: Node, rules: dict[str, list[Rule]]) -> list[str]:
    """The golden scope of a target scope, renaming children by the rules of their parents' types."""
    out: list[str] = []
    node, i = target_root, 0
    while i < len(scope):
        step, emitted = 1, scope[i]
        for key, value in rules.get(node.type, ()):
            if scope[i : i + len(key)] == key:
                step, emitted = len(key), value
                break
        out.append(emitted)
        for part in scope[i : i + step]:
            node = node.children.get(part, Node(part))
        i += step
    return out


def _find(root: Node, scope: list[str]) -> Node | None:
    node = root
    for part in scope:
        node = node.children.get(part)
        if node is None:
            return None
    return node


def entry_pairs(target: list[Item], golden: list[Item], rules: dict[str, list[Rule]]) -> dict[str, str | None]:
    """``{target entry: golden entry or None}``."""
    t_root, g_root = build_tree(target), build_tree(golden)
    pairs: dict[str, str | None] = {}
    for item in target:
        node = _find(t_root, item.scope)
        index = node.items[item.state].index(item) if node else 0
        g_node = _find(g_root, translate(item.scope, t_root, rules))
        siblings = g_node.items.get(item.state, []) if g_node else []
        pairs[item.entry] = siblings[index].entry if index < len(siblings) else None
    return pairs


def row_mapping(target: FlatDump, golden: FlatDump, pairs: dict[str, str | None]) -> dict[str, str | None]:
    """Target row name -> golden row name (same suffix after the entry name), or ``None``."""
    golden_rows: dict[str, dict[str, str]] = {}
    for row in golden.rows:
        golden_rows.setdefault(row.entry, {})[row.name[len(row.entry):]] = row.name
    mapping: dict[str, str | None] = {}
    for row in target.rows:
        g_entry = pairs.get(row.entry)
        mapping[row.name] = golden_rows.get(g_entry, {}).get(row.name[len(row.entry):]) if g_entry else None
    return mapping


def _construct(dump: FlatDump) -> dict[str, str | None]:
    path = dump.info.directory / "construct.json"
    if not path.is_file():
        raise InputError("-lm needs construct.json beside dump.json (dump with level L0 or mix)", dump.info.directory)
    return read_construct(path)


def layer_mapping(target: FlatDump, golden: FlatDump, option: Any) -> dict[str, str | None]:
    """The row mapping ``-lm`` derives for two dumps."""
    rules = read_layer_rules(option) if isinstance(option, str) else {}
    t_items = build_items(target, _construct(target))
    g_items = build_items(golden, _construct(golden))
    return row_mapping(target, golden, entry_pairs(t_items, g_items, rules))


class LayerMapper:
    """``-lm [FILE]``: data mapping derived from both model hierarchies."""

    name = "layer_mapping"
    priority = 12

    def build(self, ctx: MatchContext) -> KeyMap | None:
        option = ctx.options.get("layer_mapping")
        if not option:
            return None
        mapping = layer_mapping(ctx.target, ctx.golden, option)
        to_key = golden_key_lookup(ctx.golden)

        def target_key(row: Row) -> str | None:
            golden_name = mapping.get(row.name)
            return None if golden_name is None else to_key(golden_name)

        return KeyMap(target_key=target_key, left_join=True)
