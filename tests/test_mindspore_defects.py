"""MindSpore-to-PyTorch habits (issue 12: items 2, 14, 24)."""

from __future__ import annotations

import probe
from conftest import DATA
from parity import read_report

LAYER = DATA / "mindspore/cross_layer_mix_statistics"


def _pairs(tmp_path, run_probe, *options):
    result = run_probe("compare", "-tp", LAYER / "target/step0", "-gp", LAYER / "golden/step0",
                       "-o", tmp_path, "-c", *options)
    assert result.code == 0, result.err
    _, rows = read_report(next(tmp_path.glob("compare_result_*.csv")))
    return {r["NPU Name"]: r["Bench Name"] for r in rows}


def test_layer_mapping_applies_the_builtin_api_table(tmp_path, run_probe):
    pairs = _pairs(tmp_path, run_probe, "-lm")
    assert pairs["Mint.matmul.0.forward.input.0"] == "Torch.matmul.0.forward.input.0"
    assert pairs["MintFunctional.linear.0.forward.output.0"] == "Functional.linear.0.forward.output.0"
    assert pairs["Mint.softmax.0.forward.output.0"] == "Torch.softmax.0.forward.output.0"


def test_layer_mapping_file_keeps_msprobe_pairs(tmp_path, run_probe):
    """With the layer file, every forward row msProbe pairs is paired the same way."""
    pairs = _pairs(tmp_path, run_probe, "-lm", LAYER / "layer_mapping.yaml")
    _, expected = read_report(next((LAYER / "expected/lm").glob("compare_result_*.csv")))
    forward = [r for r in expected if ".forward" in r["NPU Name"]]
    assert forward and all(pairs[r["NPU Name"]] == r["Bench Name"] for r in forward)


def test_mindspore_dump_without_framework_key_with_api_mapping(tmp_path, run_probe):
    import json
    import shutil

    case = DATA / "mindspore/cross_api_L1_statistics"
    source = next((case / "target/step0").iterdir())
    target = tmp_path / "target"
    shutil.copytree(source, target)
    doc = json.loads((target / "dump.json").read_text())
    del doc["framework"]
    (target / "dump.json").write_text(json.dumps(doc))
    golden = next((case / "golden/step0").iterdir()) / "dump.json"
    result = run_probe("compare", "-tp", target / "dump.json", "-gp", golden, "-am", "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    assert "no 'framework' key; MindSpore API names found" in result.err and "assumed mindspore" in result.err
    _, rows = read_report(next((tmp_path / "out").glob("compare_result_*.csv")))
    assert {r["Bench Name"] for r in rows if r["NPU Name"].startswith("Mint.matmul.0.forward")} == {
        "Torch.matmul.0.forward.input.0", "Torch.matmul.0.forward.input.1", "Torch.matmul.0.forward.output.0"}


DEMO = DATA.parent.parent / "examples/mindspore_to_pytorch"


def test_demo_mapping_pairs_nearly_every_row(tmp_path, run_probe):
    """The MindSpore->PyTorch demo with its mapping file: few unmatched rows, every pair named."""
    result = run_probe("compare", "-tp", DEMO / "target/step0", "-gp", DEMO / "golden/step0",
                       "-am", DEMO / "api_mapping.yaml", "-o", tmp_path)
    assert result.code == 0, result.err
    _, rows = read_report(next(tmp_path.glob("compare_result_*.csv")))
    unmatched = [r["NPU Name"] for r in rows if r["Bench Name"] == "N/A"]
    assert len(unmatched) <= 10 and len(rows) == 76
    pairs = {r["NPU Name"]: r["Bench Name"] for r in rows}
    assert pairs["Functional.sub.0.forward.input.0"] == "Torch.rsub.0.forward.input.1"
    assert pairs["Functional.bias_add.0.forward.output.0"] == "Tensor.add.0.forward.output.0"
    assert pairs["Functional.dense.0.forward.output.0"] == "Functional.linear.0.forward.output.0"
    assert all(r["Result"] == "pass" for r in rows if ".forward." in r["NPU Name"] and r["Bench Name"] != "N/A")


def test_advisor_never_quotes_precision_errors_across_shapes(tmp_path, run_probe):
    """Shape-mismatched pairs (dense's input gradients, which PyTorch records in another order)
    are structure differences: neither the advisor nor the diagnosis gives them a relative error."""
    from probe.analysis.advisor import node_facts
    from probe.analysis.nodes import build_nodes
    from probe.diagnosis.facts import rank_facts

    result = probe.compare(DEMO / "target/step0", DEMO / "golden/step0",
                           api_mapping=str(DEMO / "api_mapping.yaml"))[0]
    dense = next(n for n in build_nodes(result, judge=False) if n.entry == "Functional.dense.0.backward")
    assert node_facts(dense, False).out_dev == 0.0
    diagnosed = next(n for n in rank_facts(result).nodes if n.entry == "Functional.dense.0.backward")
    assert diagnosed.out_dev == 0.0
    run = run_probe("compare", "-tp", DEMO / "target/step0", "-gp", DEMO / "golden/step0",
                    "-am", DEMO / "api_mapping.yaml", "-o", tmp_path)
    assert run.code == 0, run.err
    advisor = next(tmp_path.glob("advisor_*.txt")).read_text()
    assert "366%" not in advisor


def test_framework_option_names_an_undeclared_target(tmp_path, run_probe):
    """-f mindspore decides for a dump.json without 'framework' whose names fit either framework."""
    import json
    import shutil

    case = DATA / "mindspore/cross_api_L1_statistics"
    target = tmp_path / "target"
    shutil.copytree(next((case / "target/step0").iterdir()), target)
    doc = json.loads((target / "dump.json").read_text())
    del doc["framework"]
    doc["data"] = {k: v for k, v in doc["data"].items() if k.startswith(("Functional.", "Tensor."))}
    (target / "dump.json").write_text(json.dumps(doc))
    golden = next((case / "golden/step0").iterdir()) / "dump.json"
    argv = ["compare", "-tp", target / "dump.json", "-gp", golden, "-am", "-c"]
    assumed = run_probe(*argv, "-o", tmp_path / "a")
    assert assumed.code == 2 and "pytorch" in assumed.err
    forced = run_probe("-f", "mindspore", *argv, "-o", tmp_path / "b")
    assert forced.code == 0, forced.err
    assert list((tmp_path / "b").glob("compare_result_*.csv"))
