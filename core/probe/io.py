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


def _current_umask() -> int:
    """The process umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _temp_beside(path: Path, suffix: str) -> str:
    """A new temporary file beside ``path`` with normal permissions (0666 minus the umask).

    ``mkstemp`` creates 0600 files; reports are meant to be shared like any other output.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_current_umask())
    finally:
        os.close(fd)
    return tmp


@contextmanager
def atomic_write(path: Path, mode: str = "w", **kwargs) -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success."""
    tmp = _temp_beside(path, ".tmp")
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
    tmp = _temp_beside(path, path.suffix)
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
