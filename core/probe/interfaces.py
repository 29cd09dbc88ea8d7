"""The contracts between the pipeline and the stages: one Protocol per kind of plugin object.

This is the second layer: it imports only the data types of :mod:`probe.model` and
:mod:`probe.result`. A plugin registers objects that satisfy these protocols through the
``probe_register_*`` hooks (:mod:`probe.hookspecs`); the pipeline calls them in this order
for every :class:`~probe.model.PairPlan`::

    read (DumpReader) -> normalize (NameNormalizer) -> pair (Mapper + Pairer)
      -> measure (MetricMode.compute, TensorMetric) -> judge (MetricMode.judge via probe.judge)
      -> diagnose (Analyzer.digest) -> export (Exporter) ; then Analyzer.analyze over all pairs

Members marked *optional* may be left out; :data:`OPTIONAL_MEMBERS` lists them so that
the conformance test and the pipeline agree on what may be missing.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from probe.model import FlatDump, KeyMap, MatchContext, ModeContext, Pair, Pairing
from probe.result import CompareResult, RowResult

TensorLoader = Callable[[Path], Any]
"""Loads one tensor file into a numpy array (bfloat16/float8 converted to float32)."""

OPTIONAL_MEMBERS: dict[str, tuple[str, ...]] = {
    "DumpReader": ("tensor_loader", "stream"),
    "NameNormalizer": ("option", "also_with"),
    "Pairer": ("option",),
    "MetricMode": ("streams", "render_columns", "csv_columns"),
    "Exporter": ("open_stream",),
    "Analyzer": ("digest", "digest_stream", "prefetch"),
    "GraphRules": ("is_recompute_stack", "partial_sum_outputs"),
}
"""Members a plugin object may leave out, by protocol name."""


@runtime_checkable
class DumpReader(Protocol):
    """Recognises one dump format and reads it into plain rows (the *read* stage).

    Optional members: ``tensor_loader`` (a :data:`TensorLoader` for the tensor files this
    format keeps beside its rows); ``stream(path, with_stack) -> StreamedDump | None``, the
    dump indexed by entry and flattened a window at a time (see :mod:`probe.streaming`).
    """

    name: str

    def sniff(self, path: Path) -> bool:
        """Cheap check (name, first bytes) whether ``path`` is a dump this reader reads."""

    def load(self, path: Path, with_stack: bool = True) -> FlatDump:
        """Read the dump at ``path`` into rows in file order (and its stack info when asked).

        A reader whose plans carry ``options["reader_args"]`` also takes those keywords (e.g.
        ``rank=0, step=1`` to select part of a dump root). Raise
        :class:`probe.errors.InputError` naming the file when it is not a usable dump.
        """


@runtime_checkable
class NameNormalizer(Protocol):
    """Rewrites row matching keys of one side before pairing (the *normalize* stage).

    Optional members: ``option``, the ``dest`` name of the compare option that switches it
    on (e.g. ``"api_mapping"`` for ``-am``); without one (or ``None``) it runs whenever
    ``applies`` is true; ``also_with``, other option dest names that switch it on too (the
    API table runs with ``-lm`` as well).
    """

    name: str

    def applies(self, target_framework: str, golden_framework: str) -> bool:
        """Whether this normalizer runs for the given framework pair."""

    def normalize(self, key: str, side: str) -> str:
        """Return the canonical key for ``key`` of ``side`` (``"target"`` or ``"golden"``)."""


@runtime_checkable
class Mapper(Protocol):
    """api / cell / layer / data mapping, enabled by a compare option (feeds the pairer).

    ``build`` is called once per pair of dumps; it returns ``None`` when the mapper is not
    active, or a :class:`~probe.model.KeyMap` that rewrites target keys. Mappers are applied
    in ``priority`` order (lower first); the first map that gives a row a key wins.
    """

    name: str
    priority: int

    def build(self, ctx: MatchContext) -> KeyMap | None:
        """Prepare the mapping for one pair of dumps (read files, build tables)."""


@runtime_checkable
class Pairer(Protocol):
    """Turns two read and normalized dumps into pairs plus the unmatched rows of both sides.

    Built-ins: ``exact`` (keys equal, dtype gate) and ``fuzzy`` (``-fm``: call indices
    ignored). Optional member: ``option``, the ``dest`` name of the compare option that
    selects this pairer (``fuzzy_match`` for ``fuzzy``); a :class:`~probe.model.PairPlan`
    may also name pairers explicitly.
    """

    name: str

    def pair(self, target: FlatDump, golden: FlatDump, key_map: KeyMap | None, ctx: MatchContext) -> Pairing:
        """Pair the rows (their ``key`` already normalized); ``key_map`` is the composed mappers' map."""


@runtime_checkable
class MetricMode(Protocol):
    """A way of comparing paired rows: columns, computation, Result rules (the *measure* stage).

    Optional members: ``streams = True`` when ``compute`` and ``judge`` need nothing beyond a
    window of whole entries, so that very large dumps may be compared a window at a time;
    ``render_columns(records, with_stack) -> [column, ...]``, the report of ``records`` as one
    list per column, equal to ``render`` row by row (exporters then write whole columns);
    ``csv_columns(records, with_stack, inf_text) -> [column, ...]``, the same with some columns
    already written as CSV text (one column of joined fields), which the CSV exporter prefers;
    ``judge_entries(records, starts)``, the rules over the rows of
    many entries at once (``starts``: the index of each entry's first row), used instead of
    ``judge`` when present.
    """

    name: str

    def accepts(self, target: FlatDump, golden: FlatDump) -> bool:
        """Whether this mode is the natural one for these dumps (auto detection)."""

    def columns(self, with_stack: bool, extra_metrics: Sequence[str]) -> list[str]:
        """The full, ordered column list of the report."""

    def compute(self, pairs: Sequence[Pair], ctx: ModeContext) -> list[RowResult]:
        """Compute metrics for every pair, in order; one :class:`RowResult` each."""

    def judge(self, group: list[RowResult]) -> None:
        """Apply this mode's Result rules to the rows of one entry, in place (called by :mod:`probe.judge`)."""

    def render(self, row: RowResult, with_stack: bool) -> list[Any]:
        """Display values of one row, aligned with :meth:`columns`."""


@runtime_checkable
class TensorMetric(Protocol):
    """An extra tensor-mode column (msProbe's custom algorithms)."""

    column: str

    def __call__(self, target: Any, golden: Any) -> float | str:
        """Return the metric for one pair of numpy arrays of equal shape."""


@runtime_checkable
class Exporter(Protocol):
    """Writes a finished comparison in one format (the *export* stage).

    Optional member: ``open_stream(result, path)`` for streamed compares: ``result`` holds
    everything but the rows; the stream takes ``write(window)`` per window of rows in order,
    then ``close(result, summary) -> [paths]`` or ``abort()``; the bytes equal ``write``'s.
    """

    name: str
    suffix: str

    def write(self, result: CompareResult, path: Path) -> list[Path]:
        """Write ``result`` to ``path`` (or parts derived from it) atomically; return the files."""


@runtime_checkable
class Analyzer(Protocol):
    """Looks at the judged results of a compare and reports what they mean.

    Optional member: ``digest(request, result) -> object``. It is the *diagnose* seam: it
    is called right after a pair is judged, where the pair ran (a worker process or a
    cluster node), and ``analyze`` then receives the list of digests instead of the
    results, so whole results never travel between processes. The digest must be
    picklable and small. Optional member ``digest_stream(request, result)`` returns a
    builder of the same digest for streamed compares: ``add(window)`` per window of whole
    entries in order, then ``finish(result) -> digest``. A builder may also have ``part(window)``,
    ``skip(names)`` and ``merge(part) -> bool``, so that a copy of it in another process (forked
    before the first window) digests the windows that process judges: the copy gets ``part`` for
    its windows and ``skip`` (the target entry names) for the others, in order; the builder gets
    ``merge(part)`` for those windows in order, and ``add(window)`` when ``merge`` returns
    ``False`` (the part assumed what does not hold). The digest is the same either way. Such a builder
    may also have ``names(names)``: called before each ``merge`` with the window's target entry names
    (strings this process keeps anyway), so that what it keeps of the part can share them.
    Optional member ``prefetch(dump_file)``: a streamed compare calls it while another process
    indexes the golden dump, to read ahead what ``digest_stream`` will read beside the target
    ``dump_file`` (it must give the same digest whether called or not).
    Optional attribute ``min_plans``: the fewest pairs a compare must have for the analyzer to find
    anything (a check across ranks needs two); with fewer, no digest is made and ``analyze`` gets none.
    """

    name: str

    def enabled(self, request: Any) -> bool:
        """Whether this analyzer runs for the given :class:`probe.model.CompareRequest`."""

    def analyze(self, request: Any, results: list[Any]) -> list[Path]:
        """Analyse the results (or digests) of all pairs; return the files written."""


@dataclass
class Command:
    """A ``probe`` sub-command; ``run(args, host)`` returns the exit code."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Any], int]
    aliases: tuple[str, ...] = ()
    description: str | None = None
    epilog: str | None = None


class Registries(Protocol):
    """What the stages look up: the registries filled by the registration hooks.

    :class:`probe.plugins.Host` is the implementation; tests may pass any object with
    these attributes (each a :class:`probe.registry.Registry`).
    """

    readers: Any
    tensor_loaders: Any
    normalizers: Any
    mappers: Any
    pairers: Any
    modes: Any
    tensor_metrics: Any
    exporters: Any
    analyzers: Any


@dataclass(frozen=True)
class PartialSums:
    """Output rows of a graph node that hold partial sums over the tensor-parallel ranks."""

    rows: tuple[int, ...]
    """Indexes into the node's outputs."""
    unreduced: bool = False
    """True when the rows are partial sums even if no reduction of them was dumped (they are
    then merged as they are, with a note)."""


@runtime_checkable
class GraphRules(Protocol):
    """Framework knowledge for ``graph_visualize`` (hook ``probe_register_graph_rules``).

    Both members are optional; ``kind`` is ``"api"`` or ``"module"``.
    """

    name: str

    def is_recompute_stack(self, frames: Sequence[str]) -> bool: ...

    def partial_sum_outputs(self, name: str, kind: str, outputs: int) -> PartialSums | None: ...
