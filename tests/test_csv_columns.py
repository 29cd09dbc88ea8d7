"""Reports rendered as whole columns equal the row-by-row rendering, cell for cell and byte for byte."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import probe
from probe.cells import safe_row
from probe.csvtext import NUMBER_WORDS, JoinedFields, NumberTexts, PercentTexts, column_texts, csv_lines, float_texts, matrix_rows, safe_cells
from probe.exporters import CSV_INF, _column_rows, _rows
from probe.modes.common import STAT_COLUMNS, display_stat
from probe.modes.stat_columns import difference_columns, numeric_fields, stat_display_columns
from probe.modes.statistics import stat_difference
from probe.sheet_format import SheetFormat
from probe.xlsx import _number_tails, _percent_tails, column_tails

DATA = Path(__file__).parent / "data" / "pytorch"

cells = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["=SUM(A1)", "-1.5", "-inf", "+x", "a,b", 'q"q', "x\ny", "x\rz", "@", "", "N/A", "Nan",
                     "|cmd", " =1", "\tx", "-1_0", "-١", "－1", "-1e5", "-Infinity", "- 1", " -inf", "-1\x1c"]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-10**20, 10**20),
    st.booleans(),
    st.none(),
)


def writer_text(rows: list[list], stat_index: list[int], inf_text: tuple[str, str]) -> str:
    """What csv.writer writes after the exporters' per-row rules (the reference)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    pos_inf, neg_inf = inf_text
    for row in rows:
        row = list(row)
        for i in stat_index:
            value = row[i]
            if isinstance(value, float) and math.isinf(value):
                row[i] = pos_inf if value > 0 else neg_inf
        writer.writerow(safe_row(row))
    return buffer.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 6).flatmap(lambda w: st.lists(st.lists(cells, min_size=w, max_size=w), min_size=1, max_size=20)))
def test_column_text_equals_csv_writer(rows: list[list]) -> None:
    columns = [list(c) for c in zip(*rows)]
    assert csv_lines(columns, [0], CSV_INF) == writer_text(rows, [0], CSV_INF)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(cells, cells), min_size=1, max_size=15), st.sampled_from(["same", "equal", "loose"]))
def test_column_like_the_one_before_equals_csv_writer(pairs: list[tuple], how: str) -> None:
    """A column equal to the one before it (a golden column like the target's) takes its text
    only when both are all text: ``1 == 1.0 == True`` but their fields differ."""
    first = [a for a, _ in pairs]
    if how == "same":
        second = first
    elif how == "equal":
        second = [str(a) for a in first]
        first = list(second)
    else:  # equal values of other types: 1, 1.0, True
        first = [1, 1.0, True, 0, -0.0, False][: len(pairs)]
        second = [True, 1, 1.0, False, 0, 0.0][: len(pairs)]
    rows = [list(row) for row in zip(first, second, [b for _, b in pairs])]
    columns = [list(c) for c in zip(*rows)]
    for stat in ([], [1]):
        assert csv_lines(columns, stat, CSV_INF) == writer_text(rows, stat, CSV_INF)


names = st.text(alphabet="ab.,\"=\r\n -_0", min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(st.lists(names, min_size=16, max_size=16, unique=True), st.lists(names, max_size=30), st.integers(0, 47))
def test_text_column_of_distinct_leading_cells_equals_csv_writer(lead: list[str], rest: list[str], pick: int) -> None:
    """A text column whose first cells all differ (a column of names) is screened as it is, not
    cell by distinct cell: the same fields, repeats, quotes and spreadsheet rule included."""
    column = lead + rest + lead[: pick % 17]
    rows = [[text, "x"] for text in column]
    assert csv_lines([column, ["x"] * len(column)]) == writer_text(rows, [], CSV_INF)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(cells, min_size=1, max_size=1), min_size=1, max_size=10))
def test_single_column_table(rows: list[list]) -> None:
    assert csv_lines([[r[0] for r in rows]]) == writer_text(rows, [], ("inf", "-inf"))


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30))
def test_float_column_is_repr(values: list[float]) -> None:
    text = csv_lines([values, ["x"] * len(values)], [0], CSV_INF)
    expected = [CSV_INF[0] if v == math.inf else CSV_INF[1] if v == -math.inf else repr(v) for v in values]
    assert [line.split(",")[0] for line in text.splitlines()] == expected


stats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, 1e308, "nan", "inf", "-inf", "npu:0", "N/A", "1.5", True, None, 0, 3]),
    st.integers(-1000, 1000),
    st.integers(-2**60, 2**60),
    st.sampled_from([2**53, -2**53, 2**53 - 1, 2**53 + 1, 2**63 - 1, -2**63]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.tuples(stats, stats, stats, stats), st.tuples(stats, stats, stats, stats)), min_size=1, max_size=25))
def test_difference_columns_equal_stat_difference(pairs) -> None:
    target = [p[0] for p in pairs]
    golden = [p[1] for p in pairs]
    columns = difference_columns(target, golden, stat_difference)
    for i, (t, g) in enumerate(pairs):
        expected = [stat_difference(t[j], g[j]) for j in range(4)]
        got = [(columns[j][i], columns[4 + j][i]) for j in range(4)]
        assert got == expected, (t, g)
    for column in columns:  # text made by probe: its own CSV fields, kept by the spreadsheet rule
        assert column_texts(list(column)) == column
        assert safe_cells(list(column), False, CSV_INF) == column
    layout = SheetFormat(widths=(10.0,), numeric=(True,))
    for column in columns[:4]:  # repr of finite floats or NUMBER_WORDS; stored as numbers alike
        assert isinstance(column, NumberTexts)
        assert all(t in NUMBER_WORDS or (math.isfinite(float(t)) and repr(float(t)) == t) for t in column)
        assert _number_tails(column) == column_tails(layout.column(0, list(column)))
    for column in columns[4:]:  # the same followed by "%", or NUMBER_WORDS
        assert isinstance(column, PercentTexts)
        assert all(t in NUMBER_WORDS or (t[-1] == "%" and repr(float(t[:-1])) == t[:-1]) for t in column)
        assert _percent_tails(column) == column_tails(layout.column(0, list(column)))


def numeric_texts_by_cell(target: list, golden: list, inf_text: tuple[str, str]) -> list[str]:
    """The sixteen numeric CSV fields of each row, cell by cell (the reference of :func:`numeric_fields`)."""
    columns = (difference_columns(target, golden, stat_difference) + stat_display_columns(target)
               + stat_display_columns(golden))
    return list(map(",".join, zip(*[column_texts(list(c), k >= 8, inf_text) for k, c in enumerate(columns)])))


def joined_numeric_fields(target: list, golden: list, inf_text: tuple[str, str]) -> list[str]:
    """:func:`numeric_fields` of each row, its three blocks (differences, relative errors,
    statistics: four, four and eight fields) joined."""
    blocks = numeric_fields(target, golden, stat_difference, inf_text)
    assert len(blocks) == 3 and all(isinstance(b, JoinedFields) and len(b) == len(target) for b in blocks)
    assert all(t.count(",") == n for b, n in zip(blocks, (3, 3, 7)) for t in b if "\"" not in t)  # unquoted: 4, 4, 8 fields
    return list(map(",".join, zip(*blocks)))


small = st.floats(min_value=-2e-4, max_value=2e-4, allow_nan=False)
numeric_stats = st.one_of(stats, small, st.sampled_from([1e-4, 1e-5, 9.99e-06, 1e16, -1e22, 1.5e300, "[0]", "],[", "=1"]))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.tuples(*[numeric_stats] * 4), st.tuples(*[numeric_stats] * 4)), min_size=1, max_size=25),
       st.sampled_from([CSV_INF, ("inf", "-inf")]))
def test_numeric_fields_equal_the_cell_texts(pairs, inf_text) -> None:
    target = [p[0] for p in pairs]
    golden = [p[1] for p in pairs]
    fields = joined_numeric_fields(target, golden, inf_text)
    assert fields == numeric_texts_by_cell(target, golden, inf_text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.floats(width=64), small), min_size=3, max_size=3), min_size=1, max_size=12),
       st.data())
def test_matrix_rows_equal_repr_with_special_texts(rows, data) -> None:
    import numpy as np

    from probe.csvtext import plain_floats

    matrix = np.array(rows, dtype=np.float64)
    special = ~plain_floats(matrix) | np.array(data.draw(st.lists(st.booleans(), min_size=matrix.size,
                                                                  max_size=matrix.size))).reshape(matrix.shape)
    texts = data.draw(st.lists(st.text(alphabet="[],0n%\n", max_size=4), min_size=int(special.sum()),
                               max_size=int(special.sum())))
    filled = iter(texts)
    expected = [",".join(next(filled) if special[i, j] else repr(v) for j, v in enumerate(row))
                for i, row in enumerate(matrix.tolist())]
    assert matrix_rows(matrix, special, texts) == expected
    suffixed = [",".join(next(filled) if special[i, j] else repr(v) + "%" for j, v in enumerate(row))
                for filled in [iter(texts)] for i, row in enumerate(matrix.tolist())]
    assert matrix_rows(matrix, special, texts, "%") == suffixed


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(stats, stats, stats, stats), min_size=1, max_size=25))
def test_stat_display_columns_equal_display_stat(rows) -> None:
    columns = stat_display_columns(rows)
    assert columns == [[display_stat(v) for v in c] for c in zip(*rows)]
    for column in columns:  # a stat column's own text equals that of its cells
        for inf_text in (CSV_INF, ("inf", "-inf")):
            assert column.csv_texts(inf_text) == column_texts(list(column), True, inf_text)
        assert column_tails(column) == column_tails(list(column))  # and so do its sheet cells


@pytest.mark.parametrize("case, mode", [("stat_mix_tfm", "statistics"), ("nan_inf_cnn", "statistics"),
                                        ("md5_mix_tfm", "md5"), ("fuzzy_match_tfm", "statistics"),
                                        ("tensor_mix_tfm", "tensor"), ("tensor_mix_cnn", "tensor"),
                                        ("fuzzy_match_tensor_tfm", "tensor")])
def test_render_columns_equal_render(case: str, mode: str) -> None:
    root = DATA / case
    target = next(root.glob("target/**/dump.json"))
    golden = root / "golden" / target.relative_to(root / "target")
    options = {"fuzzy_match": True} if "fuzzy" in case else {}
    run = probe.compare(target, golden, analyze=False, **options)
    result = run.results[0]
    assert result.mode.name == mode and len(result) > 10
    rows = list(result.table())
    columns = result.table_columns()
    assert [list(c) for c in zip(*rows)] == columns
    stat_index = [result.columns.index(c) for c in STAT_COLUMNS if c in result.columns]
    assert csv_lines(columns, stat_index, CSV_INF) == writer_text(rows, stat_index, CSV_INF)
    assert "".join(csv_lines(columns, stat_index, CSV_INF)) == writer_text(list(_rows(result, CSV_INF)), [], CSV_INF)
    for inf_text in (CSV_INF, ("inf", "-inf")):  # the xlsx exporter's rows
        assert list(_column_rows(result, inf_text)) == list(_rows(result, inf_text))
    csv_columns = getattr(result.mode, "csv_columns", None)
    if csv_columns is not None:  # the CSV exporter's columns (numeric ones as joined text)
        assert csv_lines(csv_columns(result.records, result.with_stack, CSV_INF)) == writer_text(rows, stat_index, CSV_INF)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=60))
def test_float_texts_equal_repr(values: list[float]) -> None:
    assert float_texts(values) == list(map(repr, values))


def test_float_texts_at_the_layout_edges() -> None:
    edges = [0.0, -0.0, 3.0, -7.0, 1e-4, 9.999999999999999e-05, 1e-05, 1.234e-05, 9.99e-06, 1e-06, 1e-07,
             -1e-07, 5e-324, 2.2250738585072014e-308, 1e16, 9999999999999998.0, 1e15, 1.2345678901234568e+17,
             1.7976931348623157e308, -1.5e300, 1e22, 0.1, 1 / 3, 123456789.12345679, 2.5e-05, 0.00012]
    special = [math.nan, math.inf, -math.inf]
    values = edges + [-v for v in edges] + special
    assert float_texts(values) == list(map(repr, values))
    assert float_texts([]) == []


def test_float_texts_fall_back_to_repr_on_an_unknown_layout(monkeypatch) -> None:
    import probe.csvtext as csvtext

    values = [1.5e-05, 2e-07, 0.5, 1e16, -3.0]
    monkeypatch.setattr(csvtext, "_orjson_layout_known", lambda: False)
    assert csvtext.float_texts(values) == list(map(repr, values))
    # texts laid out otherwise than expected are re-read and written with repr
    assert csvtext._positional_small(["1.5e-5", "0.0000123"]) == ["1.5e-05", "1.23e-05"]
    assert csvtext._exponent_small(["0.0000001", "1e-7"]) == ["1e-07", "1e-07"]


def test_stat_matrix_kinds() -> None:
    from probe.modes.stat_columns import FLOAT, INT, NONE, OTHER, stat_matrix

    matrix = stat_matrix([(10**400, 3, 2**60, 1.5), (None, True, "x", -2)])
    assert matrix.kinds.tolist() == [[OTHER, INT, OTHER, FLOAT], [NONE, OTHER, OTHER, INT]]
    assert matrix.values[0, 1] == 3.0 and matrix.values[1, 3] == -2.0


def test_csv_columns_with_metrics_set_by_hand() -> None:
    root = DATA / "stat_mix_tfm"
    target = next(root.glob("target/**/dump.json"))
    golden = root / "golden" / target.relative_to(root / "target")
    result = probe.compare(target, golden, analyze=False).results[0]
    for record in result.records[3:40:7]:
        record.metrics = ("=1", "a,b", 1.5, -2, None, "N/A", 1e-7, math.inf)
    rows = list(result.table())
    stat_index = [result.columns.index(c) for c in STAT_COLUMNS]
    text = csv_lines(result.mode.csv_columns(result.records, result.with_stack, CSV_INF))
    assert text == writer_text(rows, stat_index, CSV_INF)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(min_value=1e-5, max_value=1e-4, exclude_max=True),
                          st.floats(min_value=-1e-4, max_value=-1e-5, exclude_min=True),
                          st.floats(min_value=-1e-5, max_value=1e-5), st.sampled_from([1e-05, -2e-05, 9e-05])),
                min_size=1, max_size=40))
def test_float_texts_of_small_values_equal_repr(values: list[float]) -> None:
    import numpy as np

    assert float_texts(values) == list(map(repr, values))
    assert float_texts(np.array(values)) == list(map(repr, values))


def test_column_like_the_one_before_as_other_sequences() -> None:
    """Columns that are not lists (tuples, arrays) are written each on its own, as before."""
    import numpy as np

    text = csv_lines([["1.5", "x"], ("1.5", "x"), np.array([1.5, 2.0]), [1.5, 2.0]])
    assert text == "1.5,1.5,1.5,1.5\nx,x,2.0,2.0\n"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(*[stats] * 4), min_size=1, max_size=30), st.integers(1, 12), st.data())
def test_kept_stat_matrix_equals_a_new_one(rows: list[tuple], size: int, data) -> None:
    """A matrix taken from the kept ones (the same tuples, or a run of them) equals one made anew;
    equal tuples that are other objects, or a run out of place, get a new one."""
    import numpy as np

    from probe.modes import stat_columns

    def fresh(stats: list[tuple]) -> tuple[list, list]:
        matrix = stat_columns._stat_matrix(stats)
        return matrix.values.tolist(), matrix.kinds.tolist()

    def same(a: tuple[list, list], b: tuple[list, list]) -> bool:  # NaN cells equal
        return a[1] == b[1] and np.array_equal(np.array(a[0]), np.array(b[0]), equal_nan=True)

    stat_columns.stat_matrix(rows)
    for start in [*range(0, len(rows), size), data.draw(st.integers(0, len(rows) - 1))]:
        run = rows[start:start + size]
        got = stat_columns.stat_matrix(run)
        assert same((got.values.tolist(), got.kinds.tolist()), fresh(run))
        assert not got.values.flags.writeable
    copies = [tuple(list(r)) for r in rows]  # equal tuples, other objects (tuple(list) makes a new one)
    got = stat_columns.stat_matrix(copies)
    assert same((got.values.tolist(), got.kinds.tolist()), fresh(copies))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.tuples(*[numeric_stats] * 4), st.tuples(*[numeric_stats] * 4), st.integers(0, 2)),
                min_size=1, max_size=25),
       st.sampled_from([CSV_INF, ("inf", "-inf")]))
def test_numeric_fields_of_shared_statistics(rows, inf_text) -> None:
    """Rows whose sides hold one statistics tuple (shared scalar cells) give the text of equal tuples:
    some rows share their target's tuple, some a tuple of an earlier row, the others differ."""
    target, golden = [], []
    for t, g, how in rows:
        shared = t if how == 1 or not target else target[-1]
        target.append(shared if how else t)
        golden.append(shared if how else g)
    fields = joined_numeric_fields(target, golden, inf_text)
    assert fields == numeric_texts_by_cell(target, golden, inf_text)
    copies = [tuple(list(t)) if t is g else g for t, g in zip(target, golden)]  # equal values, other objects
    assert fields == joined_numeric_fields(target, copies, inf_text)
