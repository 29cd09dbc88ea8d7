"""MindSpore native (kernel) dumps: msProbe parity, every documented layout, statistic.csv."""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA
from parity import cells_equal, read_report

CASE = DATA / "mindspore" / "ms_graph_kernel_native"


def test_kernel_report_matches_msprobe(tmp_path, run_probe):
    result = run_probe("compare", "-tp", "target", "-gp", "golden", "--rank", "0", "--step", "0",
                       "-o", tmp_path, "-c", cwd=CASE)
    assert result.code == 0, result.err
    (ours,) = tmp_path.glob("compare_result_0_0_*.csv")
    exp_header, expected = read_report(Path(glob.glob(str(CASE / "expected/rank0_step0/*.csv"))[0]))
    header, rows = read_report(ours)
    assert header[: len(exp_header)] == exp_header and header[len(exp_header):] == ["Result"]
    assert len(rows) == len(expected)
    for mine, theirs in zip(rows, expected):
        for column in exp_header:
            a, b = mine[column], theirs[column]
            if column in ("NPU Name", "Bench Name"):  # absolute paths: msProbe ran elsewhere
                a, b = Path(a).name, Path(b).name
            if column == "Err_message":  # msProbe ends each message with a literal newline
                b = b.replace("\n", " ").strip()
            assert cells_equal(a, b), (theirs["NPU Name"], column, a, b)
    verdicts = {(r["Accuracy Reached or Not"], r["Result"]) for r in rows}
    assert ("Yes", "pass") in verdicts and ("No", "error") in verdicts


def _npy(directory: Path, op: str, ts: int, io: str, data, dtype_field: bool = True) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    suffix = ".DefaultFormat.Float32.npy" if dtype_field else ".DefaultFormat.npy"
    np.save(directory / f"MatMul.{op}.0.0.{ts}.{io}{suffix}", np.asarray(data, dtype=np.float32))


def _kernel_dump(root: Path, data_dir: str, shift: float = 0.0, dtype_field: bool = True) -> None:
    d = root / data_dir
    _npy(d, "Default_MatMul-op1", 100, "input.0", np.arange(6.0).reshape(2, 3) + shift, dtype_field)
    _npy(d, "Default_MatMul-op1", 101, "output.0", np.arange(4.0).reshape(2, 2), dtype_field)


@pytest.mark.parametrize("layout", [
    "rank_0/Net/0/0",                  # KBK (O0/O1)
    "20250101120000/0/Net/1/0",        # GE style: device directory is the rank
    "rank_0/20250101120000/step_0",    # documented O2 layout msProbe does not find
])
def test_every_documented_layout_is_found(tmp_path, run_probe, layout):
    _kernel_dump(tmp_path / "t", layout, shift=0.01)
    _kernel_dump(tmp_path / "g", layout.replace("20250101120000", "20250101130000"))  # another run
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    (report,) = (tmp_path / "out").glob("compare_result_0_0_*.csv")
    _, rows = read_report(report)
    assert [Path(r["NPU Name"]).name.split(".")[1] for r in rows] == ["Default_MatMul-op1"] * 2
    assert all(r["Bench Name"] for r in rows)


def test_file_names_with_and_without_dtype_field_pair(tmp_path, run_probe):
    """msProbe's greedy name pattern gives different keys for the two spellings."""
    _kernel_dump(tmp_path / "t", "rank_0/Net/0/0", dtype_field=True)
    _kernel_dump(tmp_path / "g", "rank_0/Net/0/0", dtype_field=False)
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    _, rows = read_report(next((tmp_path / "out").glob("*.csv")))
    assert len(rows) == 2 and all(r["Result"] == "pass" for r in rows)


def test_rank_and_step_select_jobs(tmp_path, run_probe):
    for root in ("t", "g"):
        for rank in (0, 1):
            for step in (0, 1):
                _kernel_dump(tmp_path / root, f"rank_{rank}/Net/0/{step}")
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out",
                       "--rank", "1", "--step", "", "-c")
    assert result.code == 0, result.err
    names = sorted(p.name.rsplit("_", 1)[0] for p in (tmp_path / "out").glob("*.csv"))
    assert names == ["compare_result_1_0", "compare_result_1_1"]
    bad = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "o2", "--rank", "x")
    assert bad.code == 2 and "--rank" in bad.err


def test_no_common_rank_names_what_was_found(tmp_path, run_probe):
    _kernel_dump(tmp_path / "t", "rank_0/Net/0/0")
    _kernel_dump(tmp_path / "g", "rank_1/Net/0/0")
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out")
    assert result.code == 2
    assert "rank 0 step 0: rank_0/Net/0/0" in result.err and "rank 1 step 0" in result.err


STAT_HEADER = "Op Type,Op Name,Task ID,Stream ID,Timestamp,IO,Slot,Data Size,Data Type,Shape,Max Value,Min Value,Avg Value,L2Norm Value\n"


def _statistic(directory: Path, rows: list[str]) -> None:
    directory.mkdir(parents=True)
    (directory / "statistic.csv").write_text(STAT_HEADER + "".join(r + "\n" for r in rows))


def test_statistic_csv_mode(tmp_path, run_probe):
    _statistic(tmp_path / "t/rank_0/Net/0/0", [
        'MatMul,Default_MatMul-op1,7,0,100,output,0,24,float32,"(2,3)",-1,-6,-3,8',
        'Add,Default_Add-op2,8,0,101,input,0,24,float32,"(2,3)",-4,0,1,2',
        'Add,Default_Add-op3,9,0,102,input,0,24,float32,"(2,3)",1,0,1,2',
    ])
    _statistic(tmp_path / "g/rank_0/Net/0/0", [
        'MatMul,Default_MatMul-op1,3,0,90,output,0,24,float32,"(2,3)",5,-6,-3,8',
        'Add,Default_Add-op2,4,0,91,input,0,24,float32,"(2,3)",-2,0,1,2',
    ])
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    header, rows = read_report(next((tmp_path / "out").glob("compare_result_0_0_*.csv")))
    assert header[-3:] == ["NPU CSV File", "Bench CSV File", "Result"]
    by_name = {r["NPU Name"]: r for r in rows}
    add = by_name["Default_Add-op2.8.input.0"]  # task ids differ between runs: still paired
    assert add["Bench Name"] == "Default_Add-op2.4.input.0"
    assert float(add["Max diff"]) == -2.0 and add["MaxRelativeErr"] == "100.0%"
    assert add["MinRelativeErr"] == "N/A" and add["Accuracy Reached or Not"] == "No"
    # msProbe's signed ratio reads -6 / 5 = -1.2 as "Yes"; a deviation of 6 on 5 is a failure
    assert by_name["Default_MatMul-op1.7.output.0"]["Accuracy Reached or Not"] == "No"
    assert by_name["Default_Add-op3.9.input.0"]["Result"] == "N/A"
    assert by_name["Default_Add-op3.9.input.0"]["Err_message"] == "No bench data matched."


def test_kernel_dump_is_detected_without_rank_option(tmp_path, run_probe):
    _kernel_dump(tmp_path / "t", "rank_0/Net/0/0")
    _kernel_dump(tmp_path / "g", "rank_0/Net/0/0")
    result = run_probe("compare", "-tp", tmp_path / "t", "-gp", tmp_path / "g", "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    assert list((tmp_path / "out").glob("compare_result_0_0_*.csv"))
