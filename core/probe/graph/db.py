"""Write graphs into a ``.vis.db`` (SQLite) that TensorBoard's graph_ascend plugin opens."""

from __future__ import annotations

import json

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from probe.formats.msprobe.dtypes import PROCESS_GROUP, TORCH_SIZE
from probe.formats.msprobe.names import tensor_type
from probe.io import claim, temp_file
from probe.model import NA, Row

from probe.graph.metrics import ALL, MD5, SUMMARY
from probe.graph.node import NPU, Graph, GraphNode

SCHEMA = """
CREATE TABLE IF NOT EXISTS tb_config (
    id TEXT PRIMARY KEY,
    graph_type TEXT NOT NULL,
    task TEXT,
    tool_tip TEXT,
    micro_steps INTEGER,
    overflow_check INTEGER,
    node_colors TEXT NOT NULL,
    rank_list TEXT NOT NULL,
    step_list TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tb_nodes (
    id TEXT PRIMARY KEY,
    graph_id TEXT NOT NULL,
    node_order INTEGER NOT NULL,
    node_name TEXT NOT NULL,
    node_type TEXT NOT NULL,
    up_node TEXT,
    sub_nodes TEXT,
    precision_index INTEGER,
    overflow_level TEXT,
    micro_step_id INTEGER NOT NULL,
    matched_node_link TEXT,
    stack_id TEXT,
    parallel_merge_info TEXT,
    matched_distributed TEXT,
    modified INTEGER NOT NULL,
    input_data TEXT,
    output_data TEXT,
    data_source TEXT,
    dump_data_dir TEXT,
    step INTEGER NOT NULL,
    rank INTEGER NOT NULL,
    is_distributed INTEGER
);
CREATE TABLE IF NOT EXISTS tb_stack (
    id TEXT PRIMARY KEY,
    stack_info TEXT
);
CREATE TABLE IF NOT EXISTS tb_auto_match (
    id TEXT PRIMARY KEY,
    confidence REAL NOT NULL,
    why TEXT
);
"""
INDEXES = """
CREATE INDEX IF NOT EXISTS index1 ON tb_nodes (step, rank, data_source, up_node, node_order);
CREATE INDEX IF NOT EXISTS index2 ON tb_nodes (step, rank, data_source, node_name);
CREATE INDEX IF NOT EXISTS index3 ON tb_nodes (step, rank, data_source, node_order);
CREATE INDEX IF NOT EXISTS index4 ON tb_nodes (step, rank, node_order);
CREATE INDEX IF NOT EXISTS index5 ON tb_nodes (step, rank, micro_step_id, node_order);
CREATE INDEX IF NOT EXISTS index6 ON tb_nodes (step, rank, modified, matched_node_link);
CREATE INDEX IF NOT EXISTS index7 ON tb_nodes (is_distributed);
"""

DESCRIPTIONS = {
    SUMMARY: "Relative error of the output statistics compared with the inputs (statistics mode).",
    ALL: "Real-data metrics of the outputs compared with the inputs (tensor mode).",
    MD5: "CRC-32 of the outputs are equal or differ (md5 mode).",
}


def node_colors(task: str) -> dict[str, Any]:
    """The default colour legend of a compare db."""
    text = DESCRIPTIONS.get(task, DESCRIPTIONS[SUMMARY])
    return {
        "#FFFCF3": {"value": [0, 0.3], "description": f"Pass. {text}", "accuracy_level": "pass"},
        "#FFDC7F": {"value": [0.3, 0.6], "description": f"Warning. {text}", "accuracy_level": "warning"},
        "#FF704D": {"value": [0.6, 1], "description": f"Error. {text}", "accuracy_level": "error"},
        "#C7C7C7": {"value": [], "description": "Node not matched.", "accuracy_level": "unmatched node"},
    }


TOOL_TIPS = {
    SUMMARY: {
        "Max diff": "NPU max minus bench max",
        "Min diff": "NPU min minus bench min",
        "Mean diff": "NPU mean minus bench mean",
        "L2norm diff": "NPU L2 norm minus bench L2 norm",
    },
    MD5: {"md5": "CRC-32 of the data; equal values mean identical data"},
    ALL: {c: "" for c in ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                           "One Thousandth Err Ratio", "Five Thousandths Err Ratio")},
}


def _value_text(value: Any) -> str:
    if value is None:
        return "null"
    return str(value)


def item_dict(row: Row, framework: str, task: str) -> dict[str, str]:
    """The stored form of one parameter item (all values strings)."""
    if row.dtype == NA and row.stats[0] is None:
        return {"value": "null"}
    if row.dtype == PROCESS_GROUP:
        return {"type": row.dtype, "group_ranks": _value_text(row.stats[0]), "data_name": row.data_name}
    if row.dtype.startswith("<class"):
        kind = row.dtype[8:-2] if row.dtype.endswith("'>") else row.dtype
        item = {"type": kind, "dtype": row.dtype, "shape": row.shape}
    elif row.dtype in (TORCH_SIZE, "slice", "ellipsis"):
        item = {"type": row.dtype, "dtype": row.dtype, "shape": row.shape}
    else:
        if row.stats[0] is None:
            return {"value": "null"}
        item = {"type": tensor_type(framework), "dtype": row.dtype, "shape": row.shape}
    item["Max"], item["Min"], item["Mean"], item["Norm"] = (_value_text(v) for v in row.stats)
    item["requires_grad"] = row.requires_grad
    if task == MD5 and row.md5 is not None:
        item["md5"] = row.md5
    item["data_name"] = row.data_name
    return item


def _data_json(rows: Sequence[Row], node: GraphNode, framework: str, task: str, with_metrics: bool) -> str:
    out: dict[str, dict[str, str]] = {}
    for row in rows:
        item = item_dict(row, framework, task)
        if with_metrics:
            extra = node.metrics.get(row.name)
            if extra:
                item.update(extra)
        out[row.name] = item
    return orjson.dumps(out).decode()


def graph_rows(graph: Graph, compare: bool, task: str) -> tuple[list[tuple], list[tuple[str, str]]]:
    """The ``tb_nodes`` and ``tb_stack`` rows of one graph."""
    gid = graph.graph_id
    stacks: dict[tuple[str, ...], str] = {}
    stack_rows: list[tuple[str, str]] = []
    rows: list[tuple] = []
    with_metrics = compare and graph.side == NPU
    for node in sorted(graph.nodes.values(), key=lambda n: n.order):
        key = tuple(node.stack)
        sid = stacks.get(key)
        if sid is None:
            sid = f"{gid}_{len(stacks)}"
            stacks[key] = sid
            stack_rows.append((sid, orjson.dumps(list(key)).decode()))
        link = node.match.link() if (compare and node.match is not None) else []
        rows.append((
            f"{gid}_{node.name}",
            gid,
            node.order,
            node.name,
            node.kind,
            node.parent.name if node.parent is not None else "",
            orjson.dumps([c.name for c in node.children]).decode() if node.children else "",
            node.precision if with_metrics else None,
            node.overflow,
            node.micro_step,
            orjson.dumps(link).decode(),
            sid,
            orjson.dumps(node.merge_info).decode() if node.merge_info else "",
            orjson.dumps(node.distributed).decode(),
            0,
            _data_json(node.inputs, node, graph.framework, task, with_metrics),
            _data_json(node.outputs, node, graph.framework, task, with_metrics),
            graph.side,
            graph.dump_data_dir,
            graph.step,
            graph.rank,
            1 if node.name.startswith("Distributed") else 0,
        ))
    return rows, stack_rows


def auto_match_rows(graph: Graph) -> list[tuple[str, float, str]]:
    """``tb_auto_match`` rows (``--auto-match``): node row id, confidence and why of each automatic pair."""
    gid = graph.graph_id
    return [(f"{gid}_{name}", confidence, why) for name, (confidence, why) in sorted(graph.auto_matches.items())]


def write_part(path: Path, graphs: Sequence[Graph], compare: bool, task: str) -> int:
    """Write the ``tb_nodes`` / ``tb_stack`` rows of ``graphs`` into a new scratch SQLite file
    (what a worker process hands to :meth:`VisDbWriter.copy_part`); returns the node count."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "temp_store=MEMORY"):
            conn.execute(f"PRAGMA {pragma}")
        conn.executescript(SCHEMA)
        conn.execute("BEGIN")
        count = 0
        for graph in graphs:
            rows, stack_rows = graph_rows(graph, compare, task)
            conn.executemany("INSERT INTO tb_nodes VALUES (" + ",".join("?" * 22) + ")", rows)
            conn.executemany("INSERT INTO tb_stack VALUES (?,?)", stack_rows)
            conn.executemany("INSERT INTO tb_auto_match VALUES (?,?,?)", auto_match_rows(graph))
            count += len(rows)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return count


class VisDbWriter:
    """Writes one ``.vis.db`` atomically: rows go to a temporary file renamed on :meth:`close`."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.tmp = temp_file(self.path, ".db")
        self.conn = sqlite3.connect(self.tmp, isolation_level=None)
        # a private temporary file renamed on success: no journal and no fsync while filling it
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "temp_store=MEMORY", "cache_size=-262144"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.conn.executescript(SCHEMA)
        self.conn.execute("BEGIN")

    def write_config(
        self,
        compare: bool,
        task: str,
        micro_steps: int,
        overflow_check: bool,
        ranks: Iterable[int],
        steps: Iterable[int],
    ) -> None:
        """The single ``tb_config`` row."""
        self.conn.execute(
            "INSERT OR REPLACE INTO tb_config VALUES (?,?,?,?,?,?,?,?,?)",
            (
                "1",
                "compare" if compare else "build",
                task if compare else "",
                json.dumps(TOOL_TIPS.get(task, {}), ensure_ascii=False) if compare else None,
                max(1, micro_steps),
                1 if overflow_check else 0,
                json.dumps(node_colors(task), ensure_ascii=False) if compare else "null",
                json.dumps(sorted(set(ranks))),
                json.dumps(sorted(set(steps))),
            ),
        )

    def write_graph(self, graph: Graph, compare: bool, task: str) -> int:
        """Insert the rows of one graph; returns the number of nodes."""
        rows, stack_rows = graph_rows(graph, compare, task)
        self.conn.executemany("INSERT INTO tb_nodes VALUES (" + ",".join("?" * 22) + ")", rows)
        self.conn.executemany("INSERT INTO tb_stack VALUES (?,?)", stack_rows)
        self.conn.executemany("INSERT INTO tb_auto_match VALUES (?,?,?)", auto_match_rows(graph))
        return len(rows)

    def copy_part(self, part: Path) -> None:
        """Copy every row of a scratch file made by :func:`write_part` (``INSERT ... SELECT``)."""
        self.conn.execute("COMMIT")
        self.conn.execute("ATTACH DATABASE ? AS part", (str(part),))
        try:
            self.conn.execute("BEGIN")
            self.conn.execute("INSERT INTO tb_nodes SELECT * FROM part.tb_nodes")
            self.conn.execute("INSERT INTO tb_stack SELECT * FROM part.tb_stack")
            self.conn.execute("INSERT INTO tb_auto_match SELECT * FROM part.tb_auto_match")
            self.conn.execute("COMMIT")
        finally:
            self.conn.execute("DETACH DATABASE part")
            self.conn.execute("BEGIN")

    def update_distributed(self, updates: Iterable[tuple[str, str]]) -> None:
        """Set ``matched_distributed`` of rows by id."""
        self.conn.executemany("UPDATE tb_nodes SET matched_distributed = ? WHERE id = ?", [(v, k) for k, v in updates])

    def close(self) -> Path:
        """Create the indexes, commit, and claim the file's name (``build_{ts}_1.vis.db`` if taken).

        Returns the name used; never replaces an existing file.
        """
        self.conn.execute("COMMIT")
        self.conn.executescript(INDEXES)
        self.conn.execute("PRAGMA journal_mode=WAL")  # what TensorBoard's plugin expects in the header
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()
        for suffix in ("-wal", "-shm"):
            side = Path(str(self.tmp) + suffix)
            if side.exists():
                side.unlink()
        self.path = claim(self.tmp, self.path)
        return self.path

    def abort(self) -> None:
        """Drop the temporary file after a failure."""
        try:
            self.conn.close()
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.tmp) + suffix).unlink(missing_ok=True)
