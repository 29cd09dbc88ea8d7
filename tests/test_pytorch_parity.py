"""End to end: probe's reports on real PyTorch dumps equal msProbe's own reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PYTORCH_CASES, msprobe_commands
from parity import compare_reports, read_report


def _cases():
    for case in sorted(p for p in PYTORCH_CASES.iterdir() if p.is_dir()):
        for cmd in msprobe_commands(case):
            if "-da" in cmd["argv"]:
                continue  # first-divergence analysis has its own tests
            yield pytest.param(case, cmd, id=f"{case.name}-{cmd['label']}")


@pytest.mark.parametrize("case,cmd", list(_cases()))
def test_report_matches_msprobe(case: Path, cmd: dict, tmp_path: Path, run_probe) -> None:
    argv = list(cmd["argv"])
    argv[argv.index("-o") + 1] = str(tmp_path / "out")
    result = run_probe("compare", *argv, "-c", cwd=case)
    assert result.code == 0, result.err
    # diagnosis_{ts}.json is probe's own addition (docs/diagnosis.md); msProbe writes no such file
    ours = sorted(p for p in (tmp_path / "out").iterdir() if not p.name.startswith("diagnosis_"))
    expected = sorted((case / "expected" / cmd["label"]).iterdir())
    assert [p.suffix for p in ours] == [p.suffix for p in expected]
    # file names: same prefix and rank part, a 14-digit timestamp
    for mine, theirs in zip(ours, expected):
        assert mine.name.rsplit("_", 1)[0] == theirs.name.rsplit("_", 1)[0]
        assert len(mine.stem.rsplit("_", 1)[1]) == 14
        problems = compare_reports(mine, theirs, CORRECTED.get((case.name, cmd["label"])))
        assert not problems, "\n".join(problems[:20])


def _backward_api(name: str) -> bool:
    return ".backward." in name and not name.startswith("Module.")


# Rows where msProbe is wrong (docs/differences.md); tested separately below.
CORRECTED = {
    # msProbe renumbers backward call indices of the golden side only under -dm, so the
    # backward rows of linear (called 3 times) pair with another call's gradients.
    ("data_mapping_tfm", "dm_csv"): _backward_api,
}


def test_data_mapping_pairs_backward_rows_with_their_own_call(tmp_path: Path, run_probe) -> None:
    case = PYTORCH_CASES / "data_mapping_tfm"
    result = run_probe("compare", "-tp", case / "target/step0/rank0/dump.json",
                       "-gp", case / "golden/step0/rank0/dump.json", "-o", tmp_path, "-c",
                       "-dm", case / "data_mapping.yaml")
    assert result.code == 0, result.err
    _, rows = read_report(next(tmp_path.glob("*.csv")))
    backward = [r for r in rows if _backward_api(r["NPU Name"])]
    linear = {r["NPU Name"].split(".")[2] for r in backward if r["NPU Name"].startswith("Functional.linear.")}
    assert len(linear) > 1, "linear must be called several times"
    for row in backward:
        assert row["Bench Name"] == row["NPU Name"]  # same op, same call, same gradient
        if row["NormRelativeErr"].endswith("%"):
            assert abs(float(row["NormRelativeErr"].rstrip("%"))) < 5.0, row["NPU Name"]


def test_unmatched_rows_say_why(tmp_path: Path, run_probe) -> None:
    """msProbe marks target-only rows 'pass' with an empty message; probe says N/A and why."""
    case = PYTORCH_CASES / "structure_extra_layer_cnn"
    result = run_probe("compare", "-tp", case / "target/step0/rank0/dump.json",
                       "-gp", case / "golden/step0/rank0/dump.json", "-o", tmp_path, "-c")
    assert result.code == 0, result.err
    _, rows = read_report(next(tmp_path.glob("*.csv")))
    unmatched = [r for r in rows if r["Bench Name"] == "N/A"]
    assert unmatched, "the extra layer must give target-only rows"
    for row in unmatched:
        assert row["Result"] == "N/A"
        assert "No bench data matched." in json.loads(row["Err_message"])
    assert "unmatched" in result.out


def test_highlight_marks_rows_like_the_recorded_colours(tmp_path: Path, run_probe) -> None:
    """-hl adds a Highlight column; every row msProbe's rules made red or yellow is coloured."""
    case = PYTORCH_CASES / "nan_inf_cnn"
    result = run_probe("compare", "-tp", case / "target/step0/rank0/dump.json",
                       "-gp", case / "golden/step0/rank0/dump.json", "-o", tmp_path, "-c", "-hl", "--xlsx")
    assert result.code == 0, result.err
    header, rows = read_report(next(tmp_path.glob("*.xlsx")))
    assert header[-1] == "Highlight"
    red = [r["NPU Name"] for r in rows if r["Highlight"] == "red"]
    assert red, "NaN/inf rows must be red"
    from openpyxl import load_workbook

    sheet = load_workbook(next(tmp_path.glob("*.xlsx"))).active
    fills = {row[0].value: row[0].fill.fgColor.rgb for row in sheet.iter_rows(min_row=2)}
    assert all(fills[name] == "FFFF0000" for name in red)


def test_fuzzy_match_works_on_statistics_dumps(tmp_path: Path, run_probe) -> None:
    """msProbe 26.2 crashes here (recorded exit 1); probe pairs the shifted layer_norm calls."""
    case = PYTORCH_CASES / "fuzzy_match_tfm"
    args = ["-tp", case / "target/step0/rank0/dump.json", "-gp", case / "golden/step0/rank0/dump.json", "-c"]
    assert run_probe("compare", *args, "-o", tmp_path / "exact").code == 0
    result = run_probe("compare", *args, "-o", tmp_path / "fuzzy", "-fm")
    assert result.code == 0, result.err
    _, exact = read_report(next((tmp_path / "exact").glob("*.csv")))
    _, fuzzy = read_report(next((tmp_path / "fuzzy").glob("*.csv")))
    assert [r["NPU Name"] for r in fuzzy] == [r["NPU Name"] for r in exact]  # no target row dropped
    pairs = {r["NPU Name"]: r["Bench Name"] for r in fuzzy}
    assert pairs["Functional.layer_norm.2.forward.output.0"] == "Functional.layer_norm.1.forward.output.0"
    assert pairs["Functional.layer_norm.1.forward.output.0"] == "N/A"  # the extra call
    matched = [r for r in fuzzy if r["Bench Name"] != "N/A"]
    assert all(r["Max diff"] != "N/A" for r in matched)  # statistics columns are filled
