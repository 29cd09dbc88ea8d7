"""Fast, strict JSON and YAML loading for user files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from probe import runtime
from probe.errors import InputError


def read_json(path: Path) -> Any:
    """Parse a JSON file; accepts the ``NaN``/``Infinity`` tokens msProbe's dumper writes.

    orjson is tried first (fast); files with the non-standard tokens fall back to the
    standard library parser. Errors become a one-line :class:`InputError` naming the file.
    """
    return parse_json(_read_bytes(path), path)


def _read_bytes(path: Path) -> bytes:
    """The bytes of a JSON file; a missing, unreadable or empty file is an :class:`InputError`."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("file does not exist", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a JSON file", path) from None
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror})", path) from None
    if not raw.strip():
        raise InputError("is empty", path)
    return raw


CHUNK_BYTES = 8 << 20
"""Size of the pieces :func:`read_json_member` parses one at a time."""


def read_json_member(path: Path, key: str) -> tuple[Any, Iterator[tuple[str, Any]] | None]:
    """Parse a JSON object file whose member ``key`` is a large object, piece by piece.

    Returns the document with ``key`` mapped to an empty object, and an iterator over the
    member's ``(name, value)`` pairs in file order that parses about :data:`CHUNK_BYTES`
    at a time, so the parsed tree of the whole member never exists at once (for a 175 MB
    dump.json that tree is several hundred MB). This needs the layout ``json.dump(...,
    indent=1)`` writes, as msProbe's dumper does: the member opens with ``\n "key": {``,
    each of its names starts a line indented by two spaces and it closes with ``\n }``.
    JSON text holds no raw newline inside a string, so those markers are unambiguous.

    For any other layout, the iterator is ``None`` and the document is parsed whole, as
    :func:`read_json` does. If a piece turns out not to parse, the whole file is parsed
    after all (reporting the error, or continuing with the remaining names).
    """
    raw = _read_bytes(path)
    spans = _member_pieces(raw, key)
    if spans is not None:
        head_end, tail_start, pieces = spans
        try:
            doc = orjson.loads(raw[:head_end] + raw[tail_start:])  # the member left empty
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and doc.get(key) == {}:
            return doc, _member_entries(raw, pieces, path, key)
    return parse_json(raw, path), None


def _member_pieces(raw: bytes, key: str) -> tuple[int, int, list[tuple[int, int]]] | None:
    """Where the member ``key`` of an ``indent=1`` file opens and closes, and its pieces.

    Returns ``(end of the opening brace, start of the closing brace, [(start, stop)...])``;
    each piece is a run of whole ``"name": value`` members. ``None`` for another layout.
    """
    marker = b'\n "' + key.encode() + b'": {'
    start = raw.find(marker)
    if start < 0:
        return None
    body = start + len(marker)
    end = raw.find(b"\n }", body)
    if end < 0 or not raw.startswith(b'\n  "', body):  # an empty member is not worth it
        return None
    pieces: list[tuple[int, int]] = []
    begin = body
    while end - begin > CHUNK_BYTES:
        cut = raw.find(b'\n  "', begin + CHUNK_BYTES, end)
        if cut < 0:
            break
        pieces.append((begin, cut))
        begin = cut
    pieces.append((begin, end))
    return body, end, pieces


def _member_entries(raw: bytes, pieces: list[tuple[int, int]], path: Path, key: str) -> Iterator[tuple[str, Any]]:
    """Yield the member's entries piece by piece (see :func:`read_json_member`)."""
    taken = 0
    last = len(pieces) - 1
    for index, (begin, stop) in enumerate(pieces):
        text = raw[begin:stop].rstrip()
        part = None
        if index == last or text.endswith(b","):  # each piece but the last ends with a comma
            try:
                part = orjson.loads(b"{" + (text if index == last else text[:-1]) + b"}")
            except orjson.JSONDecodeError:
                pass
        if not isinstance(part, dict):
            # NaN tokens or an unusual layout: parse everything and go on after the
            # entries already given (a real syntax error is reported by parse_json)
            doc = parse_json(raw, path)
            member = doc.get(key) if isinstance(doc, dict) else None
            if not isinstance(member, dict):
                raise InputError(f"is not an msProbe dump ('{key}' is not an object)", path)
            for name in list(member)[taken:]:
                yield name, member.pop(name)
            return
        del text
        for name in list(part):
            taken += 1
            yield name, part.pop(name)


def parse_json(raw: bytes, path: Path) -> Any:
    """Parse JSON text read from ``path`` (see :func:`read_json`)."""
    with runtime.gc_off():  # the parsed tree holds no cycles; collection passes only cost time
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", path) from None
        except UnicodeDecodeError:
            raise InputError("is not UTF-8 text", path) from None


def _duplicate_key(root: Any) -> tuple[str, int] | None:
    """The first scalar key that a mapping of the composed YAML tree holds twice, and its line."""
    import yaml

    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    if key_node.value in seen:
                        return key_node.value, key_node.start_mark.line + 1
                    seen.add(key_node.value)
                stack.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None


def read_yaml(path: str | Path) -> Any:
    """Load a YAML file safely (no object construction); errors name the file and the line.

    A mapping that holds the same key twice is an error (YAML forbids it; PyYAML would
    silently keep the last value).
    """
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file does not exist", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read ({exc})", path) from None
    try:
        duplicate = _duplicate_key(yaml.compose(text, Loader=yaml.SafeLoader))
        if duplicate is not None:
            raise InputError(f"has the key {duplicate[0]!r} twice (line {duplicate[1]})", path)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"is not valid YAML{where}: {problem}", path) from None
