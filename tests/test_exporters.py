"""Exporter details: splitting large reports, spreadsheet safety, stack formats."""

from __future__ import annotations

import json

from conftest import PYTORCH_CASES
from parity import read_report
from probe.exporters import CsvExporter, XlsxExporter, neutralise_formula
from probe.formats.msprobe.stack import load_stack
from probe.pipeline import compare

STAT = PYTORCH_CASES / "stat_mix_cnn"


def _result():
    return compare(STAT / "target/step0/proc23827/dump.json", STAT / "golden/step0/proc23597/dump.json")[0]


def test_csv_splits_into_parts_each_with_a_header(tmp_path, monkeypatch):
    result = _result()
    monkeypatch.setattr(CsvExporter, "max_rows", 40)
    written = CsvExporter().write(result, tmp_path / "compare_result_1.csv")
    assert [p.name for p in written] == [f"compare_result_1_part_{i}.csv" for i in (1, 2, 3)]
    rows = []
    for part in written:
        header, part_rows = read_report(part)
        assert header == result.columns
        rows.extend(r["NPU Name"] for r in part_rows)
    assert rows == [r.name for r in result.records]


def test_xlsx_splits_into_balanced_sheets(tmp_path, monkeypatch):
    from openpyxl import load_workbook

    result = _result()
    monkeypatch.setattr(XlsxExporter, "max_rows", 50)
    XlsxExporter().write(result, tmp_path / "r.xlsx")
    book = load_workbook(tmp_path / "r.xlsx")
    sizes = [sheet.max_row - 1 for sheet in book.worksheets]
    assert book.sheetnames == ["part_0", "part_1", "part_2"]
    assert sum(sizes) == len(result) and max(sizes) - min(sizes) <= 1


def test_formula_like_text_is_neutralised_but_numbers_are_kept():
    assert neutralise_formula("=SUM(A1)") == "'=SUM(A1)"
    assert neutralise_formula("@cmd") == "'@cmd"
    assert neutralise_formula("-1.5") == "-1.5"
    assert neutralise_formula("-inf") == "-inf"
    assert neutralise_formula("Functional.relu") == "Functional.relu"


def test_debug_value_that_looks_like_a_formula_is_written_safely(tmp_path, run_probe):
    case = PYTORCH_CASES / "single_save_cnn"
    for side in ("target", "golden"):
        doc = json.loads((case / side / "step0/rank0/debug.json").read_text())
        doc["data"]["evil.0.debug"] = {"type": "str", "value": "=SUM(A1)"}
        (tmp_path / side).mkdir()
        (tmp_path / side / "debug.json").write_text(json.dumps(doc))
    result = run_probe("compare", "-tp", tmp_path / "target/debug.json", "-gp", tmp_path / "golden/debug.json",
                       "-o", tmp_path / "out", "-c")
    assert result.code == 0, result.err
    _, rows = read_report(next((tmp_path / "out").glob("debug_compare_result_*.csv")))
    evil = next(r for r in rows if r["NPU Name"] == "evil.0.debug")
    assert evil["NPU max"] == "'=SUM(A1)"


def test_stack_json_both_formats(tmp_path):
    new = tmp_path / "new.json"
    new.write_text(json.dumps({"0": [["A.f.0.forward", "A.g.0.forward"], ["File a.py, line 1, in f"]]}))
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"A.f.0.forward": ["File a.py, line 1, in f"]}))
    assert load_stack(new) == {"A.f.0.forward": ["File a.py, line 1, in f"], "A.g.0.forward": ["File a.py, line 1, in f"]}
    assert load_stack(old) == {"A.f.0.forward": ["File a.py, line 1, in f"]}
    assert load_stack(tmp_path / "missing.json") is None
