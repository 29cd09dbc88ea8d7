"""Read a pair of dump files with their readers (a large golden dump on the second core)."""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter
from pathlib import Path
from typing import Any

import probe.runtime as runtime
from probe.errors import InputError
from probe.model import FlatDump, Row, RowList


def load_dump(path: Path, reader: Any, with_stack: bool = True, reader_args: Mapping[str, Any] | None = None) -> FlatDump:
    """Read the dump at ``path`` with ``reader`` (a :class:`probe.interfaces.DumpReader`).

    ``reader_args`` (a plan's ``options["reader_args"]``) are passed to ``reader.load`` as
    keyword arguments, e.g. the rank and step a kernel-dump reader selects.
    """
    if reader_args:
        return reader.load(path, with_stack=with_stack, **reader_args)
    return reader.load(path, with_stack=with_stack)


FORK_MIN_BYTES = 4 << 20
"""Golden dump files at least this large are read by a forked child (see :func:`load_pair`)."""

_ROW_FIELDS = ("name", "entry", "state", "dtype", "shape", "stats", "requires_grad", "md5", "data_name", "extra", "key")
"""The :class:`Row` attributes a packed dump carries, in ``Row.__init__`` order."""


def load_pair(target_path: Path, golden_path: Path, target_reader: Any, golden_reader: Any,
              reader_args: Mapping[str, Any] | None = None) -> tuple[FlatDump, FlatDump]:
    """Load the target (with its stack) and the golden dump (without).

    A large golden dump is read and flattened by a forked child on the second core while
    this process reads the target; the child sends the rows back as a few columns
    (:func:`pack_dump`), which costs far less than reading them.
    """
    try:
        golden_size = golden_path.stat().st_size
    except OSError:
        golden_size = 0  # load_dump reports the problem
    if reader_args or golden_size < FORK_MIN_BYTES or not runtime.allowed():
        return (load_dump(target_path, target_reader, reader_args=reader_args),
                load_dump(golden_path, golden_reader, with_stack=False, reader_args=reader_args))
    task = runtime.start(_load_packed, golden_path, golden_reader)
    try:
        target = load_dump(target_path, target_reader)
    except BaseException:
        task.cancel()
        raise
    return target, unpack_dump(task.result(), target)


def _load_packed(path: Path, reader: Any) -> tuple[Any, ...]:
    return pack_dump(load_dump(path, reader, with_stack=False))


def pack_dump(dump: FlatDump) -> tuple[Any, ...]:
    """A :class:`FlatDump` as plain columns (one list per row attribute), cheap to pickle.

    Rows share their entry, dtype and shape strings; pickling the columns keeps that
    sharing, and no per-row object crosses the process boundary.
    """
    rows = dump.rows
    columns = [list(map(attrgetter(name), rows)) for name in _ROW_FIELDS]
    meta = (dump.info, dump.stack, dump.has_md5, dump.entry_count, dump.skipped_entries, rows.has_md5,
            getattr(rows, "keyed", False))
    return meta, columns


def unpack_dump(packed: tuple[Any, ...], like: FlatDump | None = None) -> FlatDump:
    """The :class:`FlatDump` that :func:`pack_dump` packed.

    With ``like`` (the target of the pair), names and entries equal to the target's become
    the target's own strings (:func:`share_names`): the copies that came through the pipe
    are freed at once, which lowers the peak memory of a whole compare by about 6%.
    """
    (info, stack, has_md5, entry_count, skipped, rows_md5, keyed), columns = packed
    if like is not None:
        share_names(columns, like.rows)
    rows = RowList(map(Row, *columns))
    rows.has_md5 = rows_md5
    rows.keyed = keyed
    dump = FlatDump(info=info, rows=rows, stack=stack, entry_count=entry_count)
    dump.has_md5 = has_md5
    dump.skipped_entries = skipped
    return dump


def share_names(columns: list[list[Any]], rows: list[Row]) -> None:
    """Replace, in the packed ``columns``, every name and entry equal to one of ``rows``'s by
    that row's string, and every key that is its row's name by the same string."""
    names = list(map(attrgetter("name"), rows))
    pool = dict(zip(names, names))
    del names
    name_at, key_at = _ROW_FIELDS.index("name"), _ROW_FIELDS.index("key")
    own, keys = columns[name_at], columns[key_at]
    shared = list(map(pool.get, own, own))
    # a key that is its row's name came through the pipe as the same object (pickle's memo)
    columns[key_at] = [s if k is n else k for s, k, n in zip(shared, keys, own)]
    columns[name_at] = shared
    entries = dict.fromkeys(map(attrgetter("entry"), rows))  # each entry's rows share one string
    pool = dict(zip(entries, entries))
    entry_at = _ROW_FIELDS.index("entry")
    columns[entry_at] = list(map(pool.get, columns[entry_at], columns[entry_at]))
