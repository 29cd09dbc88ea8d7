"""Columns and cells of the TorchAir report ``msprobe_cmp_report[_rank{r}]_{timestamp}.csv``.

Two layouts: ``documented`` (default), the report the TorchAir compare documentation
describes (API Name, Stack Info, Data Name, the metric columns of the API compare, Result
PASS/FAIL, Accuracy Reached or Not, Err_message; ``-hl`` colours rows red / yellow / green),
and ``26.2``, the column set msProbe 26.2 actually writes (``--torchair-layout 26.2``), for
scripts that read it. A computed row holds the 26.2 cells followed by
:data:`DOCUMENTED_EXTRAS`; :func:`layout_cells` renders it in either layout.
"""

from __future__ import annotations

import math
from pathlib import Path

from probe_torchair.metrics import MODE_COLUMNS, NA

BASE_COLUMNS = (
    "token_id", "data_id", "golden_data_path", "golden_op_type", "golden_dtype", "golden_shape",
    "golden_max_value", "golden_min_value", "golden_mean_value", "my_data_path", "my_op_type",
    "my_dtype", "my_shape", "my_max_value", "my_min_value", "my_mean_value",
)
TAIL_COLUMNS = ("cmp_fail_reason", "Result", "Accuracy Reached or Not")
DOCUMENTED_EXTRAS = ("EucDist", "One Thousandth Err Ratio", "Five Thousandths Err Ratio")
"""Values computed for the documented layout only, kept after the 26.2 cells of a row."""

DOCUMENTED, LEGACY = "documented", "26.2"
LAYOUTS = (DOCUMENTED, LEGACY)
_HEAD = ("API Name", "Stack Info", "Data Name")
_TAIL = ("Result", "Accuracy Reached or Not", "Err_message")
# documented column -> the cell it shows (a 26.2 column or a documented extra)
_DOCUMENTED_SOURCES = {
    "tensor": {
        "Cosine": "cosine_similarity", "EucDist": "EucDist", "MaxAbsErr": "max_absolute_error",
        "MaxRelativeErr": "max_relative_error", "One Thousandth Err Ratio": "One Thousandth Err Ratio",
        "Five Thousandths Err Ratio": "Five Thousandths Err Ratio", "Requires_grad Consistent": None,
    },
    "statistics": {
        "Max diff": "max_diff", "Min diff": "min_diff", "Mean diff": "mean_diff",
        "MaxRelativeErr": "max_relative_diff", "MinRelativeErr": "min_relative_diff",
        "MeanRelativeErr": "mean_relative_diff",
    },
    "md5": {"NPU MD5": "my_md5", "Bench MD5": "golden_md5"},
}
HIGHLIGHT = "Highlight"
COLOURS = {"FAIL": "red", "PASS": "green"}
"""``-hl`` marks: FAIL red, PASS green, anything not judged (N/A) yellow."""


def columns(mode: str) -> list[str]:
    """msProbe 26.2's report columns of a metric mode (``tensor``, ``statistics`` or ``md5``)."""
    return [*BASE_COLUMNS, *MODE_COLUMNS[mode], *TAIL_COLUMNS]


def layout_columns(mode: str, layout: str = DOCUMENTED, highlight: bool = False) -> list[str]:
    """The columns of a report in ``layout`` (plus ``Highlight`` with ``-hl``)."""
    names = columns(mode) if layout == LEGACY else [*_HEAD, *_DOCUMENTED_SOURCES[mode], *_TAIL]
    return [*names, HIGHLIGHT] if highlight else names


def api_name(data_path: str) -> str:
    """``.../Add.Add_2.1.2.1706596912161941,outputs,0`` -> ``Add_2.output.0`` (GE op name, direction, index)."""
    path, _, where = str(data_path).partition(",")
    parts = Path(path).name.split(".")
    op = parts[1] if len(parts) > 1 else parts[0]
    kind, _, index = where.partition(",")
    if kind in ("inputs", "outputs") and index:
        return f"{op}.{kind[:-1]}.{index}"
    return op


def layout_cells(cells: list[object], mode: str, layout: str = DOCUMENTED, highlight: bool = False) -> list[object]:
    """One computed row (26.2 cells + documented extras) as the cells of ``layout``."""
    named = dict(zip([*columns(mode), *DOCUMENTED_EXTRAS], cells))
    if layout == LEGACY:
        out = [cell(named[c]) for c in columns(mode)]
    else:
        reason = named["cmp_fail_reason"]
        out = [
            api_name(named["my_data_path"]), NA, str([named["my_data_path"], named["golden_data_path"]]),
            *(True if source is None else cell(named.get(source)) for source in _DOCUMENTED_SOURCES[mode].values()),
            named["Result"], named["Accuracy Reached or Not"], "" if reason == NA else reason,
        ]
    if highlight:
        out.append(COLOURS.get(str(named["Result"]), "yellow"))
    return out


def verdict_of(cells: list[object], mode: str) -> object:
    """The ``Result`` cell (PASS / FAIL / N/A) of a computed row."""
    return cells[len(columns(mode)) - 2]


def cell(value: object) -> object:
    """One cell: ``N/A`` for missing, ``NaN``/``inf``/``-inf`` text for special floats."""
    if value is None:
        return NA
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return value


def report_stem(rank: int | None) -> str:
    """``msprobe_cmp_report`` or ``msprobe_cmp_report_rank{r}`` (the exporter adds the time)."""
    return "msprobe_cmp_report" if rank is None else f"msprobe_cmp_report_rank{rank}"
