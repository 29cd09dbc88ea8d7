"""TP merge special cases: Megatron Column/RowParallelLinear and matmul + all_reduce/reduce_scatter."""

from __future__ import annotations

import math

import pytest

from graph_parallel_dumps import tensor, write_parallel_linears
from probe.graph.service import GraphOptions, MergeOptions, run_graph


def _merged(tmp_path, **kwargs):
    root = write_parallel_linears(tmp_path / "d", **kwargs)
    run = run_graph(GraphOptions(target=root, output=tmp_path / "out", merge=[MergeOptions(2, 2, 1)]))
    assert [g.rank for g in run.graphs] == [0]
    return run.graphs[0]


def _stats(node, side="outputs", index=0):
    return tuple(float(v) for v in getattr(node, side)[index].stats)


def _item(base):
    item = tensor(base)
    return (item["Max"], item["Min"], item["Mean"], item["Norm"])


def _concat(*bases):
    """Statistics of the concatenation of equally sized shards."""
    items = [_item(b) for b in bases]
    return (max(i[0] for i in items), min(i[1] for i in items), sum(i[2] for i in items) / len(items),
            math.sqrt(sum(i[3] ** 2 for i in items)))


def test_partial_sums_take_the_reduced_statistics(tmp_path):
    graph = _merged(tmp_path)
    # matmul of a RowParallelLinear: partial sums, summed by the all_reduce -> its output (replicated)
    linear = graph.nodes["Functional.linear.1.forward"]
    assert _stats(linear) == pytest.approx(_item(40.0))
    assert any("partial sum" in line and "Distributed.all_reduce.0.forward" in line for line in linear.merge_info)
    # its sharded inputs are still merged as shards
    assert _stats(linear, "inputs", 0) == pytest.approx(_concat(10.0, 20.0))
    # matmul + reduce_scatter: the scattered results are shards of the sum
    matmul = graph.nodes["Torch.matmul.0.forward"]
    assert _stats(matmul) == pytest.approx(_concat(70.0, 140.0))
    # ColumnParallelLinear: replicated input untouched, output shards merged
    col = graph.nodes["Module.model.layers.0.attn.qkv.ColumnParallelLinear.forward.0"]
    assert _stats(col, "inputs") == pytest.approx(_item(1.0))
    assert _stats(col) == pytest.approx(_concat(10.0, 20.0))
    # RowParallelLinear output is already reduced (replicated): untouched
    row = graph.nodes["Module.model.layers.0.attn.dense.RowParallelLinear.forward.0"]
    assert _stats(row) == pytest.approx(_item(40.0))
    # ColumnParallelLinear backward: the input gradient is a partial sum, all-reduced in backward
    colb = graph.nodes["Module.model.layers.0.attn.qkv.ColumnParallelLinear.backward.0"]
    assert _stats(colb) == pytest.approx(_item(18.0))
    assert _stats(graph.nodes["Functional.linear.0.backward"]) == pytest.approx(_item(18.0))
    # the weight gradient of the same backward matmul is a shard
    assert _stats(graph.nodes["Functional.linear.0.backward"], "outputs", 1) == pytest.approx(_concat(17.0, 34.0))


def test_communication_nodes_are_not_merged(tmp_path):
    graph = _merged(tmp_path)
    reduce = graph.nodes["Distributed.all_reduce.0.forward"]
    assert _stats(reduce, "inputs") == pytest.approx(_item(20.0))  # rank 0's buffer, not a shard merge
    assert reduce.merge_info == []


def test_unreduced_column_backward_gradient_is_left_alone(tmp_path):
    graph = _merged(tmp_path, column_backward_reduce=False)
    colb = graph.nodes["Module.model.layers.0.attn.qkv.ColumnParallelLinear.backward.0"]
    assert _stats(colb) == pytest.approx(_item(16.0))
    assert any("no all_reduce/reduce_scatter" in line for line in colb.merge_info)
    # the input gradient (shards of the output gradient) is still merged
    assert _stats(colb, "inputs") == pytest.approx(_concat(14.0, 28.0))
