"""Load one dump file into a :class:`FlatDump` (reader + flattening + stack info)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from probe.errors import InputError
from probe.flatten import flatten_entries
from probe.jsonio import read_json
from probe.model import FlatDump

if TYPE_CHECKING:  # pragma: no cover
    from probe.plugins import Host


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
    dump = FlatDump(info=info, rows=rows, entry_count=count)
    dump.has_md5 = rows.has_md5
    dump.skipped_entries = skipped
    if with_stack:
        dump.stack = load_stack(path.parent / "stack.json")
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
