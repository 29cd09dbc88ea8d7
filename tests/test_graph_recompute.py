"""Recompute re-parenting (activation checkpointing) when building a graph."""

from __future__ import annotations

import json
from pathlib import Path

from probe.graph.build import build_graph
from probe.graph.rules import GraphRuleSet
from probe.graph.service import graph_rules
from probe.plugins import Host
from probe_pytorch.graph_rules import is_recompute_stack

RULES = graph_rules(Host())

G, D = "Module.model.GPTModel.forward.0", "Module.model.decoder.Decoder.forward.0"
M0, M1 = "Module.model.decoder.mlp.MLP.forward.0", "Module.model.decoder.mlp.MLP.forward.1"
A1 = "Module.model.decoder.attn.Attn.forward.1"
GB, DB = "Module.model.GPTModel.backward.0", "Module.model.decoder.Decoder.backward.0"
MB0, MB1 = "Module.model.decoder.mlp.MLP.backward.0", "Module.model.decoder.mlp.MLP.backward.1"
RECOMPUTE = ["File /x/torch/utils/checkpoint.py, line 1, in recompute_fn, \n fn(*args)",
             "File /x/model.py, line 3, in forward, \n y"]
NORMAL = ["File /x/model.py, line 3, in forward, \n y"]


def _tensor(value: float) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": value, "Min": -1.0,
            "Mean": 0.1, "Norm": 2.0, "requires_grad": False}


def write_recompute_dump(directory: Path, recompute_stack: list[str] = RECOMPUTE) -> Path:
    """A dump whose MLP forward is recomputed during backward (null parents, recompute stack)."""
    construct = {G: None, D: G, M0: D, "Functional.gelu.0.forward": M0, M1: None,
                 "Functional.gelu.1.forward": M1, A1: None, GB: None, DB: GB, MB1: None,
                 "Functional.gelu.1.backward": MB1, MB0: DB}
    data = {n: {"input_args": [_tensor(1.0)], "input_kwargs": {}, "output": [_tensor(2.0)]} for n in construct}
    recomputed = [M1, "Functional.gelu.1.forward", A1]
    stack = {"0": [[n for n in construct if n not in recomputed], NORMAL], "1": [recomputed, recompute_stack]}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "construct.json").write_text(json.dumps(construct))
    (directory / "dump.json").write_text(json.dumps(
        {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None, "data": data}))
    (directory / "stack.json").write_text(json.dumps(stack))
    return directory


def test_recomputed_forward_and_twin_move_under_the_parents_backward(tmp_path):
    graph = build_graph(write_recompute_dump(tmp_path / "dump"), rules=RULES)
    # msProbe 26.2 on the same dump: root keeps G, the unpaired A1 and GB; the recomputed call and its
    # backward twin are appended under the backward node of the original call's parent
    assert [c.name for c in graph.root.children] == [G, A1, GB]
    assert [c.name for c in graph.nodes[DB].children] == [MB0, M1, MB1]
    assert graph.nodes[M1].parent.name == DB and graph.nodes[MB1].parent.name == DB
    assert [c.name for c in graph.nodes[M1].children] == ["Functional.gelu.1.forward"]
    assert [n.order for n in graph.postorder()] == list(range(len(graph.nodes)))
    assert graph.micro_steps == 1


def test_plain_stack_is_not_recompute(tmp_path):
    graph = build_graph(write_recompute_dump(tmp_path / "dump", recompute_stack=NORMAL), rules=RULES)
    assert [c.name for c in graph.root.children] == [G, M1, A1, GB, MB1]


def test_without_framework_rules_nothing_is_recompute(tmp_path):
    """The core knows no recompute stack: only a registered rule (probe-pytorch) moves calls."""
    graph = build_graph(write_recompute_dump(tmp_path / "dump"), rules=GraphRuleSet())
    assert [c.name for c in graph.root.children] == [G, M1, A1, GB, MB1]


def test_recompute_stack_patterns():
    assert is_recompute_stack(RECOMPUTE)
    megatron = ["File /m/megatron/core/tensor_parallel/random.py, line 9, in backward, \n x",
                "File /t/torch/autograd/function.py, line 3, in apply, \n y"]
    assert is_recompute_stack(megatron)
    far = [megatron[0], NORMAL[0], NORMAL[0], megatron[1]]
    assert not is_recompute_stack(far)
    assert not is_recompute_stack(NORMAL)
