"""Names of the targets of an N-way compare: shown in column headers and used as sub-folders."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from probe.errors import InputError

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._+-]+")


def check_label(label: str) -> str:
    """``label`` when it is a safe folder name (letters, digits, ``._+-``, at most 64), else an error."""
    if not _SAFE.match(label) or label in (".", ".."):
        raise InputError(
            f"--label {label!r} is not a usable name (letters, digits and ._+- only, 1 to 64 characters, "
            "not starting with a punctuation mark)"
        )
    return label


def _from_path(path: Path, depth: int) -> str:
    """A label from the last ``depth`` components of ``path`` (unsafe characters become ``_``)."""
    parts = [p for p in path.resolve().parts[1:] if p][-depth:] or ["target"]
    text = _UNSAFE_CHARS.sub("_", "_".join(parts)).strip("._+-") or "target"
    return text[-64:].lstrip("._+-") or "target"


def target_labels(targets: Sequence[Path], labels: Sequence[str] | None = None) -> list[str]:
    """One unique label per target: the given ones, else the directory names.

    Default labels that collide take more of their path (``cnn_target`` ...), then a
    ``_2``, ``_3`` suffix.
    """
    if labels:
        if len(labels) != len(targets):
            raise InputError(f"give one --label per -tp: {len(targets)} targets, {len(labels)} labels")
        checked = [check_label(label) for label in labels]
        seen: set[str] = set()
        for label in checked:
            if label in seen:
                raise InputError(f"--label {label!r} is given twice")
            seen.add(label)
        return checked
    depth = [1] * len(targets)
    chosen = [_from_path(t, 1) for t in targets]
    for _ in range(3):
        clashes = {
            c for c in chosen
            if len({targets[i].resolve() for i, other in enumerate(chosen) if other == c}) > 1
        }
        if not clashes:
            break
        for i, label in enumerate(chosen):
            if label in clashes:
                depth[i] += 1
                chosen[i] = _from_path(targets[i], depth[i])
    result: list[str] = []
    for label in chosen:
        candidate, n = label, 2
        while candidate in result:
            candidate = f"{label[:60]}_{n}"
            n += 1
        result.append(candidate)
    return result
