"""``--file_type json``: a merged build written back as dump files."""

from __future__ import annotations

import json

import pytest

from graph_parallel_dumps import tensor, write_parallel_linears
from probe.cli import main
from probe.graph.build import build_graph


def test_merged_build_as_dump_files(tmp_path, capsys):
    root = write_parallel_linears(tmp_path / "d")
    out = tmp_path / "out"
    code = main(["graph", "-tp", str(root), "-o", str(out), "--rank_size", "2", "--tp", "2", "--pp", "1",
                 "--file_type", "json"])
    assert code == 0
    rank_dir = out / "step0" / "rank0"
    assert "merged graph written" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["step0"]  # no .vis.db
    assert sorted(p.name for p in rank_dir.iterdir()) == ["construct.json", "dump.json", "stack.json"]
    dump = json.loads((rank_dir / "dump.json").read_text())
    construct = json.loads((rank_dir / "construct.json").read_text())
    assert dump["is_merged"] is True and dump["task"] == "statistics"
    # top-level nodes name the root, children their parent, parents come after their children
    assert construct["Module.model.layers.0.TransformerLayer.forward.0"] == "DefaultModel"
    col = "Module.model.layers.0.attn.qkv.ColumnParallelLinear.forward.0"
    assert construct["Functional.linear.0.forward"] == col
    names = list(construct)
    assert names.index("Functional.linear.0.forward") < names.index(col)
    # merged statistics: ColumnParallelLinear output shards 10 and 20 -> max of the two
    entry = dump["data"][col]
    assert entry["output"][0]["Max"] == tensor(20.0)["Max"]
    assert entry["input_args"][0]["Max"] == tensor(1.0)["Max"]  # replicated input untouched
    assert entry["parallel_merge_info"][0].startswith("This data is the merged data after tensor parallelism(TP)")
    kwargs = dump["data"]["Distributed.all_reduce.0.forward"]["input_kwargs"]
    assert kwargs["group"]["type"] == "torch.ProcessGroup"
    stack = json.loads((rank_dir / "stack.json").read_text())
    assert any(col in names_ for names_, _frames in stack.values())
    # the files read back as a dump with the same statistics
    again = build_graph(rank_dir)
    assert tuple(float(v) for v in again.nodes[col].outputs[0].stats) == (
        tensor(20.0)["Max"], tensor(20.0)["Min"], pytest.approx(1.5), pytest.approx((12.0 ** 2 + 22.0 ** 2) ** 0.5))


@pytest.mark.parametrize("extra", [["-gp", "G"], []])
def test_json_needs_a_merge_build(tmp_path, capsys, extra):
    root = write_parallel_linears(tmp_path / "d")
    args = ["graph", "-tp", str(root), "-o", str(tmp_path / "out"), "--file_type", "json"]
    if extra:
        args += ["-gp", str(root), "--rank_size", "2", "2", "--tp", "2", "2", "--pp", "1", "1"]
    assert main(args) == 2
    assert "--file_type json is only supported for a parallel-merge build" in capsys.readouterr().err
