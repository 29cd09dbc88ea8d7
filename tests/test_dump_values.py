"""Dump values seen in msProbe's own public data (issue 12: items 22, 23)."""

from __future__ import annotations

import json
import shutil

from conftest import PYTORCH_CASES
from parity import read_report

MD5 = PYTORCH_CASES / "md5_mix_tfm"
STAT = PYTORCH_CASES / "stat_mix_tfm"


def _copy_with(tmp_path, case, side, change):
    """A copy of one side of a fixture case whose dump.json ``change`` rewrote (leaf by leaf)."""
    target = tmp_path / side
    shutil.copytree(case / side / "step0/rank0", target)
    doc = json.loads((target / "dump.json").read_text())

    def walk(node):
        if isinstance(node, dict):
            if "dtype" in node:
                change(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(doc["data"])
    (target / "dump.json").write_text(json.dumps(doc))
    return target / "dump.json"


def test_null_or_empty_md5_reads_eight_zeros(tmp_path, run_probe):
    seen = []

    def blank(leaf):
        if "md5" in leaf:
            leaf["md5"] = None if len(seen) % 2 else ""
            seen.append(1)

    target = _copy_with(tmp_path, MD5, "target", blank)
    result = run_probe("compare", "-tp", target, "-gp", MD5 / "golden/step0/rank0/dump.json", "-o", tmp_path / "o",
                       "-c")
    assert result.code == 0, result.err
    _, rows = read_report(next((tmp_path / "o").glob("compare_result_*.csv")))
    tensor_rows = [r for r in rows if r["NPU Dtype"].startswith("torch.")]
    assert tensor_rows and all(r["NPU MD5"] == "00000000" for r in tensor_rows)
    assert all(r["Result"] == "error" for r in tensor_rows if r["BENCH MD5"] != "00000000")


def test_requires_grad_strings_read_as_booleans(tmp_path, run_probe):
    def to_text(leaf):
        if isinstance(leaf.get("requires_grad"), bool):
            leaf["requires_grad"] = str(leaf["requires_grad"]).lower() if len(leaf) % 2 else str(leaf["requires_grad"])

    target = _copy_with(tmp_path, STAT, "target", to_text)
    golden = STAT / "golden/step0/rank0/dump.json"
    assert run_probe("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "text", "-c").code == 0
    assert run_probe("compare", "-tp", STAT / "target/step0/rank0/dump.json", "-gp", golden,
                     "-o", tmp_path / "bool", "-c").code == 0
    _, text = read_report(next((tmp_path / "text").glob("*.csv")))
    _, boolean = read_report(next((tmp_path / "bool").glob("*.csv")))
    keep = ("NPU Requires_grad", "Requires_grad Consistent", "Result", "Err_message")
    assert [[r[k] for k in keep] for r in text] == [[r[k] for k in keep] for r in boolean]
    assert {r["NPU Requires_grad"] for r in text} >= {"True", "False"}


def test_requires_grad_that_is_not_a_boolean_is_refused(tmp_path, run_probe):
    def to_number(leaf):
        if "requires_grad" in leaf:
            leaf["requires_grad"] = "yes"

    target = _copy_with(tmp_path, STAT, "target", to_number)
    result = run_probe("compare", "-tp", target, "-gp", STAT / "golden/step0/rank0/dump.json", "-o", tmp_path / "o")
    assert result.code == 2
    assert "requires_grad" in result.err and "'yes'" in result.err and str(target) in result.err
    assert len(result.err.strip().splitlines()) == 1
