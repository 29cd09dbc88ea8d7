"""Built-in metric modes and the ``.npy`` tensor loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from probe.hookspecs import hookimpl


def load_npy(path: Path) -> Any:
    """Load a ``.npy`` file without unpickling.

    bfloat16 data saved as raw 2-byte values (``V2`` dtype, numpy has no bfloat16) is
    widened to float32: bfloat16 is the upper half of a float32.
    """
    import numpy as np

    array = np.load(path, allow_pickle=False)
    if array.dtype.kind == "V" and array.dtype.itemsize == 2:
        bits = array.view(np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return array


@hookimpl(trylast=True)
def probe_register_modes(register) -> None:
    from probe.modes.md5 import Md5Mode
    from probe.modes.statistics import StatisticsMode
    from probe.modes.tensor import TensorMode

    register.add("statistics", StatisticsMode())
    register.add("tensor", TensorMode())
    register.add("md5", Md5Mode())


@hookimpl(trylast=True)
def probe_register_tensor_loaders(register) -> None:
    register.add(".npy", load_npy)
