"""Compare planning for MindSpore-only layouts: kernel dumps and ``graph/`` + ``pynative/`` roots.

Anything else is left to the built-in planner (dump files, rank/proc dirs, step dirs).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from probe.api import parse_number_list, plan_default, select_plans as select_jobs
from probe.api import InputError
from probe.api import CompareRequest, ModeContext
from probe.api import CompareResult

from probe_mindspore.kernel_dump import (
    KernelDir,
    KernelLayout,
    discover,
    npy_items,
    pair_items,
    statistic_items,
)
from probe_mindspore.kernel_dump import looks_like_kernel_dump as _looks_like_kernel_dump

log = logging.getLogger("probe")

MIXED_FOLDERS = ("graph", "pynative")


def looks_like_kernel_dump(path: str | Path) -> bool:
    """Whether ``path`` is the root of a MindSpore native (kernel) dump."""
    return _looks_like_kernel_dump(Path(path))


def plan_mindspore(request: CompareRequest) -> list[Any] | None:
    """Jobs for a mixed or kernel layout; ``None`` for layouts other planners own."""
    if request.option("compare_mode", "auto") != "auto":
        return None  # e.g. -m torchair
    target, golden = request.target, request.golden
    if not (target.is_dir() and golden.is_dir()):
        return None
    shared = [name for name in MIXED_FOLDERS if (target / name).is_dir() and (golden / name).is_dir()]
    if shared:
        return plan_mixed(request, shared)
    if request.framework in (None, "mindspore") and looks_like_kernel_dump(target):
        return plan_kernel(request)
    return None


def plan_mixed(request: CompareRequest, shared: list[str]) -> list[Any]:
    """``graph/`` and ``pynative/`` compared separately, reports in matching sub-folders."""
    for name in MIXED_FOLDERS:
        if name not in shared and ((request.target / name).is_dir() or (request.golden / name).is_dir()):
            log.warning("%s/ exists on one side only, not compared", name)
    jobs = []
    for name in shared:
        sub = replace(request, target=request.target / name, golden=request.golden / name)
        for job in plan_mindspore(sub) or select_jobs(plan_default(sub), sub):
            subdir = f"{name}/{job.output_subdir}" if job.output_subdir else name
            jobs.append(replace(job, output_subdir=subdir, label=f"{name}/{job.label}"))
    return jobs


@dataclass
class KernelJob:
    """Compare the kernel data of one (rank, step) of two native dumps."""

    label: str
    rank: int
    step: int
    target_dirs: list[Path]
    golden_dirs: list[Path]
    graphs: dict[str, str] = field(default_factory=dict)
    output_stem: str = ""
    output_subdir: str = ""

    def run(self, host: Any, request: CompareRequest, progress: Any = None) -> CompareResult:
        t_dirs = [KernelDir(p, self.rank, self.step, self.graphs.get(str(p), "")) for p in self.target_dirs]
        g_dirs = [KernelDir(p, self.rank, self.step, self.graphs.get(str(p), "")) for p in self.golden_dirs]
        t_kind, g_kind = _side_kind(t_dirs), _side_kind(g_dirs)
        if t_kind != g_kind:
            raise InputError(
                f"rank {self.rank} step {self.step}: target holds {t_kind} data but golden "
                f"({self.golden_dirs[0]}) holds {g_kind} data", self.target_dirs[0],
            )
        read = npy_items if t_kind == "npy" else statistic_items
        t_items = [item for d in t_dirs for item in read(d)]
        g_items = [item for d in g_dirs for item in read(d)]
        pairs = pair_items(t_items, g_items)
        mode = host.modes.get("kernel-npy" if t_kind == "npy" else "kernel-statistic")
        tick = progress(f"{self.label} compare", len(pairs)) if progress else None
        ctx = ModeContext(target=None, golden=None, options=request.options, tensor_loaders=host.tensor_loaders.as_dict(), progress=tick)  # type: ignore[arg-type]
        records = mode.compute_items(pairs, ctx)
        result = CompareResult(label=self.label, mode=mode, records=records, options=request.options)
        result.output_stem = self.output_stem
        result.output_subdir = self.output_subdir
        result.rank = self.rank
        result.golden_only = sum(1 for t, _ in pairs if t is None)
        result.problems.extend(r.extra["problem"] for r in records if r.extra_value("problem") is not None)
        return result


def _side_kind(dirs: list[KernelDir]) -> str:
    kinds = {d.kind for d in dirs} - {"empty"}
    return "npy" if "npy" in kinds else ("statistic" if kinds else "empty")


def plan_kernel(request: CompareRequest) -> list[KernelJob]:
    """One job per (rank, step) found on both sides and selected by ``--rank``/``--step``."""
    ranks = parse_number_list(request.options.get("rank"), "rank")
    steps = parse_number_list(request.options.get("step"), "step")
    layouts: list[KernelLayout] = [discover(request.target), discover(request.golden)]
    for layout in layouts:
        log.info("kernel dump %s: %s", layout.root, layout.describe())
        if layout.ignored:
            names = ", ".join(str(p.relative_to(layout.root)) for p in layout.ignored[:5])
            log.warning("%s: %d data directories have no step number in their name and were skipped: %s",
                        layout.root, len(layout.ignored), names)
    t_layout, g_layout = layouts
    for layout in layouts:
        if not layout.groups:
            raise InputError("holds no kernel dump data (no .npy files or statistic.csv under rank/step "
                             "directories) and no dump.json", layout.root)

    def selected(key: tuple[int, int]) -> bool:
        return (ranks is None or key[0] in ranks) and (steps is None or key[1] in steps)

    t_keys = {k for k in t_layout.groups if selected(k)}
    g_keys = {k for k in g_layout.groups if selected(k)}
    common = sorted(t_keys & g_keys)
    if not common:
        raise InputError(
            f"no rank/step is found on both sides{' for --rank/--step' if ranks or steps else ''}: "
            f"target has {t_layout.describe()}; golden ({g_layout.root}) has {g_layout.describe()}",
            request.target,
        )
    for side, keys in (("target", t_keys - g_keys), ("golden", g_keys - t_keys)):
        if keys:
            log.warning("rank/step only in the %s dump, not compared: %s", side,
                        ", ".join(f"rank {r} step {s}" for r, s in sorted(keys)))
    jobs = []
    for rank, step in common:
        t_dirs, g_dirs = t_layout.groups[(rank, step)], g_layout.groups[(rank, step)]
        graphs = {str(d.path): d.graph for d in t_dirs + g_dirs}
        jobs.append(KernelJob(
            label=f"rank{rank}/step{step}",
            rank=rank,
            step=step,
            target_dirs=[d.path for d in t_dirs],
            golden_dirs=[d.path for d in g_dirs],
            graphs=graphs,
            output_stem=f"compare_result_{rank}_{step}",
        ))
    return jobs
