"""The two JSON files of ``-da``, in msProbe's structure.

* ``compare_result_rank{N}_{ts}.json``: ``{entry: {"is_same": bool, "op_items": [row, ...]}}``
  with statistics columns (md5 columns for md5 dumps), indent 4;
* ``diff_analyze_{ts}.json``: ``{"rank_N": [{"op_name", "data_info": {"input", "output"},
  "stack_info"}]}``, indent 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from probe.analysis.first_diff import FirstDiff
from probe.analysis.nodes import Node, display_stat, relative_errors
from probe.io import atomic_write
from probe.model import NA
from probe.modes.common import common_cells, err_message, requires_grad_consistent

_COMMON = ("NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
           "NPU Requires_grad", "Bench Requires_grad")
_DIFFS = ("Max diff", "Min diff", "Mean diff", "L2norm diff",
          "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
_NPU_STATS = ("NPU max", "NPU min", "NPU mean", "NPU l2norm")
_BENCH_STATS = ("Bench max", "Bench min", "Bench mean", "Bench l2norm")


def _p2p(row: Any, key: str) -> str:
    extra = row.extra if row is not None else None
    if not extra or extra.get(key) is None:
        return "None"
    return str(extra[key])


def op_item(record: Any, node: Node, first: bool, md5: bool) -> dict[str, Any]:
    """One row of ``op_items``."""
    item = dict(zip(_COMMON, common_cells(record)))
    t, g = record.pair.target, record.pair.golden
    if md5:
        item["NPU MD5"] = t.md5 if t.md5 is not None else NA
        item["BENCH MD5"] = (g.md5 if g.md5 is not None else NA) if g is not None else NA
    else:
        diffs, rels = relative_errors(record)
        item.update(zip(_DIFFS, diffs + rels))
        item.update(zip(_NPU_STATS, (display_stat(v) for v in t.stats)))
        item.update(zip(_BENCH_STATS, (display_stat(v) for v in g.stats) if g is not None else [NA] * 4))
    item["Requires_grad Consistent"] = requires_grad_consistent(record)
    item["Result"] = record.verdict
    item["Err_message"] = err_message(record)
    item["NPU_Stack_Info"] = node.stack if first and node.stack is not None else NA
    item["state"] = t.state
    item["api_origin_name"] = node.entry
    item["NPU P2POp op"] = _p2p(t, "op")
    item["Bench P2POp op"] = _p2p(g, "op")
    item["NPU P2POp peer"] = _p2p(t, "peer")
    item["Bench P2POp peer"] = _p2p(g, "peer")
    return item


def write_rank_json(nodes: list[Node], md5: bool, path: Path) -> Path:
    """Write ``compare_result_rank{N}_{ts}.json`` for the nodes of one rank (streamed, atomic)."""
    out = atomic_write(path, "w", encoding="utf-8")
    with out as handle:
        handle.write("{")
        for index, node in enumerate(nodes):
            body = {
                "is_same": node.is_same,
                "op_items": [op_item(r, node, i == 0, md5) for i, r in enumerate(node.records)],
            }
            text = json.dumps(body, indent=4, ensure_ascii=False).replace("\n", "\n    ")
            handle.write(("," if index else "") + f"\n    {json.dumps(node.entry, ensure_ascii=False)}: {text}")
        handle.write("\n}\n")
    return out.path


def node_info(node: Node, md5: bool) -> dict[str, Any]:
    """One item of a rank's list in ``diff_analyze_{ts}.json``."""
    data: dict[str, dict[str, Any]] = {"input": {}, "output": {}}
    for record in node.records:
        t = record.pair.target
        if t.state not in data:
            continue
        if md5:
            values: dict[str, Any] = {"NPU MD5": t.md5 if t.md5 is not None else NA}
        else:
            values = dict(zip(_NPU_STATS, (display_stat(v) for v in t.stats)))
        values["NPU P2POp peer"] = _p2p(t, "peer")
        data[t.state][t.name] = values
    return {"op_name": node.entry, "data_info": data, "stack_info": node.stack or []}


def diff_analyze_doc(found: FirstDiff, md5: bool) -> dict[str, Any]:
    """The ``diff_analyze`` document: ``{"rank_N": [node info, ...]}``."""
    return {f"rank_{rank}": [node_info(n, md5) for n in nodes] for rank, nodes in found.nodes.items()}


def write_diff_analyze(found: FirstDiff, md5: bool, path: Path) -> Path:
    """Write ``diff_analyze_{ts}.json`` (atomic)."""
    out = atomic_write(path, "w", encoding="utf-8")
    with out as handle:
        json.dump(diff_analyze_doc(found, md5), handle, indent=2, ensure_ascii=False)
        handle.write("\n")
    return out.path
