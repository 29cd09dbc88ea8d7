"""Compare planning for MindSpore-only layouts: kernel dumps and ``graph/`` + ``pynative/`` roots.

Anything else is left to the built-in planner (dump files, rank/proc dirs, step dirs).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from probe.api import CompareRequest, InputError, PairPlan, parse_number_list, plan_default
from probe.api import select_plans

from probe_mindspore.kernel_dump import KernelLayout
from probe_mindspore.kernel_dump import looks_like_kernel_dump as _looks_like_kernel_dump
from probe_mindspore.kernel_stages import PAIRER, READER, layout_of, side_kind

log = logging.getLogger("probe")

MIXED_FOLDERS = ("graph", "pynative")


def looks_like_kernel_dump(path: str | Path) -> bool:
    """Whether ``path`` is the root of a MindSpore native (kernel) dump."""
    return _looks_like_kernel_dump(Path(path))


def plan_mindspore(request: CompareRequest) -> list[PairPlan] | None:
    """Plans for a mixed or kernel layout; ``None`` for layouts other planners own."""
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


def plan_mixed(request: CompareRequest, shared: list[str]) -> list[PairPlan]:
    """``graph/`` and ``pynative/`` compared separately, reports in matching sub-folders."""
    for name in MIXED_FOLDERS:
        if name not in shared and ((request.target / name).is_dir() or (request.golden / name).is_dir()):
            log.warning("%s/ exists on one side only, not compared", name)
    plans = []
    for name in shared:
        sub = replace(request, target=request.target / name, golden=request.golden / name)
        for plan in plan_mindspore(sub) or select_plans(plan_default(sub), sub):
            subdir = f"{name}/{plan.output_subdir}" if plan.output_subdir else name
            plans.append(replace(plan, output_subdir=subdir, label=f"{name}/{plan.label}"))
    return plans


def plan_kernel(request: CompareRequest) -> list[PairPlan]:
    """One plan per (rank, step) found on both sides and selected by ``--rank``/``--step``.

    Each plan reads the (rank, step) under both roots with the ``mindspore-kernel`` reader,
    pairs with ``kernel-name`` and computes with ``kernel-npy`` or ``kernel-statistic``.
    """
    ranks = parse_number_list(request.options.get("rank"), "rank")
    steps = parse_number_list(request.options.get("step"), "step")
    layouts: list[KernelLayout] = [layout_of(request.target), layout_of(request.golden)]
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
    plans = []
    for rank, step in common:
        t_kind = side_kind(t_layout.groups[(rank, step)])
        g_kind = side_kind(g_layout.groups[(rank, step)])
        if t_kind != g_kind:
            raise InputError(
                f"rank {rank} step {step}: target holds {t_kind} data but golden "
                f"({g_layout.groups[(rank, step)][0].path}) holds {g_kind} data", t_layout.groups[(rank, step)][0].path,
            )
        plans.append(PairPlan(
            label=f"rank{rank}/step{step}",
            target=request.target,
            golden=request.golden,
            output_stem=f"compare_result_{rank}_{step}",
            rank=rank,
            step=step,
            reader=READER,
            pairers=(PAIRER,),
            mode="kernel-npy" if t_kind == "npy" else "kernel-statistic",
            options={"reader_args": {"rank": rank, "step": step}},
        ))
    return plans
