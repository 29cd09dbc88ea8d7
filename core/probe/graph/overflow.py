"""NaN/Inf anomaly levels of nodes (``-oc``): medium, high, critical.

Known false positives (uninitialised outputs, receive buffers) are skipped according to a rule
file: ``probe/data/overflow_rules.yaml`` ships with probe, ``--overflow_rules FILE`` adds to it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path

from probe.errors import InputError
from probe.formats.msprobe.names import NON_TENSOR_DTYPES
from probe.jsonio import parse_yaml, read_yaml
from probe.model import Row

from probe.graph.node import Graph, GraphNode

MEDIUM, HIGH, CRITICAL = "medium", "high", "critical"
LEVEL_RANK = {MEDIUM: 1, HIGH: 2, CRITICAL: 3}
MUTATION_RATIO = 100.0
SKIP_ALL = "all"
_BAD = ("inf", "-inf", "nan")

Rules = Mapping[str, "str | tuple[str, ...]"]
"""API (``Distributed.recv``) -> ``"all"`` or the parameters to skip (``input.0``, ``output``...)."""


def parse_rules(doc: object, path: Path | None = None) -> dict[str, str | tuple[str, ...]]:
    """Check a rule document (``{api: "all" | [param, ...]}``); one-line error otherwise."""
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InputError("must map API names (e.g. Distributed.recv) to 'all' or a list of parameters", path)
    rules: dict[str, str | tuple[str, ...]] = {}
    for api, value in doc.items():
        if not isinstance(api, str) or api.count(".") != 1:
            raise InputError(f"rule key {api!r} must be an API name like Distributed.recv", path)
        if value == SKIP_ALL:
            rules[api] = SKIP_ALL
            continue
        if not isinstance(value, list) or not all(
            isinstance(p, str) and (p == "output" or p.startswith(("input.", "output."))) for p in value
        ):
            raise InputError(f"rule {api}: expected 'all' or a list like [input.0, output]", path)
        rules[api] = tuple(value)
    return rules


def read_rules(path: Path) -> dict[str, str | tuple[str, ...]]:
    """Read a YAML rule file."""
    doc = read_yaml(path)
    return parse_rules(doc, path)


@lru_cache(maxsize=1)
def builtin_rules() -> dict[str, str | tuple[str, ...]]:
    """The rules shipped with probe."""
    resource = resources.files("probe").joinpath("data", "overflow_rules.yaml")
    return parse_rules(parse_yaml(resource.read_text(encoding="utf-8"), str(resource)))


def load_rules(extra: Path | None = None) -> dict[str, str | tuple[str, ...]]:
    """Built-in rules, overridden entry by entry by ``extra`` (an empty list re-enables an API)."""
    rules = dict(builtin_rules())
    if extra is not None:
        rules.update(read_rules(extra))
    return rules


def _rule_key(node_name: str) -> str | None:
    """``Distributed.recv_rank1.0.forward`` -> ``Distributed.recv``; ``None`` for backward calls."""
    parts = node_name.split(".")
    if len(parts) < 2 or "backward" in parts:
        return None
    api = parts[1]
    cut = api.find("_rank")
    if cut > 0 and api[cut + 5:].isdigit():
        api = api[:cut]
    return f"{parts[0]}.{api}"


def _skipped(row: Row, node: str, params: tuple[str, ...]) -> bool:
    if not row.name.startswith(node + "."):
        return False
    tail = row.name[len(node) + 1:]
    return any(tail == p or tail.startswith(p + ".") for p in params)


def _anomalous(row: Row) -> bool:
    return any(str(v).strip().lower() in _BAD for v in row.stats[:3] if v is not None)


def _is_tensor(row: Row) -> bool:
    return not row.dtype.startswith("<class") and row.dtype not in NON_TENSOR_DTYPES


def _norm(row: Row) -> float | None:
    try:
        value = float(row.stats[3])
    except (TypeError, ValueError):
        return None
    return abs(value) if math.isfinite(value) else None


def overflow_level(node: GraphNode, rules: Rules | None = None) -> str | None:
    """The anomaly level of one node from its rows (first matching scene wins)."""
    rules = builtin_rules() if rules is None else rules
    key = _rule_key(node.name)
    rule = rules.get(key) if key is not None else None
    if rule == SKIP_ALL:
        return None
    inputs, outputs = node.inputs, node.outputs
    if rule:
        inputs = [r for r in inputs if not _skipped(r, node.name, rule)]
        outputs = [r for r in outputs if not _skipped(r, node.name, rule)]
    bad_in = any(_anomalous(r) for r in inputs)
    bad_out = any(_anomalous(r) for r in outputs)
    if bad_out and not bad_in:
        return CRITICAL
    if bad_in and bad_out:
        return HIGH
    if bad_in:
        return MEDIUM
    in_norms = [n for r in inputs if _is_tensor(r) and (n := _norm(r)) is not None]
    out_norms = [n for r in outputs if _is_tensor(r) and (n := _norm(r)) is not None]
    if in_norms and out_norms:
        top_in, top_out = max(in_norms), max(out_norms)
        if (top_in == 0 and top_out > MUTATION_RATIO) or (top_in > 0 and top_out / top_in > MUTATION_RATIO):
            return HIGH
    return None


def check_overflow(graph: Graph, rules: Rules | None = None) -> int:
    """Set ``overflow`` on every node with data; return the number of anomalous nodes."""
    rules = builtin_rules() if rules is None else rules
    count = 0
    for node in graph.nodes.values():
        if node.has_data:
            node.overflow = overflow_level(node, rules)
            count += node.overflow is not None
    return count
