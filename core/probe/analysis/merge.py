"""``merge_result``: gather chosen APIs and metrics of every rank into one xlsx.

Reads probe's own per-rank results (``compare_result_rank{N}_{ts}`` as csv, xlsx or json,
including ``-da``'s json) and msProbe's xlsx; other files in the folder are ignored. One
sheet per metric, columns ``NPU Name, rank0, rank1, ...``, rows sorted by name. A cell whose
value is ``N/A``, ``unsupported`` or ``Nan`` shows ``NPU:<NPU max>  Bench:<Bench max>``
instead (for a communication group row that reads e.g. ``NPU:[0, 1]  Bench:[0, 1]`` or
``NPU:tp-0-1-2-3  Bench:tp-0-1-2-3``).
"""

from __future__ import annotations


import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.cells import safe_row
from probe.errors import InputError
from probe.io import atomic_path, prepare_output_dir, timestamp, unique_path
from probe.jsonio import csv_rows, read_json, read_yaml

log = logging.getLogger("probe")

RESULT_NAME = re.compile(
    r"^compare_result_rank(\d+)(?:-rank\1)?_(\d{14})(?:_(\d+))?(?:_part_(\d+))?\.(csv|xlsx|json)$"
)
STAT_INDEXES = ("Max diff", "Min diff", "Mean diff", "L2norm diff",
                "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr")
TENSOR_INDEXES = ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr",
                  "One Thousandth Err Ratio", "Five Thousandths Err Ratio")
REQUIRES_GRAD = "Requires_grad Consistent"
REPLACED = ("N/A", "unsupported", "Nan")
FORMAT_PREFERENCE = {"csv": 0, "xlsx": 1, "json": 2}


@dataclass
class MergeConfig:
    """The merge config: APIs to pick and metrics to show (empty = every metric of the mode)."""

    apis: list[str]
    indexes: list[str]
    path: Path


def load_config(path: Path) -> MergeConfig:
    """Read and check the YAML config; one-line :class:`InputError` on any problem."""
    doc = read_yaml(path)
    if not isinstance(doc, dict):
        raise InputError("must be a mapping with 'api' (a list) and optional 'compare_index' (a list)", path)
    unknown = sorted(set(doc) - {"api", "compare_index"})
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(map(str, unknown))}; valid keys: api, compare_index", path)
    apis = doc.get("api")
    if not apis or not isinstance(apis, list) or not all(isinstance(a, str) and a.strip() for a in apis):
        raise InputError("'api' must be a non-empty list of API or module names (e.g. Distributed.all_reduce)", path)
    indexes = doc.get("compare_index") or []
    if not isinstance(indexes, list) or not all(isinstance(i, str) for i in indexes):
        raise InputError("'compare_index' must be a list of metric names", path)
    return MergeConfig([a.strip() for a in apis], list(dict.fromkeys(indexes)), path)


@dataclass
class RankTable:
    """The rows of one rank's result, as ``{column: value}`` dicts, and its detected mode."""

    rank: int
    path: Path
    mode: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    numeric: set[str] = field(default_factory=set)
    """Metric columns whose every cell (over the whole file) is a number."""


def find_results(directory: Path) -> dict[int, list[Path]]:
    """``{rank: files}`` of per-rank results in ``directory``: latest run per rank, parts kept together."""
    if not directory.is_dir():
        raise InputError("is not a directory", directory)
    runs: dict[int, dict[tuple, list[Path]]] = {}
    for path in sorted(directory.iterdir()):
        match = RESULT_NAME.match(path.name)
        if not match or not path.is_file():
            continue
        rank, stamp, dup, _, suffix = match.groups()
        key = (stamp, int(dup or 0), -FORMAT_PREFERENCE[suffix], suffix)
        runs.setdefault(int(rank), {}).setdefault(key, []).append(path)
    chosen = {}
    for rank, by_run in sorted(runs.items()):
        best = max(by_run)
        chosen[rank] = sorted(by_run[best], key=_part_number)
    return chosen


def _part_number(path: Path) -> int:
    match = RESULT_NAME.match(path.name)
    return int(match.group(4) or 0) if match else 0


def detect_mode(columns: list[str], path: Path) -> str:
    """``statistics``, ``tensor`` or ``md5`` from a result's header."""
    if "NPU MD5" in columns:
        return "md5"
    if "Cosine" in columns:
        return "tensor"
    if "NormRelativeErr" in columns and "Max diff" in columns:
        return "statistics"
    raise InputError("is not a compare result (no statistics or tensor metric columns in its header)", path)


def _read_csv(path: Path) -> tuple[list[str], Iterator[list[Any]]]:
    reader = csv_rows(path, field_limit=64 << 20)  # stack cells can be long
    header = next(reader, None)
    if not header:
        reader.close()
        raise InputError("is empty", path)
    return header, reader


def _read_xlsx(path: Path) -> tuple[list[str], Iterator[list[Any]]]:
    from openpyxl import load_workbook

    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001 - any openpyxl failure means a broken file
        raise InputError(f"cannot be read as xlsx ({type(exc).__name__})", path) from None
    sheets = book.worksheets
    first = next(sheets[0].iter_rows(values_only=True), None) if sheets else None
    if not first:
        book.close()
        raise InputError("is empty", path)
    header = [str(c) if c is not None else "" for c in first]

    def rows() -> Iterator[list[Any]]:
        for sheet in sheets:
            iterator = sheet.iter_rows(values_only=True)
            next(iterator, None)
            for row in iterator:
                yield list(row)
        book.close()

    return header, rows()


def _read_json(path: Path) -> tuple[list[str], Iterator[list[Any]]]:
    doc = read_json(path)
    if isinstance(doc, dict) and isinstance(doc.get("rows"), list) and isinstance(doc.get("columns"), list):
        columns = [str(c) for c in doc["columns"]]
        items = doc["rows"]
    elif isinstance(doc, dict) and all(isinstance(v, dict) and "op_items" in v for v in doc.values()):
        items = [item for v in doc.values() for item in v["op_items"]]
        columns = list(items[0]) if items else []
    else:
        raise InputError("is not a compare result JSON (no columns/rows, no op_items)", path)
    if not columns:
        raise InputError("holds no rows", path)
    return columns, ([item.get(c) for c in columns] for item in items)


READERS: dict[str, Callable[[Path], tuple[list[str], Iterator[list[Any]]]]] = {
    ".csv": _read_csv, ".xlsx": _read_xlsx, ".json": _read_json,
}


def read_rank(rank: int, files: list[Path], apis: list[str]) -> RankTable:
    """Read one rank's result file(s), keeping only rows of the configured APIs."""
    needles = [f"{api}." for api in apis]
    table: RankTable | None = None
    for path in files:
        header, rows = READERS[path.suffix](path)
        if table is None:
            table = RankTable(rank, path, detect_mode(header, path), header)
            table.numeric = set(valid_indexes(table))
        if "NPU Name" not in header:
            raise InputError("has no 'NPU Name' column", path)
        name_at = header.index("NPU Name")
        watch = [(c, header.index(c)) for c in table.numeric if c in header]
        for row in rows:
            for column, at in watch:
                if column in table.numeric and not _is_number(row[at] if at < len(row) else None):
                    table.numeric.discard(column)
            name = row[name_at] if name_at < len(row) else None
            if isinstance(name, str) and any(n in name for n in needles):
                table.rows.append(dict(zip(header, row)))
    assert table is not None
    return table


def valid_indexes(table: RankTable) -> list[str]:
    """Metrics that can be merged for this table's mode, in report order."""
    if table.mode == "md5":
        return []
    if table.mode == "statistics":
        base = list(STAT_INDEXES)
    else:
        start = table.columns.index("Cosine")
        end = table.columns.index("NPU max") if "NPU max" in table.columns else start + len(TENSOR_INDEXES)
        base = table.columns[start:end]
    return base + [REQUIRES_GRAD]


def _typed(value: Any) -> Any:
    """Text cells as a spreadsheet reader would give them back: numbers, booleans, text."""
    if not isinstance(value, str):
        return value
    if value in ("True", "False"):
        return value == "True"
    return value


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return value.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity", "-infinity")
    return False


def _number(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return float(value)
    return value


def _display(value: Any) -> str:
    if value is None:
        return "None"
    return str(value)


def merge_tables(tables: list[RankTable], indexes: list[str]) -> dict[str, list[list[Any]]]:
    """``{metric: sheet rows}`` with the header ``NPU Name, rank0...``; rows sorted by name."""
    ranks = [t.rank for t in tables]
    sheets: dict[str, list[list[Any]]] = {}
    per_rank: list[dict[str, dict[str, Any]]] = []
    numeric: list[set[str]] = []
    for table in tables:
        per_rank.append({str(r["NPU Name"]): r for r in table.rows})
        numeric.append(table.numeric)
    names = sorted(set().union(*(set(p) for p in per_rank)))
    for index in indexes:
        sheet: list[list[Any]] = [["NPU Name"] + [f"rank{r}" for r in ranks]]
        for name in names:
            line: list[Any] = [name]
            for rows, num in zip(per_rank, numeric):
                row = rows.get(name)
                if row is None:
                    line.append(None)
                    continue
                value = row.get(index)
                if isinstance(value, float) and value != value:
                    value = "Nan"
                if value in REPLACED:
                    value = f"NPU:{_display(row.get('NPU max'))}  Bench:{_display(row.get('Bench max'))}"
                elif index in num:
                    value = _number(value)
                else:
                    value = _typed(value)
                line.append(value)
            sheet.append(line)
        sheets[index] = sheet
    return sheets


def check_tables(tables: list[RankTable], config: MergeConfig) -> list[str]:
    """Refuse md5 and mixed inputs; return the metrics to merge (checked against the mode)."""
    modes = {t.mode for t in tables}
    if "md5" in modes:
        md5 = next(t for t in tables if t.mode == "md5")
        raise InputError("is an md5 result: md5 results hold no metrics to merge", md5.path)
    if len(modes) > 1:
        by_mode = {t.mode: t.path.name for t in tables}
        detail = ", ".join(f"{mode} ({name})" for mode, name in sorted(by_mode.items()))
        raise InputError(f"holds results of different modes: {detail}; merge statistics and tensor results separately",
                         tables[0].path.parent)
    valid = valid_indexes(tables[0])
    unknown = [i for i in config.indexes if i not in valid]
    if unknown:
        raise InputError(
            f"unknown compare_index {', '.join(map(repr, unknown))} for {tables[0].mode} results; "
            f"valid: {', '.join(valid)}",
            config.path,
        )
    return config.indexes or valid


def write_merge(sheets: dict[str, list[list[Any]]], output_dir: Path) -> Path:
    """Write ``multi_ranks_compare_merge_{ts}.xlsx`` (one sheet per metric, atomic)."""
    from openpyxl import Workbook

    prepare_output_dir(output_dir)
    path = unique_path(output_dir, f"multi_ranks_compare_merge_{timestamp()}", ".xlsx")
    book = Workbook(write_only=True)
    for index, rows in sheets.items():
        sheet = book.create_sheet(_sheet_title(index))
        for row in rows:
            sheet.append(safe_row(row))  # openpyxl stores text starting with '=' as a formula
    out = atomic_path(path)
    with out as tmp:
        book.save(tmp)
    return out.path


def _sheet_title(name: str) -> str:
    cleaned = re.sub(r"[\[\]:*?/\\]", "_", name)
    return cleaned[:31]


def merge_results(input_dir: Path, output_dir: Path, config: MergeConfig,
                  progress: Callable[[int, int], None] | None = None) -> tuple[Path, list[RankTable]]:
    """Read every rank's result in ``input_dir``, merge and write; returns the file and the tables."""
    found = find_results(input_dir)
    if len(found) < 2:
        what = "only one rank's result" if found else "no compare_result_rank<N>_<timestamp> result"
        raise InputError(f"holds {what} (.csv, .xlsx or .json); merging needs two ranks or more", input_dir)
    tables = []
    for done, (rank, files) in enumerate(found.items(), start=1):
        tables.append(read_rank(rank, files, config.apis))
        if progress:
            progress(done, len(found))
    indexes = check_tables(tables, config)
    for api in config.apis:
        needle = f"{api}."
        for table in tables:
            if not any(needle in str(r.get("NPU Name")) for r in table.rows):
                log.warning("%s not found in rank%d's result (%s)", api, table.rank, table.path.name)
    if not any(t.rows for t in tables):
        raise InputError(f"none of the APIs {', '.join(config.apis)} occur in any rank's result", input_dir)
    sheets = merge_tables(tables, indexes)
    return write_merge(sheets, output_dir), tables
