"""Fast, strict JSON and YAML loading for user files."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import orjson
import yaml

from probe.errors import InputError


def read_json(path: Path) -> Any:
    """Parse a JSON file; accepts the ``NaN``/``Infinity`` tokens msProbe's dumper writes.

    orjson is tried first (fast); files with the non-standard tokens fall back to the
    standard library parser. Errors become a one-line :class:`InputError` naming the file.
    """
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
    enabled = gc.isenabled()
    gc.disable()  # the parsed tree holds no cycles; collection passes only cost time
    try:
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
    finally:
        if enabled:
            gc.enable()


class _DuplicateKey(Exception):
    def __init__(self, key: Any, line: int) -> None:
        super().__init__(key)
        self.key, self.line = key, line


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping holding the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # unhashable key: let the base class report it
                continue
            if duplicate:
                raise _DuplicateKey(key, key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | Path) -> Any:
    """Load a YAML file safely (no object construction); errors name the file and the line.

    A mapping that holds the same key twice is an error (YAML forbids it; PyYAML would
    silently keep the last value).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file does not exist", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot be read ({exc})", path) from None
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise InputError(f"has the key {exc.key!r} twice (line {exc.line})", path) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"is not valid YAML{where}: {problem}", path) from None
