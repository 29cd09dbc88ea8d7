"""Calls: the rows of one dump entry grouped, with what matching looks at.

A *call* is one entry of a dump (``Functional.linear.3.forward``,
``Module.layers.0.attn.q.Linear.forward.0``, ``Module.x.Linear.parameters_grad.0``).
Matching pairs calls first and rows inside paired calls afterwards.
"""

from __future__ import annotations

import math
from itertools import groupby
from operator import attrgetter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from probe.model import Row

DIRECTIONS = ("forward", "backward", "parameters_grad")
MODULE_PREFIXES = ("Module", "Cell")

_DTYPE_KIND = {
    **dict.fromkeys(("float16", "float32", "float64", "bfloat16", "half", "float", "double"), "f"),
    **dict.fromkeys(("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "long", "int"), "i"),
    "bool": "b",
    "complex64": "c",
    "complex128": "c",
}


def dtype_kind(dtype: str) -> str:
    """``f``/``i``/``b``/``c`` for tensor dtypes of either framework, else the dtype itself."""
    text = dtype.rsplit(".", 1)[-1].lower()
    return _DTYPE_KIND.get(text, dtype)


def op_name(api: str) -> str:
    """The framework-neutral name of an API: ``Tensor.__add__`` -> ``add``, ``Mint.matmul`` -> ``matmul``."""
    last = api.rsplit(".", 1)[-1]
    return last.strip("_").lower()


@dataclass(slots=True)
class Tensor:
    """One tensor row of a call: what fingerprints it."""

    row: Row
    suffix: str
    state: str
    shape: str
    kind: str
    stats: tuple[float, float, float, float] | None


@dataclass(slots=True)
class Call:
    """One dump entry and its rows."""

    entry: str
    order: int
    kind: str
    """``api`` or ``module``."""
    direction: str
    op: str
    """API: the neutral op name; module: its class name."""
    path: str
    """API: the API name (``Functional.linear``); module: the attribute path."""
    number: int
    """The call index in the name (API counter, module call count)."""
    parent: str | None = None
    """The module call this call ran in (construct.json), ``None`` at the top or when unknown."""
    rows: list[Row] = field(default_factory=list)
    tensors: list[Tensor] = field(default_factory=list)
    by_suffix: dict[str, Row] = field(default_factory=dict)

    def group(self, state: str) -> list[Tensor]:
        return [t for t in self.tensors if t.state == state]


def parse_entry(entry: str) -> tuple[str, str, str, str, int] | None:
    """``(kind, direction, path, op, number)`` of an entry name, or ``None`` for other names."""
    parts = entry.split(".")
    if len(parts) < 3:
        return None
    if parts[0] in MODULE_PREFIXES:
        for i in range(len(parts) - 1, 1, -1):
            if parts[i] in DIRECTIONS:
                number = parts[i + 1] if i + 1 < len(parts) else "0"
                cls = parts[i - 1]
                path = ".".join(parts[1 : i - 1])
                return "module", parts[i], path, cls, int(number) if number.isdigit() else 0
        return None
    if parts[-1] in ("forward", "backward") and parts[-2].isdigit() and len(parts) >= 4:
        api = ".".join(parts[:-2])
        return "api", parts[-1], api, op_name(api), int(parts[-2])
    return None


def _stats(row: Row) -> tuple[float, float, float, float] | None:
    """The four statistics as finite floats, or ``None``."""
    values = row.stats
    if values is None or len(values) != 4:
        return None
    mx, mn, mean, norm = values
    if type(mx) is float and type(mn) is float and type(mean) is float and type(norm) is float:
        total = mx + mn + mean + norm
        return values if total - total == 0.0 else None  # inf/nan fail this
    try:
        if any(isinstance(v, (bool, str)) for v in values):
            return None
        out = (float(mx), float(mn), float(mean), float(norm))
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(sum(out)) else None


_NOT_TENSOR = frozenset({"torch.Size", "slice", "ellipsis", "torch.ProcessGroup", "N/A"})


def _tensor_kind(row: Row, cache: dict[str, str | None]) -> str | None:
    """The dtype kind of a tensor row, ``None`` for other rows (scalars, sizes, None...)."""
    dtype = row.dtype
    if dtype in cache:
        kind = cache[dtype]
    else:
        kind = cache[dtype] = None if dtype in _NOT_TENSOR or dtype.startswith("<class") else dtype_kind(dtype)
    return kind if kind is not None and row.shape.startswith("[") else None


def build_calls(rows: Sequence[Row], rename: Callable[[str], str] | None = None,
                tree: Mapping[str, str | None] | None = None) -> list[Call]:
    """Group ``rows`` (in dump order) into calls; ``rename`` maps an API name to the golden
    framework's; ``tree`` is construct.json's ``{call: parent module call}``.

    Only forward calls get their tensor fingerprints (backward calls follow their forward call).
    """
    calls: list[Call] = []
    kinds: dict[str, str | None] = {}
    for entry, group in groupby(rows, key=attrgetter("entry")):
        parsed = parse_entry(entry)
        if parsed is None:
            continue
        kind, direction, path, op, number = parsed
        if kind == "api" and rename is not None:
            op = op_name(rename(path))
        call = Call(entry, len(calls), kind, direction, op, path, number,
                    tree.get(entry) if tree is not None else None)
        call.rows = list(group)
        cut = len(entry)
        call.by_suffix = {row.name[cut:]: row for row in call.rows}
        if direction == "forward":
            for row in call.rows:
                tensor_kind = _tensor_kind(row, kinds)
                if tensor_kind is not None:
                    call.tensors.append(Tensor(row, row.name[cut:], row.state, row.shape, tensor_kind, _stats(row)))
        calls.append(call)
    return calls
