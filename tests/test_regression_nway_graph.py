"""N-way graph: the golden graph with each target's verdict per node (data side)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from conftest import PYTORCH_CASES

GOLDEN = PYTORCH_CASES / "stat_mix_cnn/golden/step0/proc23597"
TARGETS = {
    "mix": PYTORCH_CASES / "stat_mix_cnn/target/step0/proc23827",
    "extra": PYTORCH_CASES / "structure_extra_layer_cnn/target/step0/rank0",
    "multi": PYTORCH_CASES / "multistep_cnn/target/step0/proc31873",
}


def _rows(db, sql, *args):
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def nway_graph(tmp_path_factory):
    from probe.cli import main

    out = tmp_path_factory.mktemp("ng")
    argv = ["graph", "-gp", str(GOLDEN), "-o", str(out / "nway"), "--jobs", "2"]
    for label, target in TARGETS.items():
        argv += ["-tp", str(target), "--label", label]
    assert main(argv) == 0
    for label, target in TARGETS.items():
        assert main(["graph", "-gp", str(GOLDEN), "-tp", str(target), "-o", str(out / "two" / label)]) == 0
    return out


NODE_COLUMNS = ("node_name, node_type, up_node, sub_nodes, precision_index, overflow_level, matched_node_link, "
                "input_data, output_data, data_source, step, rank")


@pytest.mark.parametrize("label", list(TARGETS))
def test_each_target_gets_its_ordinary_graph(nway_graph, label):
    (ours,) = (nway_graph / "nway" / label).glob("compare_*.vis.db")
    (alone,) = (nway_graph / "two" / label).glob("compare_*.vis.db")
    sql = f"SELECT {NODE_COLUMNS} FROM tb_nodes ORDER BY data_source, node_order"
    assert _rows(ours, sql) == _rows(alone, sql)


def test_nway_db_holds_every_targets_verdict_per_golden_node(nway_graph):
    (db,) = (nway_graph / "nway").glob("nway_*.vis.db")
    labels = [label for _, label in _rows(db, "SELECT idx, label FROM tb_nway_targets ORDER BY idx")]
    assert labels == list(TARGETS)
    golden = {n for (n,) in _rows(db, "SELECT node_name FROM tb_nodes WHERE data_source = 'Bench'")}
    for index, label in enumerate(labels):
        (own,) = (nway_graph / "two" / label).glob("compare_*.vis.db")
        expected = {}
        for name, precision, link in _rows(own, "SELECT node_name, precision_index, matched_node_link FROM tb_nodes "
                                                "WHERE data_source = 'NPU' ORDER BY node_order"):
            chain = json.loads(link) if link else []
            if chain:
                expected.setdefault(chain[-1], (name, precision))
        got = {g: (t, p) for g, t, p in _rows(db, "SELECT golden_node, target_node, precision_index FROM tb_nway "
                                                 "WHERE idx = ?", index)}
        assert got == expected and set(got) <= golden
    # the golden graph and the first target's graph are there as in any compare db
    assert _rows(db, "SELECT graph_type FROM tb_config") == [("compare",)]


def test_load_nway_flags_nodes_where_targets_disagree(nway_graph):
    from probe.regression.nway_data import load_nway, verdict_of

    (db,) = (nway_graph / "nway").glob("nway_*.vis.db")
    names = [n for (n,) in _rows(db, "SELECT node_name FROM tb_nodes WHERE data_source = 'Bench' ORDER BY node_order")]
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        payload = load_nway(conn, 0, 0, names)
    finally:
        conn.close()
    assert payload["labels"] == list(TARGETS)
    relu = names.index("Functional.relu.0.forward")
    # both perturbed runs warn on relu; the extra-layer run (unperturbed input) passes it
    verdicts = [verdict_of(payload["precision"][t][relu], bool(payload["matched"][t][relu])) for t in range(3)]
    assert verdicts == ["warning", "pass", "warning"]
    assert relu in payload["disagree"]
    for i in payload["disagree"]:
        assert len({verdict_of(payload["precision"][t][i], bool(payload["matched"][t][i])) for t in range(3)}) > 1
    agree = [i for i in range(len(names)) if i not in payload["disagree"]]
    assert agree and all(
        len({verdict_of(payload["precision"][t][i], bool(payload["matched"][t][i])) for t in range(3)}) == 1
        for i in agree)


def test_plain_db_has_no_nway_payload(nway_graph):
    from probe.regression.nway_data import load_nway

    (db,) = (nway_graph / "two" / "mix").glob("compare_*.vis.db")
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        assert load_nway(conn, 0, 0, ["x"]) is None
    finally:
        conn.close()


def test_nway_graph_needs_a_golden(tmp_path, run_probe):
    result = run_probe("graph", "-tp", TARGETS["mix"], "-tp", TARGETS["extra"], "-o", tmp_path)
    assert result.code == 2 and "needs the golden dump" in result.err
