"""Example third-party plugin: a ``max_ratio`` metric mode and a ``markdown`` exporter."""

from __future__ import annotations

from pathlib import Path

from probe.api import hookimpl
from probe.api import atomic_write
from probe.api import ERROR, NA
from probe.api import report_cells as common
from probe.api import RowResult


class MaxRatioMode:
    """Target max divided by golden max, an error when it is off by more than 10 %."""

    name = "max_ratio"

    def accepts(self, target, golden) -> bool:
        return False  # only when asked for with --metric-mode max_ratio

    def columns(self, with_stack, extra_metrics):
        return common.COMMON_COLUMNS + ["Max ratio"] + common.TAIL_COLUMNS

    def compute(self, pairs, ctx):
        out = []
        for pair in pairs:
            ratio = NA
            if pair.golden is not None:
                n, b = pair.target.stats[0], pair.golden.stats[0]
                if isinstance(n, (int, float)) and isinstance(b, (int, float)) and b:
                    ratio = n / b
            out.append(RowResult(pair, (ratio,)))
        return out

    def judge(self, group):
        for row in group:
            ratio = row.metrics[0]
            if isinstance(ratio, float) and abs(ratio - 1) > 0.1:
                row.raise_to(ERROR, "error: max differs by more than 10 %")

    def render(self, row, with_stack):
        return common.common_cells(row) + list(row.metrics) + [
            common.requires_grad_consistent(row), row.verdict, common.err_message(row)]


class MarkdownExporter:
    name = "markdown"
    suffix = ".md"

    def write(self, result, path: Path):
        with atomic_write(path) as handle:
            columns = result.columns
            handle.write("| " + " | ".join(columns) + " |\n")
            handle.write("|" + "---|" * len(columns) + "\n")
            for row in result.table():
                handle.write("| " + " | ".join(str(v) for v in row) + " |\n")
        return [path]


@hookimpl
def probe_register_modes(register):
    register.add("max_ratio", MaxRatioMode())


@hookimpl
def probe_register_exporters(register):
    register.add("markdown", MarkdownExporter())
