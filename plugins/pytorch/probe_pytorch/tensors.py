"""Reading ``.pt`` tensor files of msProbe PyTorch dumps, safely (no unpickling of objects)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from probe.api import InputError, open_regular_stat
from probe_pytorch.ptzip import read_pt_fd

MAX_FILE_BYTES = 10 * 1024**3
MAX_INFLATED_BYTES = 1 << 30
"""Compressed members of a ``.pt`` may inflate to at most this much in all (torch writes them
uncompressed; a few MB of deflated zeros can claim gigabytes)."""
SLACK_BYTES = 1 << 20
"""Allowance over the declared tensor size for the small members (data.pkl, version...)."""


def inflation_limit(max_bytes: int | None) -> int:
    """What the compressed members of one ``.pt`` may inflate to: twice the tensor size
    dump.json declares plus :data:`SLACK_BYTES`, never more than :data:`MAX_INFLATED_BYTES`."""
    if max_bytes is None:
        return MAX_INFLATED_BYTES
    return min(MAX_INFLATED_BYTES, 2 * max_bytes + SLACK_BYTES)


def check_inflation(path: Path, limit: int) -> None:
    """Refuse a ``.pt`` whose compressed members would inflate past ``limit`` bytes.

    Reads the zip's central directory only (the sizes torch's reader allocates), before
    anything is decompressed. Files that are not zip archives pass (torch reports them).
    """
    try:
        with zipfile.ZipFile(path) as archive:
            inflated = sum(i.file_size for i in archive.infolist() if i.compress_type != zipfile.ZIP_STORED)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return
    if inflated > limit:
        raise InputError(f"compressed members would inflate to {inflated} bytes, more than the {limit} "
                         "allowed for the tensor dump.json declares (a decompression bomb?)", path)


def load_pt(path: Path, max_bytes: int | None = None) -> np.ndarray:
    """Load one ``.pt`` file as a numpy array; bfloat16/float8 become float32.

    Plain tensors are read straight from the ``.pt`` zip container (:mod:`probe_pytorch.ptzip`);
    anything else goes through ``torch.load(weights_only=True)``: a file holding arbitrary
    pickled objects is refused, never executed. ``max_bytes`` is the size of the tensor
    dump.json declares; it bounds what compressed members may inflate to (:func:`inflation_limit`).
    """
    fd, info = open_regular_stat(path, "tensor file", blocking=False)  # only read with pread
    try:
        size = info.st_size
        if size > MAX_FILE_BYTES:
            raise InputError(f"tensor file is larger than {MAX_FILE_BYTES // 1024**3} GiB", path)
        try:
            array = read_pt_fd(fd, size)  # plain tensors: straight from the zip, no torch needed
        except (OSError, zipfile.BadZipFile, ValueError):
            array = None  # torch.load below reports the problem in its own words
    finally:
        os.close(fd)
    if array is not None:
        return array
    check_inflation(path, inflation_limit(max_bytes))
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
