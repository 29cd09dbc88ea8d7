"""Columns and cells of the TorchAir report ``msprobe_cmp_report[_rank{r}]_{timestamp}.csv``."""

from __future__ import annotations

import math

from probe_torchair.metrics import MODE_COLUMNS, NA

BASE_COLUMNS = (
    "token_id", "data_id", "golden_data_path", "golden_op_type", "golden_dtype", "golden_shape",
    "golden_max_value", "golden_min_value", "golden_mean_value", "my_data_path", "my_op_type",
    "my_dtype", "my_shape", "my_max_value", "my_min_value", "my_mean_value",
)
TAIL_COLUMNS = ("cmp_fail_reason", "Result", "Accuracy Reached or Not")


def columns(mode: str) -> list[str]:
    """Report columns of a metric mode (``tensor``, ``statistics`` or ``md5``)."""
    return [*BASE_COLUMNS, *MODE_COLUMNS[mode], *TAIL_COLUMNS]


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
