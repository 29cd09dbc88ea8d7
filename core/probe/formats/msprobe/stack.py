"""msProbe's ``stack.json``: the call stack of every dump entry, in either layout."""

from __future__ import annotations

from pathlib import Path

from probe.errors import InputError
from probe.jsonio import read_json_object


def load_stack(path: Path) -> dict[str, list[str]] | None:
    """Read stack.json in either format; ``None`` when the file does not exist.

    New format: ``{"0": [[entry names], [stack lines]], ...}``; old format:
    ``{entry name: [stack lines]}``.
    """
    if not path.exists():
        return None
    doc = read_json_object(path)
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
