"""A small streaming xlsx writer: rows of str / int / float / bool / None, optional row fills.

The OOXML package is written part by part; each sheet's rows are rendered as XML text
(inline strings, cell references, numbers as ``repr``) in batches and streamed into the
archive, which deflates them on a second thread (``probe.zipstream``), so memory does not
grow with the sheet and rendering and compression overlap.

    with XlsxWriter(path) as book:
        book.add_sheet("Sheet1", columns, rows, fill_column=None)
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, compress, islice, repeat
from operator import is_, itemgetter
from pathlib import Path
from types import TracebackType
from typing import Any

from probe.csvtext import NUMBER_WORDS, NumberTexts, PercentTexts, finite_floats, float_texts
from probe.sheet_format import SAMPLE_ROWS, SheetFormat, sheet_format
from probe.zipstream import MemberWriter, ZipStream

MAX_CELL_TEXT = 32767  # Excel's limit on the characters of one cell
FILLS = {"red": "FFFF0000", "yellow": "FFFFFF00", "green": "FF92D050"}  # fill name -> ARGB, style ids 1, 2...
COMPRESS_LEVEL = 1

_MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_HEAD = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
# characters XML 1.0 forbids (tab, LF and CR are allowed), lone surrogates, U+FFFE/U+FFFF
_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# distinct text cells remembered (and their characters) before the cache starts again
_CACHE_LIMIT = 100_000
_CACHE_CHARS = 8_000_000
_BATCH = 2048  # rows rendered before a write
_INLINE, _INLINE_END = ' t="inlineStr"><is><t>', "</t></is></c>"
"""A text cell that needs no escaping is ``_INLINE + text + _INLINE_END``."""
_FIRST, _LAST = itemgetter(slice(None, 1)), itemgetter(slice(-1, None))


def column_letter(index: int) -> str:
    """Spreadsheet column name of a 0-based column index (0 -> A, 26 -> AA)."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def escape_text(value: str) -> str:
    """``value`` as XML character data: escaped, forbidden characters dropped, CR kept."""
    if "&" in value:
        value = value.replace("&", "&amp;")
    if "<" in value:
        value = value.replace("<", "&lt;")
    if ">" in value:
        value = value.replace(">", "&gt;")
    if not value.isprintable():  # rare: control or unusual characters
        value = _FORBIDDEN.sub("", value).replace("\r", "&#13;")
    return value


def _text_cell(value: str) -> str:
    """The part of a ``<c>`` element after ``r="A1"`` for a text value."""
    if not value:
        return "/>"
    value = value[:MAX_CELL_TEXT]
    text = escape_text(value)
    if value[:1].isspace() or value[-1:].isspace():
        return f' t="inlineStr"><is><t xml:space="preserve">{text}</t></is></c>'
    return f' t="inlineStr"><is><t>{text}</t></is></c>'


def _other_cell(value: Any) -> str:
    """The part of a ``<c>`` element after ``r="A1"`` for a value that is not text."""
    cls = value.__class__
    if cls is float:
        if value - value == 0.0:  # finite
            return f"><v>{value!r}</v></c>"
        return _text_cell("nan" if value != value else ("inf" if value > 0 else "-inf"))
    if cls is bool:
        return ' t="b"><v>1</v></c>' if value else ' t="b"><v>0</v></c>'
    if cls is int:
        return f"><v>{value}</v></c>"
    if value is None:
        return "/>"
    if isinstance(value, str):
        return _text_cell(str(value))
    kind = getattr(getattr(value, "dtype", None), "kind", "")  # numpy scalars
    if kind == "b":
        return _other_cell(bool(value))
    if kind in ("i", "u") or isinstance(value, numbers.Integral):
        return _other_cell(int(value))
    if kind == "f" or isinstance(value, numbers.Real):
        return _other_cell(float(value))
    return _text_cell(str(value))


def _cell_tail(value: Any) -> str:
    """The part of a ``<c>`` element after ``r="A1"`` for any value."""
    if value.__class__ is not str or not value:
        return _other_cell(value)
    if (len(value) > MAX_CELL_TEXT or "&" in value or "<" in value or ">" in value
            or not value.isprintable() or value[0] == " " or value[-1] == " "):
        return _text_cell(value)
    return _INLINE + value + _INLINE_END  # the common case


def column_tails(column: Sequence[Any]) -> list[str]:
    """:func:`_cell_tail` of every value of a column, a kind of value at a time (finite floats
    formatted in bulk by :func:`probe.csvtext.float_texts`, texts by :func:`_text_tails`)."""
    float_cells = getattr(column, "float_cells", None)  # a column that knows its finite floats
    if float_cells is not None and len(column):
        import numpy as np  # noqa: PLC0415 - numpy only when reports render

        finite, values = float_cells()
        out = np.empty(len(column), dtype=object)
        out[finite] = _float_tails(values[finite])
        rest = np.flatnonzero(~finite).tolist()
        if rest:
            out[rest] = column_tails([column[i] for i in rest])
        return out.tolist()
    kinds = list(map(type, column))
    types = set(kinds)
    if len(types) <= 1:
        return _kind_tails(column, kinds[0]) if kinds else []
    import numpy as np  # noqa: PLC0415 - numpy only when reports render

    out = np.empty(len(column), dtype=object)
    for kind in types:
        flags = list(map(is_, kinds, repeat(kind)))
        out[np.array(flags, dtype=bool)] = np.array(_kind_tails(list(compress(column, flags)), kind), dtype=object)
    return out.tolist()


def _number_tails(column: NumberTexts) -> list[str]:
    """:func:`column_tails` of a :class:`probe.csvtext.NumberTexts` column stored as numbers
    (what ``SheetFormat.column`` then :func:`column_tails` give): a ``repr`` is already the
    text of its number, ``"0"`` is the number 0.0, the other words stay text."""
    words = {word: _cell_tail(word) for word in NUMBER_WORDS}
    words["0"] = "><v>0.0</v></c>"
    if words.keys().isdisjoint(column):
        return ("><v>" + "</v></c>\x00><v>".join(column) + "</v></c>").split("\x00")
    get = words.get
    return [get(text) or f"><v>{text}</v></c>" for text in column]


def _percent_tails(column: PercentTexts) -> list[str]:
    """:func:`column_tails` of a :class:`probe.csvtext.PercentTexts` column in a numeric
    column (what ``SheetFormat.column`` then :func:`column_tails` give): ``x%`` stays text,
    ``"0"`` is the number 0.0, the other words stay text."""
    tails = (_INLINE + f"{_INLINE_END}\x00{_INLINE}".join(column) + _INLINE_END).split("\x00")
    words = {word: _cell_tail(word) for word in NUMBER_WORDS}
    words["0"] = "><v>0.0</v></c>"
    if not words.keys().isdisjoint(column):
        for i in compress(range(len(column)), map(words.__contains__, column)):
            tails[i] = words[column[i]]
    return tails


def _kind_tails(values: list[Any], kind: type) -> list[str]:
    """:func:`_cell_tail` of values all of type ``kind``."""
    if kind is str:
        return _text_tails(values)
    if kind is float and finite_floats(values):
        return _float_tails(values)
    return list(map(_cell_tail, values))


def _float_tails(values: Any) -> list[str]:
    """:func:`_cell_tail` of finite floats (a list or a float64 array), formatted in bulk."""
    return ("><v>" + "</v></c>\x00><v>".join(float_texts(values)) + "</v></c>").split("\x00")


def _text_tails(texts: list[str]) -> list[str]:
    """:func:`_cell_tail` of every text: each distinct text once, and at once for texts that
    need no escaping (no markup characters, printable, no outer spaces, not empty or too long)."""
    distinct = set(texts)
    cells = list(distinct) if len(distinct) < len(texts) else texts
    whole = "".join(cells)
    if ("&" in whole or "<" in whole or ">" in whole or "" in distinct or not whole.isprintable()
            or " " in "".join(map(_FIRST, cells)) or " " in "".join(map(_LAST, cells))
            or max(map(len, cells)) > MAX_CELL_TEXT):
        tails = list(map(_cell_tail, cells))
    else:  # printable: no NUL in any text, so NUL separates them
        tails = (_INLINE + f"{_INLINE_END}\x00{_INLINE}".join(cells) + _INLINE_END).split("\x00")
    if cells is texts:
        return tails
    return list(map(dict(zip(cells, tails)).__getitem__, texts))


_SPECIAL_TAILS = {NumberTexts: _number_tails, PercentTexts: _percent_tails}
"""Column kinds whose tails in a numeric column are made without looking at each cell's type."""


class XlsxWriter:
    """Write an xlsx workbook sheet by sheet; use as a context manager (closes the package)."""

    def __init__(self, path: Path, compresslevel: int = COMPRESS_LEVEL) -> None:
        self.path = Path(path)
        self._zip = ZipStream(self.path, compresslevel)
        self._sheets: list[str] = []
        self._filters: list[str | None] = []
        """Per sheet, the autofilter range (``A1:K20``), or ``None``."""
        self._text: dict[str, str] = {}

    def __enter__(self) -> XlsxWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self._zip.abort()

    def add_sheet(
        self,
        name: str,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        rows_count: int | None = None,
        fill_column: int | None = None,
    ) -> int:
        """Append a sheet: a header row of ``columns`` then ``rows``; returns the data rows written.

        ``fill_column``: index of a column whose value (``"red"`` / ``"yellow"``) fills that
        row's cells. ``rows_count``, when known, is recorded as the sheet's dimension. The
        layout (frozen header, autofilter, widths, numeric text stored as numbers) is decided
        by :func:`probe.sheet_format.sheet_format` from the header and the first rows.
        """
        rows = iter(rows)
        sample = list(islice(rows, SAMPLE_ROWS))
        return self._add(name, columns, sample, rows_count, lambda out, layout: self._write_rows(
            out, columns, chain(sample, rows), fill_column, layout))

    def add_sheet_columns(
        self,
        name: str,
        columns: Sequence[str],
        blocks: Iterable[Sequence[Sequence[Any]]],
        rows_count: int | None = None,
        fill_column: int | None = None,
    ) -> int:
        """:meth:`add_sheet` of rows given as blocks of columns (each block: one list of values
        per column, all of one length), rendered a column at a time; the same bytes."""
        blocks = iter(blocks)
        head: list[Sequence[Sequence[Any]]] = []  # the blocks that hold the first SAMPLE_ROWS rows
        seen = 0
        while seen < SAMPLE_ROWS and (block := next(blocks, None)) is not None:
            head.append(block)
            seen += len(block[0]) if block else 0
        sample = [list(row) for row in islice(chain.from_iterable(zip(*b) for b in head), SAMPLE_ROWS)]
        return self._add(name, columns, sample, rows_count, lambda out, layout: self._write_blocks(
            out, columns, chain(head, blocks), fill_column, layout))

    def _add(self, name: str, columns: Sequence[str], sample: list[Sequence[Any]], rows_count: int | None,
             body: Callable[[MemberWriter, SheetFormat], int]) -> int:
        """Write one worksheet part around ``body(out, layout)``, which writes the rows."""
        self._sheets.append(name)
        width = len(columns)
        layout = sheet_format(columns, sample)
        dimension = ""
        if rows_count is not None and width:
            dimension = f'<dimension ref="A1:{column_letter(width - 1)}{rows_count + 1}"/>'
        with self._zip.member(f"xl/worksheets/sheet{len(self._sheets)}.xml") as out:
            out.write(f'{_HEAD}<worksheet xmlns="{_MAIN_NS}">{dimension}{_view(layout, width)}<sheetData>'.encode())
            written = body(out, layout)
            out.write(b"</sheetData>")
            area = f"A1:{column_letter(width - 1)}{written + 1}" if width and layout.autofilter else None
            if area:
                out.write(f'<autoFilter ref="{area}"/>'.encode())
            out.write(b"</worksheet>")
        self._filters.append(area)
        return written

    def _write_blocks(self, out: MemberWriter, columns: Sequence[str], blocks: Iterable[Sequence[Sequence[Any]]],
                      fill_column: int | None, layout: SheetFormat) -> int:
        """Render the header and the rows of ``blocks`` (see :meth:`add_sheet_columns`) into
        ``out``, a column at a time; the data rows written."""
        self._write_rows(out, columns, (), None, layout)
        width = len(columns)
        # one row: '<row r="%s"><c r="A%s"%s<c r="B%s"%s...</row>' % (number, number, tail, number, tail, ...),
        # the arguments zipped from the row numbers and the cells' tails
        row = '<row r="%s">' + "".join(f'<c r="{column_letter(i)}%s"%s' for i in range(width)) + "</row>"
        styles = {name: f'<c s="{i}" r="' for i, name in enumerate(FILLS, start=1)}
        number = 1
        for block in blocks:
            count = len(block[0]) if block else 0
            if len(block) != width or any(len(column) != count for column in block):
                raise ValueError(f"rows from {number + 1} do not have the header's {width} cells")
            tails = [_SPECIAL_TAILS[column.__class__](column) if column.__class__ in _SPECIAL_TAILS and layout.numeric[i]
                     else column_tails(layout.column(i, column)) for i, column in enumerate(block)]
            numbers = list(map(str, range(number + 1, number + 1 + count)))
            rows = list(map(row.__mod__, zip(numbers, *chain.from_iterable(zip(repeat(numbers), tails)))))
            if fill_column is not None:
                for k, value in enumerate(block[fill_column]):
                    style = styles.get(value)
                    if style is not None:
                        rows[k] = rows[k].replace('<c r="', style)
            for start in range(0, count, _BATCH):  # chunks of the size the row writer hands over
                out.write("".join(rows[start : start + _BATCH]).encode())
            number += count
        return number - 1

    def _write_rows(self, out: MemberWriter, columns: Sequence[str], rows: Iterable[Sequence[Any]],
                    fill_column: int | None, layout: SheetFormat | None = None) -> int:
        """Render the header and ``rows`` as ``<row>`` elements into ``out``; the data rows written."""
        width = len(columns)
        # a row is "".join(parts), parts = ['<c r="A', '2"', tail, '<c r="B', '2"', tail, ...]
        parts: list[str] = [""] * (3 * width)
        parts[0::3] = [f'<c r="{column_letter(i)}' for i in range(width)]
        styles = {name: f'<c s="{i}" r="' for i, name in enumerate(FILLS, start=1)}
        cache = self._text  # text -> cell tail; dtype, shape, verdict and stack texts repeat
        get = cache.get
        cached_chars = sum(map(len, cache))

        def tail(value: Any) -> str:
            cls = value.__class__
            if cls is float and value - value == 0.0:
                return f"><v>{value!r}</v></c>"
            if cls is not str or not value:
                return _other_cell(value)
            text = _cell_tail(value)
            nonlocal cached_chars
            cached_chars += len(value)
            if len(cache) >= _CACHE_LIMIT or cached_chars > _CACHE_CHARS:
                cache.clear()
                cached_chars = len(value)
            cache[value] = text
            return text

        number = 0
        batch: list[str] = []
        numeric = [i for i, flag in enumerate(layout.numeric) if flag] if layout is not None else []
        cell = layout.cell if layout is not None else None
        for row in chain((columns,), rows):
            number += 1
            if numeric and number > 1:
                row = list(row)
                for i in numeric:
                    if i < len(row) and row[i].__class__ is str:
                        row[i] = cell(i, row[i])
            ref = str(number)
            parts[1::3] = [ref + '"'] * width
            tails = [get(v) or tail(v) for v in row]
            if len(tails) != width:
                raise ValueError(f"row {number} has {len(tails)} cells, the header has {width}")
            parts[2::3] = tails
            text = "".join(parts)
            if fill_column is not None and number > 1:
                style = styles.get(row[fill_column])
                if style is not None:
                    text = text.replace('<c r="', style)
            batch.append(f'<row r="{ref}">{text}</row>')
            if len(batch) >= _BATCH:
                out.write("".join(batch).encode())
                batch.clear()
        out.write("".join(batch).encode())
        return number - 1

    def close(self) -> None:
        """Write the package parts that describe the sheets and close the file."""
        sheets = self._sheets or ["Sheet1"]
        if not self._sheets:
            self.add_sheet("Sheet1", [], [])
        parts = {
            "[Content_Types].xml": _content_types(len(sheets)),
            "_rels/.rels": _root_rels(),
            "docProps/app.xml": _app(),
            "xl/workbook.xml": _workbook(sheets, self._filters),
            "xl/_rels/workbook.xml.rels": _workbook_rels(len(sheets)),
            "xl/styles.xml": _styles(),
        }
        for name, text in parts.items():
            self._zip.add(name, text.encode())
        self._zip.close()


def _attr(value: str) -> str:
    return escape_text(value).replace('"', "&quot;")


def _content_types(count: int) -> str:
    sheets = "".join(
        f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        for i in range(1, count + 1)
    )
    return (
        f'{_HEAD}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/styles.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
        '<Override PartName="/docProps/app.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.extended-properties+xml"/>'
        f"{sheets}</Types>"
    )


def _root_rels() -> str:
    return (
        f'{_HEAD}<Relationships xmlns="{_PKG_REL_NS}">'
        '<Relationship Id="rId1" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
        'Target="xl/workbook.xml"/>'
        '<Relationship Id="rId2" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/extended-properties" '
        'Target="docProps/app.xml"/>'
        "</Relationships>"
    )


def _app() -> str:
    return (
        f'{_HEAD}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
        "<Application>probe</Application></Properties>"
    )


def _view(layout: SheetFormat, width: int) -> str:
    """``<sheetViews>`` (frozen header row) and ``<cols>`` (fitted widths) of a worksheet."""
    view = ""
    if layout.freeze_header:
        view = ('<sheetViews><sheetView workbookViewId="0"><pane ySplit="1" topLeftCell="A2" '
                'activePane="bottomLeft" state="frozen"/><selection pane="bottomLeft" activeCell="A2" sqref="A2"/>'
                "</sheetView></sheetViews>")
    if not width:
        return view
    cols = "".join(f'<col min="{i}" max="{i}" width="{w:.1f}" customWidth="1"/>'
                   for i, w in enumerate(layout.widths, start=1))
    return f"{view}<cols>{cols}</cols>"


def _workbook(sheets: list[str], filters: Sequence[str | None] = ()) -> str:
    entries = "".join(
        f'<sheet name="{_attr(name)}" sheetId="{i}" r:id="rId{i}"/>' for i, name in enumerate(sheets, start=1)
    )
    names = "".join(
        f'<definedName name="_xlnm._FilterDatabase" localSheetId="{i}" hidden="1">'
        f"{_attr(_sheet_ref(sheets[i], area))}</definedName>"
        for i, area in enumerate(filters) if area
    )
    return (
        f'{_HEAD}<workbook xmlns="{_MAIN_NS}" xmlns:r="{_REL_NS}">'
        '<bookViews><workbookView activeTab="0"/></bookViews>'
        f"<sheets>{entries}</sheets>" + (f"<definedNames>{names}</definedNames>" if names else "") + "</workbook>"
    )


def _sheet_ref(sheet: str, area: str) -> str:
    """``'Sheet 1'!$A$1:$K$20`` for a defined name."""
    start, end = area.split(":")
    absolute = ":".join("$" + "".join(c for c in p if c.isalpha()) + "$" + "".join(c for c in p if c.isdigit())
                        for p in (start, end))
    return "'" + sheet.replace("'", "''") + "'!" + absolute


def _workbook_rels(count: int) -> str:
    sheets = "".join(
        f'<Relationship Id="rId{i}" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" '
        f'Target="worksheets/sheet{i}.xml"/>'
        for i in range(1, count + 1)
    )
    styles = (
        f'<Relationship Id="rId{count + 1}" '
        'Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" '
        'Target="styles.xml"/>'
    )
    return f'{_HEAD}<Relationships xmlns="{_PKG_REL_NS}">{sheets}{styles}</Relationships>'


def _styles() -> str:
    # fills 0 and 1 are reserved by Excel (none, gray125); ours follow, one cell style each
    fills = "".join(
        f'<fill><patternFill patternType="solid"><fgColor rgb="{rgb}"/><bgColor rgb="{rgb}"/></patternFill></fill>'
        for rgb in FILLS.values()
    )
    xfs = "".join(
        f'<xf numFmtId="0" fontId="0" fillId="{i}" borderId="0" xfId="0" applyFill="1"/>'
        for i in range(2, 2 + len(FILLS))
    )
    return (
        f'{_HEAD}<styleSheet xmlns="{_MAIN_NS}">'
        '<fonts count="1"><font><sz val="11"/><name val="Calibri"/><family val="2"/></font></fonts>'
        f'<fills count="{2 + len(FILLS)}"><fill><patternFill patternType="none"/></fill>'
        f'<fill><patternFill patternType="gray125"/></fill>{fills}</fills>'
        '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
        '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
        f'<cellXfs count="{1 + len(FILLS)}"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>{xfs}'
        "</cellXfs>"
        '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
        "</styleSheet>"
    )
