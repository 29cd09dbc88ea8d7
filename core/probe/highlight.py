"""Optional red/yellow highlighting (``-hl``): msProbe's legacy rules (spec compare-core §8.6), made sound.

Highlight marks suspicious rows by its own rules, independent of ``Result``: an ``error`` row
may stay unmarked and a ``pass`` row may be marked. The reason is written into the row.

Where probe departs from the legacy rules (docs/differences.md): a relative error divides by
``max(0.01, |bench max|)`` (the legacy ``max(eps, bench max)`` made a 0.18 % difference of a
small or negative tensor "red"), the relative rules apply to real-data (tensor) reports too,
and a row whose requires_grad differs is yellow.
"""

from __future__ import annotations

import math
from itertools import groupby
from typing import Any

from probe.modes.common import is_nan_or_inf, is_output, requires_grad_consistent
from probe.result import CompareResult, RowResult

HIGHLIGHT = "Highlight"
RED, YELLOW = "red", "yellow"
REL_FLOOR = 0.01
"""Smallest denominator of a relative error: |bench max| below it is treated as 0.01."""


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _max_diff(row: RowResult, tensor: bool) -> float | None:
    return _num(row.metrics[2] if tensor else row.metrics[0]) if row.metrics else None


def _mark(row: RowResult, colour: str, reason: str) -> None:
    current = row.extra.get(HIGHLIGHT, "")
    if current != RED:
        row.extra[HIGHLIGHT] = colour
    row.notes.append(reason)


def apply_highlight(result: CompareResult) -> None:
    """Colour rows red or yellow and add the ``Highlight`` column to the result.

    A mode with colour rules of its own (TorchAir: green / red / yellow by PASS / FAIL / N/A)
    marks its rows while computing them; the column is then added as they are.
    """
    tensor = result.mode.name == "tensor"
    if result.mode.name not in ("tensor", "statistics"):
        if any(r.extra_value(HIGHLIGHT) for r in result.records):
            result.extra_columns = tuple(result.extra_columns) + (HIGHLIGHT,)
        return
    for record in result.records:  # single-row rules, on every row (matched or not)
        t = record.pair.target
        if is_nan_or_inf(t.stats[0]) or is_nan_or_inf(t.stats[1]):
            _mark(record, RED, "maximum or minimum is nan, -inf, or inf")
            continue
        if record.pair.golden is None:
            continue
        diff = _max_diff(record, tensor)
        if diff is not None and abs(diff) > 1e10:
            _mark(record, RED, "maximum absolute error exceeds 1e+10")
        elif not requires_grad_consistent(record):
            _mark(record, YELLOW, "requires_grad differs between NPU and bench")
    for _, group_iter in groupby(result.records, key=lambda r: r.pair.target.entry):
        group = [r for r in group_iter if r.pair.golden is not None and _comparable(r, tensor)]
        inputs = [r for r in group if not is_output(r.pair.target)]
        for out in (r for r in group if is_output(r.pair.target)):
            _check_output(out, inputs, tensor)
    result.extra_columns = tuple(result.extra_columns) + (HIGHLIGHT,)


def _comparable(row: RowResult, tensor: bool) -> bool:
    g = row.pair.golden
    return _num(row.pair.target.stats[0]) is not None and _num(g.stats[0]) is not None and _max_diff(row, tensor) is not None


def relative_max_error(row: RowResult, tensor: bool) -> float:
    """|max diff| (MaxAbsErr in tensor mode) over ``max(0.01, |bench max|)``."""
    bench_max = _num(row.pair.golden.stats[0]) or 0.0
    return abs(_max_diff(row, tensor) or 0.0) / max(REL_FLOOR, abs(bench_max))


def _check_output(out: RowResult, inputs: list[RowResult], tensor: bool) -> None:
    """The output-versus-input rules, for each input/parameter row of the entry (none without inputs)."""
    out_diff = abs(_max_diff(out, tensor) or 0.0)
    out_rel = relative_max_error(out, tensor)
    if inputs and out_rel > 0.5:
        _mark(out, RED, "maximum relative error exceeds 0.5")
        return
    for inp in inputs:
        in_diff = abs(_max_diff(inp, tensor) or 0.0)
        if tensor:
            in_ratio, out_ratio = _num(inp.metrics[4]), _num(out.metrics[4])
            if in_ratio is not None and out_ratio is not None:
                if in_ratio > 0.9 and out_ratio < 0.6:
                    _mark(out, RED, "The input/parameters's one thousandth err ratio exceeds 0.9, while the output's is below 0.6")
                    return
                if in_ratio - out_ratio > 0.1:
                    _mark(out, YELLOW, "The output's one thousandth err ratio decreases by more than 0.1 with respect to the input/parameters's")
            in_cos, out_cos = _num(inp.metrics[0]), _num(out.metrics[0])
            if in_cos is not None and out_cos is not None and in_cos - out_cos > 0.1:
                _mark(out, YELLOW, "The output's cosine decreases by more than 0.1 with respect to the input/parameters's")
        if out_rel > 0.1 and relative_max_error(inp, tensor) < 0.01:
            _mark(out, YELLOW, "The output's maximum relative error exceeds 0.1, while the input/parameters's is below 0.01")
        if out_diff >= in_diff and in_diff >= 1 and out_diff >= 1 and math.log10(out_diff) - math.log10(in_diff) >= 1:
            _mark(out, YELLOW, "maximum absolute error of both input/parameters and output exceed 1, with the output larger by an order of magnitude")
