"""The N-way tables of a ``nway_{ts}.vis.db`` and what the viewer reads from them (sqlite only)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

NWAY_SCHEMA = """
CREATE TABLE IF NOT EXISTS tb_nway_targets (idx INTEGER PRIMARY KEY, label TEXT NOT NULL, db TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tb_nway (
    step INTEGER NOT NULL, rank INTEGER NOT NULL, golden_node TEXT NOT NULL, idx INTEGER NOT NULL,
    target_node TEXT NOT NULL, precision_index REAL
);
CREATE INDEX IF NOT EXISTS nway_index ON tb_nway (step, rank, golden_node);
"""
PASS_LIMIT, ERROR_LIMIT = 0.3, 0.6
"""precision_index bounds of the default colour legend (pass below 0.3, error from 0.6)."""


def verdict_of(precision: float | None, matched: bool = True) -> str:
    """``pass`` / ``warning`` / ``error`` / ``unmatched`` / ``n/a`` of one node."""
    if not matched:
        return "unmatched"
    if precision is None:
        return "n/a"
    if precision < PASS_LIMIT:
        return "pass"
    return "warning" if precision < ERROR_LIMIT else "error"


def load_nway(conn: sqlite3.Connection, step: int, rank: int, golden_names: Sequence[str]) -> dict[str, Any] | None:
    """The N-way part of the viewer payload for one (step, rank), or ``None`` for a plain db.

    ``{"labels": [...], "precision": [[p or None per golden node] per target],
    "matched": [[0/1 ...] per target], "disagree": [golden node indices]}``.
    """
    try:
        labels = [label for _, label in conn.execute("SELECT idx, label FROM tb_nway_targets ORDER BY idx")]
    except sqlite3.Error:
        return None
    if not labels:
        return None
    position = {name: i for i, name in enumerate(golden_names)}
    precision = [[None] * len(golden_names) for _ in labels]
    matched = [[0] * len(golden_names) for _ in labels]
    for name, idx, p in conn.execute(
        "SELECT golden_node, idx, precision_index FROM tb_nway WHERE step = ? AND rank = ?", (step, rank)
    ):
        i = position.get(name)
        if i is not None and 0 <= idx < len(labels):
            precision[idx][i] = p
            matched[idx][i] = 1
    disagree = [
        i for i in range(len(golden_names))
        if len({verdict_of(precision[t][i], bool(matched[t][i])) for t in range(len(labels))}) > 1
    ]
    return {"labels": labels, "precision": precision, "matched": matched, "disagree": disagree}


def nway_block(db: Path, step: int, rank: int, payload: dict[str, Any]) -> dict[str, Any] | None:
    """The viewer's data block of graph (step, rank) of an N-way db (``None`` for any other db):
    :func:`load_nway` plus the golden node names its arrays align with."""
    names = payload.get("sides", {}).get("Bench", {}).get("names")
    if not names:
        return None
    conn = sqlite3.connect(Path(db).resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    try:
        nway = load_nway(conn, step, rank, names)
    finally:
        conn.close()
    return None if nway is None else {**nway, "names": list(names)}
