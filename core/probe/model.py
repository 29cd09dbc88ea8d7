"""Plain data types and the protocols that plugins implement.

Everything here is framework-agnostic and cheap to import.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from probe.plugins import Host
    from probe.result import CompareResult, RowResult

# Verdicts, ordered: a rule may raise a row's verdict, never lower it.
PASS, WARNING, ERROR = "pass", "warning", "error"
VERDICT_RANK = {PASS: 0, WARNING: 1, ERROR: 2}

NA = "N/A"


@dataclass(frozen=True)
class DumpInfo:
    """What a reader found out about one dump file without flattening it."""

    path: Path
    """The dump file itself (``dump.json`` / ``debug.json``)."""
    framework: str
    task: str
    level: str = ""
    kind: str = "dump"
    """``dump`` for dump.json, ``debug`` for single-point ``debug.json``."""
    reader: str = ""
    framework_declared: bool = True

    @property
    def directory(self) -> Path:
        return self.path.parent

    @property
    def tensor_dir(self) -> Path:
        """Where tensor files live: always ``<dir of dump.json>/dump_tensor_data``."""
        return self.path.parent / "dump_tensor_data"


class Row:
    """One flattened leaf (tensor, scalar, None...) of one dump entry.

    ``stats`` holds the raw Max/Min/Mean/Norm values from the dump (floats, ints, bools,
    strings or ``None``). ``shape`` and ``requires_grad`` are already display strings.
    """

    __slots__ = (
        "name",
        "entry",
        "state",
        "dtype",
        "shape",
        "stats",
        "requires_grad",
        "md5",
        "data_name",
        "extra",
        "key",
    )

    def __init__(
        self,
        name: str,
        entry: str,
        state: str,
        dtype: str,
        shape: str,
        stats: tuple[Any, Any, Any, Any],
        requires_grad: str,
        md5: str | None,
        data_name: str,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.entry = entry
        self.state = state
        self.dtype = dtype
        self.shape = shape
        self.stats = stats
        self.requires_grad = requires_grad
        self.md5 = md5
        self.data_name = data_name
        self.extra = extra
        self.key = name

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Row({self.name!r}, {self.dtype}, {self.shape})"


@dataclass
class FlatDump:
    """A dump after flattening: header, rows in output order, stack info per entry."""

    info: DumpInfo
    rows: list[Row]
    stack: dict[str, list[str]] | None = None
    has_md5: bool = False
    entry_count: int = 0
    skipped_entries: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Pair:
    """A target row and the golden row matched to it (``None`` when unmatched)."""

    target: Row
    golden: Row | None
    fuzzy: bool = False


# --------------------------------------------------------------------------------------
# plugin protocols
# --------------------------------------------------------------------------------------


@runtime_checkable
class DumpReader(Protocol):
    """Recognises dump files of one format and yields their entries."""

    name: str

    def sniff(self, path: Path) -> bool:
        """Cheap check (name, first bytes) whether ``path`` is a dump this reader reads."""

    def read(self, path: Path) -> tuple[DumpInfo, Iterator[tuple[str, Any]]]:
        """Return the dump's header and its ``(entry name, entry body)`` pairs in file order.

        Raise :class:`probe.errors.InputError` naming the file when it is not a usable dump.
        """


TensorLoader = Callable[[Path], "np.ndarray"]
"""Loads one tensor file into a numpy array (bfloat16/float8 converted to float32)."""


@runtime_checkable
class NameNormalizer(Protocol):
    """Rewrites row matching keys of one side before matching.

    A normalizer may also have an ``option`` attribute: the ``dest`` name of the compare
    option that switches it on (e.g. ``"api_mapping"`` for ``-am``); without one (or
    ``None``) it runs whenever ``applies`` is true. ``also_with`` (a tuple of dest names)
    lists other options that switch it on too (the API table runs with ``-lm`` as well).
    """

    name: str

    def applies(self, target_framework: str, golden_framework: str) -> bool:
        """Whether this normalizer runs for the given framework pair."""

    def normalize(self, key: str, side: str) -> str:
        """Return the canonical key for ``key`` of ``side`` (``"target"`` or ``"golden"``)."""


@runtime_checkable
class Mapper(Protocol):
    """api / cell / layer / data mapping, enabled by a compare option.

    ``build`` is called once per job; it returns ``None`` when the mapper is not active, or
    a :class:`KeyMap` that rewrites target keys. Mappers are applied in ``priority`` order
    (lower first); the first active one that ``exclusive``-ly owns the target key wins.
    """

    name: str
    priority: int

    def build(self, ctx: MatchContext) -> KeyMap | None:
        """Prepare the mapping for one job (read files, build tables)."""


@dataclass
class KeyMap:
    """What an active mapper does to matching.

    ``target_key`` maps a target row to the key it must meet on the golden side (return
    ``None`` to keep the default key). It is called during matching, when ``row.key`` already
    holds the row's renumbered, normalized key; several active maps are composed, the
    first that returns a key for a row deciding it. ``left_join`` turns the dtype gate off and keeps
    duplicates, as msProbe does for data mapping.
    """

    target_key: Callable[[Row], str | None]
    left_join: bool = False
    renumber_target: bool = True


@dataclass
class MatchContext:
    """Everything a mapper may look at when it is built for one job."""

    target: FlatDump
    golden: FlatDump
    options: dict[str, Any]
    host: Host | None = None


@runtime_checkable
class MetricMode(Protocol):
    """A way of comparing matched rows: columns, computation, Result rules."""

    name: str

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        """Whether this mode is the natural one for these dumps (auto detection)."""

    def columns(self, with_stack: bool, extra_metrics: Sequence[str]) -> list[str]:
        """The full, ordered column list of the report."""

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        """Compute metrics for every pair, in order; one :class:`RowResult` each."""

    def judge(self, group: list[RowResult]) -> None:
        """Apply the Result rules to the rows of one entry, in place."""

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        """Display values of one row, aligned with :meth:`columns`."""


@dataclass
class ModeContext:
    """Per-job context handed to ``MetricMode.compute``."""

    target: FlatDump
    golden: FlatDump
    options: dict[str, Any]
    host: Host | None = None
    progress: Callable[[int], None] | None = None
    jobs: int = 1
    extra_metrics: Sequence[TensorMetric] = ()


@runtime_checkable
class TensorMetric(Protocol):
    """An extra tensor-mode column (msProbe's custom algorithms)."""

    column: str

    def __call__(self, target: np.ndarray, golden: np.ndarray) -> float | str:
        """Return the metric for one pair of arrays of equal shape."""


@runtime_checkable
class Exporter(Protocol):
    """Writes a finished comparison in one format."""

    name: str
    suffix: str

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        """Write ``result`` to ``path`` (or parts derived from it) atomically; return the files."""


@runtime_checkable
class Analyzer(Protocol):
    """Looks at finished results of a compare and reports what they mean.

    An analyzer may also define ``digest(request, result) -> object``: it is then called
    where the job ran (a worker process or a cluster node) right after the result is
    computed, and ``analyze`` receives the list of digests instead of the results, so
    whole results never travel between processes. The digest must be picklable and small.
    """

    name: str

    def enabled(self, request: Any) -> bool:
        """Whether this analyzer runs for the given :class:`probe.jobs.CompareRequest`."""

    def analyze(self, request: Any, results: list[Any]) -> list[Path]:
        """Analyse the results (or digests) of all jobs; return the files written."""


@dataclass
class Command:
    """A ``probe`` sub-command."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Host], int]
    aliases: tuple[str, ...] = ()
    description: str | None = None
    epilog: str | None = None


@dataclass
class Summary:
    """Counts shown at the end of a compare."""

    rows: int = 0
    passed: int = 0
    warnings: int = 0
    errors: int = 0
    unmatched: int = 0
    golden_only: int = 0
    not_compared: int = 0
    """Matched rows whose data could not be compared (Result ``N/A``, reason in Err_message)."""
    first_error: str | None = None
    first_error_job: str | None = None
    """Label (rank/step) of the job the first error came from."""
    files: list[Path] = field(default_factory=list)

    def add(self, other: Summary) -> None:
        """Accumulate another job's summary into this one."""
        self.rows += other.rows
        self.passed += other.passed
        self.warnings += other.warnings
        self.errors += other.errors
        self.unmatched += other.unmatched
        self.golden_only += other.golden_only
        self.not_compared += other.not_compared
        if self.first_error is None and other.first_error is not None:
            self.first_error, self.first_error_job = other.first_error, other.first_error_job
        self.files.extend(other.files)
