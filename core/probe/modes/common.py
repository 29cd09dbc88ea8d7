"""Pieces shared by the metric modes: common columns, value display, rule helpers."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from itertools import compress, repeat
from operator import eq, not_
from types import SimpleNamespace
from typing import Any

from probe.formats.msprobe.dtypes import canonical_dtype
from probe.formats.msprobe.names import NON_TENSOR_DTYPES
from probe.model import NA, Row
from probe.result import RowResult, extra_values, text_keys

COMMON_COLUMNS = [
    "NPU Name",
    "Bench Name",
    "NPU Dtype",
    "Bench Dtype",
    "NPU Tensor Shape",
    "Bench Tensor Shape",
    "NPU Requires_grad",
    "Bench Requires_grad",
]
STAT_COLUMNS = [
    "NPU max",
    "NPU min",
    "NPU mean",
    "NPU l2norm",
    "Bench max",
    "Bench min",
    "Bench mean",
    "Bench l2norm",
]
TAIL_COLUMNS = ["Requires_grad Consistent", "Result", "Err_message"]
STACK_COLUMN = "NPU_Stack_Info"

# APIs whose rows are never judged, and APIs judged on outputs only (no cross-row rules).
SKIP_ALL_APIS = frozenset(
    {"empty", "empty_like", "numpy", "to", "__setitem__", "empty_with_format",
     "new_empty_strided", "new_empty", "empty_strided"}
)
OUTPUT_ONLY_APIS = frozenset({"_reduce_scatter_base", "_all_gather_base", "all_to_all_single", "batch_isend_irecv"})

MSG_NAN_INF = "error: There is nan/inf/-inf in the maximum or minimum value of NPU."
MSG_REQUIRES_GRAD = "error: The Required_Grad of NPU and Bench are inconsistent"
MSG_SCALAR = "error: The scalar parameters of NPU and Bench are inconsistent."
MSG_DTYPE = "error: The dtype of NPU and Bench are inconsistent."
MSG_SHAPE = "error: The shape of NPU and Bench are inconsistent."
MSG_UNMATCHED = "No bench data matched."
_NA4 = (NA,) * 4
_NO_ROW = SimpleNamespace(name=NA, dtype=NA, shape=NA, requires_grad=NA)
"""The cells :func:`side_columns` shows for a missing golden row."""
_INF = math.inf


def display_stat(value: Any) -> Any:
    """A Max/Min/Mean/Norm value as the reports show it (``None``, ``Nan``, numbers, text)."""
    if value is None:
        return "None"
    if value != value and isinstance(value, float):  # NaN is the only value unequal to itself
        return "Nan"
    return value


def _display_stats(stats: tuple[Any, ...]) -> list[Any]:
    """:func:`display_stat` of four values; plain numbers (the usual case) pass untouched."""
    for value in stats:
        if value is None or value != value:
            return [display_stat(v) for v in stats]
    return list(stats)


def common_cells(row: RowResult) -> list[Any]:
    """The first eight cells of every report row."""
    t, g = row.pair.target, row.pair.golden
    if g is None:
        return [t.name, NA, t.dtype, NA, t.shape, NA, t.requires_grad, NA]
    return [t.name, g.name, t.dtype, g.dtype, t.shape, g.shape, t.requires_grad, g.requires_grad]


def stat_cells(row: RowResult) -> list[Any]:
    """NPU max ... Bench l2norm."""
    t, g = row.pair.target, row.pair.golden
    cells = _display_stats(t.stats)
    cells.extend(_NA4 if g is None else _display_stats(g.stats))
    return cells


def requires_grad_consistent(row: RowResult) -> bool:
    """String equality of the two Requires_grad cells (an unmatched golden cell reads ``N/A``).

    Between matched rows, a side that records no requires_grad (MindSpore tensors, ``N/A``)
    is consistent with anything: a missing value is not a mismatch.
    """
    g = row.pair.golden
    if g is None:
        return row.pair.target.requires_grad == NA
    t_rg, g_rg = row.pair.target.requires_grad, g.requires_grad
    return t_rg == g_rg or NA in (t_rg, g_rg)


def err_message(row: RowResult) -> str:
    """Err_message cell: JSON list of rule messages followed by notes."""
    if not row.has_text:
        return "[]"
    return json.dumps(row.messages + row.notes, ensure_ascii=False)


def err_message_column(records: Sequence[RowResult]) -> list[str]:
    """:func:`err_message` of every record (each distinct list of texts encoded once)."""
    keys = text_keys(records)
    texts = {key: json.dumps(list(key), ensure_ascii=False) for key in set(keys) if key}
    return list(map(texts.get, keys, repeat("[]")))


def api_name(entry: str) -> str:
    """Second dot-component of an entry name (the API for ``Functional.relu.0.forward``)."""
    parts = entry.split(".")
    return parts[1] if len(parts) > 1 else entry


def is_nan_or_inf(value: Any) -> bool:
    """Whether a statistic is NaN or +/-inf (as float or as text)."""
    if value.__class__ is float:  # the usual case, answered without a call
        return value != value or value == _INF or value == -_INF
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return math.isnan(value) or math.isinf(value)
    if isinstance(value, str):
        return value.strip().lower() in ("nan", "inf", "+inf", "-inf")
    return False


_NON_TENSOR_DTYPES = NON_TENSOR_DTYPES - {"N/A"}
_STAT_NAMES = ("max", "min", "mean", "norm")
_SPECIAL_TEXTS = frozenset({"nan", "inf", "+inf", "-inf"})


def stat_problem(row: Row) -> str | None:
    """Why a tensor row's recorded Max/Min/Mean/Norm cannot be compared (text, a list, a boolean
    outside a bool tensor), or ``None`` when every value is a number, nan/inf or absent."""
    dtype = row.dtype
    if dtype.startswith("<class") or dtype in _NON_TENSOR_DTYPES or row.shape == NA:
        return None
    for label, value in zip(_STAT_NAMES, row.stats):
        kind = value.__class__
        if value is None or kind is float or kind is int:
            continue
        if kind is bool and "bool" in dtype.lower():
            continue
        if kind is str and value.strip().lower() in _SPECIAL_TEXTS:
            continue
        return f"{label} {value!r} is not a number"
    return None


PLAIN_STATS = frozenset({float, int, type(None)})
"""Statistic types that are always comparable (the common case, checked without a call)."""


NOT_COMPARED = "not compared: "
"""Prefix of the Err_message note of a row whose data could not be compared."""


def not_compared_reason(row: RowResult) -> str | None:
    """Why a matched row's recorded statistics cannot be compared (a value that is not a
    number), or ``None``. Such rows read ``N/A`` unless a rule failed them; tensor mode marks
    the rows whose files it cannot compare itself."""
    pair = row.pair
    g = pair.golden
    if g is None:
        return None
    t = pair.target
    plain = PLAIN_STATS
    a, b, c, d = t.stats
    e, f, h, i = g.stats
    if (a.__class__ in plain and b.__class__ in plain and c.__class__ in plain and d.__class__ in plain
            and e.__class__ in plain and f.__class__ in plain and h.__class__ in plain and i.__class__ in plain):
        return None
    for side, r in (("NPU", t), ("Bench", g)):
        reason = stat_problem(r)
        if reason:
            return f"{NOT_COMPARED}{side} {reason}"
    return None


def is_output(row: Row) -> bool:
    """Output rows are those flattened from an entry's ``output`` section."""
    return row.state == "output"


def same_dtype(target: str, golden: str) -> bool:
    """Whether two dtype strings name the same dtype (framework spellings allowed)."""
    return canonical_dtype(target) == canonical_dtype(golden)


def common_columns(records: Sequence[RowResult]) -> list[list[Any]]:
    """:func:`common_cells` of every record, as eight columns."""
    pairs = [r.pair for r in records]
    return side_columns([p.target for p in pairs], [p.golden for p in pairs])


def side_columns(targets: Sequence[Row], goldens: Sequence[Row | None]) -> list[list[Any]]:
    """:func:`common_cells` of the rows of matched pairs (``goldens`` ``None`` where unmatched), as eight columns."""
    if None in goldens:
        goldens = [_NO_ROW if g is None else g for g in goldens]
    # list comprehensions: each reads a slot faster than map(attrgetter(...)) does
    return [[t.name for t in targets], [g.name for g in goldens], [t.dtype for t in targets],
            [g.dtype for g in goldens], [t.shape for t in targets], [g.shape for g in goldens],
            [t.requires_grad for t in targets], [g.requires_grad for g in goldens]]


def stat_columns(records: Sequence[RowResult], display_columns: Any) -> list[list[Any]]:
    """:func:`stat_cells` of every record, as eight columns (``display_columns`` shows four)."""
    pairs = [r.pair for r in records]
    columns = display_columns([p.target.stats for p in pairs])
    goldens = [p.golden for p in pairs]
    if None not in goldens:
        return columns + display_columns([g.stats for g in goldens])
    matched = [i for i, g in enumerate(goldens) if g is not None]
    shown = display_columns([goldens[i].stats for i in matched])
    for values in shown:
        column = [NA] * len(goldens)
        for i, value in zip(matched, values):
            column[i] = value
        columns.append(column)
    return columns


def tail_columns(records: Sequence[RowResult], with_stack: bool,
                 requires_grad: tuple[list[Any], list[Any]] | None = None) -> list[list[Any]]:
    """Requires_grad Consistent, Result, Err_message [and the stack] of every record
    (``requires_grad``: the two Requires_grad columns of :func:`common_columns`, when at hand)."""
    if requires_grad is None:
        consistent = list(map(requires_grad_consistent, records))
    else:  # equal texts, or a matched row with a side that records none (see requires_grad_consistent)
        target_rg, golden_rg = requires_grad
        consistent = list(map(eq, target_rg, golden_rg))
        if not all(consistent):
            for i in compress(range(len(consistent)), map(not_, consistent)):
                consistent[i] = requires_grad_consistent(records[i])
    columns = [consistent, [r.verdict for r in records], err_message_column(records)]
    if with_stack:
        columns.append(extra_values(records, "stack", NA))
    return columns


def render_cells(row: RowResult, with_stack: bool, with_stats: bool = True) -> list[Any]:
    """The cells every mode shares: common columns, metrics, [stats], consistency, verdict,
    Err_message and [stack], in report order."""
    cells = common_cells(row)
    cells.extend(row.metrics)
    if with_stats:
        cells.extend(stat_cells(row))
    cells.append(requires_grad_consistent(row))
    cells.append(row.verdict)
    cells.append(err_message(row))
    if with_stack:
        cells.append(row.extra_value("stack", NA))
    return cells
