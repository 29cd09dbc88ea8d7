"""Finding ranks, graph files, GE token groups and FX token groups in TorchAir dump dirs.

GE:  [worldsize{N}_global_rank{r}/]{time}/{device}/{model}/{model_id}/{token}/<GE files>
FX:  worldsize{N}_global_rank{r}/{model}/{token}/*.npy                  (7.1.0 and later)
     [msprobe_fx_dump/]data_dump/{token + 1}/gm_{time}_dump/*.npy       (older releases)
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path


from probe_torchair.gedump import GeOpFile, parse_name

log = logging.getLogger("probe.torchair")

_FIRST_NUMBER = re.compile(r"\d+")
GRAPH_PREFIX = "dynamo_original_graph_"


def graph_files(root: Path, rank: int | None = None) -> list[Path]:
    """Every ``dynamo_original_graph_*.txt`` under ``root``, by graph number then name.

    With ``rank`` only files whose name contains ``rank_{rank}_`` are kept.
    """
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            if name.startswith(GRAPH_PREFIX) and name.endswith(".txt"):
                if rank is None or f"rank_{rank}_" in name:
                    found.append(Path(dirpath) / name)

    def key(path: Path) -> tuple[int, str]:
        match = _FIRST_NUMBER.search(path.name[len(GRAPH_PREFIX):])
        return (int(match.group()) if match else -1, path.name)

    return sorted(found, key=key)


def has_graph_files(root: Path) -> bool:
    """True when a GE graph file exists under ``root`` (the golden side is then GE)."""
    for _dirpath, _dirnames, filenames in os.walk(root):
        if any(n.startswith(GRAPH_PREFIX) and n.endswith(".txt") for n in filenames):
            return True
    return False


def has_min_max_files(root: Path) -> bool:
    """Whether ``root`` holds min/max info files (GE ``*_min_max.npz``, FX ``*_min_max.npy``):
    then a TorchAir compare can only compare statistics."""
    for _dirpath, _dirnames, filenames in os.walk(root):
        if any(n.endswith(("_min_max.npz", "_min_max.npy")) for n in filenames):
            return True
    return False


def _token_number(name: str) -> int:
    return int(name) if name.isdigit() else 0


@dataclass
class GeGroup:
    """GE dump files of one model (one ``model_id`` directory), by token."""

    key: str
    tokens: dict[int, dict[str, GeOpFile]] = field(default_factory=dict)

    def op_names(self) -> set[str]:
        first = min(self.tokens) if self.tokens else None
        return set(self.tokens.get(first, {})) if first is not None else set()


def _prefer(old: GeOpFile, new: GeOpFile) -> GeOpFile:
    """Duplicate op names in one token: full binary data beats converted files, then size."""
    rank = {"dump": 2, "npz": 1, "min_max": 0}
    a = (rank[old.name.kind], _size(old.path))
    b = (rank[new.name.kind], _size(new.path))
    return new if b > a else old


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def ge_groups(root: Path) -> list[GeGroup]:
    """Token directories (those holding GE dump files) grouped by their parent directory."""
    groups: dict[str, GeGroup] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        ops: dict[str, GeOpFile] = {}
        for name in sorted(filenames):
            parsed = parse_name(name)
            if parsed is None:
                continue
            op = GeOpFile(Path(dirpath) / name, parsed)
            old = ops.get(parsed.op_name)
            if old is not None:
                log.warning("%s: duplicate dump of op %s, keeping %s", dirpath, parsed.op_name,
                            _prefer(old, op).path.name)
                op = _prefer(old, op)
            ops[parsed.op_name] = op
        if not ops:
            continue
        token_dir = Path(dirpath)
        parent = os.path.relpath(token_dir.parent, root)
        group = groups.setdefault(parent, GeGroup(parent))
        token = _token_number(token_dir.name)
        if token in group.tokens:
            group.tokens[token].update(ops)
        else:
            group.tokens[token] = ops
    return [groups[k] for k in sorted(groups)]


@dataclass
class FxGroup:
    """FX dump directories of one graph, by token id."""

    key: str
    old_layout: bool
    dirs: dict[int, Path] = field(default_factory=dict)


def fx_groups(root: Path, token_offset: int | None = None) -> list[FxGroup]:
    """FX token groups. A directory whose sub-directories are all short numbers holds tokens.

    In the older layout (``{token+1}/gm_*_dump/``) the directory number is one more than
    the token id; ``token_offset`` overrides the detected offset (0 or 1).
    """
    groups: dict[str, FxGroup] = {}
    for dirpath, dirnames, _filenames in os.walk(root):
        dirnames.sort()
        if not dirnames or not all(d.isdigit() and len(d) < 12 for d in dirnames):
            continue
        parent = Path(dirpath)
        rel = os.path.relpath(parent, root)
        for token_name in sorted(dirnames, key=int):
            token_dir = parent / token_name
            entries = sorted(os.scandir(token_dir), key=lambda e: e.name)
            has_npy = any(e.is_file() and e.name.endswith(".npy") for e in entries)
            subdirs = [e.name for e in entries if e.is_dir()]
            if has_npy:
                offset = 0 if token_offset is None else token_offset
                group = groups.setdefault(rel, FxGroup(rel, False))
                group.dirs[int(token_name) - offset] = token_dir
            for k, sub in enumerate(subdirs):
                offset = 1 if token_offset is None else token_offset
                key = f"{rel}#{k}"
                group = groups.setdefault(key, FxGroup(key, True))
                group.dirs[int(token_name) - offset] = token_dir / sub
        dirnames[:] = []  # token directories are not searched further
    return [groups[k] for k in sorted(groups)]
