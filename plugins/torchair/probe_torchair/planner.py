"""Planning a TorchAir compare: one :class:`PairPlan` per rank (or one without rank layout)."""

from __future__ import annotations

import logging
from pathlib import Path

from probe.api import InputError, PairPlan

from probe_torchair import layout as layout_mod
from probe_torchair.compare import normalize_mode
from probe_torchair.ranks import rank_dirs
from probe_torchair.report import DOCUMENTED, LAYOUTS, report_stem
from probe_torchair.stages import FX_READER, GE_READER, GRAPH_ROOT, PAIRER, RANK, mode_name

log = logging.getLogger("probe.torchair")


def _plan(label: str, target: Path, golden: Path, graph_root: Path, rank: int | None, golden_is_ge: bool,
          mode: str | None, token_offset: int | None, layout: str) -> PairPlan:
    if mode is None:  # min/max info files hold statistics only
        mode = "statistics" if layout_mod.has_min_max_files(target) or layout_mod.has_min_max_files(golden) else "tensor"
    return PairPlan(
        label=label, target=target, golden=golden, output_stem=report_stem(rank), rank=rank,
        reader=GE_READER, golden_reader=GE_READER if golden_is_ge else FX_READER, pairers=(PAIRER,),
        mode=mode_name(mode, layout),
        # metric_mode: the plan's mode decides
        options={"reader_args": {"token_offset": token_offset}, GRAPH_ROOT: str(graph_root), RANK: rank,
                 "metric_mode": None},
    )


def plan(target: Path, golden: Path, ranks: list[int] | None = None, mode: str | None = None,
         token_offset: int | None = None, layout: str | None = None) -> list[PairPlan]:
    """One plan per rank found on both sides (or one plan without rank layout).

    ``layout``: the report columns, ``documented`` (default) or ``26.2``.
    """
    layout = layout or DOCUMENTED
    if layout not in LAYOUTS:
        raise InputError(f"--torchair-layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
    if not target.is_dir():
        raise InputError("the TorchAir target must be a GE dump directory", target)
    if not golden.is_dir():
        raise InputError("the TorchAir golden must be an FX or GE dump directory", golden)
    if token_offset not in (None, 0, 1):
        raise InputError(f"--fx-token-offset must be 0 or 1, not {token_offset}")
    mode = normalize_mode(mode)
    golden_is_ge = layout_mod.has_graph_files(golden)
    target_ranks = rank_dirs(target)
    golden_ranks = rank_dirs(golden)
    common = dict(golden_is_ge=golden_is_ge, mode=mode, token_offset=token_offset, graph_root=target, layout=layout)
    if not target_ranks:
        if ranks:
            log.warning("%s: no worldsize*_global_rank* directories; --rank ignored", target)
        return [_plan("torchair", target, golden, rank=None, **common)]
    wanted = sorted(target_ranks) if ranks is None else ranks
    missing = [r for r in wanted if r not in target_ranks]
    if missing:
        raise InputError(f"rank {','.join(map(str, missing))} not found in the target dump", target)
    plans: list[PairPlan] = []
    for rank in wanted:
        if golden_ranks:
            if rank not in golden_ranks:
                log.warning("%s: rank %d has no golden data, skipped", golden, rank)
                continue
            golden_dir = golden_ranks[rank]
        else:
            golden_dir = golden  # a golden dump without rank directories serves every rank
        plans.append(_plan(f"rank{rank}", target_ranks[rank], golden_dir, rank=rank, **common))
    if not plans:
        raise InputError("no common rank in the target and golden dumps", golden)
    return plans
