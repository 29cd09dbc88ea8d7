"""probe hooks of the MindSpore plugin (thin: the logic lives in sibling modules)."""

from __future__ import annotations

import argparse

from probe.api import hookimpl


@hookimpl
def probe_add_compare_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("MindSpore")
    group.add_argument("-am", "--api_mapping", nargs="?", const=True, default=None, metavar="FILE",
                       help="map MindSpore APIs to PyTorch APIs with the built-in table, "
                            "overridden by a YAML file of ms_api/pt_api items")
    group.add_argument("-lm", "--layer_mapping", nargs="?", const=True, default=None, metavar="FILE",
                       help="pair MindSpore and PyTorch layers through construct.json; a YAML file "
                            "renames layers ({LayerType: {target child: golden child}})")
    group.add_argument("-cm", "--cell_mapping", nargs="?", const=True, default=None, metavar="FILE",
                       help="map Cell to Module, and module path/class fragments from a YAML file")


@hookimpl
def probe_register_normalizers(register) -> None:
    from probe_mindspore.api_table import builtin_table

    table = builtin_table()
    register.add(table.name, table)


@hookimpl
def probe_register_mappers(register) -> None:
    from probe_mindspore.api_mapping import ApiMapper
    from probe_mindspore.cell_mapping import CellMapper
    from probe_mindspore.layer_mapping import LayerMapper

    register.add(ApiMapper.name, ApiMapper())
    register.add(CellMapper.name, CellMapper())
    register.add(LayerMapper.name, LayerMapper())


@hookimpl
def probe_register_readers(register) -> None:
    from probe_mindspore.kernel_stages import KernelReader

    register.add(KernelReader.name, KernelReader())


@hookimpl
def probe_register_pairers(register) -> None:
    from probe_mindspore.kernel_stages import KernelNamePairer

    register.add(KernelNamePairer.name, KernelNamePairer())


@hookimpl
def probe_register_modes(register) -> None:
    from probe_mindspore.kernel_modes import KernelNpyMode, KernelStatisticMode

    register.add(KernelNpyMode.name, KernelNpyMode())
    register.add(KernelStatisticMode.name, KernelStatisticMode())


@hookimpl
def probe_plan_compare(request):
    from probe_mindspore.layout import plan_mindspore

    return plan_mindspore(request)


@hookimpl
def probe_detect_framework(path: str) -> str | None:
    from probe_mindspore.layout import looks_like_kernel_dump

    return "mindspore" if looks_like_kernel_dump(path) else None
