"""Pair target rows with golden rows: exact keys, backward renumbering, fuzzy matching."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, count
from operator import attrgetter, is_not
from typing import Any

from probe.formats.msprobe.dtypes import dtypes_compatible
from probe.formats.msprobe.names import backward_stem, renumbered
from probe.model import FlatDump, KeyMap, MatchContext, Pair, Pairing, Row

def backward_numbers(entries: Iterable[str], counters: dict[str, int]) -> Iterator[tuple[int, str, bool, int]]:
    """``(position, stem, api, ordinal)`` of each backward entry of ``entries`` (see
    :func:`probe.formats.msprobe.names.backward_stem`): its ordinal among the backward entries
    of its stem, counted on from ``counters`` (which it updates)."""
    for position, entry in enumerate(entries):
        found = backward_stem(entry) if "backward" in entry else None  # most entries: no call
        if found is not None:
            stem, api = found
            ordinal = counters.get(stem, 0)
            counters[stem] = ordinal + 1
            yield position, stem, api, ordinal


def backward_renames(entries: Sequence[str], counters: dict[str, int] | None = None,
                     numbers: dict[str, int] | None = None) -> dict[str, str]:
    """Map each backward entry name to its name with the call index renumbered.

    The index becomes the entry's ordinal among backward entries of the same stem (name
    minus its last two components), in file order, so that backward calls pair by order.
    ``counters`` (ordinals per stem) carries the numbering on across calls, for entries
    given a window at a time; ``numbers``, when given, receives each backward entry's ordinal.
    """
    counters = {} if counters is None else counters
    renames = {}
    for position, stem, api, ordinal in backward_numbers(entries, counters):
        entry = entries[position]
        renames[entry] = renumbered(stem, api, ordinal)
        if numbers is not None:
            numbers[entry] = ordinal
    return renames


_ENTRY = attrgetter("entry")
_KEY = attrgetter("key")


def assign_keys(rows: Sequence[Row], renumber: bool, renames: dict[str, str] | None = None) -> None:
    """Set ``row.key`` to the row name, with backward call indices renumbered if asked
    (by ``renames`` when given, else by the entries of ``rows``).

    Rows a reader keyed already (``rows.keyed``, see :class:`probe.model.RowList`) keep their
    keys when renumbering by their own entries; the mark is cleared, so a later call
    (after normalizers changed keys) computes them again."""
    if getattr(rows, "keyed", False):
        rows.keyed = False  # type: ignore[attr-defined]
        if renumber and renames is None:
            return
    if renumber and renames is None:
        renames = backward_renames(list(dict.fromkeys(map(_ENTRY, rows))))
    if not renumber or not renames:
        for row in rows:
            row.key = row.name
        return
    for row in rows:
        entry = row.entry
        new_entry = renames.get(entry)
        if new_entry is not None and new_entry != entry and row.name.startswith(entry):
            row.key = new_entry + row.name[len(entry):]
        else:
            row.key = row.name


def match_exact(
    target: Sequence[Row],
    golden: Sequence[Row],
    key_map: KeyMap | None = None,
    dtype_gate: Callable[[str, str], bool] | None = dtypes_compatible,
) -> tuple[list[Pair], int]:
    """Join target rows to golden rows by key, in target order.

    A golden key seen several times repeats the target row once per golden row. With a
    ``key_map`` the target key comes from the mapper; ``left_join`` mappers switch the dtype
    gate off; the gate is asked about different dtypes only (equal ones always pass).
    Returns the pairs and the number of golden rows no target row matched.

    Two dumps of one model usually give the same keys in the same order: when each key is held
    once and the lists' keys are equal in order, the rows pair by position (no look-up by key).
    """
    if key_map is None and len(target) == len(golden) and _aligned(target, golden):
        return _gated(target, list(golden), dtype_gate), 0
    by_key: dict[str, Any] = dict(zip(map(_KEY, golden), golden))
    several = len(by_key) < len(golden)
    if several:  # a key held by several golden rows maps to the list of them
        golden_keys = list(map(_KEY, golden))
        counts = Counter(golden_keys)
        by_key = {key: [] if counts[key] > 1 else row for key, row in zip(golden_keys, golden)}
        for key, row in zip(golden_keys, golden):
            if counts[key] > 1:
                by_key[key].append(row)
    gate = None if (key_map is not None and key_map.left_join) else dtype_gate
    target_keys: Any = map(_KEY, target)
    if key_map is not None or several:
        target_keys = list(target_keys)
    if key_map is not None:
        mapped = list(map(key_map.target_key, target))
        target_keys = [key if new is None else new for key, new in zip(target_keys, mapped)]
    found = list(map(by_key.get, target_keys))
    if several:
        pairs = _expand(target, found, gate)
        met = by_key.keys() & set(target_keys)
        used = sum(len(rows) if rows.__class__ is list else 1 for rows in map(by_key.__getitem__, met))
        return pairs, len(golden) - used
    met = set(map(id, found))  # one golden row per key: the rows met are the keys met
    met.discard(id(None))
    return _gated(target, found, gate), len(golden) - len(met)


def _aligned(target: Sequence[Row], golden: Sequence[Row]) -> bool:
    """Whether two row lists of one length have equal keys in the same order, each key held once."""
    keys = [row.key for row in golden]  # comprehensions read attributes faster than map(attrgetter)
    return keys == [row.key for row in target] and len(set(keys)) == len(keys)


def _gated(target: Sequence[Row], found: list[Any], gate: Callable[[str, str], bool] | None) -> list[Pair]:
    """The pairs of ``target`` and the golden row ``found`` for each (``None``: none), a golden row
    of a dtype ``gate`` refuses dropped (``found`` is changed)."""
    if gate is not None:  # rows of different dtypes are few: test them one by one
        # dtype texts are mostly shared objects: "is not" finds the few that may differ
        golden_dtypes = [None if row is None else row.dtype for row in found]
        flagged = compress(count(), map(is_not, [row.dtype for row in target], golden_dtypes))
        for index in flagged:
            cand = found[index]
            if cand is not None and not gate(target[index].dtype, cand.dtype):
                found[index] = None
    return list(map(Pair, target, found))


def _expand(target: Sequence[Row], found: list[Any], gate: Callable[[str, str], bool] | None) -> list[Pair]:
    """The pairs of :func:`match_exact` when golden keys repeat (``found``: a row, a list
    of rows or ``None`` per target row)."""
    pairs: list[Pair] = []
    for row, cands in zip(target, found):
        if cands is None:
            pairs.append(Pair(row, None))
            continue
        for cand in cands if cands.__class__ is list else (cands,):
            ok = gate is None or row.dtype == cand.dtype or gate(row.dtype, cand.dtype)
            pairs.append(Pair(row, cand if ok else None))
    return pairs


def fuzzy_key(name: str) -> str:
    """A row name without its call index (``Functional.relu.3.forward.input.0`` ->
    ``Functional.relu.forward.input.0``; ``Module.l.Linear.forward.2.output.0`` ->
    ``Module.l.Linear.forward.output.0``)."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part in ("forward", "backward"):
            if i >= 1 and parts[i - 1].isdigit():  # API: index before the direction
                return ".".join(parts[: i - 1] + parts[i:])
            if i + 1 < len(parts) and parts[i + 1].isdigit():  # module: index after it
                return ".".join(parts[: i + 1] + parts[i + 2:])
            return name
    return name


def match_fuzzy(target: Sequence[Row], golden: Sequence[Row], key_map: KeyMap | None = None) -> tuple[list[Pair], int]:
    """Call-index-insensitive matching with msProbe's greedy queue algorithm.

    Rows are compared by ``fuzzy_key`` of their keys (the target key given by ``key_map``
    when it has one for the row).

    Both row lists are walked in step; each new target row is looked for among pending
    golden rows (oldest first), then each pending target row against the newest golden row.
    On a match the pending target rows before it are emitted unmatched and the golden rows
    before its partner are discarded. Unlike msProbe, no target row is ever dropped.
    """
    pending_t: deque[tuple[Row, str, str]] = deque()
    pending_g: deque[tuple[Row, str, str]] = deque()

    def target_key(row: Row) -> str:
        mapped = key_map.target_key(row) if key_map is not None else None
        return row.key if mapped is None else mapped

    pairs: list[Pair] = []
    matched_golden = 0

    def emit(ti: int, gi: int) -> None:
        nonlocal matched_golden
        for _ in range(ti):
            pairs.append(Pair(pending_t.popleft()[0], None))
        t_row, _, t_key = pending_t.popleft()
        for _ in range(gi):
            pending_g.popleft()
        g_row, _, g_key = pending_g.popleft()
        matched_golden += 1
        pairs.append(Pair(t_row, g_row, fuzzy=t_key != g_key))

    n = max(len(target), len(golden))
    for i in range(n):
        if i < len(target):
            key = target_key(target[i])
            pending_t.append((target[i], fuzzy_key(key), key))
        if i < len(golden):
            pending_g.append((golden[i], fuzzy_key(golden[i].key), golden[i].key))
        if not pending_t or not pending_g:
            continue
        newest_t = pending_t[-1][1]
        found = None
        for gi in range(len(pending_g) - 1):
            if pending_g[gi][1] == newest_t:
                found = (len(pending_t) - 1, gi)
                break
        if found is None and pending_g[-1][1] == newest_t:
            found = (len(pending_t) - 1, len(pending_g) - 1)
        if found is None:
            newest_g = pending_g[-1][1]
            for ti in range(len(pending_t) - 1):
                if pending_t[ti][1] == newest_g:
                    found = (ti, len(pending_g) - 1)
                    break
        if found is not None:
            emit(*found)
    while pending_t:
        pairs.append(Pair(pending_t.popleft()[0], None))
    return pairs, len(golden) - matched_golden


def golden_key_lookup(golden: FlatDump) -> Callable[[str], str]:
    """Turn a golden row *name* into that row's matching key (call indices renumbered).

    Mapping files name golden rows as they appear in the dump; matching uses keys. The
    table is built on first use, after the pipeline has assigned the keys.
    """
    table: dict[str, str] = {}

    def lookup(name: str) -> str:
        if not table:
            table.update((row.name, row.key) for row in golden.rows)
        return table.get(name, name)

    return lookup


class ExactPairer:
    """The default pairer: keys equal (after normalizers and mappers), dtypes compatible."""

    name = "exact"
    renumber = True
    """Keys keep backward call indices renumbered by order (see :func:`assign_keys`)."""

    def pair(self, target: FlatDump, golden: FlatDump, key_map: KeyMap | None, ctx: MatchContext) -> Pairing:
        pairs, golden_only = match_exact(target.rows, golden.rows, key_map)
        return Pairing(pairs, golden_only)


class FuzzyPairer:
    """``-fm``: keys equal once call indices are dropped, msProbe's greedy queue order."""

    name = "fuzzy"
    option = "fuzzy_match"
    renumber = False

    def pair(self, target: FlatDump, golden: FlatDump, key_map: KeyMap | None, ctx: MatchContext) -> Pairing:
        pairs, golden_only = match_fuzzy(target.rows, golden.rows, key_map)
        return Pairing(pairs, golden_only)
