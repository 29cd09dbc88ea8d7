"""The one place where probe runs work concurrently; domain code only says what is independent.

* :func:`run_each` runs independent units (one per :class:`~probe.model.PairPlan`) serially,
  in a local process pool, or on a dask cluster (``--executor dask``, beyond one machine);
* :func:`parallel_map` spreads independent chunks of one unit (tensor files) over processes;
* :func:`start` runs one of two independent halves in a forked child (the *fork pair*);
* :func:`gc_paused` switches the cyclic garbage collector off around a unit of work.

Fork pair
---------
A unit is mostly single-threaded Python. Where two pieces of the work are independent (the
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

import functools
import gc
import itertools
import os
import pickle
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from probe.errors import InputError, ProbeError

EXECUTORS = ("process", "dask")


def allowed() -> bool:
    """Whether :func:`start` may fork (see the module docstring)."""
    if not hasattr(os, "fork") or os.environ.get("PROBE_FORK", "1") == "0":
        return False
    # a multiprocessing child has the module imported (its bootstrap did it): never imported here for this test
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.parent_process() is not None:
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
        outcome = None
        with os.fdopen(self._fd, "rb") as pipe:
            try:  # unpickled as it arrives: the whole pickle never sits in memory
                # our own child's answer, written by _child: not user data
                outcome = pickle.load(pipe)  # noqa: S301
            except (EOFError, pickle.UnpicklingError):
                pass
        _, status = os.waitpid(self._pid, 0)
        self._pid = 0  # reaped: cancel() must not signal the id again
        if outcome is None:
            raise ProbeError(f"a worker process ended without a result (status {status})")
        ok, value = outcome
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
        with os.fdopen(write_fd, "wb") as pipe:
            try:
                value = func(*args)
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
                status = 1
                try:
                    payload = pickle.dumps((False, exc), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception:  # noqa: BLE001 - an exception that does not pickle
                    payload = pickle.dumps((False, ProbeError(f"{type(exc).__name__}: {exc}")))
                pipe.write(payload)
            else:  # pickled straight into the pipe, never whole in memory (a result that
                # fails to pickle half-way reaches the parent as a child without a result)
                pickle.dump((True, value), pipe, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        os._exit(status)


def start(func: Callable[..., Any], *args: Any) -> Task:
    """Start ``func(*args)`` in a forked child when allowed; ``.result()`` gives its value."""
    return Task(func, *args)


# --------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------


def release_memory() -> None:
    """Give the C heap's free pages back to the system (glibc only; elsewhere nothing).

    Reading a dump frees about as much as it keeps, in pieces scattered over the heap; the
    freed pages stay in the process until trimmed. Trimming between stages keeps the peak
    of a whole compare lower, for a few milliseconds.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` on other systems and C libraries."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # imported when first needed: start-up time

    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


# --------------------------------------------------------------------------------------
# garbage collector
# --------------------------------------------------------------------------------------


@contextmanager
def gc_off() -> Iterator[None]:
    """Switch the cyclic garbage collector off for a short block (e.g. parsing a tree without cycles)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Switch the cyclic garbage collector off for a block.

    A unit allocates millions of small acyclic objects (rows, pairs, results); the
    collector would scan them again and again for cycles that do not exist, which costs
    about a quarter of the run time. Reference counting still frees everything.

    On leaving, the objects still alive are frozen (``gc.freeze``) before the collector is
    switched back on: they all count as new, and the first collection would otherwise walk
    the whole result (about 2 s at 1M rows) while the analyzers run. They are unfrozen on
    entering the next block, so nothing stays out of the collector's reach for long.
    """
    enabled = gc.isenabled()
    gc.disable()
    gc.unfreeze()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


# --------------------------------------------------------------------------------------
# independent units: serial, process pool, dask
# --------------------------------------------------------------------------------------


def picklable(items: Sequence[Any]) -> bool:
    """Whether ``items`` can travel to a worker process."""
    try:
        pickle.dumps(list(items))
    except Exception:  # noqa: BLE001 - any object that refuses to pickle
        return False
    return True


def run_each(
    func: Callable[..., Any],
    units: Sequence[Any],
    *args: Any,
    workers: int = 1,
    executor: str = "process",
    address: str | None = None,
    local: Callable[[Any], Any] | None = None,
) -> Iterator[Any]:
    """Yield ``func(unit, *args)`` for every unit, in order.

    With ``executor="dask"`` the calls run on a dask cluster (``address``, else
    ``DASK_SCHEDULER_ADDRESS``, else a local cluster of ``workers`` processes). Otherwise
    they run in a pool of ``workers`` local processes when there are several units and
    everything pickles, and in this process (through ``local(unit)`` when given, which may
    use objects that do not pickle) when not.
    """
    if executor == "dask":
        yield from _dask_each(func, units, args, workers, address)
        return
    if executor != "process":
        raise InputError(f"unknown executor {executor!r} (choose process or dask)")
    workers = min(workers, len(units))
    if workers > 1 and picklable(units):
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(func, unit, *args) for unit in units]
            for future in futures:
                yield future.result()
        return
    for unit in units:
        yield local(unit) if local is not None else func(unit, *args)


def _dask_each(func: Callable[..., Any], units: Sequence[Any], args: tuple[Any, ...], workers: int,
               address: str | None) -> Iterator[Any]:
    """``run_each`` on a dask cluster; every worker writes its own report files."""
    with _dask_client(workers, address) as client:
        futures = [client.submit(func, unit, *args, pure=False) for unit in units]
        for future in futures:
            yield future.result()


@contextmanager
def _dask_client(workers: int, address: str | None) -> Iterator[Any]:
    """A dask client of the cluster at ``address`` (else ``DASK_SCHEDULER_ADDRESS``, else a
    local cluster of ``workers`` single-threaded processes, closed on leaving)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--executor dask needs dask: pip install 'probe[dask]'") from None
    address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=True,
                               dashboard_address=None)
        client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def parallel_map(func: Callable[..., list[Any]], chunks: Iterable[Any], *args: Any, workers: int = 1,
                 executor: str = "process", address: str | None = None) -> Iterator[list[Any]]:
    """Yield ``func(chunk, *args)`` for every chunk, in order, over up to ``workers`` processes.

    ``func`` and ``args`` must pickle (module-level functions, plain data); chunks run in
    this process when ``workers`` is 1 or there is a single chunk. ``chunks`` may be an
    iterator: each chunk then goes to a worker as soon as it is made, so the workers start
    while later chunks are still being prepared. With ``executor="dask"``
    the chunks (e.g. row ranges of one huge rank) run on a dask cluster (``address``, else
    ``DASK_SCHEDULER_ADDRESS``, else a local cluster of ``workers`` processes); results
    still come back in chunk order, so the report equals a serial run's.
    """
    if executor == "dask":
        chunks = chunks if isinstance(chunks, Sequence) else list(chunks)
        if chunks:
            with _dask_client(workers, address) as client:
                futures = [client.submit(func, chunk, *args, pure=False) for chunk in chunks]
                for future in futures:
                    yield future.result()
            return
    if workers <= 1 or (isinstance(chunks, Sequence) and len(chunks) < 2):
        for chunk in chunks:
            yield func(chunk, *args)
        return
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=workers)
    try:  # map submits each chunk as it is made
        yield from pool.map(func, chunks, *[itertools.repeat(a) for a in args])
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=False)  # every result is in: the idle workers exit while the caller goes on
