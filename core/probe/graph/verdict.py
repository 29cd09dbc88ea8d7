"""Node-level verdicts of a graph compare (pass / warning / error -> precision_index)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from probe.model import ERROR, PASS, VERDICT_RANK, WARNING, Pair

from probe.graph.metrics import ALL, MD5, SUMMARY, as_float
from probe.graph.node import COLLECTION, GraphNode

PRECISION = {PASS: 0.0, WARNING: 0.5, ERROR: 1.0}
EMPTY_APIS = frozenset({
    "empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format",
    "new_empty_strided", "new_empty", "empty_strided",
})
NO_INPUT_RULE_APIS = frozenset({"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"})
_BAD = ("inf", "-inf", "nan")


def api_name(node_name: str) -> str:
    """Second name segment without a ``_rank<k>`` suffix (``Torch.empty_rank1.0.forward`` -> ``empty``)."""
    parts = node_name.split(".")
    name = parts[1] if len(parts) > 1 else node_name
    cut = name.find("_rank")
    return name[:cut] if cut > 0 and name[cut + 5 :].isdigit() else name


def _not_finite(value: object) -> bool:
    return str(value).strip().lower() in _BAD


def _finite(value: object) -> bool:
    if value is None:
        return False
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


class _Rows:
    """Verdict bookkeeping for the row pairs of one node."""

    def __init__(self, pairs: Sequence[Pair], node: GraphNode) -> None:
        self.pairs = [p for p in pairs if p.golden is not None]
        self.result = {p.target.name: PASS for p in self.pairs}
        self.messages: dict[str, list[str]] = {p.target.name: [] for p in self.pairs}
        self.node = node

    def raise_to(self, pair: Pair, verdict: str, message: str) -> None:
        name = pair.target.name
        if VERDICT_RANK[verdict] > VERDICT_RANK[self.result[name]]:
            self.result[name] = verdict
        self.messages[name].append(f"{verdict}: {message}")

    def metric(self, pair: Pair, column: str) -> float | None:
        return as_float(self.node.metrics.get(pair.target.name, {}).get(column))


def judge_node(node: GraphNode, pairs: Sequence[Pair], task: str, merged: bool = False) -> str | None:
    """Apply the rules to one matched NPU node; store per-row Result/Err_message; return the verdict.

    Returns ``None`` when the node has no comparable rows.
    """
    rows = _Rows(pairs, node)
    if not rows.pairs:
        return None
    api = api_name(node.name)
    if api in EMPTY_APIS:
        _store(node, rows)
        return ERROR if task == MD5 else PASS
    inputs = [p for p in rows.pairs if p.target.state != "output"]
    outputs = [p for p in rows.pairs if p.target.state == "output"]
    skip_inputs = api in NO_INPUT_RULE_APIS
    if task == MD5:
        for pair in rows.pairs:
            t_md5, g_md5 = pair.target.md5, pair.golden.md5
            if t_md5 is None or g_md5 is None:
                if t_md5 != g_md5:
                    rows.raise_to(pair, WARNING, "the CRC-32 value is missing on one side.")
            elif t_md5 != g_md5:
                rows.raise_to(pair, ERROR, "the CRC-32 value of NPU differs from that of the bench.")
    else:
        _common_rules(rows, inputs, skip_inputs, merged)
        if task == SUMMARY:
            _summary_rules(rows, inputs, outputs, skip_inputs)
        elif task == ALL:
            _tensor_rules(rows, inputs, outputs, skip_inputs)
    _store(node, rows)
    worst = max(rows.result.values(), key=VERDICT_RANK.__getitem__, default=PASS)
    return worst


def _common_rules(rows: _Rows, inputs: list[Pair], skip_inputs: bool, merged: bool) -> None:
    for pair in rows.pairs:
        t, g = pair.target, pair.golden
        if skip_inputs and t.state != "output":
            continue
        t_max, t_min = t.stats[0], t.stats[1]
        if (_not_finite(t_max) or _not_finite(t_min)) and _finite(g.stats[0]) and _finite(g.stats[1]):
            rows.raise_to(pair, ERROR, "NPU Max or Min is inf or nan while the bench values are finite.")
        if t.requires_grad != g.requires_grad and "N/A" not in (t.requires_grad, g.requires_grad):
            rows.raise_to(pair, ERROR, "requires_grad differs between NPU and bench.")
        if "class" in t.dtype and t.shape == "[]" and t.state != "output" and str(t.stats[0]) != str(g.stats[0]):
            rows.raise_to(pair, ERROR, "the non-tensor input value differs between NPU and bench.")
        if t.dtype != g.dtype and "qkv" not in g.name and "gate_up" not in g.name:
            rows.raise_to(pair, ERROR, f"dtype differs (NPU {t.dtype}, bench {g.dtype}).")
        if not merged and t.shape != g.shape:
            rows.raise_to(pair, ERROR, f"shape differs (NPU {t.shape}, bench {g.shape}).")


def _abs_values(rows: _Rows, pairs: list[Pair], column: str) -> list[float]:
    values = []
    for pair in pairs:
        value = rows.metric(pair, column)
        if value is not None and not math.isnan(value):
            values.append(abs(value))
    return values


def _summary_rules(rows: _Rows, inputs: list[Pair], outputs: list[Pair], skip_inputs: bool) -> None:
    if not outputs:
        return
    a = max(_abs_values(rows, inputs, "NormRelativeErr"), default=0.0) if not skip_inputs else 0.0
    out_values = _abs_values(rows, outputs, "NormRelativeErr")
    b = max(out_values, default=0.0)
    if a < 0.1 and not skip_inputs:
        for pair in outputs:
            value = rows.metric(pair, "NormRelativeErr")
            if value is not None and abs(value) > 0.5:
                rows.raise_to(pair, ERROR, "output norm relative error is above 0.5 while inputs agree.")
    if not skip_inputs and ((a == 0 and b > 0.1) or (a > 0 and b / a > 10)):
        rows.raise_to(outputs[0], WARNING, "output relative error is amplified more than tenfold over the inputs.")


def _tensor_rules(rows: _Rows, inputs: list[Pair], outputs: list[Pair], skip_inputs: bool) -> None:
    if not outputs or not inputs or skip_inputs:
        return
    in_ratio = [v for p in inputs if (v := rows.metric(p, "One Thousandth Err Ratio")) is not None]
    out_ratio = [v for p in outputs if (v := rows.metric(p, "One Thousandth Err Ratio")) is not None]
    if in_ratio and out_ratio and min(in_ratio) > 0.9 and min(out_ratio) < 0.1:
        rows.raise_to(outputs[0], ERROR, "one-thousandth error ratio drops from above 0.9 to below 0.1.")
    in_cos = [v for p in inputs if (v := rows.metric(p, "Cosine")) is not None]
    out_cos = [v for p in outputs if (v := rows.metric(p, "Cosine")) is not None]
    if in_cos and out_cos and min(in_cos) > 0.9 and min(in_cos) - min(out_cos) > 0.1:
        rows.raise_to(outputs[0], WARNING, "cosine similarity drops by more than 0.1 from inputs to outputs.")


def _store(node: GraphNode, rows: _Rows) -> None:
    for pair in rows.pairs:
        name = pair.target.name
        fields = node.metrics.setdefault(name, {})
        t_rg, g_rg = pair.target.requires_grad, pair.golden.requires_grad
        fields["Requires_grad Consistent"] = str(t_rg == g_rg)
        fields["Result"] = rows.result[name]
        fields["Err_message"] = json.dumps(rows.messages[name], ensure_ascii=False)


def judge_graph(by_node: dict[GraphNode, list[Pair]], task: str, merged: bool = False) -> None:
    """Set ``precision`` on every matched NPU node with data, then on matched collections."""
    for node, pairs in by_node.items():
        verdict = judge_node(node, pairs, task, merged)
        if verdict is not None:
            node.precision = PRECISION[verdict]


def judge_collections(nodes: Sequence[GraphNode]) -> None:
    """Matched API collections take the max precision of their children (missing = 0)."""
    for node in nodes:
        if node.kind == COLLECTION and node.match is not None:
            node.precision = max((c.precision or 0.0 for c in node.children), default=0.0)
