"""Worker processes: each handles whole (target, golden) pairs; the parent copies their db parts
and links communications across ranks afterwards. The result must equal a serial run."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from graph_helpers import DATA, run
from probe.errors import InputError


def _content(db):
    with sqlite3.connect(db) as con:
        return {table: sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
                for table in ("tb_config", "tb_nodes", "tb_stack")}


@pytest.mark.parametrize("target, golden", [("multirank_target", "multirank_target"), ("multistep_target", "multistep_golden")])
def test_parallel_run_equals_serial_run(tmp_path, target, golden):
    serial = run(tmp_path / "serial", target, golden, overflow_check=True, jobs=1, timestamp="20260101000000")
    parallel = run(tmp_path / "parallel", target, golden, overflow_check=True, jobs=2, timestamp="20260101000000")
    assert parallel.graphs == [] and serial.graphs
    assert (parallel.nodes, parallel.matched) == (serial.nodes, serial.matched)
    assert _content(parallel.db) == _content(serial.db)
    assert not list((tmp_path / "parallel").glob(".probe-graph-*"))  # no scratch files left


def test_cross_rank_links_are_written_by_the_parent(tmp_path):
    result = run(tmp_path, "multirank_target", jobs=2)
    with sqlite3.connect(result.db) as con:
        links = {(rank, name): json.loads(value) for rank, name, value in con.execute(
            "SELECT rank, node_name, matched_distributed FROM tb_nodes WHERE is_distributed = 1")}
    linked = {key: value for key, value in links.items() if value}
    assert linked, "the multi-rank dump has communications linked across its two ranks"
    for (rank, name), value in linked.items():
        for other, (_level, partner) in value["nodes_info"].items():
            assert int(other) != rank and (int(other), partner) in links


def test_worker_errors_are_one_line_input_errors(tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(DATA / "multirank_target", broken)
    (broken / "rank1" / "dump.json").write_text("[]")
    from probe.graph.service import GraphOptions, run_graph

    with pytest.raises(InputError, match="dump.json"):
        run_graph(GraphOptions(target=broken, output=tmp_path / "out", jobs=2))
    assert not list((tmp_path / "out").glob("*.vis.db"))
    assert not list((tmp_path / "out").glob(".probe-graph-*"))
