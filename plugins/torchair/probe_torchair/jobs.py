"""Planning a TorchAir compare into one job per rank; a job returns a core CompareResult."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.api import InputError
from probe.api import ERROR, NA, PASS
from probe.api import CompareResult

from probe_torchair import layout
from probe_torchair.compare import RankReport, compare_rank, normalize_mode
from probe_torchair.report import DOCUMENTED, LAYOUTS, layout_cells, layout_columns, report_stem, verdict_of

log = logging.getLogger("probe.torchair")

_VERDICTS = {"PASS": PASS, "FAIL": ERROR}


class TorchairRecord:
    """One report row; ``verdict`` uses the core's words so summaries count it."""

    __slots__ = ("cells", "verdict", "name")

    def __init__(self, cells: list[object], mode: str) -> None:
        self.cells = cells
        self.verdict = _VERDICTS.get(str(verdict_of(cells, mode)), NA)
        self.name = str(cells[9])  # my_data_path

    @property
    def matched(self) -> bool:
        return self.verdict != NA


@dataclass
class TorchairReportMode:
    """Column set and row rendering of a TorchAir report (tensor, statistics or md5) in a layout."""

    name: str
    layout: str = DOCUMENTED
    highlight: bool = False

    def columns(self, with_stack: bool = False, extra_metrics: Sequence[str] = ()) -> list[str]:
        return layout_columns(self.name, self.layout, self.highlight)

    def render(self, row: TorchairRecord, with_stack: bool = False) -> list[Any]:
        return layout_cells(row.cells, self.name, self.layout, self.highlight)


def to_result(report: RankReport, label: str, layout: str = DOCUMENTED, highlight: bool = False) -> CompareResult:
    """Wrap a rank's rows in the core result type that the exporters write."""
    if layout not in LAYOUTS:
        raise InputError(f"--torchair-layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    result = CompareResult(
        label=label,
        mode=TorchairReportMode(report.mode, layout, highlight),
        records=[TorchairRecord(row, report.mode) for row in report.rows],
        output_stem=report_stem(report.rank),
        rank=report.rank,
    )
    result.problems.extend(report.problems)
    return result


@dataclass
class TorchairJob:
    """Compare one rank of a GE dump with an FX dump or a fusion-off GE dump."""

    label: str
    target_dir: Path
    golden_dir: Path
    graph_root: Path
    rank: int | None = None
    golden_is_ge: bool = False
    mode: str | None = None
    token_offset: int | None = None
    output_subdir: str = ""
    output_stem: str = field(init=False)

    def __post_init__(self) -> None:
        self.output_stem = report_stem(self.rank)

    def compare(self, progress: Any = None) -> RankReport:
        """The rows of this rank; unreadable files are listed in ``problems``, not fatal."""
        return compare_rank(self.target_dir, self.golden_dir, self.graph_root, self.rank,
                            self.golden_is_ge, self.mode, self.token_offset, progress, self.label)

    def run(self, host: Any = None, request: Any = None, progress: Any = None) -> CompareResult:
        """Job protocol: compare and hand the table to the core exporters."""
        report = self.compare(progress)
        options = request.options if request is not None else {}
        # problems are printed once, by the console summary
        return to_result(report, self.label, options.get("torchair_layout") or DOCUMENTED,
                         bool(options.get("highlight")))


def plan(target: Path, golden: Path, ranks: list[int] | None = None, mode: str | None = None,
         token_offset: int | None = None) -> list[TorchairJob]:
    """One job per rank found on both sides (or one job without rank layout)."""
    if not target.is_dir():
        raise InputError("the TorchAir target must be a GE dump directory", target)
    if not golden.is_dir():
        raise InputError("the TorchAir golden must be an FX or GE dump directory", golden)
    if token_offset not in (None, 0, 1):
        raise InputError(f"--fx-token-offset must be 0 or 1, not {token_offset}")
    mode = normalize_mode(mode)
    golden_is_ge = layout.has_graph_files(golden)
    target_ranks = layout.rank_dirs(target)
    golden_ranks = layout.rank_dirs(golden)
    common = dict(golden_is_ge=golden_is_ge, mode=mode, token_offset=token_offset, graph_root=target)
    if not target_ranks:
        if ranks:
            log.warning("%s: no worldsize*_global_rank* directories; --rank ignored", target)
        return [TorchairJob("torchair", target, golden, **common)]
    wanted = sorted(target_ranks) if ranks is None else ranks
    missing = [r for r in wanted if r not in target_ranks]
    if missing:
        raise InputError(f"rank {','.join(map(str, missing))} not found in the target dump", target)
    jobs: list[TorchairJob] = []
    for rank in wanted:
        if golden_ranks:
            if rank not in golden_ranks:
                log.warning("%s: rank %d has no golden data, skipped", golden, rank)
                continue
            golden_dir = golden_ranks[rank]
        else:
            golden_dir = golden  # a golden dump without rank directories serves every rank
        jobs.append(TorchairJob(f"rank{rank}", target_ranks[rank], golden_dir, rank=rank, **common))
    if not jobs:
        raise InputError("no common rank in the target and golden dumps", golden)
    return jobs
