"""The .vis.db written by graph_visualize, read back with sqlite3 and checked against the spec."""

from __future__ import annotations

import json
import re
import sqlite3

from graph_helpers import run
from probe.cli import main

SPEC_COLUMNS = {
    "tb_config": ["id", "graph_type", "task", "tool_tip", "micro_steps", "overflow_check", "node_colors",
                  "rank_list", "step_list"],
    "tb_nodes": ["id", "graph_id", "node_order", "node_name", "node_type", "up_node", "sub_nodes",
                 "precision_index", "overflow_level", "micro_step_id", "matched_node_link", "stack_id",
                 "parallel_merge_info", "matched_distributed", "modified", "input_data", "output_data",
                 "data_source", "dump_data_dir", "step", "rank", "is_distributed"],
    "tb_stack": ["id", "stack_info"],
}


def _rows(db, sql, *args):
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def _check_graph_integrity(db):
    nodes = _rows(db, "SELECT * FROM tb_nodes")
    stacks = {r["id"] for r in _rows(db, "SELECT id FROM tb_stack")}
    by_graph = {}
    for node in nodes:
        by_graph.setdefault(node["graph_id"], {})[node["node_name"]] = node
        assert node["id"] == f"{node['graph_id']}_{node['node_name']}"
        assert node["graph_id"] == f"{node['data_source']}_{node['step']}_{node['rank']}"
        assert node["stack_id"] in stacks
        assert node["is_distributed"] == (1 if node["node_name"].startswith("Distributed") else 0)
        assert node["modified"] == 0
    for graph in by_graph.values():
        roots = [n for n in graph.values() if n["up_node"] == ""]
        assert len(roots) == 1 and roots[0]["node_name"] == "DefaultModel"
        orders = sorted(n["node_order"] for n in graph.values())
        assert orders == list(range(len(graph)))
        for node in graph.values():
            children = json.loads(node["sub_nodes"]) if node["sub_nodes"] else []
            for child in children:
                assert graph[child]["up_node"] == node["node_name"]
                assert graph[child]["node_order"] < node["node_order"]  # post-order
            if node["up_node"]:
                assert node["node_name"] in json.loads(graph[node["up_node"]]["sub_nodes"])
    return nodes


def test_compare_db_schema_and_rows(tmp_path):
    result = run(tmp_path, "stat_target", "stat_golden")
    assert re.fullmatch(r"compare_\d{14}\.vis\.db", result.db.name)
    conn = sqlite3.connect(result.db)
    for table, columns in SPEC_COLUMNS.items():
        assert [r[1] for r in conn.execute(f"PRAGMA table_info({table})")] == columns
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'index%'")}
    assert indexes == {f"index{i}" for i in range(1, 8)}
    conn.close()
    config = _rows(result.db, "SELECT * FROM tb_config")
    assert len(config) == 1
    config = config[0]
    assert config["id"] == "1" and config["graph_type"] == "compare" and config["task"] == "summary"
    assert json.loads(config["rank_list"]) == [0] and json.loads(config["step_list"]) == [0]
    colors = json.loads(config["node_colors"])
    assert colors["#FFDC7F"]["value"] == [0.3, 0.6] and colors["#C7C7C7"]["value"] == []
    assert set(json.loads(config["tool_tip"])) == {"Max diff", "Min diff", "Mean diff", "L2norm diff"}
    nodes = _check_graph_integrity(result.db)
    assert {n["data_source"] for n in nodes} == {"NPU", "Bench"}
    conv = next(n for n in nodes if n["id"] == "NPU_0_0_Functional.conv2d.0.backward")
    assert conv["precision_index"] == 0.5 and conv["node_type"] == "1"
    assert conv["up_node"] == "Module.conv.Conv2d.backward.0" and conv["sub_nodes"] == ""
    assert json.loads(conv["matched_node_link"]) == [
        "DefaultModel", "Module.conv.Conv2d.backward.0", "Functional.conv2d.0.backward"]
    out = json.loads(conv["output_data"])
    item = out["Functional.conv2d.0.backward.output.1"]
    assert item["type"] == "torch.Tensor" and item["shape"] == "[4, 3, 3, 3]"
    for key in ("Max diff", "NormRelativeErr", "Requires_grad Consistent", "Result", "Err_message"):
        assert key in item
    assert out["Functional.conv2d.0.backward.output.0"]["value"] == "null"
    bench = next(n for n in nodes if n["id"] == "Bench_0_0_Functional.conv2d.0.backward")
    assert bench["precision_index"] is None
    assert "Result" not in json.loads(bench["output_data"])["Functional.conv2d.0.backward.output.1"]
    root = next(n for n in nodes if n["id"] == "NPU_0_0_DefaultModel")
    assert root["precision_index"] is None and json.loads(root["matched_node_link"]) == ["DefaultModel"]


def test_build_db_through_the_cli(tmp_path, capsys):
    from graph_helpers import DATA

    code = main(["graph", "-tp", str(DATA / "multirank_target"), "-o", str(tmp_path), "-oc", "--html"])
    assert code == 0
    dbs = list(tmp_path.glob("build_*.vis.db"))
    assert len(dbs) == 1 and list(tmp_path.glob("build_*.html"))
    config = _rows(dbs[0], "SELECT * FROM tb_config")[0]
    assert config["graph_type"] == "build" and config["task"] == "" and config["node_colors"] == "null"
    assert config["tool_tip"] is None and config["overflow_check"] == 1
    assert json.loads(config["rank_list"]) == [0, 1]
    nodes = _check_graph_integrity(dbs[0])
    assert {n["data_source"] for n in nodes} == {"NPU"}
    assert all(n["precision_index"] is None and n["matched_node_link"] == "[]" for n in nodes)
    linked = [n for n in nodes if n["is_distributed"] and n["matched_distributed"] != "{}"]
    assert linked and json.loads(linked[0]["matched_distributed"])["communications_type"] == "send_receive"


def test_build_and_view_leave_only_the_db_and_the_html(tmp_path, capsys):
    """No -wal/-shm side files, also for an output path with a space and a '#'."""
    from graph_helpers import DATA

    out = tmp_path / "run #1"
    assert main(["graph", "-tp", str(DATA / "multirank_target"), "-o", str(out), "--html"]) == 0
    db = next(out.glob("build_*.vis.db"))
    (out / db.name.replace(".vis.db", ".html")).unlink()
    assert main(["view", str(db)]) == 0
    assert sorted(p.suffix for p in out.iterdir()) == [".db", ".html"]


def test_cli_errors_are_one_line(tmp_path, capsys):
    code = main(["graph_visualize", "-tp", str(tmp_path / "missing"), "-o", str(tmp_path / "o")])
    assert code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("probe: error")]
    assert len(errors) == 1 and "missing" in errors[0]
    code = main(["view", str(tmp_path / "none.vis.db")])
    assert code == 2
