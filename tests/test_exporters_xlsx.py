"""The streaming xlsx writer: what openpyxl reads back is exactly what was written."""

from __future__ import annotations

import math
import threading
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openpyxl import load_workbook

import probe.zipstream
from conftest import PYTORCH_CASES
from probe.exporters import XlsxExporter, _rows
from probe.pipeline import compare
from probe.sheet_format import MAX_WIDTH, SAMPLE_ROWS, sheet_format
from probe.xlsx import MAX_CELL_TEXT, XlsxWriter, column_letter

COLUMNS = ["text", "number", "flag", "empty", "Highlight"]


def _write(path: Path, sheets: dict[str, list[list]], fill_column: int | None = None) -> None:
    with XlsxWriter(path) as book:
        for name, rows in sheets.items():
            book.add_sheet(name, COLUMNS[: len(rows[0])] if rows else COLUMNS, iter(rows),
                           rows_count=len(rows), fill_column=fill_column)


def _values(path: Path, sheet: int = 0) -> list[list]:
    book = load_workbook(path)
    return [list(row) for row in book.worksheets[sheet].iter_rows(min_row=2, values_only=True)]


def _same(read: list[list], expected: list[list]) -> None:
    assert len(read) == len(expected)
    for got_row, want_row in zip(read, expected):
        assert len(got_row) == len(want_row)
        for got, want in zip(got_row, want_row):
            assert type(got) is type(want), (got, want)
            if isinstance(want, float) and math.isnan(want):
                assert math.isnan(got)
            else:
                assert got == want, (got, want)


def test_text_is_escaped_and_read_back_unchanged(tmp_path):
    texts = ["a<b>&c", "</t></is></c><c>", "&amp; stays literal", 'quote " and \' apostrophe', "温度 – üñî 🙂",
             "  leading and trailing  ", "line\nbreak\tand tab", "carriage\r\nreturn", "'=SUM(A1)", "x" * 40]
    rows = [[t, 1] for t in texts]
    _write(tmp_path / "t.xlsx", {"Sheet1": rows})
    _same(_values(tmp_path / "t.xlsx"), rows)


def test_characters_xml_forbids_are_dropped(tmp_path):
    rows = [["a\x00b\x07c\x1bd", 1], ["\x0bvertical\x0cfeed\x1f", 2], ["lone \ud800 surrogate \uffff", 3]]
    _write(tmp_path / "c.xlsx", {"Sheet1": rows})
    _same(_values(tmp_path / "c.xlsx"), [["abcd", 1], ["verticalfeed", 2], ["lone  surrogate ", 3]])


def test_numbers_keep_their_type_and_every_digit(tmp_path):
    numbers = [0, -5, 2**53, 10**15 + 1, 0.1, -0.0, 1 / 3, -1.5e300, 1e-300, 5e-324, 1.7976931348623157e308,
               1e16, 123456789.12345679, 2.5e-05, -7.0]
    rows = [["n", value] for value in numbers]
    _write(tmp_path / "n.xlsx", {"Sheet1": rows})
    read = _values(tmp_path / "n.xlsx")
    _same(read, rows)
    assert [repr(r[1]) for r in read] == [repr(v) for v in numbers]  # -0.0 and the last digits too


def test_booleans_empty_cells_and_non_finite_floats(tmp_path):
    rows = [["x", True, None, ""], ["", False, "", None], [None, math.inf, -math.inf, math.nan]]
    _write(tmp_path / "b.xlsx", {"Sheet1": rows})
    _same(_values(tmp_path / "b.xlsx"), [["x", True, None, None], [None, False, None, None],
                                          [None, "inf", "-inf", "nan"]])


def test_numpy_scalars_are_written_as_numbers(tmp_path):
    np = pytest.importorskip("numpy")
    rows = [["np", np.float32(0.5), np.int64(-3), np.bool_(True)]]
    _write(tmp_path / "np.xlsx", {"Sheet1": rows})
    _same(_values(tmp_path / "np.xlsx"), [["np", 0.5, -3, True]])


def test_long_text_is_cut_at_the_cell_limit(tmp_path):
    rows = [["y" * (MAX_CELL_TEXT + 10), 1]]
    _write(tmp_path / "l.xlsx", {"Sheet1": rows})
    assert _values(tmp_path / "l.xlsx")[0][0] == "y" * MAX_CELL_TEXT


def test_several_sheets_in_order_with_their_headers(tmp_path):
    sheets = {"part_0": [["a", 1], ["b", 2]], "part_1": [["c", 3]], "R&D <x>": [["d", 4.5]]}
    _write(tmp_path / "s.xlsx", sheets)
    book = load_workbook(tmp_path / "s.xlsx")
    assert book.sheetnames == list(sheets)
    for index, rows in enumerate(sheets.values()):
        sheet = book.worksheets[index]
        assert [c.value for c in sheet[1]] == COLUMNS[:2]
        assert sheet.dimensions == f"A1:B{len(rows) + 1}"
        _same(_values(tmp_path / "s.xlsx", index), rows)


def test_highlight_fills_whole_rows(tmp_path):
    rows = [["a", 1, True, None, "red"], ["b", 2, False, None, ""], ["c", 3.5, True, "z", "yellow"]]
    _write(tmp_path / "h.xlsx", {"Sheet1": rows}, fill_column=4)
    sheet = load_workbook(tmp_path / "h.xlsx").active
    fills = [[(c.fill.patternType, c.fill.fgColor.rgb) for c in row] for row in sheet.iter_rows()]
    assert all(f == (None, "00000000") for f in fills[0] + fills[2])  # header and plain row
    assert all(f == ("solid", "FFFF0000") for f in fills[1])
    assert all(f == ("solid", "FFFFFF00") for f in fills[3])
    _same(_values(tmp_path / "h.xlsx"), [["a", 1, True, None, "red"], ["b", 2, False, None, None],
                                          ["c", 3.5, True, "z", "yellow"]])


def test_package_is_a_valid_zip_and_zip64_records_read_back(tmp_path, monkeypatch):
    rows = [[f"row {i} <&>", i, i / 7] for i in range(3000)]
    _write(tmp_path / "small.xlsx", {"Sheet1": rows})
    with zipfile.ZipFile(tmp_path / "small.xlsx") as archive:
        assert archive.testzip() is None
        assert {"[Content_Types].xml", "xl/workbook.xml", "xl/styles.xml", "xl/worksheets/sheet1.xml"} <= set(
            archive.namelist())
    monkeypatch.setattr(probe.zipstream, "ZIP64_LIMIT", 100)  # every size and offset now needs ZIP64
    _write(tmp_path / "big.xlsx", {"Sheet1": rows, "Sheet2": rows[:5]})
    with zipfile.ZipFile(tmp_path / "big.xlsx") as archive:
        assert archive.testzip() is None
        assert archive.getinfo("xl/worksheets/sheet1.xml").file_size > 100_000
    _same(_values(tmp_path / "big.xlsx"), rows)
    _same(_values(tmp_path / "big.xlsx", 1), rows[:5])


def test_a_failing_row_source_leaves_no_thread_running(tmp_path):
    def rows():
        yield ["a", 1]
        raise RuntimeError("source failed")

    before = threading.active_count()
    with pytest.raises(RuntimeError, match="source failed"):
        with XlsxWriter(tmp_path / "f.xlsx") as book:
            book.add_sheet("Sheet1", ["a", "b"], rows())
    assert threading.active_count() == before


def test_rows_wider_than_the_header_are_refused(tmp_path):
    with pytest.raises(ValueError, match="has 3 cells"):
        with XlsxWriter(tmp_path / "w.xlsx") as book:
            book.add_sheet("Sheet1", ["a", "b"], [["x", 1, 2]])


def test_column_letters():
    assert [column_letter(i) for i in (0, 25, 26, 27, 51, 52, 701, 702, 16383)] == [
        "A", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA", "XFD"]


def test_report_reads_back_as_the_rows_the_exporter_was_given(tmp_path):
    case = PYTORCH_CASES / "nan_inf_cnn"
    result = compare(case / "target/step0/rank0/dump.json", case / "golden/step0/rank0/dump.json")[0]
    XlsxExporter().write(result, tmp_path / "r.xlsx")
    book = load_workbook(tmp_path / "r.xlsx")
    assert book.sheetnames == ["Sheet1"]
    header = [c.value for c in book.active[1]]
    assert header == result.columns
    given = list(_rows(result, ("inf", "-inf")))
    layout = sheet_format(result.columns, given[:SAMPLE_ROWS])
    expected = [[None if v == "" else layout.cell(i, v) for i, v in enumerate(row)] for row in given]
    assert any(isinstance(v, float) for row in expected for v in row)
    assert any(isinstance(v, bool) for row in expected for v in row)
    _same(_values(tmp_path / "r.xlsx"), expected)


def test_report_opens_ready_to_read(tmp_path):
    """Frozen header, autofilter over every row, widths fitted to content, numeric text as numbers."""
    case = PYTORCH_CASES / "stat_mix_tfm"
    result = compare(case / "target/step0/rank0/dump.json", case / "golden/step0/rank0/dump.json")[0]
    XlsxExporter().write(result, tmp_path / "r.xlsx")
    sheet = load_workbook(tmp_path / "r.xlsx").active
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == f"A1:{column_letter(len(result.columns) - 1)}{len(result) + 1}"
    widths = {letter: dim.width for letter, dim in sheet.column_dimensions.items()}
    name_col = column_letter(result.columns.index("NPU Name"))
    assert widths[name_col] >= min(MAX_WIDTH, max(len(r.name) for r in result.records[:500]))
    assert widths[column_letter(result.columns.index("NPU Dtype"))] < widths[name_col]
    max_diff = result.columns.index("Max diff") + 1
    values = [row[max_diff - 1].value for row in sheet.iter_rows(min_row=2, max_col=max_diff)]
    assert any(isinstance(v, float) for v in values) and not any(
        isinstance(v, str) and v.replace(".", "", 1).lstrip("-").isdigit() for v in values)
    md5_like = [row[0].value for row in sheet.iter_rows(min_row=2, max_col=1)]
    assert all(isinstance(v, str) for v in md5_like)


xlsx_cells = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["", " x", "x ", "a<b", "&", "-0.5", "1e-07", "2.5%", "red", "yellow", "0", "nan", "inf",
                     "1e999", " 1", "\x00", "\r\n", "y" * (MAX_CELL_TEXT + 1)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10**20, 10**20),
    st.booleans(),
    st.none(),
)


def _sheet_bytes(path: Path) -> bytes:
    with zipfile.ZipFile(path) as archive:
        return archive.read("xl/worksheets/sheet1.xml")


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 5).flatmap(lambda w: st.lists(st.lists(xlsx_cells, min_size=w, max_size=w), max_size=12)),
       st.integers(1, 5), st.booleans())
def test_sheet_from_column_blocks_equals_sheet_from_rows(tmp_path_factory, rows, block, fill):
    """add_sheet_columns writes the bytes add_sheet writes, whatever the cells and block sizes."""
    width = len(rows[0]) if rows else 3
    header = ["text", "Max diff", "number", "flag", "Highlight"][:width]
    fill_column = width - 1 if fill else None
    blocks = [[list(c) for c in zip(*rows[i:i + block])] for i in range(0, len(rows), block)]
    folder = tmp_path_factory.mktemp("blocks")
    with XlsxWriter(folder / "rows.xlsx") as book:
        book.add_sheet("Sheet1", header, rows, rows_count=len(rows), fill_column=fill_column)
    with XlsxWriter(folder / "columns.xlsx") as book:
        book.add_sheet_columns("Sheet1", header, blocks, rows_count=len(rows), fill_column=fill_column)
    assert _sheet_bytes(folder / "columns.xlsx") == _sheet_bytes(folder / "rows.xlsx")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=6), st.sampled_from(["-0.5", "1e-07", "2.5%", "+3", ".5", "1_0", "1e999",
                                                                    " 1", "nan", "-inf", "0x1", "", "1.5e+300"]),
                          st.floats().map(repr)), max_size=20))
def test_numeric_column_equals_cell_by_cell(texts):
    layout = sheet_format(["Max diff"], [["-0.5"]])
    assert layout.numeric == (True,)
    assert list(layout.column(0, texts)) == [layout.cell(0, t) for t in texts]


def test_column_path_xlsx_equals_row_path(tmp_path):
    """A statistics report written from columns has the sheet the row-by-row writer gives."""
    case = PYTORCH_CASES / "nan_inf_cnn" if (PYTORCH_CASES / "nan_inf_cnn").exists() else None
    if case is None:
        pytest.skip("fixture missing")
    target = next(case.glob("target/**/dump.json"))
    golden = case / "golden" / target.relative_to(case / "target")
    result = compare(target, golden, analyze=False).results[0]
    XlsxExporter().write(result, tmp_path / "columns.xlsx")
    with XlsxWriter(tmp_path / "rows.xlsx") as book:
        book.add_sheet("Sheet1", result.columns, _rows(result, ("inf", "-inf")), rows_count=len(result))
    assert _sheet_bytes(tmp_path / "columns.xlsx") == _sheet_bytes(tmp_path / "rows.xlsx")
