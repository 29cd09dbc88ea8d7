"""Run one piece of a job on the second core: a forked child computes while the parent works.

A job is mostly single-threaded Python. Where two pieces of the work are independent (the
two dump files, the two halves of a CSV report), :func:`start` forks a child that runs one
of them while the parent runs the other. The child inherits everything it needs by fork
(copy-on-write, nothing is pickled on the way in) and sends its return value back through
a pipe, pickled; keep that value compact (a few lists, not a million objects).

Forking is not free: Python touches the reference count of every object it reads, so each
page of the parent's heap that the child reads gets copied (about 0.5 s of system time
for a 500k-row result on a virtual machine). It pays off only for large pieces of work,
and only when a second core is actually idle.

Forking is used only where it is safe and useful: on POSIX systems, with at least two
usable CPUs, in the main process (never inside a process-pool or cluster worker, which
already has a core of its own) and unless ``PROBE_FORK=0`` is set. Otherwise the function
simply runs in the calling process when its result is asked for.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable
from typing import Any

from probe.errors import ProbeError


def allowed() -> bool:
    """Whether :func:`start` may fork (see the module docstring)."""
    if not hasattr(os, "fork") or os.environ.get("PROBE_FORK", "1") == "0":
        return False
    if multiprocessing.parent_process() is not None:
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - platforms without affinity
        cpus = os.cpu_count() or 1
    return cpus >= 2


class Task:
    """A function call running in a forked child (or deferred, when forking is not allowed)."""

    def __init__(self, func: Callable[..., Any], *args: Any) -> None:
        self._call: tuple[Callable[..., Any], tuple[Any, ...]] | None = None
        self._pid = 0
        self._fd = -1
        if not allowed():
            self._call = (func, args)
            return
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run, send the outcome, leave without running parent cleanups
            os.close(read_fd)
            _child(write_fd, func, args)
        os.close(write_fd)
        self._pid, self._fd = pid, read_fd

    def result(self) -> Any:
        """Wait for the call and return its value; an exception in the child is raised here."""
        if self._call is not None:
            func, args = self._call
            self._call = None
            return func(*args)
        with os.fdopen(self._fd, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0  # reaped: cancel() must not signal the id again
        if not data:
            raise ProbeError(f"a worker process ended without a result (status {status})")
        # our own child's answer, written just above by _child: not user data
        ok, value = pickle.loads(data)  # noqa: S301
        del data  # the caller may build a lot from ``value``: free the bytes first
        if not ok:
            raise value
        return value

    def cancel(self) -> None:
        """Stop the child and drop its outcome (used when the parent fails first)."""
        if self._pid:
            os.kill(self._pid, signal.SIGKILL)  # our own child, by its id
            os.close(self._fd)
            os.waitpid(self._pid, 0)
            self._pid = 0
        self._call = None


def _child(write_fd: int, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Body of the forked child; never returns."""
    status = 0
    try:
        try:
            payload = pickle.dumps((True, func(*args)), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            status = 1
            try:
                payload = pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                payload = pickle.dumps((False, ProbeError(f"{type(exc).__name__}: {exc}")))
        with os.fdopen(write_fd, "wb") as pipe:
            pipe.write(payload)
    finally:
        os._exit(status)


def start(func: Callable[..., Any], *args: Any) -> Task:
    """Start ``func(*args)`` in a forked child when allowed; ``.result()`` gives its value."""
    return Task(func, *args)
