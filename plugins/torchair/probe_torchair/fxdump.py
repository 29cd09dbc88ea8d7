"""FX dump files (``{node}-{aten target}.{INPUT|OUTPUT}.{index}.{timestamp}.npy``)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probe_torchair.gedump import GeFormatError, stats_from_row
from probe_torchair.tensors import Loaded, TensorRef

_FX_NAME = re.compile(
    r"^(?P<key>.+)\.(?P<kind>INPUT|OUTPUT)\.(?P<index>\d+)\.(?P<ts>\d+)(?P<mm>_min_max)?\.npy$"
)


@dataclass(frozen=True)
class FxName:
    key: str
    kind: str  # "inputs" / "outputs"
    index: int
    timestamp: int
    min_max: bool


def parse_name(name: str) -> FxName | None:
    """Split an FX dump file name; ``None`` when it is not one."""
    match = _FX_NAME.match(name)
    if not match:
        return None
    kind = "inputs" if match["kind"] == "INPUT" else "outputs"
    return FxName(match["key"], kind, int(match["index"]), int(match["ts"]), bool(match["mm"]))


class FxTensorRef(TensorRef):
    """One FX ``.npy`` file (full data or ``_min_max`` statistics)."""

    def __init__(self, path: Path, name: FxName) -> None:
        self.path = path
        self.name = name
        self.path_label = os.path.realpath(path)

    def load(self) -> Loaded:
        try:
            array = np.load(self.path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise GeFormatError(f"cannot read npy: {exc}") from exc
        if self.name.min_max:
            return stats_from_row(array, "min/max info")
        return Loaded.from_array(np.asarray(array))


@dataclass
class FxOp:
    """The inputs and outputs of one FX node within one token."""

    key: str
    tensors: dict[str, dict[int, FxTensorRef]] = field(
        default_factory=lambda: {"inputs": {}, "outputs": {}}
    )

    def add(self, ref: FxTensorRef) -> None:
        slot = self.tensors[ref.name.kind]
        old = slot.get(ref.name.index)
        # Full data wins over min/max info; otherwise keep the earliest dump.
        if old is None or (old.name.min_max and not ref.name.min_max):
            slot[ref.name.index] = ref

    def ordered(self, kind: str) -> list[FxTensorRef]:
        """Tensors by numeric argument index (``INPUT.2`` before ``INPUT.10``)."""
        slot = self.tensors[kind]
        return [slot[i] for i in sorted(slot)]

    def get(self, kind: str, index: int) -> FxTensorRef | None:
        return self.tensors[kind].get(index)

    @property
    def op_type(self) -> str:
        return self.key.split("-", 1)[1] if "-" in self.key else self.key


def read_token_dir(directory: Path) -> dict[str, FxOp]:
    """Every FX op of one token directory, keyed by ``{node}-{aten target}``."""
    ops: dict[str, FxOp] = {}
    with os.scandir(directory) as entries:
        names = sorted(e.name for e in entries if e.is_file())
    for name in names:
        parsed = parse_name(name)
        if parsed is None:
            continue
        ops.setdefault(parsed.key, FxOp(parsed.key)).add(FxTensorRef(directory / name, parsed))
    return ops
