"""Atomic output files and output naming.

Every output is written to a hidden temporary file in the output directory and then
*claimed*: hard-linked to its final name, which fails instead of replacing when the name
is taken (another run finished first), so the next free name (``_1``, ``_2``...) is tried.
Temporaries are named ``.probe-tmp.<pid>.<name>...``; a run removes those of processes that
no longer exist (a run killed with SIGKILL leaves them behind) the first time it writes into
a directory.
"""

from __future__ import annotations

import errno
import itertools
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from probe.errors import InputError

TEMP_PREFIX = ".probe-tmp."
"""Start of the name of every temporary file or directory probe makes beside its outputs."""
STALE_SECONDS = 300
"""A temporary of a dead process is removed once it has not changed for this long."""
_TEMP_NAME = re.compile(r"^\.probe-tmp\.(\d+)\.")
_cleaned: set[str] = set()


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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def clean_stale_temporaries(directory: Path, force: bool = False) -> list[Path]:
    """Remove probe temporaries in ``directory`` left by processes that no longer run.

    Only names starting with :data:`TEMP_PREFIX` are touched, only when their process is
    gone and they have not changed for :data:`STALE_SECONDS`. Done once per directory and
    process unless ``force``; returns what was removed.
    """
    key = str(Path(directory).resolve())
    if key in _cleaned and not force:
        return []
    _cleaned.add(key)
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        match = _TEMP_NAME.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        try:
            if now - entry.stat(follow_symlinks=False).st_mtime < STALE_SECONDS:
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def temp_file(path: Path, suffix: str = ".tmp") -> Path:
    """A new empty temporary file beside ``path`` (0666 minus the umask), named as a probe temporary.

    ``mkstemp`` creates 0600 files; reports are meant to be shared like any other output.
    """
    clean_stale_temporaries(path.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}.{path.name}.", suffix=suffix, dir=path.parent)
    except OSError as exc:
        raise write_error(exc, path) from None
    try:
        os.fchmod(fd, 0o666 & ~_current_umask())
    finally:
        os.close(fd)
    return Path(tmp)


def open_temp(file: Path, mode: str = "w", **kwargs: Any) -> IO:
    """Open a temporary made by :func:`temp_file` (new and empty) for writing, without truncating it.

    ``open(file, "w")`` truncates, and ext4 writes a file truncated to nothing back to disk as it
    is closed (``auto_da_alloc``): a close that waits about 0.2 s for a 500 MB report.
    """
    return open(file, mode, opener=_untruncated, **kwargs)


def _untruncated(path: str, flags: int) -> int:
    return os.open(path, flags & ~os.O_TRUNC, 0o666)


def temp_dir(directory: Path, label: str) -> Path:
    """A new temporary directory in ``directory`` named as a probe temporary."""
    clean_stale_temporaries(directory)
    return Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{os.getpid()}.{label}.", dir=directory))


def no_space(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or quota) is full."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    sqlite3 = sys.modules.get("sqlite3")  # not imported at start-up: no sqlite3 error without it
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        return "disk is full" in str(exc)
    return False


def write_error(exc: BaseException, path: Path) -> InputError:
    """A one-line error for a failed write of ``path`` (says "no space left" when the disk is full)."""
    if no_space(exc):
        return InputError("no space left on device while writing it", path)
    if isinstance(exc, OSError):
        return InputError(f"cannot be written ({exc.strerror or exc})", path)
    return InputError(f"cannot be written ({exc})", path)


def os_error(exc: OSError) -> InputError:
    """A one-line error for an :class:`OSError` that escaped (an unreadable directory, a full disk)."""
    where = exc.filename if exc.filename is not None else None
    if no_space(exc):
        return InputError("no space left on device", where)
    return InputError(f"cannot be accessed ({exc.strerror or exc})", where)


def numbered(path: Path, counter: int) -> Path:
    """``stem_<counter>.suffix`` beside ``path`` (``.vis.db`` counts as one suffix)."""
    name = path.name
    suffix = ".vis.db" if name.endswith(".vis.db") else path.suffix
    stem = name[: len(name) - len(suffix)] if suffix else name
    return path.with_name(f"{stem}_{counter}{suffix}")


def claim(tmp: Path, path: Path, rename: bool = True) -> Path:
    """Give the finished file ``tmp`` the name ``path``, or the next free ``path_N``; never replaces.

    The name is taken with ``os.link`` (atomic; fails when the name exists), so concurrent
    runs writing into one directory never lose each other's files. File systems without hard
    links fall back to reserving the name with ``O_CREAT | O_EXCL``. Returns the name used.
    With ``rename=False`` a taken name is an :class:`InputError` (for fixed layouts).
    """
    for counter in itertools.count():
        candidate = numbered(path, counter) if counter else path
        try:
            _take_name(tmp, candidate)
            return candidate
        except FileExistsError:
            if not rename:
                os.unlink(tmp)
                raise InputError("exists already (probe never replaces a file)", path) from None
    raise AssertionError("unreachable")  # pragma: no cover


def _take_name(tmp: Path, candidate: Path) -> None:
    """Give ``tmp`` the name ``candidate`` unless it exists (``FileExistsError``)."""
    try:
        os.link(tmp, candidate)
    except OSError as exc:
        if isinstance(exc, FileExistsError) or exc.errno not in _NO_HARD_LINKS:
            raise
        # no hard links here: reserve the name, then move onto the empty file reserved
        os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        os.replace(tmp, candidate)
        return
    os.unlink(tmp)


_NO_HARD_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV)


class _Atomic:
    """Shared part of :class:`AtomicFile` and :class:`AtomicPath`."""

    def __init__(self, path: Path, suffix: str, rename: bool = True) -> None:
        self.requested = Path(path)
        self.rename = rename
        self.path = self.requested  # the name finally claimed (set on success)
        self.tmp = temp_file(self.requested, suffix)

    def _finish(self, error: BaseException | None) -> None:
        if error is None:
            try:
                self.path = claim(self.tmp, self.requested, self.rename)
                return
            except OSError as exc:
                error = exc
                self._discard()
                raise write_error(exc, self.requested) from None
        self._discard()
        if no_space(error) or isinstance(error, OSError) and error.filename in (str(self.tmp), self.tmp):
            raise write_error(error, self.requested) from None

    def _discard(self) -> None:
        try:
            os.unlink(self.tmp)
        except FileNotFoundError:
            pass


class AtomicFile(_Atomic):
    """``with AtomicFile(path) as handle:`` writes a temporary file claimed as ``path`` on success.

    After the block, :attr:`path` is the name used (``path``, or ``path_N`` if another run
    took ``path`` meanwhile). On failure the temporary is removed; a full disk becomes a
    one-line :class:`InputError` naming ``path``.
    """

    def __init__(self, path: Path, mode: str = "w", rename: bool = True, **kwargs: Any) -> None:
        super().__init__(path, ".tmp", rename)
        self.mode = mode
        self.kwargs = kwargs
        self.handle: IO | None = None

    def __enter__(self) -> IO:
        self.handle = open_temp(self.tmp, self.mode, **self.kwargs)
        return self.handle

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        assert self.handle is not None
        try:
            self.handle.close()
        except OSError as exc:
            if error is None:
                self._discard()
                raise write_error(exc, self.requested) from None
        self._finish(error)


class AtomicPath(_Atomic):
    """``with AtomicPath(path) as tmp:`` for writers that want a file name; claimed as ``path`` on success."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, Path(path).suffix)

    def __enter__(self) -> Path:
        return self.tmp

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._finish(error)


def atomic_write(path: Path, mode: str = "w", rename: bool = True, **kwargs: Any) -> AtomicFile:
    """Open a temporary file beside ``path``; claim ``path`` (never replacing) only on success.

    ``with atomic_write(p) as handle: ...``; keep the object to learn the name used::

        out = atomic_write(p)
        with out as handle: ...
        written = out.path

    ``rename=False``: a taken name is an error instead (files of a fixed layout).
    """
    return AtomicFile(path, mode, rename, **kwargs)


def atomic_path(path: Path) -> AtomicPath:
    """A temporary path beside ``path`` for writers that want a file name; claimed on success."""
    return AtomicPath(path)


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
    clean_stale_temporaries(path)
    return path


def timestamp(moment: float | None = None) -> str:
    """Local time as ``YYYYmmddHHMMSS`` (msProbe's file-name timestamp)."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(moment))


def unique_path(directory: Path, stem: str, suffix: str, taken: set[Path] | None = None) -> Path:
    """``directory/stem.suffix``, or ``stem_1.suffix``... when that name is already used.

    A hint only: the writers claim the name atomically (:func:`claim`) and move on to the
    next free one if a concurrent run took it in between.
    """
    candidate = directory / f"{stem}{suffix}"
    counter = 1
    while candidate.exists() or (taken is not None and candidate in taken):
        candidate = directory / f"{stem}_{counter}{suffix}"
        counter += 1
    return candidate
