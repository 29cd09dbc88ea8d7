"""The TorchAir CSV report: ``msprobe_cmp_report[_rank{r}]_{UTC timestamp}.csv``."""

from __future__ import annotations

import csv
import math
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

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


def cell(value: object) -> str:
    """Text of one cell: ``N/A`` for missing, ``NaN``/``inf``/``-inf`` for special floats."""
    if value is None:
        return NA
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)


def report_stem(rank: int | None) -> str:
    return "msprobe_cmp_report" if rank is None else f"msprobe_cmp_report_rank{rank}"


def write_csv(output_dir: Path, stem: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> Path:
    """Write the report atomically under a name that never replaces an existing file.

    The name carries the UTC time to the second; a second report in the same second gets
    ``_1``, ``_2``... appended. Publishing uses a hard link, which fails if the name exists.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=".tmp", dir=output_dir)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows([cell(v) for v in row] for row in rows)
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        for n in range(10_000):
            suffix = "" if n == 0 else f"_{n}"
            final = output_dir / f"{stem}_{stamp}{suffix}.csv"
            try:
                os.link(tmp, final)
            except FileExistsError:
                continue
            except OSError:  # no hard links on this file system: best effort exclusive create
                if final.exists():
                    continue
                os.replace(tmp, final)
                return final
            return final
        raise OSError(f"no free report name for {stem}_{stamp} in {output_dir}")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
