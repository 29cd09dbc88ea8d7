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
