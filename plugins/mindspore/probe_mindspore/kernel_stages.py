"""The read and pair stages of MindSpore native (kernel) dumps.

* :class:`KernelReader` (``mindspore-kernel``) reads the data directories of one rank and
  step under a dump root into plain rows: one per ``.npy`` file, or one per
  ``statistic.csv`` line;
* :class:`KernelNamePairer` (``kernel-name``) pairs them by graph, op name, IO and slot,
  then by order of timestamp, and keeps the rows of both sides that found no partner, in
  msProbe's report order.

The metric modes (:mod:`probe_mindspore.kernel_modes`) compute and judge the pairs.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from probe.api import DumpInfo, FlatDump, InputError, KeyMap, MatchContext, Pair, Pairing, Row

from probe_mindspore.kernel_dump import (
    KernelDir,
    KernelLayout,
    KernelTensor,
    discover,
    looks_like_kernel_dump,
    npy_items,
    pair_items,
    statistic_items,
)

READER = "mindspore-kernel"
PAIRER = "kernel-name"
TASKS = {"npy": "tensor", "statistic": "statistics"}
"""Kind of a side's data directories -> the task its rows carry."""


@lru_cache(maxsize=8)
def layout_of(root: Path) -> KernelLayout:
    """The data directories of a dump root (discovered once per process and root)."""
    return discover(root)


def side_kind(dirs: list[KernelDir]) -> str:
    """``npy`` when any directory holds .npy files, else ``statistic`` (or ``empty``)."""
    kinds = {d.kind for d in dirs} - {"empty"}
    return "npy" if "npy" in kinds else ("statistic" if kinds else "empty")


def item_row(item: KernelTensor | None) -> Row:
    """A row for one kernel item (an empty row stands for the missing side of a pair)."""
    if item is None:
        return Row("", "", "", "", "", (None,) * 4, "N/A", None, "")
    stats = item.stats if len(item.stats) == 4 else (None,) * 4  # .npy items: statistics come when loaded
    row = Row(item.display, item.display, "", item.dtype, item.shape, stats, "N/A", None, item.source,
              {"item": item})
    row.key = item.key
    return row


def kernel_item(row: Row) -> KernelTensor | None:
    """The kernel item a row was read from (``None`` for an empty row)."""
    extra = row.extra
    return None if extra is None else extra.get("item")


class KernelReader:
    """Rows of one (rank, step) of a MindSpore kernel dump root."""

    name = READER

    def sniff(self, path: Path) -> bool:
        return looks_like_kernel_dump(path)

    def load(self, path: Path, with_stack: bool = True, rank: int = 0, step: int = 0) -> FlatDump:
        """The rows of every data directory of ``rank``/``step`` under the root ``path``."""
        dirs = layout_of(Path(path)).groups.get((rank, step))
        if not dirs:
            raise InputError(f"has no kernel data for rank {rank} step {step}", path)
        kind = side_kind(dirs)
        read = npy_items if kind == "npy" else statistic_items
        rows = [item_row(item) for d in dirs for item in read(d)]
        info = DumpInfo(Path(path), "mindspore", TASKS.get(kind, "tensor"), kind="kernel", reader=READER)
        return FlatDump(info, rows, entry_count=len(rows))


class KernelNamePairer:
    """Outer join of kernel rows on (graph/op/IO/slot, order of timestamp), msProbe's order.

    A golden row without a target partner is paired with an empty target row, so that it
    has its own report line ("No NPU data matched.").
    """

    name = PAIRER

    def pair(self, target: FlatDump, golden: FlatDump, key_map: KeyMap | None, ctx: MatchContext) -> Pairing:
        t_items = [kernel_item(r) for r in target.rows]
        g_items = [kernel_item(r) for r in golden.rows]
        rows = {id(item): row for row, item in zip(target.rows + golden.rows, t_items + g_items)}
        pairs = []
        golden_only = 0
        for t_item, g_item in pair_items(t_items, g_items):
            if t_item is None:
                golden_only += 1
            t_row = rows[id(t_item)] if t_item is not None else item_row(None)
            pairs.append(Pair(t_row, rows[id(g_item)] if g_item is not None else None))
        return Pairing(pairs, golden_only)
