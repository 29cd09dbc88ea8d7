"""Parallel merge of multi-rank graphs (TP, PP, VPP, PP+TP, merged compare) on synthetic dumps."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from graph_helpers import host
from graph_parallel_dumps import groups, tensor, write_megatron
from probe.errors import InputError
from probe.graph.build import build_graph
from probe.graph.merge import default_groups, find_groups
from probe.graph.service import GraphOptions, MergeOptions, run_graph

LAYER = "Module.model.layers.{}.TransformerLayer.{}.0"


def _merge(tmp_path, target, *merge, golden=None, **kwargs):
    options = GraphOptions(target=target, golden=golden, output=tmp_path / "out", merge=list(merge), **kwargs)
    return run_graph(options, host())


def _graphs(root, rank_size):
    return [build_graph(root / f"rank{r}", step=0, rank=r) for r in range(rank_size)]


def _stats(node, side="inputs", index=0):
    return tuple(float(v) for v in getattr(node, side)[index].stats)


def test_default_megatron_groups():
    spec = default_groups(8, 2, 2)
    assert spec.tp == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert spec.pp == [[0, 4], [1, 5], [2, 6], [3, 7]]
    other = default_groups(8, 2, 2, "tp-pp-dp")
    assert other.tp == [[0, 1], [2, 3], [4, 5], [6, 7]] and other.pp == [[0, 2], [1, 3], [4, 6], [5, 7]]
    assert default_groups(4, 1, 4).pp == [[0, 1, 2, 3]]


def test_groups_are_discovered_from_collectives_and_sends(tmp_path):
    # dumps laid out with a non-default order: only discovery can find these PP groups
    root = write_megatron(tmp_path / "d", 8, 2, 2, order="tp-pp-dp")
    found = find_groups(_graphs(root, 8), MergeOptions(8, 2, 2))
    assert found.discovered
    assert (found.tp, found.pp) == groups(8, 2, 2, "tp-pp-dp")
    assert found.pp != default_groups(8, 2, 2).pp


def test_groups_fall_back_to_defaults(tmp_path):
    root = write_megatron(tmp_path / "d", 8, 2, 2, with_comm=False)
    found = find_groups(_graphs(root, 8), MergeOptions(8, 2, 2))
    assert not found.discovered and found.pp == [[0, 4], [1, 5], [2, 6], [3, 7]]
    # discovered groups of the wrong size (tp 2 in the dump, --tp 4 asked) are not used either
    root = write_megatron(tmp_path / "e", 4, 2, 1)
    found = find_groups(_graphs(root, 4), MergeOptions(4, 4, 1))
    assert not found.discovered and found.tp == [[0, 1, 2, 3]]


def test_tp_merge_statistics_and_info(tmp_path):
    root = write_megatron(tmp_path / "d", 2, 2, 1, with_comm=False)  # no all_reduce: linear outputs are shards
    ranks = _graphs(root, 2)
    run = _merge(tmp_path, root, MergeOptions(2, 2, 1))
    assert [g.rank for g in run.graphs] == [0]
    graph = run.graphs[0]
    node = graph.nodes["Functional.linear.1.forward"]
    shards = [_stats(g.nodes["Functional.linear.1.forward"], "outputs") for g in ranks]
    assert shards[0] != shards[1]
    merged = _stats(node, "outputs")
    assert merged[0] == max(s[0] for s in shards)
    assert merged[1] == min(s[1] for s in shards)
    assert merged[2] == pytest.approx(sum(s[2] for s in shards) / 2)
    assert merged[3] == pytest.approx(math.sqrt(sum(s[3] ** 2 for s in shards)))
    # replicated data (identical on both ranks) is left alone
    assert _stats(node, "inputs") == _stats(ranks[0].nodes["Functional.linear.1.forward"], "inputs")
    assert node.merge_info[0] == ("This data is the merged data after tensor parallelism(TP), "
                                  "and the data is merged from rank [0, 1].")
    assert any(line.startswith("Functional.linear.1.forward.output.0: Max = max(") and "Norm = sqrt(" in line
               for line in node.merge_info[1:])
    # root-level collections of both ranks, rank 1's APIs suffixed
    coll = graph.nodes["Apis_Between_Modules_All_Ranks.0"]
    assert [c.name for c in coll.children] == ["Apis_Between_Modules_Rank0.0", "Apis_Between_Modules_Rank1.0"]
    assert "Tensor.add_rank1.0.forward" in [c.name for c in coll.children[1].children]
    row = sqlite3.connect(run.db).execute(
        "SELECT parallel_merge_info FROM tb_nodes WHERE node_name = 'Functional.linear.1.forward'").fetchone()
    assert json.loads(row[0])[0].startswith("This data is the merged data after tensor parallelism(TP)")


def _layer_base(node):
    """The global layer number the generator encoded in a layer's input Max (1 + 10 * g)."""
    return round((float(node.inputs[0].stats[0]) - 1.0) / 10)


def test_pp_merge_attaches_and_renumbers_layers(tmp_path):
    root = write_megatron(tmp_path / "d", 2, 1, 2, layers=2)
    graph = _merge(tmp_path, root, MergeOptions(2, 1, 2)).graphs[0]
    top = graph.nodes["Module.model.GPTModel.forward.0"]
    layers = [c for c in top.children if ".layers." in c.name]
    assert [c.name for c in layers] == [LAYER.format(i, "forward") for i in range(4)]
    assert [_layer_base(c) for c in layers] == [0, 1, 2, 3]
    assert top.children[-1].name == "Module.model.output_layer.Linear.forward.0"
    back = graph.nodes["Module.model.GPTModel.backward.0"]
    assert [c.name for c in back.children] == [LAYER.format(i, "backward") for i in (3, 2, 1, 0)]
    # APIs moved from rank 1 carry _rank1 and follow their renumbered layer
    assert [c.name for c in graph.nodes[LAYER.format(2, "forward")].children] == ["Functional.linear_rank1.0.forward"]
    assert "renamed from Module.model.layers.0.TransformerLayer.forward.0" in graph.nodes[
        LAYER.format(2, "forward")].merge_info[0]
    # the wrapper takes the last stage's outputs (forward) and inputs (backward)
    assert _stats(top, "outputs") == tuple(tensor(110.0)[k] for k in ("Max", "Min", "Mean", "Norm"))
    assert _stats(back, "inputs") == tuple(tensor(210.0)[k] for k in ("Max", "Min", "Mean", "Norm"))
    assert "taken from rank 1" in top.merge_info[0]
    assert [g.name for g in graph.nodes["Apis_Between_Modules_All_Ranks.0"].children] == [
        "Apis_Between_Modules_Rank0.0", "Apis_Between_Modules_Rank1.0"]
    orders = sorted(n.order for n in graph.nodes.values())
    assert orders == list(range(len(graph.nodes)))


def test_vpp_folds_chunks_in_execution_order(tmp_path):
    root = write_megatron(tmp_path / "d", 2, 1, 2, layers=1, vpp=2)
    graph = _merge(tmp_path, root, MergeOptions(2, 1, 2, vpp=2)).graphs[0]
    assert not any(name.startswith("Module.1.") for name in graph.nodes)
    top = graph.nodes["Module.0.GPTModel.forward.0"]
    layers = [c for c in top.children if ".layers." in c.name]
    assert [c.name for c in layers] == [f"Module.0.layers.{i}.TransformerLayer.forward.0" for i in range(4)]
    assert [_layer_base(c) for c in layers] == [0, 1, 2, 3]


def test_pp_then_tp_and_full_strategy(tmp_path):
    full = _merge(tmp_path / "a", write_megatron(tmp_path / "full", 8, 2, 2, layers=1), MergeOptions(8, 2, 2))
    assert [g.rank for g in full.graphs] == [0, 2]  # one graph per DP replica, named by its main rank
    for graph in full.graphs:
        layers = [n for n in graph.nodes if ".layers." in n and n.endswith("forward.0")]
        assert sorted(layers) == [LAYER.format(i, "forward") for i in range(2)]
        info = graph.nodes["Functional.linear.0.forward"].merge_info
        assert info and "tensor parallelism(TP)" in info[0]
    both = _merge(tmp_path / "b", write_megatron(tmp_path / "pptp", 4, 2, 2, layers=1), MergeOptions(4, 2, 2))
    assert [g.rank for g in both.graphs] == [0]
    merged = both.graphs[0].nodes["Functional.linear_rank2.0.forward"]  # stage 1 API, TP-merged with rank 3
    assert merged.merge_info and "from rank [0, 1]" in merged.merge_info[0]
    # partial sums reduced by the TP all_reduce: the all_reduce output of global layer 1 (base 10 + 5)
    assert _stats(merged, "outputs")[0] == 10.0 * 1 + 5.0 + 1.0
    with sqlite3.connect(both.db) as conn:
        assert json.loads(conn.execute("SELECT rank_list FROM tb_config").fetchone()[0]) == [0]


def test_merged_compare_uses_fuzzy_matching_without_shape_rule(tmp_path):
    target = write_megatron(tmp_path / "t", 2, 2, 1, layers=2)
    golden = write_megatron(tmp_path / "g", 1, 1, 1, layers=2)
    run = _merge(tmp_path, target, MergeOptions(2, 2, 1), MergeOptions(1, 1, 1), golden=golden)
    npu, bench = run.graphs
    assert (npu.rank, bench.rank) == (0, 0)
    node = npu.nodes["Functional.linear.0.forward"]
    assert node.match is bench.nodes["Functional.linear.0.forward"]
    messages = [m for fields in node.metrics.values() for m in json.loads(fields.get("Err_message", "[]"))]
    assert not any("shape" in m for m in messages)
    assert all(n.distributed == {} for n in npu.nodes.values())


def test_merged_compare_needs_equal_data_parallel_size(tmp_path):
    target = write_megatron(tmp_path / "t", 2, 1, 1, layers=1)  # no TP/PP: two DP graphs
    golden = write_megatron(tmp_path / "g", 1, 1, 1, layers=1)
    with pytest.raises(InputError, match="same data-parallel size"):
        _merge(tmp_path, target, MergeOptions(2, 1, 1), MergeOptions(1, 1, 1), golden=golden)


@pytest.mark.parametrize("option, message", [
    (MergeOptions(4, 3, 1), "must divide --rank_size 4"),
    (MergeOptions(4, 2, 4), "tp\\*pp <= rank_size"),
    (MergeOptions(4, 4, 1, vpp=2), "--vpp > 1 needs --pp > 1"),
    (MergeOptions(4, 2, 2, order="TP-PP"), "lower-case letters"),
    (MergeOptions(4, 2, 2, order="tp-xx-pp"), "at most once"),
    (MergeOptions(2, 2, 1), "has 4 rank dirs but --rank_size is 2"),
])
def test_merge_validation_is_one_line(tmp_path, option, message):
    root = write_megatron(tmp_path / "d", 4, 2, 2, layers=1)
    with pytest.raises(InputError, match=message) as info:
        _merge(tmp_path, root, option)
    assert "\n" not in str(info.value)


def test_merge_cli(tmp_path, capsys):
    from probe.cli import main

    root = write_megatron(tmp_path / "d", 4, 2, 2, layers=1)
    code = main(["graph", "-tp", str(root), "-o", str(tmp_path / "o"), "--rank_size", "4", "--tp", "2", "--pp", "2"])
    assert code == 0, capsys.readouterr().err
    assert main(["graph", "-tp", str(root), "-o", str(tmp_path / "o"), "--rank_size", "4", "--tp", "3",
                 "--pp", "1"]) == 2
    assert "must divide" in capsys.readouterr().err
