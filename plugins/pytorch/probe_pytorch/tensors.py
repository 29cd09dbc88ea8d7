"""Reading ``.pt`` tensor files of msProbe PyTorch dumps, safely (no unpickling of objects)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from probe.api import InputError
from probe_pytorch.ptzip import read_pt

MAX_FILE_BYTES = 10 * 1024**3


def load_pt(path: Path) -> np.ndarray:
    """Load one ``.pt`` file as a numpy array; bfloat16/float8 become float32.

    Plain tensors are read straight from the ``.pt`` zip container (:mod:`probe_pytorch.ptzip`);
    anything else goes through ``torch.load(weights_only=True)``: a file holding arbitrary
    pickled objects is refused, never executed.
    """
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError(f"tensor file is larger than {MAX_FILE_BYTES // 1024**3} GiB", path)
    try:
        array = read_pt(path)  # plain tensors: straight from the zip, no torch needed
    except (OSError, zipfile.BadZipFile, ValueError):
        array = None  # torch.load below reports the problem in its own words
    if array is not None:
        return array
    return _torch_load(path)


def _torch_load(path: Path) -> np.ndarray:
    """The general path: ``torch.load(weights_only=True)`` (views, odd dtypes, old formats)."""
    try:
        import torch
    except ImportError:
        raise InputError("reading .pt files needs torch: pip install torch", path) from None
    try:
        value = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for bad files
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"is not a tensor file torch can load safely ({first[:200]})", path) from None
    if not isinstance(value, torch.Tensor):
        raise InputError(f"holds a {type(value).__name__}, not a tensor", path)
    tensor = value.detach()
    if tensor.dtype in (torch.bfloat16,) or "float8" in str(tensor.dtype):
        tensor = tensor.float()
    return tensor.numpy()
