"""Load one dump file into a :class:`FlatDump` (reader + flattening + stack info)."""

from __future__ import annotations

import logging
from dataclasses import replace
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probe import forked
from probe.errors import InputError
from probe.flatten import RowList, flatten_entries
from probe.jsonio import read_json
from probe.model import DumpInfo, FlatDump, Row

if TYPE_CHECKING:  # pragma: no cover
    from probe.plugins import Host

log = logging.getLogger("probe")


def pick_reader(path: Path, host: Host) -> Any:
    """The first registered reader whose ``sniff`` accepts ``path``."""
    for reader in host.readers.values():
        if reader.sniff(path):
            return reader
    raise InputError(
        "is not a dump file any reader understands (expected dump.json or debug.json)", path
    )


def load_dump(path: Path, host: Host, with_stack: bool = True) -> FlatDump:
    """Read, validate and flatten the dump at ``path``."""
    reader = pick_reader(path, host)
    info, entries = reader.read(path)
    try:
        rows, skipped, count = flatten_entries(entries, debug=info.kind == "debug")
    except InputError as exc:
        raise InputError(exc.problem, path) from None
    if not info.framework_declared:
        info = _infer_framework(info, rows)
    dump = FlatDump(info=info, rows=rows, entry_count=count)
    dump.has_md5 = rows.has_md5
    dump.skipped_entries = skipped
    if with_stack:
        dump.stack = load_stack(path.parent / "stack.json")
    return dump


MINDSPORE_PREFIXES = ("Mint.", "MintFunctional.", "Cell.", "Primitive.", "Jit.")
"""Entry names only MindSpore dumps have."""


def _infer_framework(info: DumpInfo, rows: list[Row]) -> DumpInfo:
    """The framework of a dump.json without a ``framework`` key: MindSpore when its entries carry
    MindSpore-only API names, else PyTorch (msProbe's default); says what was assumed."""
    found = next((row.entry for row in rows if row.entry.startswith(MINDSPORE_PREFIXES)), None)
    if found is None:
        log.info("%s: no 'framework' key, assumed pytorch", info.path)
        return info
    log.warning("%s: no 'framework' key; MindSpore API names found (%s), assumed mindspore", info.path, found)
    return replace(info, framework="mindspore")


FORK_MIN_BYTES = 4 << 20
"""Golden dump files at least this large are read by a forked child (see :func:`load_pair`)."""

_ROW_FIELDS = ("name", "entry", "state", "dtype", "shape", "stats", "requires_grad", "md5", "data_name", "extra")
"""The :class:`Row` attributes a packed dump carries, in ``Row.__init__`` order."""


def load_pair(target_path: Path, golden_path: Path, host: Host) -> tuple[FlatDump, FlatDump]:
    """Load the target (with its stack) and the golden dump (without).

    A large golden dump is read and flattened by a forked child on the second core while
    this process reads the target; the child sends the rows back as a few columns
    (:func:`pack_dump`), which costs far less than reading them.
    """
    try:
        golden_size = golden_path.stat().st_size
    except OSError:
        golden_size = 0  # load_dump reports the problem
    if golden_size < FORK_MIN_BYTES or not forked.allowed():
        return load_dump(target_path, host), load_dump(golden_path, host, with_stack=False)
    task = forked.start(_load_packed, golden_path, host)
    try:
        target = load_dump(target_path, host)
    except BaseException:
        task.cancel()
        raise
    return target, unpack_dump(task.result())


def _load_packed(path: Path, host: Host) -> tuple[Any, ...]:
    return pack_dump(load_dump(path, host, with_stack=False))


def pack_dump(dump: FlatDump) -> tuple[Any, ...]:
    """A :class:`FlatDump` as plain columns (one list per row attribute), cheap to pickle.

    Rows share their entry, dtype and shape strings; pickling the columns keeps that
    sharing, and no per-row object crosses the process boundary.
    """
    rows = dump.rows
    columns = [list(map(attrgetter(name), rows)) for name in _ROW_FIELDS]
    meta = (dump.info, dump.stack, dump.has_md5, dump.entry_count, dump.skipped_entries, rows.has_md5)
    return meta, columns


def unpack_dump(packed: tuple[Any, ...]) -> FlatDump:
    """The :class:`FlatDump` that :func:`pack_dump` packed."""
    (info, stack, has_md5, entry_count, skipped, rows_md5), columns = packed
    rows = RowList(map(Row, *columns))
    rows.has_md5 = rows_md5
    dump = FlatDump(info=info, rows=rows, stack=stack, entry_count=entry_count)
    dump.has_md5 = has_md5
    dump.skipped_entries = skipped
    return dump


def load_stack(path: Path) -> dict[str, list[str]] | None:
    """Read stack.json in either format; ``None`` when the file does not exist.

    New format: ``{"0": [[entry names], [stack lines]], ...}``; old format:
    ``{entry name: [stack lines]}``.
    """
    if not path.exists():
        return None
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise InputError("is not a stack file (top level is not an object)", path)
    if "0" in doc:
        stack: dict[str, list[str]] = {}
        for group in doc.values():
            if not (isinstance(group, list) and len(group) == 2 and isinstance(group[0], list)):
                raise InputError("has a group that is not [[entry names], [stack lines]]", path)
            names, lines = group
            if not isinstance(lines, list):
                raise InputError("has stack lines that are not a list", path)
            for name in names:
                stack[name] = lines
        return stack
    for name, lines in doc.items():
        if not isinstance(lines, list):
            raise InputError(f"has stack info of {name} that is not a list", path)
    return doc
