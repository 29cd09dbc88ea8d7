"""GE graph text files (``dynamo_original_graph_*.txt``, protobuf text format of a GraphDef).

Only what matching needs is kept: per op its name, type, data inputs (source op names)
and, per output, the FX tensor it came from (attribute ``_fx_tensor_name``). The parser is
a small tokenizer, so one-line blocks and values containing ``": "`` are fine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from probe.api import InputError

GRAPH_GLOB = "dynamo_original_graph_*.txt"
FX_ATTR = "_fx_tensor_name"

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|(?P<punct>[{}:<>\[\],;])|(?P<word>[^\s{}:<>\[\],;"\']+))'
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def _unquote(text: str) -> str:
    body = text[1:-1]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _tokens(text: str, path: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    end = len(text)
    while pos < end:
        if text[pos].isspace():
            pos += 1
            continue
        if text[pos] == "#":  # comment to end of line
            newline = text.find("\n", pos)
            pos = end if newline < 0 else newline
            continue
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise InputError(f"unreadable graph text near offset {pos}", path)
        pos = match.end()
        kind = match.lastgroup or "word"
        out.append((kind, match.group(kind)))
    return out


Block = dict[str, list["str | Block"]]


def parse_text(text: str, path: Path) -> Block:
    """Parse protobuf text format into nested ``{field: [values]}`` dicts."""
    tokens = _tokens(text, path)
    root: Block = {}
    stack = [root]
    i = 0
    n = len(tokens)
    while i < n:
        kind, value = tokens[i]
        if kind == "punct" and value in "}>":
            if len(stack) == 1:
                raise InputError("unbalanced '}' in graph text", path)
            stack.pop()
            i += 1
            continue
        if kind == "punct" and value in ",;":
            i += 1
            continue
        name = value
        i += 1
        if i < n and tokens[i] == ("punct", ":"):
            i += 1
        if i >= n:
            raise InputError(f"field {name!r} has no value", path)
        kind, value = tokens[i]
        if kind == "punct" and value in "{<":
            block: Block = {}
            stack[-1].setdefault(name, []).append(block)
            stack.append(block)
            i += 1
        elif kind == "str":
            stack[-1].setdefault(name, []).append(_unquote(value))
            i += 1
        elif kind == "word":
            stack[-1].setdefault(name, []).append(value)
            i += 1
        else:
            raise InputError(f"unexpected {value!r} after field {name!r}", path)
    if len(stack) != 1:
        raise InputError("graph text ends inside a block", path)
    return root


def fx_op_key(tensor_name: str) -> tuple[str, int | None]:
    """``add-aten.add.Tensor.OUTPUT.0`` -> (``add-aten.add.Tensor``, 0)."""
    parts = tensor_name.split(".")
    if len(parts) >= 3 and parts[-2] == "OUTPUT" and parts[-1].isdigit():
        return ".".join(parts[:-2]), int(parts[-1])
    return tensor_name, None


@dataclass
class GraphOp:
    """One op of a GE graph."""

    name: str
    type: str
    index: int
    inputs: list[str] = field(default_factory=list)
    """Source op of every data input, in input order (control edges excluded)."""
    fx_outputs: list[tuple[str, int | None] | None] = field(default_factory=list)
    """Per output desc: (FX op key, FX output index), or None without an FX name."""

    @property
    def fx_keys(self) -> list[str]:
        """Distinct FX op keys of this op's outputs, in output order."""
        seen: list[str] = []
        for item in self.fx_outputs:
            if item and item[0] not in seen:
                seen.append(item[0])
        return seen


def _strings(block: Block, key: str) -> list[str]:
    return [v for v in block.get(key, []) if isinstance(v, str)]


def _blocks(block: Block, key: str) -> list[Block]:
    return [v for v in block.get(key, []) if isinstance(v, dict)]


def _fx_name(desc: Block) -> str | None:
    for attr in _blocks(desc, "attr"):
        if _strings(attr, "key")[:1] == [FX_ATTR]:
            for value in _blocks(attr, "value"):
                names = _strings(value, "s")
                if names:
                    return names[0]
    return None


def _collect_ops(block: Block, out: list[Block]) -> None:
    # ops may sit at the top level or inside graph { ... } blocks of a ModelDef
    for op in _blocks(block, "op"):
        out.append(op)
    for key in ("graph",):
        for sub in _blocks(block, key):
            _collect_ops(sub, out)


class Graph:
    """The ops of one GE graph file, in file (topological) order."""

    def __init__(self, path: Path, ops: list[GraphOp]) -> None:
        self.path = path
        self.ops = {op.name: op for op in ops}

    @classmethod
    def read(cls, path: Path) -> Graph:
        """Parse a graph text file; raises :class:`InputError` on malformed text."""
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InputError(f"cannot read graph file: {exc.strerror or exc}", path) from exc
        raw_ops: list[Block] = []
        _collect_ops(parse_text(text, path), raw_ops)
        ops: list[GraphOp] = []
        for index, raw in enumerate(raw_ops):
            names = _strings(raw, "name")
            if not names:
                continue
            sources = []
            for item in _strings(raw, "input"):
                src, _, idx = item.rpartition(":")
                if not src:
                    src, idx = item, "0"
                if idx.strip() == "-1" or not src:  # control edge
                    continue
                sources.append(src)
            fx = []
            for desc in _blocks(raw, "output_desc"):
                name = _fx_name(desc)
                fx.append(fx_op_key(name) if name else None)
            ops.append(GraphOp(names[0], (_strings(raw, "type") or [""])[0], index, sources, fx))
        return cls(path, ops)

    def __contains__(self, name: str) -> bool:
        return name in self.ops

    def index_of(self, name: str) -> int:
        op = self.ops.get(name)
        return op.index if op else -1
