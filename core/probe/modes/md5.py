"""md5 mode: CRC-32 (or 64-bit xor) checksums recorded by the dumper, equal or not."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter, itemgetter
from typing import Any

from probe.model import ERROR, NA, WARNING, FlatDump, ModeContext, Pair
from probe.modes import common
from probe.modes.md5_lines import row_lines
from probe.modes.statistics import PROGRESS_STEP
from probe.result import RowResult, raise_all

METRIC_COLUMNS = ["NPU MD5", "BENCH MD5"]
MSG_PARAMETER = "warning: The parameter of NPU does not match the bench."
MSG_CRC = "error: The CRC-32 value of NPU differs from that of the bench."
_MISSING = (NA, "Nan", "", None)
_METRICS, _FIRST, _SECOND = attrgetter("metrics"), itemgetter(0), itemgetter(1)
_MISSING_TEXTS = frozenset(value for value in _MISSING if value is not None)


class Md5Mode:
    """Exact comparison of checksums."""

    name = "md5"
    streams = True
    """Rows are computed and judged per entry: large dumps may be compared a window at a time."""

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        return target.info.task == "statistics" and target.has_md5

    def columns(self, with_stack: bool, extra_metrics: Sequence[str]) -> list[str]:
        cols = common.COMMON_COLUMNS + METRIC_COLUMNS + common.TAIL_COLUMNS
        return cols + [common.STACK_COLUMN] if with_stack else cols

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        results: list[RowResult] = []
        append = results.append
        for start in range(0, len(pairs), PROGRESS_STEP):
            for pair in pairs[start : start + PROGRESS_STEP]:  # (_md5(target), _md5(golden) or N/A), inline
                golden = pair.golden
                target = pair.target.md5
                if golden is None:
                    append(RowResult(pair, (NA if target is None else target, NA)))
                else:
                    checksum = golden.md5
                    append(RowResult(pair, (NA if target is None else target, NA if checksum is None else checksum)))
            if ctx.progress:
                ctx.progress(min(PROGRESS_STEP, len(pairs) - start))
        return results

    def judge_entries(self, records: Sequence[RowResult], starts: list[int]) -> None:
        """Every entry of ``records`` at once: each row is judged on its own."""
        self.judge(records)

    def judge(self, group: Sequence[RowResult]) -> None:
        crc: list[RowResult] = []  # the usual failing row: raised with the others at the end
        failed = crc.append
        for r in group:
            npu, bench = r.metrics
            if r.pair.golden is None:
                r.notes.append(common.MSG_UNMATCHED)
            elif npu != bench:
                if npu.__class__ is str and bench.__class__ is str:  # checksums (texts): one hash look-up each
                    missing = npu in _MISSING_TEXTS or bench in _MISSING_TEXTS
                else:
                    missing = npu in _MISSING or bench in _MISSING
                if missing:
                    r.raise_to(WARNING, MSG_PARAMETER)
                else:
                    failed(r)
        raise_all(crc, ERROR, MSG_CRC)

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        return common.render_cells(row, with_stack, with_stats=False)

    def render_columns(self, records: Sequence[RowResult], with_stack: bool) -> list[list[Any]]:
        """The report as columns (what :meth:`render` gives row by row)."""
        columns = common.common_columns(records)
        metrics = list(map(_METRICS, records))
        columns.append(list(map(_FIRST, metrics)))
        columns.append(list(map(_SECOND, metrics)))
        columns.extend(common.tail_columns(records, with_stack, (columns[6], columns[7])))
        return columns

    def csv_columns(self, records: Sequence[RowResult], with_stack: bool, inf_text: tuple[str, str]) -> list[list[Any]]:
        """The report as CSV: each row's whole line as one field (:func:`probe.modes.md5_lines.row_lines`),
        or :meth:`render_columns` when a cell is not one the lines write."""
        lines = row_lines(records, with_stack)
        return [lines] if lines is not None else self.render_columns(records, with_stack)
