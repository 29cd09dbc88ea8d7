"""probe hooks of the TorchAir plugin (``probe compare -m torchair`` / ``--framework torchair``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from probe.api import hookimpl

NAME = "torchair"


def _is_torchair(request: Any) -> bool:
    return request.framework == NAME or request.option("compare_mode") == NAME


@hookimpl
def probe_add_compare_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("TorchAir (-m torchair)")
    group.add_argument("--torchair-layout", dest="torchair_layout", choices=("documented", "26.2"),
                       default=None,
                       help="report columns: 'documented' (default; API Name, Data Name, Cosine, EucDist, "
                            "MaxAbsErr, MaxRelativeErr, 1/1000 and 5/1000 ratios, Result, Err_message; -hl "
                            "colours red/yellow/green) or '26.2' (msProbe 26.2's token_id ... cmp_fail_reason)")
    group.add_argument("--fx-token-offset", dest="fx_token_offset", type=int, choices=(0, 1),
                       default=None,
                       help="FX token directory number minus token id (default: 1 for the "
                            "data_dump/{token+1}/gm_*_dump layout, else 0)")


@hookimpl
def probe_plan_compare(request: Any) -> list[Any] | None:
    if not _is_torchair(request):
        return None
    from probe_torchair.planner import plan
    from probe.api import parse_number_list

    return plan(
        Path(request.target), Path(request.golden),
        ranks=sorted(parse_number_list(request.option("rank"), "rank") or []) or None,
        mode=request.option("metric_mode"),
        token_offset=request.option("fx_token_offset"),
        layout=request.option("torchair_layout"),
    )


@hookimpl
def probe_register_readers(register: Any) -> None:
    from probe_torchair.stages import FxReader, GeReader

    register.add(GeReader.name, GeReader())
    register.add(FxReader.name, FxReader())


@hookimpl
def probe_register_pairers(register: Any) -> None:
    from probe_torchair.stages import TokenPairer

    register.add(TokenPairer.name, TokenPairer())


@hookimpl
def probe_register_modes(register: Any) -> None:
    from probe_torchair.stages import MODES

    for mode in MODES:
        register.add(mode.name, mode)


@hookimpl
def probe_detect_framework(path: str) -> str | None:
    """A directory holding GE graph files or ``worldsize*_global_rank*`` dirs is TorchAir."""
    if not os.path.isdir(path):
        return None
    try:
        names = os.listdir(path)
    except OSError:
        return None
    if any(n.startswith("dynamo_original_graph_") and n.endswith(".txt") for n in names):
        return NAME
    from probe_torchair.ranks import rank_dirs

    return NAME if rank_dirs(Path(path)) else None
