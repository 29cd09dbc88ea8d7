"""Overflow false-positive rules (``-oc``): the built-in rule file and user rule files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from probe.errors import InputError
from probe.graph.build import build_graph
from probe.graph.overflow import CRITICAL, HIGH, MEDIUM, check_overflow, load_rules, read_rules
from probe.graph.service import GraphOptions, run_graph

# What msProbe 26.2 reports for one forward call per API with a single anomalous item
# (input 0, input 1 or output 0) and with an output Norm 500x the inputs' (mutation).
MSPROBE = {
    "Torch.empty": (None, None, None, None),
    "Torch.empty_like": (None, None, None, None),
    "Distributed.recv": (None, MEDIUM, None, None),
    "Distributed.all_gather": (None, MEDIUM, None, None),
    "Distributed.all_gather_into_tensor": (None, MEDIUM, None, None),
    "Distributed.reduce_scatter_tensor": (None, MEDIUM, None, None),
    "Distributed._reduce_scatter_base": (None, MEDIUM, None, None),
    "Tensor.masked_fill_": (None, MEDIUM, None, None),
    "Distributed.all_reduce": (MEDIUM, MEDIUM, CRITICAL, HIGH),
    "Distributed.broadcast": (MEDIUM, MEDIUM, CRITICAL, HIGH),
    "Tensor.copy_": (MEDIUM, MEDIUM, CRITICAL, HIGH),
    "Torch.zeros": (MEDIUM, MEDIUM, CRITICAL, HIGH),
}
VARIANTS = ("in0", "in1", "out", "mutation")


def _tensor(bad: bool = False, norm: float = 2.0) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": "inf" if bad else 2.0,
            "Min": -1.0, "Mean": 0.1, "Norm": norm, "requires_grad": False}


def write_overflow_dump(directory: Path, apis) -> Path:
    data = {}
    for api in apis:
        for index, variant in enumerate(VARIANTS):
            out = _tensor(variant == "out", 1000.0 if variant == "mutation" else 2.0)
            data[f"{api}.{index}.forward"] = {"input_args": [_tensor(variant == "in0"), _tensor(variant == "in1")],
                                              "input_kwargs": {}, "output": [out]}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "construct.json").write_text(json.dumps({n: None for n in data}))
    (directory / "dump.json").write_text(json.dumps(
        {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": data}))
    (directory / "stack.json").write_text("{}")
    return directory


def test_builtin_rules_match_msprobe(tmp_path):
    graph = build_graph(write_overflow_dump(tmp_path / "d", MSPROBE))
    check_overflow(graph)
    got = {api: tuple(graph.nodes[f"{api}.{i}.forward"].overflow for i in range(4)) for api in MSPROBE}
    assert got == MSPROBE


def test_rules_cover_keyword_buffers_and_rank_suffixes(tmp_path):
    directory = tmp_path / "d"
    directory.mkdir()
    data = {
        "Distributed.recv.0.forward": {"input_args": [], "input_kwargs": {"tensor": _tensor(True)}, "output": []},
        "Distributed.all_gather_rank1.0.forward": {"input_args": [[_tensor(True), _tensor(True)], _tensor()],
                                                   "input_kwargs": {}, "output": []},
        "Tensor.masked_fill_.0.backward": {"input_args": [_tensor(True)], "input_kwargs": {}, "output": [_tensor()]},
    }
    (directory / "dump.json").write_text(json.dumps({"task": "statistics", "framework": "pytorch", "data": data}))
    (directory / "construct.json").write_text("{}")
    graph = build_graph(directory)
    check_overflow(graph)
    assert graph.nodes["Distributed.recv.0.forward"].overflow is None
    assert graph.nodes["Distributed.all_gather_rank1.0.forward"].overflow is None
    assert graph.nodes["Tensor.masked_fill_.0.backward"].overflow == MEDIUM  # rules are for forward calls


def test_user_rule_file_adds_and_overrides(tmp_path):
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text("Torch.zeros: all\nTensor.copy_: [input.0]\nTorch.empty: []\n")
    rules = load_rules(rules_file)
    graph = build_graph(write_overflow_dump(tmp_path / "d", ["Torch.zeros", "Tensor.copy_", "Torch.empty"]))
    check_overflow(graph, rules)
    assert [graph.nodes[f"Torch.zeros.{i}.forward"].overflow for i in range(4)] == [None] * 4
    assert [graph.nodes[f"Tensor.copy_.{i}.forward"].overflow for i in range(4)] == [None, MEDIUM, CRITICAL, HIGH]
    assert [graph.nodes[f"Torch.empty.{i}.forward"].overflow for i in range(4)] == [MEDIUM, MEDIUM, CRITICAL, HIGH]
    # end to end through the service: the db carries the levels
    run = run_graph(GraphOptions(target=tmp_path / "d", output=tmp_path / "out", overflow_check=True,
                                 overflow_rules=rules_file, timestamp="20260101000000"))
    with sqlite3.connect(run.db) as con:
        levels = dict(con.execute("SELECT node_name, overflow_level FROM tb_nodes"))
    assert levels["Torch.zeros.2.forward"] is None and levels["Torch.empty.2.forward"] == CRITICAL


@pytest.mark.parametrize("text, message", [
    ("- a\n- b\n", "must map API names"),
    ("recv: all\n", "must be an API name"),
    ("Distributed.recv: [weights]\n", "expected 'all' or a list"),
    ("Distributed.recv: [input.0\n", "is not valid YAML"),
])
def test_bad_rule_files_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "rules.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_rules(path)
