"""Metric modes of kernel dumps: ``kernel-npy`` (real data) and ``kernel-statistic`` (statistic.csv).

Their columns are msProbe's kernel-compare columns, then ``Result``. The Result of a row (used for the
summary and ``--fail-on``) is ``pass`` when ``Accuracy Reached or Not`` is ``Yes``,
``error`` when it is ``No`` or the pair cannot be compared (shape, dtype, nan/inf
positions), ``N/A`` when one side has no counterpart.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from probe.api import ERROR, NA, PASS, FlatDump, ModeContext, Pair, Row
from probe.api import METRIC_NAMES, SHAPE_UNMATCHED, compare_arrays
from probe.api import UNMATCHED, RowResult

from probe_mindspore.kernel_dump import KernelTensor
from probe_mindspore.kernel_stages import kernel_item

BASE_COLUMNS = [
    "NPU Name", "Bench Name", "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
    "NPU max", "NPU min", "NPU mean", "NPU l2norm", "Bench max", "Bench min", "Bench mean", "Bench l2norm",
    "Accuracy Reached or Not", "Err_message",
]
STAT_METRICS = [
    "Max diff", "Min diff", "Mean diff", "L2norm diff",
    "MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr",
]
ACCURACY = "Accuracy Reached or Not"
MSG_NO_FILE = "Dump file is not ndarray."
MSG_EMPTY = "This is empty data, can not compare."
MSG_SCALAR = "This is type of scalar data, can not compare."
MSG_LENGTH_ONE = "This is a 1-d tensor of length 1."
MSG_SHAPE = "Shape of NPU and bench Tensor do not match."
MSG_DTYPE = "Dtype of NPU and bench Tensor do not match. Skipped."
MSG_NAN_POS = "The position of inf or nan in NPU and bench Tensor do not match."
MSG_STAT_SHAPE = "Tensor shapes do not match."
MSG_NO_BENCH = "No bench data matched."
MSG_NO_NPU = "No NPU data matched."


def shape_text(shape: tuple[int, ...]) -> str:
    """A numpy shape as msProbe's kernel report writes it: ``(2, 3)`` -> ``[2, 3]``, ``(1,)`` -> ``[1,]``."""
    return str(tuple(shape)).replace("(", "[").replace(")", "]")


def _scalar(value: Any) -> Any:
    item = value.item() if hasattr(value, "item") else value
    return item


def array_stats(array: np.ndarray) -> tuple[Any, Any, Any, Any]:
    """max, min, mean, l2norm of an array (``None`` for an empty one)."""
    if array.size == 0:
        return (None, None, None, None)
    as_float = array.astype(np.float64) if array.dtype.kind in "biu" else array
    return (
        _scalar(np.max(array)),
        _scalar(np.min(array)),
        float(np.mean(as_float)),
        float(np.linalg.norm(as_float.reshape(-1).astype(np.float64) if as_float.dtype.kind == "b" else as_float)),
    )


def side_row(item: KernelTensor | None) -> Row:
    """A core :class:`Row` for one side of a kernel pair (an empty one for a missing side)."""
    if item is None:
        return Row("", "", "", "", "", (None,) * 4, NA, None, "")
    stats = item.stats if len(item.stats) == 4 else (None,) * 4  # no statistics (yet): four blanks
    return Row(item.display, item.key, "", item.dtype, item.shape, stats, NA, None, item.source)


def accuracy(metrics: Sequence[Any]) -> str:
    """msProbe's ``Accuracy Reached or Not`` from Cosine and MaxAbsErr."""
    cos, max_abs = metrics[0], metrics[2]
    if cos == SHAPE_UNMATCHED:
        return "Unmatched"
    if not isinstance(cos, (int, float)) or not isinstance(max_abs, (int, float)):
        return "None" if NA not in (cos, max_abs) else "No"
    if (cos < 0.99 and max_abs > 0.001) or cos < 0.9 or max_abs > 1:
        return "No"
    return "Yes"


def _items(pairs: Sequence[Pair]) -> list[tuple[KernelTensor | None, KernelTensor | None]]:
    """The kernel items behind each pair's rows (``None`` for a missing side)."""
    return [(kernel_item(p.target), kernel_item(p.golden) if p.golden is not None else None) for p in pairs]


def _blank(value: Any) -> Any:
    return "" if value is None else value


class _KernelMode:
    """Shared pieces of the two kernel modes."""

    name = ""
    metric_columns: list[str] = []
    tail_columns: list[str] = []

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        return False  # named by the kernel plans, never chosen by auto detection

    def columns(self, with_stack: bool, extra_metrics: Sequence[str]) -> list[str]:
        cols = BASE_COLUMNS + self.metric_columns + self.tail_columns + ["Result"]
        return cols + ["NPU_Stack_Info"] if with_stack else cols

    def _tail(self, row: RowResult, with_stack: bool) -> list[Any]:
        return [row.verdict, NA] if with_stack else [row.verdict]

    def judge(self, group: list[RowResult]) -> None:
        """Verdicts are set in ``compute``; nothing crosses rows in kernel dumps."""

    def _base_cells(self, row: RowResult) -> list[Any]:
        t, g = row.pair.target, row.pair.golden
        g = g if g is not None else side_row(None)
        cells: list[Any] = [t.name, g.name, t.dtype, g.dtype, t.shape, g.shape]
        cells.extend(_blank(v) for v in t.stats)
        cells.extend(_blank(v) for v in g.stats)
        cells.append(row.extra.get(ACCURACY, ""))
        cells.append(" ".join(row.messages + row.notes))
        return cells


def _unmatched(pair: Pair, width: int) -> RowResult:
    record = RowResult(pair, ("",) * width)
    record.verdict = UNMATCHED
    record.notes.append(MSG_NO_BENCH if pair.golden is None else MSG_NO_NPU)
    return record


class KernelNpyMode(_KernelMode):
    """Kernel dumps saved as .npy files: statistics and the six real-data metrics."""

    name = "kernel-npy"
    metric_columns = list(METRIC_NAMES)

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        """Load both sides of every pair (rows of :class:`KernelReader`) and compute its row."""
        results = []
        for t_item, g_item in _items(pairs):
            results.append(self._one(t_item, g_item))
            if ctx.progress:
                ctx.progress(1)
        return results

    def _one(self, t_item: KernelTensor | None, g_item: KernelTensor | None) -> RowResult:
        arrays = []
        problems: list[str] = []
        for item in (t_item, g_item):
            arrays.append(None if item is None else _load(item, problems))
        rows = []
        for item, array in zip((t_item, g_item), arrays):
            row = side_row(item)
            if item is not None and array is not None:
                row.dtype = str(array.dtype)
                row.shape = shape_text(array.shape)
                row.stats = array_stats(array)
            rows.append(row)
        pair = Pair(rows[0], rows[1] if g_item is not None else None)
        if t_item is None or g_item is None:
            return _unmatched(pair, 6)
        n, b = arrays
        record = RowResult(pair, ("",) * 6)
        if n is None or b is None:
            record.raise_to(ERROR, MSG_NO_FILE)
            if problems:
                record.extra["problem"] = problems[0]
            return record
        if n.size == 0 or b.size == 0:
            record.notes.append(MSG_EMPTY)
            return record
        if n.ndim == 0 or b.ndim == 0:
            record.notes.append(MSG_SCALAR)
            if not np.array_equal(n, b, equal_nan=n.dtype.kind == "f" and b.dtype.kind == "f"):
                record.raise_to(ERROR, "error: the scalar values differ.")
            return record
        if n.shape != b.shape:
            record.raise_to(ERROR, MSG_SHAPE)
            return record
        if n.dtype != b.dtype:
            record.raise_to(ERROR, MSG_DTYPE)
            return record
        metrics, messages = compare_arrays(n, b)
        if messages and messages[0].startswith("The position of inf or nan"):
            record.raise_to(ERROR, MSG_NAN_POS)
            return record
        record.metrics = tuple(metrics)
        record.notes.extend(messages)
        if n.size == 1:
            record.notes.append(MSG_LENGTH_ONE)
            record.extra[ACCURACY] = "None"
            if not np.array_equal(n, b):
                record.raise_to(ERROR, "error: the values differ.")
            return record
        verdict = accuracy(metrics)
        record.extra[ACCURACY] = verdict
        if verdict != "Yes":
            record.verdict = ERROR
        return record

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        return self._base_cells(row) + list(row.metrics) + self._tail(row, with_stack)


def _load(item: KernelTensor, problems: list[str] | None = None) -> np.ndarray | None:
    """The array of one kernel tensor file; ``None`` (and the reason in ``problems``) if unreadable."""
    try:
        return np.load(item.path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        if problems is not None:
            problems.append(f"{item.path}: cannot be loaded as a .npy array ({str(exc).splitlines()[0][:160]})")
        return None


def stat_difference(npu: float, bench: float) -> tuple[Any, Any]:
    """``(diff, relative error)`` of one statistic of statistic.csv rows (float32 values)."""
    n, b = np.float32(npu), np.float32(bench)
    diff = float(n - b)
    if b == 0:
        return diff, NA
    rel = abs(diff / float(b) * 100)
    return diff, "Nan" if math.isnan(rel) else f"{rel}%"


class KernelStatisticMode(_KernelMode):
    """Kernel dumps saved as statistic.csv: differences of max/min/mean/l2norm."""

    name = "kernel-statistic"
    metric_columns = STAT_METRICS
    tail_columns = ["NPU CSV File", "Bench CSV File"]

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        """Compute every row from the statistics of both sides."""
        results = []
        for t_item, g_item in _items(pairs):
            rows = [side_row(t_item), side_row(g_item)]
            pair = Pair(rows[0], rows[1] if g_item is not None else None)
            if t_item is None or g_item is None:
                results.append(_unmatched(pair, 8))
                continue
            record = RowResult(pair, ("",) * 8)
            if t_item.shape != g_item.shape:
                record.raise_to(ERROR, MSG_STAT_SHAPE)
            elif not t_item.shape.strip("[]() "):
                record.notes.append(MSG_SCALAR)
            if t_item.dtype != g_item.dtype:
                record.raise_to(ERROR, MSG_DTYPE)
            if record.verdict == PASS and not record.notes:
                diffs, rels = zip(*(stat_difference(n, b) for n, b in zip(t_item.stats, g_item.stats)))
                record.metrics = tuple(diffs) + tuple(rels)
                n_max, b_max = t_item.stats[0], g_item.stats[0]
                if math.isnan(n_max) and math.isnan(b_max):
                    magnitude = 0.0
                else:
                    magnitude = abs(diffs[0]) / (abs(max(n_max, b_max)) + 1e-10)
                verdict = "Yes" if magnitude <= 0.5 else "No"
                record.extra[ACCURACY] = verdict
                if verdict == "No":
                    record.verdict = ERROR
            results.append(record)
            if ctx.progress:
                ctx.progress(1)
        return results

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        g = row.pair.golden
        files = [row.pair.target.data_name, g.data_name if g else ""]
        return self._base_cells(row) + list(row.metrics) + files + self._tail(row, with_stack)
