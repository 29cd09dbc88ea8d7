"""The msProbe JSON dump reader (``dump.json`` / ``debug.json``) and framework detection.

Registered by :mod:`probe.builtin.reader`.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from probe.errors import InputError
from probe.formats.msprobe.flatten import flatten_entries, row_limit
from probe.formats.msprobe.names import MINDSPORE_PREFIXES
from probe.formats.msprobe.stack import load_stack
from probe.formats.msprobe.stream import StreamedDump
from probe.jsonio import MemberMisplaced, open_regular, read_json_member
from probe.memberindex import index_member
from probe.model import DumpInfo, FlatDump, Row, RowList

log = logging.getLogger("probe")

KNOWN_TASKS = ("statistics", "tensor", "structure")
_FRAMEWORK_RE = re.compile(rb'"framework"\s*:\s*"([A-Za-z_]+)"')


class MsprobeJsonReader:
    """Reads dumps written by msProbe's PyTorch and MindSpore dumpers."""

    name = "msprobe-json"

    def sniff(self, path: Path) -> bool:
        return path.name.endswith(("dump.json", "debug.json"))

    def read(self, path: Path, exact: bool = True) -> tuple[DumpInfo, Iterator[tuple[str, Any]]]:
        """The dump's header and its entries in file order (parsed as they are taken).

        ``exact=False`` takes ``data`` to be the file's last member without reading the whole
        file for its end (see :func:`probe.jsonio.read_json_member`): iterating the entries may
        then raise :class:`~probe.jsonio.MemberMisplaced` (read again with ``exact=True``).
        """
        doc, entries = read_json_member(path, "data", exact)
        if not exact and entries is not None:
            try:
                return self._header(path, doc), entries
            except InputError:  # the header may lack members placed after "data"
                return self.read(path, exact=True)
        return self._header(path, doc), entries if entries is not None else _consume(doc["data"])

    def _header(self, path: Path, doc: Any) -> DumpInfo:
        """The header of a parsed dump document (its ``data`` object may be emptied)."""
        if not isinstance(doc, dict):
            raise InputError("is not an msProbe dump (top level is not an object)", path)
        if "data" not in doc:
            raise InputError("is not an msProbe dump (no 'data' key)", path)
        data = doc["data"]
        if not isinstance(data, dict):
            raise InputError("is not an msProbe dump ('data' is not an object)", path)
        task = doc.get("task")
        if not task:
            raise InputError("has no 'task' (expected statistics, tensor or structure)", path)
        if task not in KNOWN_TASKS:
            raise InputError(f"has task {task!r}; compare supports tensor and statistics dumps", path)
        framework = doc.get("framework")
        kind = "debug" if path.name.endswith("debug.json") or doc.get("level") == "debug" else "dump"
        return DumpInfo(
            path=path,
            framework=str(framework or "pytorch"),
            task=str(task),
            level=str(doc.get("level") or ""),
            kind=kind,
            reader=self.name,
            framework_declared=bool(framework),
        )

    def load(self, path: Path, with_stack: bool = True) -> FlatDump:
        """Read, validate and flatten the dump at ``path`` (and the stack.json beside it)."""
        try:
            info, names, (rows, skipped, count) = self._flatten(path, exact=False)
        except MemberMisplaced:
            info, names, (rows, skipped, count) = self._flatten(path, exact=True)
        if not info.framework_declared:
            info = _infer_framework(info, rows)
        dump = FlatDump(info=info, rows=rows, entry_count=count, entries=names)
        dump.has_md5 = rows.has_md5
        dump.skipped_entries = skipped
        if with_stack:
            dump.stack = load_stack(path.parent / "stack.json")
        return dump

    def _flatten(self, path: Path, exact: bool) -> tuple[DumpInfo, list[str], tuple[RowList, list[str], int]]:
        info, entries = self.read(path, exact)
        names: list[str] = []
        try:
            return info, names, flatten_entries(entries, debug=info.kind == "debug", names=names,
                                                max_rows=row_limit())
        except InputError as exc:
            raise InputError(exc.problem, path) from None

    def stream(self, path: Path, with_stack: bool = True) -> StreamedDump | None:
        """The dump read a window of entries at a time, or ``None`` when it must be read whole
        (another layout, repeated names, a ``debug.json``, no ``framework`` key, rows named
        by their ``data_name``)."""
        index = index_member(path, "data")
        if index is None or index.opens_with(b'"data_name"'):  # rows named by their files: read whole
            return None
        doc = index.head()
        if not isinstance(doc, dict) or doc.get("data") != {}:
            return None
        info = self._header(path, doc)
        if info.kind == "debug" or not info.framework_declared:
            return None
        stack = load_stack(path.parent / "stack.json") if with_stack else None
        if stack:  # keyed by the index's own name strings (only the dump's entries are looked up)
            stack = {name: stack[name] for name in index.names if name in stack}
        return StreamedDump(info, index, stack, index.opens_with(b'"md5"'))


def _infer_framework(info: DumpInfo, rows: list[Row]) -> DumpInfo:
    """The framework of a dump.json without a ``framework`` key: MindSpore when its entries carry
    MindSpore-only API names, else PyTorch (msProbe's default); says what was assumed."""
    found = next((row.entry for row in rows if row.entry.startswith(MINDSPORE_PREFIXES)), None)
    if found is None:
        log.info("%s: no 'framework' key, assumed pytorch", info.path)
        return info
    log.warning("%s: no 'framework' key; MindSpore API names found (%s), assumed mindspore", info.path, found)
    return replace(info, framework="mindspore")


def _consume(data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """Yield the entries in file order, dropping each from the parsed tree once taken,
    so the tree shrinks while rows are built instead of living until the end."""
    for name in list(data):
        yield name, data.pop(name)


def detect_framework(path: str) -> str | None:
    """Read the ``framework`` key near the top of a dump.json (or the rank dirs below ``path``)."""
    for candidate in itertools.islice(_framework_candidates(Path(path)), 4):
        try:
            with open(open_regular(candidate), "rb") as handle:  # never a FIFO or a device
                head = handle.read(1 << 16)
        except (OSError, InputError):
            continue
        match = _FRAMEWORK_RE.search(head)
        if match:
            return match.group(1).decode()
    return None


def _framework_candidates(root: Path) -> Iterator[Path]:
    """``root`` itself, or the dump.json / debug.json files at most three levels below the
    directory ``root``, shallower ones first (each level sorted). A level is listed only
    when the ones above it gave no answer: a rank directory's tensor files are not walked."""
    if not root.is_dir():
        yield root
        return
    for pattern in ("*.json", "*/*.json", "*/*/*.json"):
        yield from (c for c in sorted(root.glob(pattern)) if c.name.endswith(("dump.json", "debug.json")))
