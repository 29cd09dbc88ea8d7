"""Graph inputs seen in the wild (issue 12: items 8, 11, 20, 21)."""

from __future__ import annotations

import shutil

from graph_helpers import DATA


def _renamed_class_golden(tmp_path):
    """The cnn golden dump with class ``Conv2d`` renamed: same module path, another class."""
    golden = tmp_path / "golden"
    shutil.copytree(DATA / "stat_golden", golden)
    for path in golden.iterdir():
        path.write_text(path.read_text().replace(".Conv2d.", ".MyConv."))
    return golden


def test_layer_mapping_without_file_pairs_modules_by_path(tmp_path, run_probe):
    golden = _renamed_class_golden(tmp_path)
    from probe.graph.build import build_graph
    from probe.graph.matching import match_graphs

    def matched(mapping):
        npu, bench = build_graph(DATA / "stat_target"), build_graph(golden, "bench")
        match_graphs(npu, bench, mapping=mapping)
        return {n.name: n.match.name for n in npu.nodes.values() if n.match is not None}

    plain, by_path = matched(None), matched(True)
    assert "Module.conv.Conv2d.forward.0" not in plain
    assert by_path["Module.conv.Conv2d.forward.0"] == "Module.conv.MyConv.forward.0"
    assert by_path["Functional.conv2d.0.forward"] == "Functional.conv2d.0.forward"
    assert len(by_path) > len(plain)
    result = run_probe("graph", "-tp", DATA / "stat_target", "-gp", golden, "-o", tmp_path / "out", "-lm")
    assert result.code == 0, result.err
    assert list((tmp_path / "out").glob("compare_*.vis.db"))


def test_graph_tensor_log_prints_metrics_without_verbose(tmp_path, run_probe):
    result = run_probe("graph", "-tp", DATA / "stat_target", "-gp", DATA / "stat_golden", "-o", tmp_path,
                       "-tensor_log")
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if line.startswith("[")]
    assert lines and lines[0].startswith("[Functional.conv2d.0.forward.input.0] Compare result: Max diff ")
    assert all("NormRelativeErr" in line for line in lines)


def _modified_dump(tmp_path, change):
    """A copy of the cnn statistics dump whose construct.json ``change`` rewrites."""
    import json

    target = tmp_path / "target"
    shutil.copytree(DATA / "stat_target", target)
    construct = json.loads((target / "construct.json").read_text())
    (target / "construct.json").write_text(json.dumps(change(construct)))
    return target


def test_empty_parent_is_top_level_and_apis_are_grouped(tmp_path):
    from probe.graph.build import build_graph

    plain = build_graph(DATA / "stat_target")
    empty = build_graph(_modified_dump(tmp_path, lambda c: {k: "" if v is None else v for k, v in c.items()}))
    assert "" not in empty.nodes
    assert [c.name for c in empty.root.children] == [c.name for c in plain.root.children]
    assert "Apis_Between_Modules.0" in empty.nodes


def test_nodes_whose_ancestors_are_missing_are_dropped(tmp_path):
    from probe.graph.build import build_graph

    def drop_conv(construct):
        return {k: v for k, v in construct.items() if k != "Module.conv.Conv2d.forward.0"}

    graph = build_graph(_modified_dump(tmp_path, drop_conv))
    assert "Module.conv.Conv2d.forward.0" not in graph.nodes
    assert "Functional.conv2d.0.forward" not in graph.nodes
    assert "Module.bn.BatchNorm2d.forward.0" in graph.nodes
    assert len(graph.nodes) == len(build_graph(DATA / "stat_target").nodes) - 2


def test_dotless_name_with_an_api_word_is_an_api(tmp_path):
    from probe.graph.build import build_graph
    from probe.graph.node import API, MODULE

    graph = build_graph(_modified_dump(tmp_path, lambda c: {**c, "Tensor1": None}))
    assert graph.nodes["Tensor1"].kind == API
    assert graph.nodes["optimizer"].kind == MODULE


def test_empty_dump_json_with_construct_builds_the_structure(tmp_path, run_probe):
    target = tmp_path / "target"
    shutil.copytree(DATA / "stat_target", target)
    (target / "dump.json").write_text("{}")
    result = run_probe("graph", "-tp", target, "-o", tmp_path / "out")
    assert result.code == 0, result.err
    from probe.graph.build import build_graph

    graph = build_graph(target)
    assert "Module.conv.Conv2d.forward.0" in graph.nodes and not any(n.has_data for n in graph.nodes.values())
