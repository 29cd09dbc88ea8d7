"""Synthetic Megatron-like multi-rank statistics dumps for the parallel-merge tests.

Every rank holds: a ``GPTModel`` wrapper (same inputs on every rank, stage-dependent outputs),
the embedding on the first stage, ``layers.<i>`` (local numbering per stage and chunk) with a
sharded ``linear`` and a TP ``all_reduce`` (``group`` kwarg = the TP group), the output layer on
the last stage, a ``send`` to the next stage, two root-level APIs forming a collection, and the
backward twins. Statistics are derived from the global layer number and the TP rank, so the
tests can predict every merged value.
"""

from __future__ import annotations

import json
from pathlib import Path


def groups(rank_size: int, tp: int, pp: int, order: str = "tp-dp-pp") -> tuple[list[list[int]], list[list[int]]]:
    """TP and PP groups for the two orders the tests use (``tp-dp-pp`` = Megatron's default)."""
    dp = rank_size // (tp * pp)
    if order == "tp-dp-pp":
        tp_groups = [[b + i for i in range(tp)] for b in range(0, rank_size, tp)]
        pp_groups = [[b + s * tp * dp for s in range(pp)] for b in range(tp * dp)]
    elif order == "tp-pp-dp":
        tp_groups = [[b + i for i in range(tp)] for b in range(0, rank_size, tp)]
        pp_groups = [[d * tp * pp + t + s * tp for s in range(pp)] for d in range(dp) for t in range(tp)]
    else:  # pragma: no cover - test helper
        raise ValueError(order)
    return tp_groups, pp_groups


def tensor(base: float, shape=(4, 8)) -> dict:
    """A float32 statistics item derived from ``base``."""
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": list(shape), "Max": 1.0 + base,
            "Min": -1.0 - base / 2, "Mean": base / 10, "Norm": 2.0 + base, "requires_grad": False}


def _entry(inputs: list, outputs: list, kwargs: dict | None = None) -> dict:
    return {"input_args": inputs, "input_kwargs": kwargs or {}, "output": outputs}


def write_rank(
    directory: Path, rank: int, tp_rank: int, stage: int, pp: int, layers: int, tp_group: list[int],
    next_rank: int | None, vpp: int = 1, with_comm: bool = True,
) -> None:
    """One rank's construct.json, dump.json and stack.json."""
    construct: dict[str, str | None] = {}
    data: dict[str, dict] = {}
    counters: dict[str, int] = {}

    def api(kind: str, parent: str | None, direction: str, body: dict) -> str:
        index = counters.get(kind + direction, 0)
        counters[kind + direction] = index + 1
        name = f"{kind}.{index}.{direction}"
        construct[name] = parent
        data[name] = body
        return name

    shard = 1.0 + tp_rank  # linear shards differ across TP ranks
    for chunk in range(vpp):
        prefix = f"Module.{chunk}" if vpp > 1 else "Module.model"
        top = f"{prefix}.GPTModel.forward.0"
        construct[top] = None
        last_stage = stage == pp - 1 and chunk == vpp - 1
        data[top] = _entry([tensor(0.5)], [tensor(100.0 + 10 * stage + chunk)])
        if stage == 0 and chunk == 0:
            emb = f"{prefix}.embedding.Embedding.forward.0"
            construct[emb] = top
            data[emb] = _entry([tensor(0.5)], [tensor(1.0)])
            api("Functional.embedding", emb, "forward", _entry([tensor(0.5)], [tensor(1.0)]))
        for i in range(layers):
            glob = (chunk * pp + stage) * layers + i
            layer = f"{prefix}.layers.{i}.TransformerLayer.forward.0"
            construct[layer] = top
            data[layer] = _entry([tensor(10.0 * glob)], [tensor(10.0 * glob + 10)])
            api("Functional.linear", layer, "forward", _entry([tensor(10.0 * glob)], [tensor(10.0 * glob + shard)]))
            if with_comm and len(tp_group) > 1:
                group = {"type": "torch.ProcessGroup", "group_ranks": tp_group, "group_id": f"g{tp_group[0]}"}
                api("Distributed.all_reduce", layer, "forward",
                    _entry([tensor(10.0 * glob + shard)], [tensor(10.0 * glob + 5)], {"group": group}))
        if last_stage:
            out = f"{prefix}.output_layer.Linear.forward.0"
            construct[out] = top
            data[out] = _entry([tensor(90.0)], [tensor(95.0)])
    if with_comm and next_rank is not None:
        api("Distributed.send", None, "forward", _entry([tensor(7.0)], [], {"dst": {"type": "int", "value": next_rank}}))
    api("Tensor.add", None, "forward", _entry([tensor(3.0), tensor(3.0)], [tensor(6.0 + stage)]))
    api("Tensor.mul", None, "forward", _entry([tensor(6.0)], [tensor(12.0 + stage)]))
    for chunk in reversed(range(vpp)):
        prefix = f"Module.{chunk}" if vpp > 1 else "Module.model"
        top = f"{prefix}.GPTModel.backward.0"
        construct[top] = None
        data[top] = _entry([tensor(200.0 + 10 * stage + chunk)], [tensor(0.25)])
        for i in reversed(range(layers)):
            glob = (chunk * pp + stage) * layers + i
            layer = f"{prefix}.layers.{i}.TransformerLayer.backward.0"
            construct[layer] = top
            data[layer] = _entry([tensor(10.0 * glob + 3)], [tensor(10.0 * glob + 4)])
            api("Functional.linear", layer, "backward", _entry([tensor(10.0 * glob + 3)], [tensor(10.0 * glob + shard + 2)]))
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "construct.json").write_text(json.dumps(construct, indent=1))
    (directory / "dump.json").write_text(json.dumps(
        {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None, "data": data}, indent=1))
    (directory / "stack.json").write_text(json.dumps({"0": [list(data), ["File model.py, line 1, in forward"]]}))


def write_megatron(
    root: Path, rank_size: int, tp: int, pp: int, layers: int = 2, vpp: int = 1,
    order: str = "tp-dp-pp", with_comm: bool = True,
) -> Path:
    """``root/rank<r>/`` for every rank of a (tp, pp, vpp) job; returns ``root``."""
    tp_groups, pp_groups = groups(rank_size, tp, pp, order)
    for rank in range(rank_size):
        tp_group = next(g for g in tp_groups if rank in g)
        pp_group = next(g for g in pp_groups if rank in g)
        stage = pp_group.index(rank)
        next_rank = pp_group[stage + 1] if stage + 1 < pp else None
        write_rank(root / f"rank{rank}", rank, tp_group.index(rank), stage, pp, layers, tp_group, next_rank,
                   vpp, with_comm)
    return root


def write_parallel_linears(root: Path, tp: int = 2, column_backward_reduce: bool = True) -> Path:
    """``root/rank<r>/`` of a TP job with Megatron's linear layers, for the special cases of the merge.

    Per TP rank ``s = 1 + rank``: a ColumnParallelLinear (replicated input, output shards ``10s``),
    a RowParallelLinear whose ``linear`` yields partial sums ``20s`` summed by an all_reduce (output
    ``40``), an MLP whose ``matmul`` partial sums ``60s`` go through a reduce_scatter (output shards
    ``70s``), and the backward of the ColumnParallelLinear whose input gradient (partial sums ``16s``)
    is all-reduced to ``18`` (or not dumped when ``column_backward_reduce`` is false).
    """
    group = {"type": "torch.ProcessGroup", "group_ranks": list(range(tp)), "group_id": "tp0"}
    for rank in range(tp):
        s = 1.0 + rank
        construct: dict[str, str | None] = {}
        data: dict[str, dict] = {}

        def add(name: str, parent: str | None, inputs: list, outputs: list, kwargs: dict | None = None) -> None:
            construct[name] = parent
            data[name] = _entry(inputs, outputs, kwargs)

        layer = "Module.model.layers.0.TransformerLayer.forward.0"
        add(layer, None, [tensor(1.0)], [tensor(50.0)])
        col = "Module.model.layers.0.attn.qkv.ColumnParallelLinear.forward.0"
        add(col, layer, [tensor(1.0)], [tensor(10.0 * s)])
        add("Functional.linear.0.forward", col, [tensor(1.0), tensor(20.0 * s)], [tensor(10.0 * s)])
        row = "Module.model.layers.0.attn.dense.RowParallelLinear.forward.0"
        add(row, layer, [tensor(10.0 * s)], [tensor(40.0)])
        add("Functional.linear.1.forward", row, [tensor(10.0 * s), tensor(30.0 * s)], [tensor(20.0 * s)])
        add("Distributed.all_reduce.0.forward", row, [tensor(20.0 * s)], [tensor(40.0)], {"group": group})
        mlp = "Module.model.layers.0.mlp.MLP.forward.0"
        add(mlp, layer, [tensor(40.0)], [tensor(70.0 * s)])
        add("Torch.matmul.0.forward", mlp, [tensor(40.0), tensor(5.0 * s)], [tensor(60.0 * s)])
        add("Distributed.reduce_scatter_tensor.0.forward", mlp, [tensor(70.0 * s), tensor(60.0 * s)],
            [tensor(70.0 * s)], {"group": group})
        back = "Module.model.layers.0.TransformerLayer.backward.0"
        add(back, None, [tensor(5.0)], [tensor(6.0)])
        colb = "Module.model.layers.0.attn.qkv.ColumnParallelLinear.backward.0"
        add(colb, back, [tensor(14.0 * s)], [tensor(16.0 * s)])
        add("Functional.linear.0.backward", colb, [tensor(14.0 * s)], [tensor(16.0 * s), tensor(17.0 * s)])
        if column_backward_reduce:
            add("Distributed.all_reduce.1.forward", colb, [tensor(16.0 * s)], [tensor(18.0)], {"group": group})
        directory = root / f"rank{rank}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "construct.json").write_text(json.dumps(construct, indent=1))
        (directory / "dump.json").write_text(json.dumps(
            {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None, "data": data}))
        (directory / "stack.json").write_text(json.dumps({"0": [list(data), ["File model.py, line 1, in forward"]]}))
    return root
