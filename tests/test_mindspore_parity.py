"""End to end: probe's reports on real MindSpore dumps equal msProbe's own reports.

Cross-framework reports are compared with msProbe's after correcting its documented
dtype / requires_grad verdicts (tests/mindspore_expected.py); rows where msProbe pairs the
wrong tensors are skipped there and asserted right in the tests below.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from conftest import DATA
from mindspore_expected import corrected_expected
from parity import compare_reports, read_report

MS_CASES = DATA / "mindspore"


def _backward_or_param_grad(name: str) -> bool:
    return ".backward." in name or ".parameters_grad." in name


def _listed_api_backward(name: str) -> bool:
    return name.startswith(("Functional.sub.", "Functional.bias_add.")) and ".backward." in name


CORRECTED = {
    # backward index maps of -am files follow the gradient direction (docs/differences.md)
    ("cross_api_L1_statistics", "am_custom"): _listed_api_backward,
    # -lm: backward rows pair with their own call; renamed layers keep their parameter grads
    ("cross_layer_mix_statistics", "lm"): _backward_or_param_grad,
}


def _commands():
    for case in sorted(p for p in MS_CASES.iterdir() if p.is_dir()):
        meta = json.loads((case / "case.json").read_text())
        for cmd in meta["compare"]:
            argv = shlex.split(cmd["command"])[2:]
            label = argv[argv.index("-o") + 1].rsplit("/", 1)[-1]
            yield case, label, argv, cmd


def _run(run_probe, case: Path, argv: list[str], out: Path):
    argv = list(argv)
    argv[argv.index("-o") + 1] = str(out)
    return run_probe("compare", *argv, "-c", "-j", "1", cwd=case)


@pytest.mark.parametrize(
    "case,label,argv,cmd",
    [pytest.param(*c, id=f"{c[0].name}-{c[1]}") for c in _commands() if c[0].name != "ms_graph_kernel_native"],
)
def test_report_matches_msprobe(case, label, argv, cmd, tmp_path, run_probe):
    result = _run(run_probe, case, argv, tmp_path / "out")
    assert result.code == 0, result.err
    expected = [case / "expected" / label / name for name in cmd["outputs"] if "compare_result" in name]
    suffixes = {p.suffix for p in expected}
    ours = sorted(p for p in (tmp_path / "out").glob("*compare_result*") if p.suffix in suffixes)
    assert [p.suffix for p in ours] == [p.suffix for p in expected]
    if "-da" in argv:  # msProbe ignores -da for MindSpore dumps; probe analyses them
        assert list((tmp_path / "out").glob("diff_analyze_*.json"))
    for mine, theirs in zip(ours, expected):
        assert mine.name.rsplit("_", 1)[0] == theirs.name.rsplit("_", 1)[0]
        fixed = corrected_expected(theirs, tmp_path / "expected.csv")
        problems = compare_reports(mine, fixed, CORRECTED.get((case.name, label)))
        assert not problems, "\n".join(problems[:20])


def _report(run_probe, tmp_path: Path, case: str, *args: str) -> list[dict]:
    result = run_probe("compare", "-tp", "target/step0", "-gp", "golden/step0", "-o", tmp_path, "-c", *args,
                       cwd=MS_CASES / case)
    assert result.code == 0, result.err
    return read_report(next(tmp_path.glob("*compare_result*")))[1]


def test_cross_framework_rows_with_equal_values_pass(tmp_path, run_probe):
    """msProbe says error for every matched row (Float32 != torch.float32, no requires_grad)."""
    rows = _report(run_probe, tmp_path, "cross_api_L1_statistics", "-am")
    add = [r for r in rows if r["NPU Name"].startswith("Mint.add.0.forward")]
    assert add and all(r["Bench Name"].startswith("Torch.add.0.forward") for r in add)
    for row in add:
        assert row["Requires_grad Consistent"] == "True"
        assert "dtype" not in row["Err_message"] and "Required_Grad" not in row["Err_message"]
        assert row["Result"] == "pass"
    assert not [r for r in rows if "dtype of NPU" in r["Err_message"] or "Required_Grad" in r["Err_message"]]


def test_am_file_maps_backward_indices_along_the_gradients(tmp_path, run_probe):
    """sub(a, b) vs rsub(b, a): backward output k is the gradient of forward input k."""
    rows = _report(run_probe, tmp_path, "cross_api_L1_statistics", "-am", "api_mapping.yaml")
    by_name = {r["NPU Name"]: r for r in rows}
    assert by_name["Functional.sub.0.forward.input.0"]["Bench Name"] == "Torch.rsub.0.forward.input.1"
    assert by_name["Functional.sub.0.backward.input.0"]["Bench Name"] == "Torch.rsub.0.backward.input.0"
    assert by_name["Functional.sub.0.backward.output.0"]["Bench Name"] == "Torch.rsub.0.backward.output.1"
    assert by_name["Functional.sub.0.backward.output.1"]["Bench Name"] == "Torch.rsub.0.backward.output.0"
    for name in ("Functional.sub.0.backward.output.0", "Functional.sub.0.backward.output.1"):
        assert by_name[name]["NPU Tensor Shape"] == by_name[name]["Bench Tensor Shape"]


def test_layer_mapping_pairs_backward_calls_and_parameter_grads(tmp_path, run_probe):
    rows = _report(run_probe, tmp_path, "cross_layer_mix_statistics", "-lm", "layer_mapping.yaml")
    by_name = {r["NPU Name"]: r for r in rows}
    for call in range(6):  # linear is called six times; msProbe pairs call k with 5 - k
        row = by_name[f"MintFunctional.linear.{call}.backward.input.0"]
        assert row["Bench Name"] == f"Functional.linear.{call}.backward.input.0"
        assert row["NPU Tensor Shape"] == row["Bench Tensor Shape"]
    grad = by_name["Cell.mlp.fc_out.Linear.parameters_grad.0.weight"]
    assert grad["Bench Name"] == "Module.mlp.dense_4h_to_h.Linear.parameters_grad.0.weight"
    assert by_name["Cell.attention.qkv_proj.Linear.forward.0.output.0"]["Bench Name"] == (
        "Module.self_attention.query_key_value.Linear.forward.0.output.0"
    )


def test_fuzzy_match_works_through_the_api_table(tmp_path, run_probe):
    rows = _report(run_probe, tmp_path, "cross_api_L1_statistics", "-am", "-fm")
    by_name = {r["NPU Name"]: r for r in rows}
    assert by_name["Mint.matmul.0.forward.output.0"]["Bench Name"] == "Torch.matmul.0.forward.output.0"
    assert by_name["Functional.dense.0.forward.input.0"]["Bench Name"] == "Functional.linear.0.forward.input.0"


def test_data_mapping_wins_over_api_table_for_listed_rows(tmp_path, run_probe):
    rows = _report(run_probe, tmp_path, "cross_api_L1_statistics", "-am", "-dm", "data_mapping.yaml")
    by_name = {r["NPU Name"]: r for r in rows}
    assert by_name["Functional.sub.0.forward.input.0"]["Bench Name"] == "Torch.rsub.0.forward.input.1"
    assert by_name["Mint.add.0.forward.input.0"]["Bench Name"] == "Torch.add.0.forward.input.0"
