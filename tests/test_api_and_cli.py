"""The Python API and command-line behaviours beyond report parity."""

from __future__ import annotations

import json
import shutil

import pytest

import probe
from conftest import PYTORCH_CASES
from parity import read_report

STAT = PYTORCH_CASES / "stat_mix_tfm"
MULTI = PYTORCH_CASES / "multirank_cnn"


def test_python_api_returns_filterable_results(tmp_path):
    run = probe.compare(STAT / "target/step0/rank0/dump.json", STAT / "golden/step0/rank0/dump.json")
    assert len(run) == 1 and run.files == []
    result = run[0]
    failing = result.failing()
    assert 0 < len(failing) < len(result)
    assert all(row["Result"] in ("warning", "error") for row in failing)
    summary = run.summary()
    assert summary.rows == len(result) and summary.errors + summary.warnings == len(failing)
    assert run.failing() and run.failing()[0]["job"] == result.label


def test_python_api_writes_reports(tmp_path):
    run = probe.compare(MULTI / "target/step0", MULTI / "golden/step0", tmp_path, formats=("csv", "json"))
    names = sorted(p.name.rsplit("_", 1)[0] + p.suffix for p in run.files)
    assert names == ["compare_result_rank0.csv", "compare_result_rank0.json",
                     "compare_result_rank1.csv", "compare_result_rank1.json"]
    doc = json.loads(next(tmp_path.glob("compare_result_rank0_*.json")).read_text())
    _, csv_rows = read_report(next(tmp_path.glob("compare_result_rank0_*.csv")))
    assert len(doc["rows"]) == len(csv_rows) == doc["summary"]["rows"]
    assert doc["rows"][0]["NPU Name"] == csv_rows[0]["NPU Name"]


def test_compare_json_input_file(tmp_path, run_probe):
    """msProbe's compare.json: npu_path / bench_path, and stack_path names the stack file."""
    target = tmp_path / "t"
    shutil.copytree(STAT / "target/step0/rank0", target)
    (target / "stack.json").rename(tmp_path / "elsewhere_stack.json")
    spec = tmp_path / "compare.json"
    spec.write_text(json.dumps({"npu_path": str(target / "dump.json"),
                                "bench_path": str(STAT / "golden/step0/rank0/dump.json"),
                                "stack_path": str(tmp_path / "elsewhere_stack.json"),
                                "is_print_compare_log": False}))
    result = run_probe("compare", "-i", spec, "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    header, rows = read_report(next((tmp_path / "out").glob("compare_result_*.csv")))
    assert header[-1] == "NPU_Stack_Info" and rows[0]["NPU_Stack_Info"].startswith("['File ")


NAN = PYTORCH_CASES / "nan_inf_cnn"


def test_fail_on_error_gates_ci(tmp_path, run_probe):
    args = ["compare", "-tp", NAN / "target/step0/rank0/dump.json", "-gp", NAN / "golden/step0/rank0/dump.json",
            "-o", tmp_path, "-c"]
    assert run_probe(*args).code == 0
    assert run_probe(*args, "--fail-on", "error").code == 1


def test_reruns_never_overwrite(tmp_path, run_probe):
    args = ["compare", "-tp", STAT / "target/step0/rank0/dump.json", "-gp", STAT / "golden/step0/rank0/dump.json",
            "-o", tmp_path, "-c"]
    for _ in range(3):
        assert run_probe(*args).code == 0
    assert len(list(tmp_path.glob("compare_result_*.csv"))) == 3


def test_summary_names_first_error_and_report(tmp_path, run_probe):
    result = run_probe("compare", "-tp", NAN / "target/step0/rank0/dump.json",
                       "-gp", NAN / "golden/step0/rank0/dump.json", "-o", tmp_path, "-c")
    _, rows = read_report(next(tmp_path.glob("*.csv")))
    first_error = next(r["NPU Name"] for r in rows if r["Result"] == "error")
    assert f"first error: {first_error}" in result.out
    assert "report: " in result.out


def test_multistep_root_compares_every_step(tmp_path, run_probe):
    case = PYTORCH_CASES / "multistep_cnn"
    result = run_probe("compare", "-tp", case / "target", "-gp", case / "golden", "-o", tmp_path, "-c")
    assert result.code == 0, result.err
    assert sorted(p.parent.name for p in tmp_path.rglob("*.csv")) == ["step0", "step1"]


def test_ranks_on_one_side_only_are_named(tmp_path, run_probe):
    target, golden = tmp_path / "t", tmp_path / "g"
    shutil.copytree(MULTI / "target/step0", target)
    shutil.copytree(MULTI / "golden/step0", golden)
    shutil.copytree(target / "rank1", target / "rank2")
    result = run_probe("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    assert "ranks only in the target dump, not compared: rank2" in result.err
    assert len(list((tmp_path / "out").glob("compare_result_rank*.csv"))) == 2


def test_ranks_pair_by_id_in_parallel_processes(tmp_path, run_probe):
    result = run_probe("compare", "-tp", MULTI / "target/step0", "-gp", MULTI / "golden/step0",
                       "-o", tmp_path, "-c", "--jobs", "2")
    assert result.code == 0, result.err
    serial = probe.compare(MULTI / "target/step0", MULTI / "golden/step0", jobs=1)
    for rank, result_ in zip((0, 1), serial):
        _, rows = read_report(next(tmp_path.glob(f"compare_result_rank{rank}_*.csv")))
        assert [r["NPU Name"] for r in rows] == [r.name for r in result_.records]


@pytest.mark.parametrize("option,value,problem", [
    ("--window", "-5", "must be 0 or more"), ("--jobs", "0", "must be 1 or more"), ("-j", "two", "whole number"),
])
def test_counts_out_of_range_are_usage_errors(tmp_path, run_probe, capsys, option, value, problem):
    with pytest.raises(SystemExit) as stop:
        run_probe("compare", "-tp", MULTI / "target/step0", "-gp", MULTI / "golden/step0", "-o", tmp_path,
                  option, value)
    assert stop.value.code == 2
    assert problem in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_help_has_examples(run_probe, capsys):
    with pytest.raises(SystemExit):
        run_probe("compare", "--help")
    out = capsys.readouterr().out
    assert "examples:" in out and "-tp" in out and "--fail-on" in out


def test_tensor_log_prints_one_line_per_row(tmp_path, run_probe):
    case = PYTORCH_CASES / "tensor_mix_cnn"
    result = run_probe("compare", "-tp", case / "target/step0/rank0/dump.json",
                       "-gp", case / "golden/step0/rank0/dump.json", "-o", tmp_path, "-c", "-tensor_log")
    assert result.code == 0, result.err
    lines = [line for line in result.out.splitlines() if "Compare result: Cosine" in line]
    _, rows = read_report(next(tmp_path.glob("*.csv")))
    assert len(lines) == len(rows)
