"""``--file_type json``: a merged graph written back in dump format
(``OUTDIR/step<S>/rank<R>/{construct,dump,stack}.json``), so it can be read like any dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from probe.formats.msprobe.names import DEFAULT_TENSOR_TYPE
from probe.formats.msprobe.dtypes import PROCESS_GROUP
from probe.io import atomic_write
from probe.model import NA, Row

from probe.graph.node import COLLECTION, Graph, GraphNode

_SECTIONS = (("input", "input_args", "input_kwargs"), ("output", "output", None))


def _number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return value
        return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
    return value


def _shape(text: str) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _item(row: Row) -> dict[str, Any]:
    """A dump.json leaf item from a row."""
    if row.dtype == PROCESS_GROUP:
        return {"type": row.dtype, "group_ranks": _shape(str(row.stats[0])), "data_name": row.data_name}
    if row.dtype == NA and row.stats[0] is None:
        return {"type": "NoneType", "value": None}
    if row.dtype.startswith("<class"):
        kind = row.dtype[8:-2] if row.dtype.endswith("'>") else row.dtype
        return {"type": kind, "value": _number(row.stats[0])}
    item: dict[str, Any] = {"type": DEFAULT_TENSOR_TYPE, "dtype": row.dtype, "shape": _shape(row.shape)}
    item["Max"], item["Min"], item["Mean"], item["Norm"] = (_number(v) for v in row.stats)
    item["requires_grad"] = row.requires_grad == "True"
    if row.md5 is not None:
        item["md5"] = row.md5
    if row.data_name and row.data_name != "-1":
        item["data_name"] = row.data_name
    return item


def _put(container: Any, path: list[str], item: dict[str, Any]) -> Any:
    """Place ``item`` at ``path`` (digits index lists, other keys dicts) inside ``container``."""
    if not path:
        return item
    key, rest = path[0], path[1:]
    if key.isdigit():
        container = container if isinstance(container, list) else []
        index = int(key)
        while len(container) <= index:
            container.append(None)
        container[index] = _put(container[index], rest, item)
    else:
        container = container if isinstance(container, dict) else {}
        container[key] = _put(container.get(key), rest, item)
    return container


def node_entry(node: GraphNode) -> dict[str, Any]:
    """The dump.json entry of one node, rebuilt from its rows."""
    entry: dict[str, Any] = {}
    prefix = node.name + "."
    for row in (*node.inputs, *node.outputs):
        tail = row.name[len(prefix):] if row.name.startswith(prefix) else row.name
        parts = tail.split(".")
        if parts[0] in ("input", "output") and len(parts) > 1:
            if parts[1].isdigit():
                key = "input_args" if parts[0] == "input" else "output"
                entry[key] = _put(entry.get(key), parts[1:], _item(row))
            else:
                key = "input_kwargs" if parts[0] == "input" else "output"
                entry[key] = _put(entry.get(key), parts[1:], _item(row))
        elif parts[0] == "parameters" and len(parts) > 1:
            entry["parameters"] = _put(entry.get("parameters"), parts[1:], _item(row))
        else:  # parameters_grad entries: {param: item}
            entry = _put(entry, parts, _item(row))
    if ".parameters_grad" not in node.name:
        for key in ("input_args", "input_kwargs", "output"):
            entry.setdefault(key, {} if key == "input_kwargs" else [])
    if node.merge_info:
        entry["parallel_merge_info"] = list(node.merge_info)
    return entry


def write_graph_json(graph: Graph, output: Path) -> Path:
    """Write one merged graph as ``output/step<S>/rank<R>/`` dump files; returns the directory."""
    directory = output / f"step{graph.step}" / f"rank{graph.rank}"
    directory.mkdir(parents=True, exist_ok=True)
    construct: dict[str, str] = {}
    data: dict[str, Any] = {}
    stacks: dict[tuple[str, ...], list[str]] = {}
    for node in graph.postorder():
        if node is graph.root or node.kind == COLLECTION:
            continue
        parent = node.parent
        while parent is not None and parent.kind == COLLECTION:
            parent = parent.parent
        construct[node.name] = parent.name if parent is not None else graph.root.name
        if node.has_data:
            data[node.name] = node_entry(node)
        if node.stack:
            stacks.setdefault(tuple(node.stack), []).append(node.name)
    dump = {"task": graph.task, "level": "mix", "framework": graph.framework,
            "dump_data_dir": graph.dump_data_dir, "is_merged": True, "data": data}
    stack_doc = {str(i): [names, list(frames)] for i, (frames, names) in enumerate(stacks.items())}
    for name, doc in (("construct.json", construct), ("dump.json", dump), ("stack.json", stack_doc)):
        with atomic_write(directory / name, rename=False) as handle:
            json.dump(doc, handle, indent=1)
    return directory
