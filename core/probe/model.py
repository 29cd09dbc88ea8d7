"""Plain data types: rows, dumps, pairs, requests and plans (the bottom layer).

Everything here is framework-agnostic, cheap to import and picklable; nothing here knows
the plugin manager. The protocols that plugins implement are in :mod:`probe.interfaces`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    ``key`` is what pairing matches on (the name unless given; see :func:`probe.match.assign_keys`).
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
        key: str | None = None,
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
        self.key = name if key is None else key

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Row({self.name!r}, {self.dtype}, {self.shape})"


class RowList(list):
    """A list of rows that also remembers whether any tensor leaf carried an ``md5``, the
    most rows a reader may put in it (``limit``), whether their keys are set (``keyed``) and
    whether some row is named by its file (``named``)."""

    has_md5 = False
    limit = sys.maxsize
    keyed = False
    """Set by a reader whose rows' keys are already those :func:`probe.match.assign_keys`
    gives with renumbering (cleared by the first ``assign_keys``)."""
    named = False
    """Set by a reader when some row is named by its file (``data_name``) rather than its entry."""


@dataclass
class FlatDump:
    """A dump after flattening: header, rows in output order, stack info per entry."""

    info: DumpInfo
    rows: list[Row]
    stack: dict[str, list[str]] | None = None
    has_md5: bool = False
    entry_count: int = 0
    skipped_entries: list[str] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    """Every entry name read, in file order, including entries that gave no rows (readers
    that leave it empty: the entries are those of ``rows``)."""

    def entry_names(self) -> list[str]:
        """The entry names in file order (from ``entries``, else from the rows)."""
        return self.entries or list(dict.fromkeys(row.entry for row in self.rows))


@dataclass(slots=True)
class Pair:
    """A target row and the golden row matched to it (``None`` when unmatched)."""

    target: Row
    golden: Row | None
    fuzzy: bool = False


@dataclass
class Pairing:
    """What a pairer returns: pairs in target order and the golden rows nothing matched.

    A target row without a golden counterpart is a :class:`Pair` whose ``golden`` is
    ``None``; ``golden_only`` counts the golden rows no target row met (``golden_rows``
    names them when the pairer kept them).
    """

    pairs: list[Pair]
    golden_only: int = 0
    golden_rows: list[Row] | None = None


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
    """Everything a mapper or pairer may look at for one pair of dumps.

    ``normalizers`` are the registered name normalizers (all of them, whether or not they
    apply), so a mapper can look for the tables of its framework pair.
    """

    target: FlatDump
    golden: FlatDump
    options: dict[str, Any]
    normalizers: Sequence[Any] = ()


@dataclass
class ModeContext:
    """Per-pair context handed to ``MetricMode.compute``.

    ``tensor_loaders`` maps a file suffix (``".pt"``) to its loader; ``parallel`` runs
    independent pieces of work (see :func:`probe.runtime.parallel_map`) and is set by the
    pipeline; modes never start processes themselves.
    """

    target: FlatDump
    golden: FlatDump
    options: dict[str, Any]
    tensor_loaders: Mapping[str, Any] = field(default_factory=dict)
    progress: Callable[[int], None] | None = None
    jobs: int = 1
    extra_metrics: Sequence[Any] = ()


@dataclass
class CompareRequest:
    """Everything ``probe compare`` was asked to do, as plain data.

    ``options`` holds every compare option by its ``dest`` name, including those added by
    plugins through ``probe_add_compare_options`` (e.g. ``fuzzy_match``, ``data_mapping``,
    ``rank``, ``step``).
    """

    target: Path
    golden: Path
    output_dir: Path | None = None
    framework: str | None = None
    formats: tuple[str, ...] = ("csv",)
    jobs: int = 1
    options: dict[str, Any] = field(default_factory=dict)

    def option(self, name: str, default: Any = None) -> Any:
        """An option value, or ``default`` when it was not given."""
        value = self.options.get(name)
        return default if value is None else value


@dataclass(frozen=True)
class PairPlan:
    """One pair of sources to compare, as data: what ``probe_plan_compare`` returns.

    The pipeline runs every plan the same way: read (``reader`` / ``golden_reader``, or the
    first registered reader whose ``sniff`` accepts the source) -> normalize -> pair
    (``pairers``, or the default chosen by the options) -> measure (``mode``, or the first
    mode that ``accepts`` the dumps) -> judge -> diagnose -> export (``output_stem`` in
    ``output_subdir``). Plans are small and picklable: they travel to worker processes.
    """

    label: str
    """Short name shown in progress bars and logs (``rank0``, ``step1/rank3``, ``dump.json``)."""
    target: Path
    golden: Path
    output_stem: str = "compare_result"
    """File name without timestamp and suffix, e.g. ``compare_result_rank0``."""
    output_subdir: str = ""
    """Sub-folder of the output dir for this pair's files (``""`` for none)."""
    rank: int | None = None
    step: int | None = None
    reader: str | None = None
    golden_reader: str | None = None
    """Reader of the golden side when it differs from ``reader`` (``None``: same rule as the target)."""
    pairers: tuple[str, ...] = ()
    """Pairers to apply in order (``()``: the default, ``exact`` or ``fuzzy`` by the options)."""
    mode: str | None = None
    """Metric mode name (``None``: ``--metric-mode``, else the first mode that accepts the dumps)."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Options that override the request's for this pair only. ``options["reader_args"]``, a
    mapping, is passed to both readers' ``load`` as keyword arguments (e.g. the rank and step
    a kernel-dump reader selects under the dump root)."""

    @property
    def golden_reader_name(self) -> str | None:
        return self.golden_reader if self.golden_reader is not None else self.reader


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
