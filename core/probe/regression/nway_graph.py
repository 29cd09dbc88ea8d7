"""N-way graph: the golden graph with every target's verdict per node.

Each target is compared with the golden by the ordinary ``graph_visualize`` (its own
``OUT/<label>/compare_{ts}.vis.db``). The combined ``OUT/nway_{ts}.vis.db`` is a copy of the
first target's db (so TensorBoard and ``probe view`` open it as usual) plus two tables:

- ``tb_nway_targets (idx, label, db)``: the targets, in command-line order;
- ``tb_nway (step, rank, golden_node, idx, target_node, precision_index)``: for every golden
  (Bench) node and target, the target node matched to it and its precision index (0 pass,
  0.5 warning, 1 error, NULL judged nothing); a golden node with no row for a target was
  not matched by that target.

:func:`load_nway` reads them back for the viewer, aligned with the golden side's nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from probe.errors import InputError
from probe.graph.service import run_graph
from probe.io import claim, open_temp, prepare_output_dir, temp_file, timestamp, unique_path
from probe.plugins import default_host
from probe.regression.labels import target_labels
from probe.regression.nway_data import NWAY_SCHEMA, verdict_of
from probe.viewer.writer import write_html

@dataclass
class NwayGraphRun:
    """What an N-way graph run wrote."""

    db: Path
    labels: list[str]
    target_dbs: list[Path]
    html: Path | None = None
    disagree: int = 0
    """Golden nodes (over every step/rank) whose verdicts differ between targets."""


def _graph_one(options: Any) -> Path:
    run = run_graph(options, default_host())
    if run.db is None:
        raise InputError("an N-way graph needs a compare db (not --file_type json)", options.target)
    return run.db


def target_verdicts(db: Path) -> dict[tuple[int, int, str], tuple[str, float | None]]:
    """``{(step, rank, golden node): (target node, precision)}`` of one compare db."""
    conn = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        out: dict[tuple[int, int, str], tuple[str, float | None]] = {}
        for step, rank, name, precision, link in conn.execute(
            "SELECT step, rank, node_name, precision_index, matched_node_link FROM tb_nodes "
            "WHERE data_source = 'NPU' ORDER BY node_order"
        ):
            chain = json.loads(link) if link else []
            if chain:
                out.setdefault((step, rank, chain[-1]), (name, precision))
        return out
    except (sqlite3.Error, ValueError) as exc:
        raise InputError(f"is not a readable compare db ({exc})", db) from None
    finally:
        conn.close()


def write_nway_db(target_dbs: Sequence[Path], labels: Sequence[str], output: Path) -> tuple[Path, int]:
    """Write ``output`` (the first db plus the N-way tables) atomically; returns it and the
    number of golden nodes where the targets disagree."""
    tmp = temp_file(output, ".vis.db")
    with open(target_dbs[0], "rb") as source, open_temp(tmp, "wb") as copy:
        shutil.copyfileobj(source, copy, 1 << 20)
    try:
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=OFF")
            conn.executescript(NWAY_SCHEMA)
            conn.execute("BEGIN")
            conn.executemany("INSERT INTO tb_nway_targets VALUES (?,?,?)",
                             [(i, label, str(db)) for i, (label, db) in enumerate(zip(labels, target_dbs))])
            verdicts: dict[tuple[int, int, str], list[str]] = {}
            golden = {(s, r, n) for s, r, n in conn.execute(
                "SELECT step, rank, node_name FROM tb_nodes WHERE data_source = 'Bench'")}
            for index, db in enumerate(target_dbs):
                rows = target_verdicts(db)
                conn.executemany("INSERT INTO tb_nway VALUES (?,?,?,?,?,?)",
                                 [(s, r, g, index, t, p) for (s, r, g), (t, p) in rows.items()])
                for key in golden:
                    hit = rows.get(key)
                    verdicts.setdefault(key, []).append(verdict_of(hit[1]) if hit else "unmatched")
            conn.execute("COMMIT")
            conn.execute("PRAGMA journal_mode=WAL")  # as the other dbs: what TensorBoard expects
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        output = claim(tmp, output)  # never replaces: another run's file keeps its name
    except BaseException:
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        raise
    return output, sum(len(set(v)) > 1 for v in verdicts.values())


def run_graph_many(options: Any, targets: Sequence[Path], labels: Sequence[str] | None = None,
                   jobs: int | None = None) -> NwayGraphRun:
    """Compare the golden graph of ``options`` with every target; write the N-way db (and HTML).

    ``options`` is a :class:`probe.graph.service.GraphOptions` with the golden set; its
    ``target`` and ``output`` are replaced per target (``OUT/<label>/``).
    """
    if options.golden is None:
        raise InputError("an N-way graph needs the golden dump (-gp GOLDEN)")
    if len(targets) < 2:
        raise InputError("an N-way graph needs at least two targets (-tp T1 -tp T2 ...)")
    names = target_labels([Path(t) for t in targets], labels)
    stamp = options.timestamp or timestamp()
    per_target = [
        replace(options, target=Path(t), output=prepare_output_dir(options.output / label), html=False,
                timestamp=stamp, jobs=1 if (jobs or os.cpu_count() or 1) > 1 else options.jobs)
        for t, label in zip(targets, names)
    ]
    workers = min(len(per_target), jobs or os.cpu_count() or 1)
    if workers > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            dbs = list(pool.map(_graph_one, per_target))
    else:
        dbs = [_graph_one(o) for o in per_target]
    output = unique_path(prepare_output_dir(options.output), f"nway_{stamp}", ".vis.db")
    db, disagree = write_nway_db(dbs, names, output)
    run = NwayGraphRun(db=db, labels=names, target_dbs=dbs, disagree=disagree)
    if options.html:
        run.html = write_html(db)
    return run
