"""Exact pairing of a target dump read a window of entries at a time against an indexed golden dump.

The golden side keeps only its entry names and their byte offsets (:mod:`probe.memberindex`),
the hashes of its entry keys and the call numbers of its backward entries; for each target
window it flattens just the golden entries whose rows can share a key with the window's rows,
pairs them with :func:`probe.match.match_exact` and remembers which golden rows met a target
row, so that the golden rows no target row met are counted at the end.

Why this equals pairing the whole dumps: without normalizers, mappers or ``data_name``
renames, a row's key is its entry's (renumbered) name followed by ``.input...``,
``.output...``, ``.parameters...`` or a parameter name, so two rows share a key only when
their entries' keys are equal or one is a dotted prefix of the other (:func:`nested_prefixes`).
Backward renumbering counts entries with rows only; a renumbered entry without rows would
shift later numbers, so it stops the streamed compare (:class:`NotStreamable`).
"""

from __future__ import annotations

from array import array
from collections import defaultdict, deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import groupby
from operator import ne
from typing import Any

from probe.errors import NotStreamable
from probe.formats.msprobe.stream import StreamedDump, skipped_names
from probe.formats.msprobe.names import backward_stem, renumbered
from probe.match import backward_numbers, backward_renames, match_exact
from probe.memberindex import JoinedNames, joined_names
from probe.model import Pair, Row, RowList
from probe.strhash import ForkLocal, lookup, string_hashes

WINDOW_BYTES = 64 << 20
"""A window holds at most this much dump text (besides its entry count), so that a dump of
few, very large entries stays bounded too."""
_KINDS = ("forward", "backward", "parameters_grad")
_HEADS = ("input", "output", "parameters")


def nested_prefixes(key: str) -> list[str]:
    """Dotted proper prefixes of an entry key that are entry keys whose rows ``key``'s rows could
    share keys with (a prefix followed by ``input``/``output``/``parameters``, or a parameter-gradient
    entry); empty for every name msProbe writes."""
    if not (".input." in key or ".output." in key or ".parameters." in key or ".parameters_grad." in key):
        return []
    parts = key.split(".")
    found = []
    for i in range(3, len(parts)):
        if (parts[i - 1] in _KINDS or parts[i - 2] in _KINDS) and (
                parts[i] in _HEADS or "parameters_grad" in (parts[i - 1], parts[i - 2])):
            found.append(".".join(parts[:i]))
    return found


def entry_keys(names: Sequence[str]) -> tuple[list[str], array, list[str]]:
    """All entry names of a dump: their keys, with backward entries renumbered as
    :func:`probe.match.backward_renames` renumbers the whole dump; each backward entry's number
    (``-1`` for the others); and :func:`~probe.formats.msprobe.stream.skipped_names`."""
    keys = list(names)
    numbers = array("i", [-1]) * len(names)
    for position, stem, api, number in backward_numbers(names, {}):
        numbers[position] = number
        keys[position] = renumbered(stem, api, number)
    return keys, numbers, skipped_names(names)


def nestings(keys: Sequence[str]) -> Iterator[tuple[int, str]]:
    """``(position, prefix)`` of each of the :func:`nested_prefixes` of ``keys`` (a cheap test
    passes over the many keys that have none)."""
    for position, key in enumerate(keys):
        if ".input." in key or ".output." in key or ".parameters" in key:  # nested_prefixes' own test, looser
            for prefix in nested_prefixes(key):
                yield position, prefix


def _popcount(mask: int) -> int:
    return bin(mask).count("1")


ALL_MET = -1
"""The mask of a mark whose entry's rows were all met (whatever their number)."""


class GoldenIndex(ForkLocal):
    """The golden side of a streamed compare: entry keys -> ordinals, and which rows were met."""

    _HOLDS = "a golden index"

    def __init__(self, dump: StreamedDump) -> None:
        import numpy as np  # not at start-up

        self.dump = dump
        names = dump.names
        count = len(names)
        keys, self.numbers, dump.skipped = entry_keys(names)
        """Each backward entry's number among those of its stem (the call index of its key); -1 for others."""
        dump.index.names = joined_names(names)  # only a window's golden entries are named at a time
        # entry keys by their hashes (sorted) rather than in a dict: 12 bytes an entry, no strings kept
        hashes = string_hashes(keys, count)
        order = np.argsort(hashes)  # any order of equal hashes: they stop the streamed compare below
        self.order = order.astype(np.int32) if count < 1 << 31 else order
        self.hashes = hashes[order]
        if count > 1 and bool((self.hashes[1:] == self.hashes[:-1]).any()):
            raise NotStreamable(f"{dump.info.path}: entry keys repeat once renumbered")
        # the entries nested in another's key, by the hash of that key (sorted): no strings kept
        nested = list(nestings(keys))
        prefixes = np.fromiter((hash(prefix) for _, prefix in nested), np.int64, len(nested))
        by_prefix = np.argsort(prefixes, kind="stable")
        self.nested = prefixes[by_prefix]
        """The hashes of the keys other entries are nested in (see :func:`nested_prefixes`), sorted."""
        self.nested_ordinals = np.array([index for index, _ in nested], np.int64)[by_prefix]
        """The ordinal of the entry nested in each key of :attr:`nested`."""
        self.touched = bytearray(count)
        self.partial: dict[int, int] = {}
        """Touched entries some of whose rows no target row met yet: bit mask of those rows."""
        self.golden_only = 0
        self.has_md5 = False
        self.log: list[tuple[int, int, int]] | None = None
        """When a list, :meth:`settle` also adds its marks to it (for another process to apply)."""

    def ordinals(self, keys: Sequence[str]) -> list[int]:
        """Ordinals of the golden entries keyed by any of ``keys`` (looked up by hash: a hash two
        different strings share, never seen in practice, would at most add an entry whose rows
        then meet no key; hashes are this process's, which the forked child shares)."""
        if not keys or not len(self.hashes):
            return []
        at, hit = lookup(self.hashes, string_hashes(keys, len(keys)))
        return self.order[at[hit]].tolist()

    def candidates(self, keys: Sequence[str]) -> list[int]:
        """Sorted ordinals of the golden entries whose rows may share keys with entries of ``keys``."""
        found = set(self.ordinals(keys))
        prefixes = [prefix for _, prefix in nestings(keys)]
        if prefixes:
            found.update(self.ordinals(prefixes))
        if len(self.nested) and keys:
            found.update(self._nested_in(keys))
        return sorted(found)

    def _nested_in(self, keys: Sequence[str]) -> list[int]:
        """Ordinals of the golden entries nested in any of ``keys`` (looked up by hash, as :meth:`ordinals`)."""
        import numpy as np

        wanted = string_hashes(keys, len(keys))
        lo = np.searchsorted(self.nested, wanted, "left")
        hi = np.searchsorted(self.nested, wanted, "right")
        ordinals = self.nested_ordinals
        return [i for a, b in zip(lo[hi > lo].tolist(), hi[hi > lo].tolist()) for i in ordinals[a:b].tolist()]

    def names_of(self, ordinals: Sequence[int]) -> list[str]:
        """The names of the golden entries ``ordinals``."""
        names = self.dump.names
        if isinstance(names, JoinedNames):
            return names.take(ordinals)
        return [names[i] for i in ordinals]

    def renames(self, ordinals: Sequence[int], known: Mapping[str, str] | None = None,
                known_numbers: Mapping[str, int] | None = None) -> dict[str, str]:
        """The renumbered names of the backward entries among ``ordinals`` (as
        :func:`probe.match.backward_renames` gives them for the whole dump). ``known`` and
        ``known_numbers``: the renumbered names and the numbers of target entries (a golden entry
        of the same name and number takes the same renumbered name)."""
        numbers = self.numbers
        backward = [index for index in ordinals if numbers[index] >= 0]
        known, known_numbers = known or {}, known_numbers or {}
        renames = {}
        for index, name in zip(backward, self.names_of(backward)):
            number = numbers[index]
            if known_numbers.get(name) == number:
                renames[name] = known[name]
            else:
                stem, api = backward_stem(name)  # type: ignore[misc]  # a backward entry
                renames[name] = renumbered(stem, api, number)
        return renames

    def rows(self, ordinals: Sequence[int], known: Mapping[str, str] | None = None,
             known_numbers: Mapping[str, int] | None = None) -> RowList:
        """The keyed rows of the golden entries ``ordinals`` (sorted, each once), in file order
        (``known``, ``known_numbers``: see :meth:`renames`)."""
        renames = self.renames(ordinals, known, known_numbers)
        if ordinals and ordinals[-1] - ordinals[0] + 1 == len(ordinals):  # one run (the usual window)
            rows = self.dump.rows(ordinals[0], ordinals[-1] + 1, renames)
        else:
            rows = self.dump.rows_of(ordinals, renames)
        self.has_md5 = self.has_md5 or rows.has_md5
        return rows

    def settle(self, ordinals: Sequence[int], rows: Sequence[Row], met: set[str] | None) -> None:
        """Record which rows of the golden entries ``ordinals`` a target key in ``met`` met (``None``: all of them)."""
        marks = self.marks(ordinals, rows, met)
        if self.log is not None:
            self.log.extend(marks)
        self.apply(marks)

    def marks(self, ordinals: Sequence[int], rows: Sequence[Row], met: set[str] | None) -> list[tuple[int, int, int]]:
        """``(ordinal, mask of the rows met, rows)`` of each golden entry of ``ordinals``
        (the mask :data:`ALL_MET` when all were; ``met`` ``None``: all were)."""
        entries = [row.entry for row in rows]  # comprehensions read attributes faster than map(attrgetter)
        hits = None if met is None else [row.key in met for row in rows]
        all_met = hits is None or all(hits)
        if entries and sum(map(ne, entries[1:], entries[:-1])) + 1 == len(ordinals):
            # every entry has rows (rows come in the order of ordinals): no name needed
            if all_met:
                return [(index, ALL_MET, 0) for index in ordinals]
            sizes = [sum(1 for _ in group) for _, group in groupby(entries)]
        else:
            names, numbers = self.names_of(ordinals), self.numbers
            counted = {entry: sum(1 for _ in group) for entry, group in groupby(entries)}
            if any(name not in counted for i, name in zip(ordinals, names) if numbers[i] >= 0):
                raise NotStreamable(f"{self.dump.info.path}: a renumbered entry has no rows")
            if all_met:
                return [(index, ALL_MET, 0) for index in ordinals]
            sizes = [counted.get(name, 0) for name in names]
        marks = []
        start = 0
        for index, size in zip(ordinals, sizes):
            mask = 0
            for position in range(size):
                if hits[start + position]:
                    mask |= 1 << position
            start += size
            marks.append((index, mask, size))
        return marks

    def apply(self, marks: Iterable[tuple[int, int, int]]) -> None:
        """Count what :meth:`marks` found (windows may meet a golden entry more than once)."""
        touched, partial = self.touched, self.partial
        for index, mask, size in marks:
            if not touched[index]:
                touched[index] = 1
                unmet = ((1 << size) - 1) & ~mask
                if unmet:
                    self.golden_only += _popcount(unmet)
                    partial[index] = unmet
                continue
            old = partial.get(index)
            if old is None:
                continue  # every row was met before
            new = old & mask
            if new:
                self.golden_only -= _popcount(new)
                if old & ~mask:
                    partial[index] = old & ~mask
                else:
                    del partial[index]

    def finish(self, batch: int) -> int:
        """Count the rows of the golden entries no window touched; the golden rows never met."""
        untouched = [i for i, seen in enumerate(self.touched) if not seen]
        for start in range(0, len(untouched), batch):
            ordinals = untouched[start:start + batch]
            rows = self.rows(ordinals)
            self.settle(ordinals, rows, set())
        return self.golden_only


class TargetWindows:
    """The target side of a streamed compare: windows of whole entries, keyed as the whole dump would be."""

    def __init__(self, dump: StreamedDump, golden: GoldenIndex, window: int) -> None:
        self.dump = dump
        self.golden = golden
        self.window = max(1, window)
        self.counters: defaultdict[str, int] = defaultdict(int)
        self.has_md5 = False

    def __iter__(self) -> Iterator[tuple[int, list[Pair]]]:
        """``(entries, pairs)`` of each window (see :meth:`bounds`)."""
        for lo, hi in self.bounds():
            yield hi - lo, self.pairs(lo, hi)

    def bounds(self) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` entry ordinals of each window: at most ``window`` entries and about
        :data:`WINDOW_BYTES` of dump text (never less than one entry)."""
        return self.dump.index.spans(0, len(self.dump.names), WINDOW_BYTES, self.window)

    def skip(self, lo: int, hi: int) -> None:
        """Pass over target entries ``lo:hi`` without reading them: the backward numbering of
        later windows stays that of the whole dump (their golden rows count as not met)."""
        deque(backward_numbers(self.dump.names[lo:hi], self.counters), maxlen=0)

    def pairs(self, lo: int, hi: int) -> list[Pair]:
        """The pairs of target entries ``lo:hi`` in target order."""
        names = self.dump.names[lo:hi]
        numbers: dict[str, int] = {}
        renames = backward_renames(names, self.counters, numbers)
        rows = self.dump.rows(lo, hi, renames)
        self.has_md5 = self.has_md5 or rows.has_md5
        if renames:
            with_rows = {row.entry for row in rows}
            if any(name not in with_rows for name in renames):
                raise NotStreamable(f"{self.dump.info.path}: a renumbered entry has no rows")
        ordinals = self.golden.candidates([renames.get(name, name) for name in names] if renames else names)
        golden_rows = self.golden.rows(ordinals, renames, numbers)
        pairs, unmet = match_exact(rows, golden_rows)
        # no golden row left unmet (the usual window): every one was met, without a set of the target keys
        self.golden.settle(ordinals, golden_rows, {row.key for row in rows} if unmet else None)
        return pairs
