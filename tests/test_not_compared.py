"""Rows whose data could not be compared are N/A, never pass (issue 12: items 3, 25)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import PYTORCH_CASES
from parity import read_report

STAT = PYTORCH_CASES / "stat_mix_tfm"
TENSOR = PYTORCH_CASES / "tensor_mix_cnn"
BAD_VALUES = ["abc", True, [1], "1e999"]


def _bad_statistics(tmp_path):
    """stat_mix_tfm's target with the Max of four float tensors replaced by non-numbers."""
    target = tmp_path / "target"
    shutil.copytree(STAT / "target/step0/rank0", target)
    doc = json.loads((target / "dump.json").read_text())
    spoiled = []
    for entry, body in doc["data"].items():
        for leaf in body.get("output", []) if isinstance(body, dict) else []:
            if isinstance(leaf, dict) and leaf.get("dtype") == "torch.float32" and len(spoiled) < len(BAD_VALUES):
                leaf["Max"] = BAD_VALUES[len(spoiled)]
                spoiled.append(f"{entry}.output.{body['output'].index(leaf)}")
    (target / "dump.json").write_text(json.dumps(doc))
    return target / "dump.json", spoiled


def test_non_numeric_statistics_are_not_compared(tmp_path, run_probe):
    target, spoiled = _bad_statistics(tmp_path)
    assert len(spoiled) == len(BAD_VALUES)
    result = run_probe("compare", "-tp", target, "-gp", STAT / "golden/step0/rank0/dump.json",
                       "-o", tmp_path / "out", "--fail-on", "error")
    _, rows = read_report(next((tmp_path / "out").glob("compare_result_*.csv")))
    by_name = {r["NPU Name"]: r for r in rows}
    for name, value in zip(spoiled, BAD_VALUES):
        row = by_name[name]
        assert row["Result"] in ("N/A", "error"), row
        assert "not compared: NPU max" in row["Err_message"] and "is not a number" in row["Err_message"]
    assert any(by_name[name]["Result"] == "N/A" for name in spoiled)
    assert "not compared" in result.out
    assert result.code == 1
    assert "--fail-on error: exit 1 because of" in result.err and "not compared" in result.err
    assert "meets the precision rules" not in result.out


def test_statistics_without_problems_stay_pass(tmp_path):
    import probe

    run = probe.compare(STAT / "target/step0/rank0/dump.json", STAT / "golden/step0/rank0/dump.json")
    assert run.summary().not_compared == 0


def test_tensor_dump_with_every_file_missing(tmp_path, run_probe):
    pytest.importorskip("torch", reason="the .pt tensor loader needs torch")
    target = tmp_path / "target"
    shutil.copytree(TENSOR / "target/step0/rank0", target)
    for path in (target / "dump_tensor_data").iterdir():
        path.unlink()
    result = run_probe("compare", "-tp", target / "dump.json", "-gp", TENSOR / "golden/step0/rank0/dump.json",
                       "-o", tmp_path / "out")
    assert result.code == 2
    assert "meets the precision rules" not in result.out + result.err
    _, rows = read_report(next((tmp_path / "out").glob("compare_result_*.csv")))
    with_files = [r for r in rows if r["Bench Name"] != "N/A" and "does not have data file" not in r["Err_message"]]
    assert with_files and all(r["Result"] in ("N/A", "error", "warning") for r in with_files)
    assert not any(r["Result"] == "pass" for r in with_files)
    assert all("not compared: " in r["Err_message"] for r in with_files if r["Result"] == "N/A")


def test_tensor_file_whose_shape_contradicts_dump_json(tmp_path):
    pytest.importorskip("torch", reason="the .pt tensor loader needs torch")
    import probe

    target = tmp_path / "target"
    shutil.copytree(TENSOR / "target/step0/rank0", target)
    files = target / "dump_tensor_data"
    shutil.copy(files / "Functional.conv2d.0.forward.input.1.pt", files / "Functional.conv2d.0.forward.input.0.pt")
    run = probe.compare(target / "dump.json", TENSOR / "golden/step0/rank0/dump.json")
    row = next(r for r in run[0].records if r.name == "Functional.conv2d.0.forward.input.0")
    assert row.verdict == "N/A" and row.metrics[0] == "shape unmatched"
    assert any("shapes differ although dump.json gives both" in note for note in row.notes)
    assert run.summary().not_compared >= 1
