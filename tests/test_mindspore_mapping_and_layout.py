"""MindSpore: graph/pynative layout, mapping-file errors, third-party API tables."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import DATA
from parity import read_report

MS = DATA / "mindspore"
CROSS = MS / "cross_api_L1_statistics"


def test_graph_and_pynative_folders_are_compared_separately(tmp_path, run_probe):
    src = MS / "ms_diff_analyze"
    for side in ("target", "golden"):
        for folder in ("graph", "pynative"):
            shutil.copytree(src / side / "step0", tmp_path / side / folder / "step0")
    shutil.copytree(src / "target/step0", tmp_path / "target/pynative/step1")  # one side only: skipped
    result = run_probe("compare", "-tp", tmp_path / "target", "-gp", tmp_path / "golden", "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    files = sorted(str(p.relative_to(tmp_path / "out").parent) + "/" + p.name.rsplit("_", 1)[0]
                   for p in (tmp_path / "out").rglob("*.csv"))
    assert files == ["graph/step0/compare_result_rank0", "pynative/step0/compare_result_rank0"]


def test_debug_json_single_point_data(tmp_path, run_probe):
    case = MS / "ms_debug_save"
    result = run_probe("compare", "-tp", "target/step1", "-gp", "golden/step1", "-o", tmp_path, "-c", cwd=case)
    assert result.code == 0, result.err
    (report,) = tmp_path.glob("debug_compare_result_*.csv")
    assert read_report(report)[1]


def _bad(run_probe, tmp_path: Path, option: str, text: str):
    path = tmp_path / "map.yaml"
    path.write_text(text)
    result = run_probe("compare", "-tp", "target/step0", "-gp", "golden/step0", "-o", tmp_path / "out",
                       option, path, cwd=CROSS)
    assert result.code == 2, result.err
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0], result.err
    return lines[0]


@pytest.mark.parametrize("option,text,needle", [
    ("-am", "- ms_api: Functional.add\n  pt_api: [\n", "not valid YAML"),
    ("-am", "- ms_api: Functional.sub\n  pt_api: Torch.rsub\n  ms_argz: [0]\n", "ms_argz"),
    ("-am", "- ms_api: Functional.sub\n  pt_api: Torch.rsub\n  ms_args: [0, 5]\n  pt_args: [1, 0]\n",
     "index 5 is out of range"),
    ("-am", "- ms_api: Functional.sub\n  pt_api: Torch.rsub\n  ms_args: [0, 1]\n  pt_args: [1]\n", "differ in length"),
    ("-am", "- {ms_api: Functional.sub, pt_api: Torch.rsub}\n- {ms_api: Functional.sub, pt_api: Torch.sub}\n",
     "Functional.sub"),
    ("-am", "ms_api: Functional.sub\nms_api: Functional.add\npt_api: Torch.rsub\n", "'ms_api' twice"),
    ("-dm", "Functional.add.0.forward.input.0: a\nFunctional.add.0.forward.input.0: b\n", "twice"),
    ("-cm", "fc1.Dense: [x]\n", "fc1.Dense"),
    ("-lm", "Attention: [qkv_proj]\n", "Attention"),
])
def test_mapping_file_errors_are_one_line(tmp_path, run_probe, option, text, needle):
    assert needle in _bad(run_probe, tmp_path, option, text)


def test_documented_single_item_shape_and_plural_outputs(tmp_path, run_probe):
    path = tmp_path / "map.yaml"
    path.write_text("ms_api: Functional.sub\npt_api: Torch.rsub\nms_args: [0, 1]\npt_args: [1, 0]\n"
                    "ms_outputs: [0]\npt_outputs: [0]\n")
    result = run_probe("compare", "-tp", "target/step0", "-gp", "golden/step0", "-o", tmp_path / "out", "-c",
                       "-am", path, cwd=CROSS)
    assert result.code == 0, result.err
    rows = {r["NPU Name"]: r for r in read_report(next((tmp_path / "out").glob("*.csv")))[1]}
    assert rows["Functional.sub.0.forward.input.1"]["Bench Name"] == "Torch.rsub.0.forward.input.0"
    assert rows["Functional.sub.0.forward.output.0"]["Bench Name"] == "Torch.rsub.0.forward.output.0"


class PaddleTable:
    """A third-party plugin: an API table for another framework pair, no MindSpore code touched."""

    __name__ = "paddle-table"

    def probe_register_normalizers(self, register):
        from probe_mindspore.api_table import ApiTable

        register.add("mindspore-to-paddle", ApiTable(
            name="mindspore-to-paddle", target_framework="mindspore", golden_framework="paddle",
            apis={"Functional.dense": "Functional.linear"},
        ))


PaddleTable.probe_register_normalizers = __import__("probe.hookspecs").hookspecs.hookimpl(
    PaddleTable.probe_register_normalizers
)


def _paddle_golden(tmp_path: Path) -> Path:
    src = next((CROSS / "golden/step0").iterdir())
    dst = tmp_path / "paddle"
    shutil.copytree(src, dst)
    doc = json.loads((dst / "dump.json").read_text())
    doc["framework"] = "paddle"
    (dst / "dump.json").write_text(json.dumps(doc))
    return dst / "dump.json"


def test_api_tables_come_from_the_normalizer_registry(tmp_path):
    from probe.errors import ProbeError
    from probe.pipeline import compare
    from probe.plugins import Host

    target = next((CROSS / "target/step0").iterdir()) / "dump.json"
    golden = _paddle_golden(tmp_path)
    with pytest.raises(ProbeError, match="no API table maps mindspore APIs to paddle"):
        compare(target, golden, host=Host(), api_mapping=True)
    run = compare(target, golden, host=Host(extra=(PaddleTable(),)), api_mapping=True)
    rows = {r["NPU Name"]: r for r in run[0]}
    assert rows["Functional.dense.0.forward.input.0"]["Bench Name"] == "Functional.linear.0.forward.input.0"
    assert rows["Mint.add.0.forward.input.0"]["Bench Name"] == "N/A"  # not in the paddle table


def test_step_option_selects_steps_of_a_json_dump_root(tmp_path, run_probe):
    case = MS / "ms_pynative_L1_statistics"
    result = run_probe("compare", "-tp", "target", "-gp", "golden", "-o", tmp_path, "--step", "1", "-c", cwd=case)
    assert result.code == 0, result.err
    assert [p.parent.name for p in tmp_path.rglob("*.csv")] == ["step1"]
