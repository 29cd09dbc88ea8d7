"""Planning a TorchAir compare into one job per rank, and running the jobs."""

from __future__ import annotations

import logging
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probe.errors import InputError

from probe_torchair import layout
from probe_torchair.compare import compare_rank, normalize_mode
from probe_torchair.report import report_stem, write_csv

log = logging.getLogger("probe.torchair")


@dataclass
class TorchairJob:
    """Compare one rank of a GE dump with an FX dump or a fusion-off GE dump.

    ``run`` writes ``msprobe_cmp_report[_rank{r}]_{timestamp}.csv`` itself (the TorchAir
    column set is not the API-compare one) and returns a summary with the file written.
    """

    label: str
    target_dir: Path
    golden_dir: Path
    graph_root: Path
    output_dir: Path
    rank: int | None = None
    golden_is_ge: bool = False
    mode: str | None = None
    token_offset: int | None = None
    output_subdir: str = ""
    output_stem: str = field(init=False)

    def __post_init__(self) -> None:
        self.output_stem = report_stem(self.rank)

    def compare(self) -> TorchairOutcome:
        """Compare and write the report; bad input files are listed, not fatal."""
        report = compare_rank(self.target_dir, self.golden_dir, self.graph_root, self.rank,
                              self.golden_is_ge, self.mode, self.token_offset)
        path = write_csv(self.output_dir / self.output_subdir, self.output_stem, report.columns,
                         report.rows)
        passed = sum(1 for row in report.rows if row[-2] == "PASS")
        failed = sum(1 for row in report.rows if row[-2] == "FAIL")
        return TorchairOutcome(self.label, path, len(report.rows), passed, failed,
                               report.problems, report.warnings, report.mode)

    def run(self, host: Any = None, request: Any = None, progress: Any = None) -> TorchairOutcome:
        """Job protocol entry point (``host``/``request`` are not needed)."""
        outcome = self.compare()
        if progress is not None:
            progress(1)
        return outcome


@dataclass
class TorchairOutcome:
    """What one job did."""

    label: str
    path: Path
    rows: int
    passed: int
    failed: int
    problems: list[str]
    warnings: list[str]
    mode: str

    @property
    def files(self) -> list[Path]:
        return [self.path]


def plan(target: Path, golden: Path, output_dir: Path, ranks: list[int] | None = None,
         mode: str | None = None, token_offset: int | None = None) -> list[TorchairJob]:
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
    common = dict(output_dir=output_dir, golden_is_ge=golden_is_ge, mode=mode,
                  token_offset=token_offset, graph_root=target)
    if not target_ranks:
        if ranks:
            raise InputError(f"--rank {','.join(map(str, ranks))} given but the dump has no "
                             "worldsize*_global_rank* directories", target)
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
            golden_dir = golden  # an FX/GE dump without rank directories serves every rank
        jobs.append(TorchairJob(f"rank{rank}", target_ranks[rank], golden_dir, rank=rank, **common))
    if not jobs:
        raise InputError("no common rank in the target and golden dumps", golden)
    return jobs


def _run(job: TorchairJob) -> TorchairOutcome:
    return job.compare()


def run_jobs(jobs: list[TorchairJob], workers: int = 1) -> list[TorchairOutcome]:
    """Run jobs, in parallel processes when ``workers > 1`` and there are several ranks."""
    if workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
            return list(pool.map(_run, jobs))
    return [job.compare() for job in jobs]
