"""Tensor (real data) mode: load both tensor files of every pair and compute metrics."""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import probe.runtime as runtime
from probe.errors import InputError
from probe.model import ERROR, NA, WARNING, FlatDump, ModeContext, Pair
from probe.modes import common
from probe.modes.stat_columns import stat_display_columns
from probe.modes.statistics import judge_group
from probe.modes.tensor_metrics import METRIC_NAMES, SHAPE_UNMATCHED, UNSUPPORTED, compare_arrays
from probe.result import RowResult

MSG_NO_NPU_FILE = "NPU does not have data file."
MSG_NO_BENCH_FILE = "Bench does not have data file."
MSG_ONE_THOUSANDTH = "error: The input/parameters of One Thousandth Err Ratio > 0.9 while the output < 0.1."
MSG_COSINE = "warning: The input/parameters of Cosine > 0.9, and input/parameters - output > 0.1"
ACCURACY_COLUMN = "Accuracy Reached or Not"
COSINE, MAX_ABS, ONE_K = 0, 2, 4
CHUNK = 64
"""Most tensor pairs sent to a worker process at once (fewer near the end, see :func:`_chunks`)."""
MIN_CHUNK = 8
PROGRESS_STEP = 16
"""Tensor pairs between two progress-bar updates."""
CLUSTER_CHUNK = 512
"""Most tensor pairs in one row range sent to a dask worker."""


def resolve_tensor_file(tensor_dir: Path, data_name: str, root: Path | None = None) -> Path:
    """``tensor_dir / data_name``, refusing names that lead out of ``tensor_dir``.

    ``root`` is ``tensor_dir.resolve()`` when the caller already has it. A plain file name
    (no separator, not a link) inside it needs one ``lstat``, not a walk of every component.
    """
    try:
        root = root or tensor_dir.resolve()
    except (OSError, RuntimeError) as exc:  # a link loop, an unreadable directory
        raise InputError(f"the tensor directory cannot be resolved ({exc})", tensor_dir) from None
    plain = _plain_file(str(root), data_name)
    if plain is not None:
        return Path(plain)
    try:
        candidate = (tensor_dir / data_name).resolve()
    except (OSError, RuntimeError) as exc:  # a link loop, an unreadable directory
        raise InputError(f"data_name {data_name!r} cannot be resolved ({exc})", tensor_dir) from None
    if os.path.isabs(data_name) or root not in candidate.parents:
        raise InputError(f"data_name {data_name!r} points outside its dump directory", tensor_dir)
    return candidate


def _plain_file(root: str, data_name: str) -> str | None:
    """``root/data_name`` when ``data_name`` is a plain file name that is not a link there
    (or nothing is there yet), found with one ``lstat``; ``None`` when the name needs the
    full walk of :func:`resolve_tensor_file`."""
    found = _plain_entry(root, data_name)
    return None if found is None else found[0]


def _plain_entry(root: str, data_name: str) -> tuple[str, bool] | None:
    """:func:`_plain_file`, and whether a regular file was there (the ``lstat`` saw one)."""
    if data_name in ("", ".", "..") or "\0" in data_name or os.path.basename(data_name) != data_name \
            or os.path.splitdrive(data_name)[0]:
        return None
    candidate = os.path.join(root, data_name)
    try:
        mode = os.lstat(candidate).st_mode
    except FileNotFoundError:
        return candidate, False  # what resolve() gives for a missing file
    except OSError:
        return None  # the general walk reports it
    if stat.S_ISLNK(mode):
        return None
    return candidate, stat.S_ISREG(mode)


LIST_MIN_FILES = CHUNK
"""Tensor files found one by one (``lstat``) on a side before its directory is listed once
for the others (and the fewest files a side must be asked for to be listed at all)."""


class _Side:
    """One dump's tensor directory, resolved once (``root`` is ``None`` when it cannot be:
    every file then reports the problem).

    With ``expected`` files to find (at least :data:`LIST_MIN_FILES`), the directory is
    listed once, at the next lookup after :data:`LIST_MIN_FILES` files were found in it one
    by one, i.e. once the first chunk of tasks is on its way to a worker (``os.scandir``: a
    few ``getdents`` for all names, where each ``lstat`` is a system call of its own); names
    the listing does not hold as plain entries (links, missing files) are looked up one by
    one, as without it.
    """

    def __init__(self, tensor_dir: Path, expected: int = 0) -> None:
        self.tensor_dir = tensor_dir
        try:
            self.root: Path | None = tensor_dir.resolve()
        except (OSError, RuntimeError):
            self.root = None
        self.root_text = None if self.root is None else str(self.root)
        self._expected = expected
        self._found = 0
        self._kinds: dict[str, bool] | None = None

    def file(self, data_name: str) -> str:
        """The path of the tensor file ``data_name`` (see :func:`resolve_tensor_file`)."""
        return self.entry(data_name)[0]

    def entry(self, data_name: str) -> tuple[str, bool]:
        """:meth:`file`, and whether it was just seen to be a regular file (``False``: not known)."""
        root = self.root_text
        if root is not None:
            if self._found == LIST_MIN_FILES:  # found one by one so far (the first chunk of tasks)
                self._kinds = _plain_entries(root, 4 * self._expected + LIST_MIN_FILES)
                self._found = -1  # listed (or given up) once
            if self._kinds is not None:
                regular = self._kinds.get(data_name)
                if regular is not None:
                    return os.path.join(root, data_name), regular
            plain = _plain_entry(root, data_name)
            if plain is not None:
                if plain[1] and self._expected >= LIST_MIN_FILES and self._found >= 0:  # the directory is searchable
                    self._found += 1
                return plain
        return str(resolve_tensor_file(self.tensor_dir, data_name, self.root)), False


def _plain_entries(root: str, limit: int) -> dict[str, bool] | None:
    """``{name: is a regular file}`` of the entries of ``root`` that are not links, as
    :func:`_plain_entry` would find each of them; ``None`` when ``root`` cannot be listed
    or holds more than ``limit`` entries (each name is then looked up alone)."""
    kinds: dict[str, bool] = {}
    try:
        with os.scandir(root) as entries:
            for entry in entries:
                if len(kinds) >= limit:
                    return None
                if not entry.is_symlink():
                    kinds[entry.name] = entry.is_file(follow_symlinks=False)
    except OSError:
        return None
    return kinds


_DIM = re.compile(r"\d+")


@functools.lru_cache(maxsize=4096)
def declared_bytes(dtype: str, shape: str) -> int | None:
    """Bytes of a tensor of the dtype and shape dump.json declares (8 per element for an
    unknown dtype); ``None`` when the shape is not a list of sizes."""
    text = str(shape).strip()
    if not (text.startswith(("[", "(")) and text.endswith(("]", ")"))):
        return None
    count = 1
    for dim in _DIM.findall(text):
        count *= int(dim)
    digits = re.search(r"(\d+)$", str(dtype).replace("bfloat16", "float16"))
    size = int(digits.group(1)) // 8 if digits and int(digits.group(1)) in (8, 16, 32, 64) else 8
    return count * max(size, 1)


@functools.lru_cache(maxsize=64)
def _accepts_max_bytes(loader: Any) -> bool:
    try:
        return "max_bytes" in inspect.signature(loader).parameters
    except (TypeError, ValueError):
        return False


def load_tensor(path: Path, loaders: Any, max_bytes: int | None = None, regular: bool = False) -> np.ndarray:
    """Load one tensor file with the loader registered for its suffix, then squeeze it.

    ``max_bytes`` (what dump.json declares for the tensor) is passed to loaders that take
    it, to bound what a compressed file may inflate to. ``regular`` says the caller has just
    seen a regular file at ``path`` (not a link): the check that loaders never get a missing
    file, a FIFO or a device is then not repeated.
    """
    loader = loaders.get(path.suffix.lower())
    if loader is None:
        raise InputError(f"no tensor loader for {path.suffix!r} files (is the framework plugin installed?)", path)
    if not regular and not path.is_file():
        raise InputError("tensor file does not exist", path)
    try:
        array = loader(path, max_bytes=max_bytes) if max_bytes is not None and _accepts_max_bytes(loader) else loader(path)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any loader failure is a problem of this file
        raise InputError(f"cannot be loaded as a tensor ({type(exc).__name__}: {exc})", path) from None
    array = np.asarray(array)
    return array.squeeze() if 1 in array.shape else array


def _path(text: str) -> Path:
    """``Path(text)``, the directory's part parsed once per process (thousands of tensor
    files share a directory; parsing the whole path each time costs more than the join)."""
    head, sep, tail = text.rpartition(os.sep)
    if not head or text.startswith("//") or tail in ("", ".", ".."):
        return Path(text)  # no directory, or a root whose spelling the join would change
    return _directory(head) / tail


@functools.lru_cache(maxsize=64)
def _directory(text: str) -> Path:
    return Path(text)


def _compute_one(task: tuple[str | None, str | None], loaders: Any, extra: Sequence[Any]) -> tuple[tuple, list[str], str | None]:
    """Metrics for one (npu file, bench file) task; a third element names an input problem.

    A task may go on with both files' declared sizes and whether both were seen to be
    regular files when the task was made (see :meth:`TensorMode._task`).
    """
    npu_file, bench_file, *rest = task
    npu_bytes, bench_bytes = rest[:2] if rest else (None, None)
    regular = len(rest) > 2 and rest[2] is True
    try:
        n = load_tensor(_path(npu_file), loaders, npu_bytes, regular)
        b = load_tensor(_path(bench_file), loaders, bench_bytes, regular)
    except InputError as exc:
        return (UNSUPPORTED,) * (6 + len(extra)), [str(exc)], str(exc)
    metrics, messages = compare_arrays(n, b)
    extra_values = []
    for metric in extra:
        if n.shape != b.shape or n.size == 0:
            extra_values.append(UNSUPPORTED)
            continue
        try:
            extra_values.append(metric(n, b))
        except Exception:  # noqa: BLE001 - a custom metric failure only affects its cell
            extra_values.append(UNSUPPORTED)
    return tuple(metrics) + tuple(extra_values), messages, None


def _compute_chunk(tasks: list[tuple[str | None, str | None]], loaders: Mapping[str, Any], extra: Sequence[Any]) -> list:
    return [_compute_one(task, loaders, extra) for task in tasks]


def _comparable(pair: Pair) -> bool:
    """Whether ``pair`` has two tensor files to compare (a task, unless a name is refused)."""
    return pair.golden is not None and pair.target.data_name != "-1" and pair.golden.data_name != "-1"


def _chunks(items: Iterator[Any], expected: int, workers: int) -> Iterator[list[Any]]:
    """``items`` in lists taken as they come: :data:`CHUNK` at a time while plenty remain,
    then smaller ones (down to :data:`MIN_CHUNK`), so that the workers finish together."""
    remaining = expected
    while True:
        size = max(MIN_CHUNK, min(CHUNK, remaining // (2 * workers)))
        chunk = list(itertools.islice(items, size))
        if not chunk:
            return
        remaining -= len(chunk)
        yield chunk


class TensorMode:
    """Compare real tensor data saved next to dump.json (``.pt``, ``.npy``...)."""

    name = "tensor"

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        return target.info.task == "tensor"

    def columns(self, with_stack: bool, extra_metrics: Sequence[str]) -> list[str]:
        cols = common.COMMON_COLUMNS + list(METRIC_NAMES) + list(extra_metrics)
        cols += common.STAT_COLUMNS + common.TAIL_COLUMNS
        if with_stack:
            cols.append(common.STACK_COLUMN)
        return cols + ["Data_name", ACCURACY_COLUMN]

    def _task(self, pair: Pair, sides: tuple[_Side, _Side]) -> tuple[Any, ...] | str:
        """Files to compare, or the reason the pair cannot be compared."""
        t, g = pair.target, pair.golden
        if g is None:
            return common.MSG_UNMATCHED
        if t.data_name == "-1":
            return MSG_NO_NPU_FILE
        if g.data_name == "-1":
            return MSG_NO_BENCH_FILE
        try:
            npu, npu_regular = sides[0].entry(t.data_name)
            bench, bench_regular = sides[1].entry(g.data_name)
        except InputError as exc:
            return str(exc)
        return (npu, bench, declared_bytes(str(t.dtype), str(t.shape)), declared_bytes(str(g.dtype), str(g.shape)),
                npu_regular and bench_regular)

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        width = 6 + len(ctx.extra_metrics)
        results: list[RowResult] = []
        slots: list[int] = []
        expected = sum(map(_comparable, pairs))
        sides = (_Side(ctx.target.info.tensor_dir, expected), _Side(ctx.golden.info.tensor_dir, expected))

        def tasks() -> Iterator[tuple[Any, ...]]:
            """Each pair's task, made as the workers ask for work (its record beside it)."""
            for index, pair in enumerate(pairs):
                task = self._task(pair, sides)
                if isinstance(task, str):
                    record = RowResult(pair, (UNSUPPORTED,) * width)
                    if task != common.MSG_UNMATCHED:
                        record.notes.append(task)
                        if "points outside" in task or "cannot be resolved" in task:
                            record.extra["problem"] = task
                            record.mark_not_compared(common.NOT_COMPARED + task)
                    results.append(record)
                else:
                    results.append(RowResult(pair, ()))
                    slots.append(index)
                    yield task

        outcomes = self._run_tasks(tasks(), expected, ctx)
        # each outcome is filed as its chunk comes back (while the workers go on), after
        # its task was made: slots[k] exists once the k-th outcome arrives
        for k, (metrics, messages, problem) in enumerate(outcomes):
            record = results[slots[k]]
            record.metrics = metrics
            record.notes.extend(messages)
            if record.pair.fuzzy:
                record.notes.append("Fuzzy matching data, the comparison accuracy may be affected.")
            if problem:
                record.extra["problem"] = problem
                record.mark_not_compared(common.NOT_COMPARED + problem)
            elif metrics and metrics[0] == SHAPE_UNMATCHED and record.pair.target.shape == record.pair.golden.shape:
                record.mark_not_compared(f"{common.NOT_COMPARED}the tensor files' shapes differ although "
                                         f"dump.json gives both {record.pair.target.shape}")
        if ctx.progress and len(pairs) > len(slots):
            ctx.progress(len(pairs) - len(slots))
        return results

    def _run_tasks(self, tasks: Iterator[tuple[Any, ...]], expected: int, ctx: ModeContext) -> Iterator[tuple]:
        """Every task's outcome, in order, yielded as it is known; ``tasks`` is consumed as
        work is handed out (workers start on the first chunk while the later ones are still
        being made)."""
        extra = list(ctx.extra_metrics)
        loaders = dict(ctx.tensor_loaders)
        if ctx.options.get("executor") == "dask" and expected and runtime.picklable([loaders, extra]):
            yield from self._run_on_cluster(list(tasks), ctx, loaders, extra)
            return
        if ctx.jobs <= 1 or expected < 2 * CHUNK or not runtime.picklable([loaders, extra]):
            pending = 0
            for task in tasks:
                yield _compute_one(task, loaders, extra)
                pending += 1
                if ctx.progress and pending == PROGRESS_STEP:
                    ctx.progress(pending)
                    pending = 0
            if ctx.progress and pending:
                ctx.progress(pending)
            return
        for chunk_result in runtime.parallel_map(_compute_chunk, _chunks(tasks, expected, ctx.jobs), loaders, extra,
                                                 workers=ctx.jobs):
            yield from chunk_result
            if ctx.progress:
                ctx.progress(len(chunk_result))

    @staticmethod
    def _run_on_cluster(tasks: list[tuple[str, str]], ctx: ModeContext, loaders: dict[str, Any],
                        extra: list[Any]) -> Iterator[tuple]:
        """Split one rank's pairs into row ranges over a dask cluster (``--executor dask``).

        Each range is a list of (npu file, bench file) paths, so every worker must see the
        dump directories at the same paths (a shared file system). Results come back in
        range order: the report is the same as a serial run's.
        """
        workers = max(1, ctx.jobs)
        size = max(1, min(CLUSTER_CHUNK, -(-len(tasks) // (4 * workers))))
        ranges = [tasks[i : i + size] for i in range(0, len(tasks), size)]
        for chunk_result in runtime.parallel_map(_compute_chunk, ranges, loaders, extra, workers=workers,
                                                 executor="dask", address=ctx.options.get("scheduler")):
            yield from chunk_result
            if ctx.progress:
                ctx.progress(len(chunk_result))

    def judge(self, group: list[RowResult]) -> None:
        judge_group(group, _cross_rules)
        for r in group:
            r.extra[ACCURACY_COLUMN] = accuracy_reached(r)

    def render_columns(self, records: Sequence[RowResult], with_stack: bool) -> list[list[Any]]:
        """The report as columns: what :meth:`render` gives row by row (every record of a
        tensor compare has the same number of metrics)."""
        columns = common.common_columns(records)
        columns.extend(map(list, zip(*[r.metrics for r in records])))
        columns.extend(common.stat_columns(records, stat_display_columns))
        columns.extend(common.tail_columns(records, with_stack))
        columns.append([str([r.pair.target.data_name, NA if r.pair.golden is None else r.pair.golden.data_name])
                        for r in records])
        columns.append([r.extra.get(ACCURACY_COLUMN, "") for r in records])
        return columns

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        cells = common.render_cells(row, with_stack)
        t, g = row.pair.target, row.pair.golden
        cells.append(str([t.data_name, NA if g is None else g.data_name]))
        cells.append(row.extra.get(ACCURACY_COLUMN, ""))
        return cells


def _number(value: Any) -> float | None:
    if value.__class__ is float:  # most metrics: the conversion below would give it back
        return value
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _min_metric(rows: list[RowResult], index: int) -> tuple[float, RowResult | None]:
    best, owner = 1.0, None
    for r in rows:
        metrics = r.metrics
        if len(metrics) > index:
            value = _number(metrics[index])
            if value is not None and (owner is None or value < best):
                best, owner = value, r
    return best, owner


def _cross_rules(inputs: list[RowResult], outputs: list[RowResult]) -> tuple[list, list]:
    early, late = [], []
    in_ratio, _ = _min_metric(inputs, ONE_K)
    out_ratio, worst = _min_metric(outputs, ONE_K)
    if in_ratio > 0.9 and out_ratio < 0.1 and worst is not None:
        early.append((worst, ERROR, MSG_ONE_THOUSANDTH))
    in_cos, _ = _min_metric(inputs, COSINE)
    out_cos, worst = _min_metric(outputs, COSINE)
    if in_cos > 0.9 and in_cos - out_cos > 0.1 and worst is not None:
        late.append((worst, WARNING, MSG_COSINE))
    return early, late


def accuracy_reached(row: RowResult) -> str:
    """The legacy ``Accuracy Reached or Not`` verdict: Yes / No / None / Unmatched."""
    if row.pair.golden is None:
        return "Unmatched"
    cos = row.metrics[COSINE] if row.metrics else UNSUPPORTED
    max_abs = row.metrics[MAX_ABS] if len(row.metrics) > MAX_ABS else UNSUPPORTED
    if cos == "shape unmatched":
        return "Unmatched"
    if cos == NA or max_abs == NA:
        return "No"
    c, m = _number(cos), _number(max_abs)
    if c is None or m is None:
        return "None"
    if (c < 0.99 and m > 0.001) or c < 0.9 or m > 1:
        return "No"
    return "Yes"
