"""One tensor of one side of a pair: where it comes from and what loading it gives."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_TORCH_NAMES = {
    "float16": "torch.float16", "float32": "torch.float32", "float64": "torch.float64",
    "int8": "torch.int8", "uint8": "torch.uint8", "int16": "torch.int16", "uint16": "torch.uint16",
    "int32": "torch.int32", "uint32": "torch.uint32", "int64": "torch.int64",
    "uint64": "torch.uint64", "bool": "torch.bool", "complex64": "torch.complex64",
    "complex128": "torch.complex128",
}


def torch_dtype_name(dtype: np.dtype) -> str:
    """The PyTorch spelling of a numpy dtype (``torch.float32``), as msProbe reports it."""
    return _TORCH_NAMES.get(np.dtype(dtype).name, str(np.dtype(dtype)))


@dataclass
class Loaded:
    """A loaded tensor: the full array, or only its statistics (min/max info files)."""

    dtype: str
    shape: tuple[int, ...] | None
    array: np.ndarray | None = None
    minimum: float | None = None
    maximum: float | None = None
    mean: float | None = None

    @classmethod
    def from_array(cls, array: np.ndarray, dtype: str | None = None) -> Loaded:
        """Wrap an array, computing its statistics as float32 (NaN/inf propagate)."""
        loaded = cls(dtype or torch_dtype_name(array.dtype), tuple(array.shape), array)
        if array.size and not np.iscomplexobj(array):
            with np.errstate(all="ignore"):
                values = array.astype(np.float32, copy=False)
                loaded.minimum = float(values.min())
                loaded.maximum = float(values.max())
                loaded.mean = float(values.mean(dtype=np.float64))
        return loaded

    @property
    def has_data(self) -> bool:
        return self.array is not None


class TensorRef:
    """Something that can be loaded later (keeps memory flat while pairs are built)."""

    path_label: str

    def load(self) -> Loaded:  # pragma: no cover - interface
        raise NotImplementedError
