"""A dump.json read a window of entries at a time (streamed compares of very large dumps)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

from probe.errors import InputError, NotStreamable
from probe.formats.msprobe.flatten import entry_kind, flatten_entries
from probe.memberindex import MemberIndex
from probe.model import DumpInfo, FlatDump, RowList


PARSE_BYTES = 1 << 20
"""Windows parse their entries about this much text at a time, flattening each run before
parsing the next: the parsed tree stays small (50k-API pair, window 8192: 205 MB peak with
whole windows, 182 MB with 256 KiB runs, 174 MB with 1 MiB runs; window 1024: 129, 135, 129)."""


@dataclass
class StreamedDump:
    """A dump whose entries are flattened on demand, by ordinal (file order).

    ``has_md5`` is a hint from the first bytes of the entries (an ``"md5"`` key); the compare
    checks it against the rows it flattens. Any problem in the entries raises
    :class:`NotStreamable`, so that reading the dump whole reports it exactly as a compare of
    the whole dump would.
    """

    info: DumpInfo
    index: MemberIndex
    stack: dict[str, list[str]] | None = None
    has_md5: bool = False
    skipped: list[str] | None = None
    """:attr:`skipped_entries` once known (given, or computed when first asked for)."""

    @property
    def names(self) -> Sequence[str]:
        return self.index.names

    @property
    def skipped_entries(self) -> list[str]:
        """The entry names a compare skips (:func:`skipped_names`)."""
        if self.skipped is None:
            self.skipped = skipped_names(self.names)
        return self.skipped

    def header(self) -> FlatDump:
        """The dump without rows (what the stages before pairing look at)."""
        dump = FlatDump(info=self.info, rows=RowList(), stack=self.stack, entry_count=len(self.index))
        dump.has_md5 = self.has_md5
        dump.skipped_entries = self.skipped_entries
        return dump

    def rows(self, lo: int, hi: int, renames: Mapping[str, str]) -> RowList:
        """The rows of entries ``lo:hi``, keyed with backward entries renamed by ``renames``."""
        return self._flatten(self.index.spans(lo, hi, PARSE_BYTES), renames)

    def rows_of(self, ordinals: Sequence[int], renames: Mapping[str, str]) -> RowList:
        """The rows of the entries of sorted ``ordinals``, keyed as :meth:`rows` keys them."""
        return self._flatten(self.index.runs(ordinals, PARSE_BYTES), renames)

    def _flatten(self, runs: Iterable[tuple[int, int]], renames: Mapping[str, str]) -> RowList:
        try:
            rows = flatten_entries(self._entries(runs), renames=renames)[0]
        except InputError as exc:
            raise NotStreamable(str(exc)) from None
        if rows.named:  # keys no longer start with their entries' names
            raise NotStreamable(f"{self.info.path}: rows named by their data_name")
        return rows

    def _entries(self, runs: Iterable[tuple[int, int]]) -> Iterator[tuple[str, object]]:
        """The entries of ``runs``, parsed a run at a time (see :data:`PARSE_BYTES`)."""
        return chain.from_iterable(map(self._parsed, runs))

    def _parsed(self, run: tuple[int, int]) -> list[tuple[str, object]]:
        entries = self.index.parse(*run)
        if entries is None:
            raise NotStreamable(f"{self.info.path}: entries do not parse piece by piece")
        return entries


def skipped_names(names: Sequence[str]) -> list[str]:
    """Entry names a dump.json compare skips (they do not look like dump entries)."""
    return [name for name in names if entry_kind(name) is None]
