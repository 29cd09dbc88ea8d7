"""A MindSpore-vs-PyTorch graph shows, node by node, the verdicts of the compare report.

Real fixture (msProbe dumps of the same attention net in MindSpore and PyTorch, level mix,
statistics, ``-lm layer_mapping.yaml``): ``probe compare`` and ``probe graph_visualize`` run
on it; every judged graph node must carry, row by row, the ``Result`` of the CSV row of the
same name, and its colour must be the worst of them. Before the graph used the compare's
judge, 53 of 58 matched nodes were red ("dtype differs: Float32 vs torch.float32").
"""

from __future__ import annotations

import csv
import json
import sqlite3

from conftest import DATA

from probe.judge import precision_index

CASE = DATA / "mindspore" / "cross_layer_mix_statistics"


def _graph_nodes(db_path):
    with sqlite3.connect(db_path) as conn:
        for name, precision, inputs, outputs, side, link in conn.execute(
            "SELECT node_name, precision_index, input_data, output_data, data_source, matched_node_link FROM tb_nodes"
        ):
            if side == "NPU":
                partner = (json.loads(link or "[]") or [None])[-1]
                yield name, precision, {**json.loads(inputs or "{}"), **json.loads(outputs or "{}")}, partner


def test_cross_framework_graph_agrees_with_the_csv(tmp_path, run_probe):
    args = ("-tp", "target/step0", "-gp", "golden/step0", "-lm", "layer_mapping.yaml")
    assert run_probe("compare", *args, "-o", tmp_path / "cmp", cwd=CASE).code == 0
    assert run_probe("graph_visualize", *args, "-o", tmp_path / "graph", cwd=CASE).code == 0
    (report,) = (tmp_path / "cmp").glob("compare_result_*.csv")
    with open(report, newline="") as handle:
        csv_rows = {r["NPU Name"]: r for r in csv.DictReader(handle)}
    (db,) = (tmp_path / "graph").glob("compare_*.vis.db")
    judged = 0
    colours = []
    for name, precision, rows, partner in _graph_nodes(db):
        results = {row: fields["Result"] for row, fields in rows.items() if "Result" in fields}
        if not results:
            continue
        judged += 1
        for row, verdict in results.items():
            assert row in csv_rows, (name, row)
            # the node is linked to the bench node whose row the report paired with this one
            assert csv_rows[row]["Bench Name"].startswith(f"{partner}."), (name, partner, csv_rows[row]["Bench Name"])
            assert verdict == csv_rows[row]["Result"], (name, row, verdict, csv_rows[row]["Result"])
            assert json.loads(rows[row]["Err_message"]) == json.loads(csv_rows[row]["Err_message"]), row
        assert precision == precision_index(results.values()), name
        colours.append(precision)
    assert judged >= 50  # the cross-framework pairs are judged, not skipped
    # the report has a few failing rows (warnings and errors), most rows pass: so does the graph
    assert colours.count(0.0) > 3 * colours.count(1.0) > 0
    errors_in_csv = {r["NPU Name"] for r in csv_rows.values() if r["Result"] == "error"}
    assert errors_in_csv, "the fixture has failing rows the graph must show"
