"""Atomic output files and output naming."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from probe.errors import InputError


@contextmanager
def atomic_write(path: Path, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with open(tmp, mode, **kwargs) as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path`` for writers that want a file name; renamed on success."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def prepare_output_dir(path: Path) -> Path:
    """Create the output directory (and parents); one-line error if it cannot be used."""
    if path.exists() and not path.is_dir():
        raise InputError("output path exists and is not a directory", path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"output directory cannot be created ({exc.strerror})", path) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError("output directory is not writable", path)
    return path


def timestamp(moment: float | None = None) -> str:
    """Local time as ``YYYYmmddHHMMSS`` (msProbe's file-name timestamp)."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(moment))


def unique_path(directory: Path, stem: str, suffix: str, taken: set[Path] | None = None) -> Path:
    """``directory/stem.suffix``, or ``stem_1.suffix``... when that name is already used."""
    candidate = directory / f"{stem}{suffix}"
    counter = 1
    while candidate.exists() or (taken is not None and candidate in taken):
        candidate = directory / f"{stem}_{counter}{suffix}"
        counter += 1
    return candidate
