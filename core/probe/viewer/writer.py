"""Turn a ``.vis.db`` into one self-contained HTML file (inline CSS/JS, data embedded as JSON)."""

from __future__ import annotations

import json
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from probe.errors import InputError
from probe.io import atomic_write

SIDES = ("NPU", "Bench")


def _asset(name: str) -> str:
    return resources.files("probe.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def _open(db: Path) -> sqlite3.Connection:
    if not db.is_file():
        raise InputError("file does not exist", db)
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        conn.execute("SELECT id FROM tb_config LIMIT 1")
    except sqlite3.DatabaseError as exc:
        raise InputError(f"is not a .vis.db graph file ({exc})", db) from None
    return conn


def load_payload(db: Path, step: int | None = None, rank: int | None = None) -> dict[str, Any]:
    """Everything the viewer shows for one (step, rank), as plain JSON-able data."""
    conn = _open(db)
    try:
        config = conn.execute(
            "SELECT graph_type, task, micro_steps, overflow_check, node_colors, rank_list, step_list "
            "FROM tb_config WHERE id = '1'"
        ).fetchone()
        if config is None:
            raise InputError("has no tb_config row", db)
        graph_type, task, micro_steps, overflow_check, colors, rank_list, step_list = config
        steps = json.loads(step_list or "[]") or [0]
        ranks = json.loads(rank_list or "[]") or [0]
        step = steps[0] if step is None else step
        rank = ranks[0] if rank is None else rank
        if step not in steps or rank not in ranks:
            raise InputError(f"has no graph for step {step} rank {rank} (steps {steps}, ranks {ranks})", db)
        stacks: list[Any] = []
        stack_index: dict[str, int] = {}
        sides: dict[str, Any] = {}
        for side in SIDES:
            rows = conn.execute(
                "SELECT n.node_name, n.node_type, n.up_node, n.precision_index, n.overflow_level, "
                "n.micro_step_id, n.matched_node_link, n.stack_id, n.matched_distributed, n.input_data, "
                "n.output_data, n.parallel_merge_info, s.stack_info FROM tb_nodes n "
                "LEFT JOIN tb_stack s ON s.id = n.stack_id "
                "WHERE n.step = ? AND n.rank = ? AND n.data_source = ? ORDER BY n.node_order",
                (step, rank, side),
            ).fetchall()
            if not rows:
                continue
            index = {row[0]: i for i, row in enumerate(rows)}
            names, kinds, parents, prec, ovf, micro, match, stack, dist, inp, out, merge = (
                [] for _ in range(12)
            )
            for row in rows:
                (name, kind, up, p, o, m, link, sid, distributed, in_data, out_data, merge_info, stack_info) = row
                names.append(name)
                kinds.append(kind)
                parents.append(index.get(up, -1) if up else -1)
                prec.append(p)
                ovf.append(o)
                micro.append(m)
                link_list = json.loads(link) if link else []
                match.append(link_list[-1] if link_list else None)
                if sid not in stack_index:
                    stack_index[sid] = len(stacks)
                    stacks.append(json.loads(stack_info) if stack_info else [])
                stack.append(stack_index[sid])
                dist.append(distributed if distributed and distributed != "{}" else None)
                inp.append(in_data or "{}")
                out.append(out_data or "{}")
                merge.append(merge_info or "")
            sides[side] = {
                "names": names, "kinds": kinds, "parents": parents, "precision": prec, "overflow": ovf,
                "micro": micro, "match": match, "stack": stack, "dist": dist, "inputs": inp, "outputs": out,
                "merge": merge,
            }
        if not sides:
            raise InputError(f"has no nodes for step {step} rank {rank}", db)
        return {
            "meta": {
                "source": db.name, "graphType": graph_type, "task": task or "", "microSteps": micro_steps or 1,
                "overflowCheck": bool(overflow_check), "colors": json.loads(colors) if colors and colors != "null" else None,
                "steps": steps, "ranks": ranks, "step": step, "rank": rank,
            },
            "sides": sides,
            "stacks": stacks,
        }
    finally:
        conn.close()


def render_html(payload: dict[str, Any]) -> str:
    """The HTML page for ``payload`` (``</`` escaped so the JSON cannot close its script tag)."""
    data = orjson.dumps(payload).decode().replace("</", "<\\/")
    title = f"probe graph - {payload['meta']['source']}"
    page = _asset("viewer.html")
    return (
        page.replace("__TITLE__", title)
        .replace("/*__CSS__*/", _asset("viewer.css"))
        .replace("/*__JS__*/", _asset("viewer.js"))
        .replace("__DATA__", data)
    )


def write_html(db: Path, output: Path | None = None, step: int | None = None, rank: int | None = None) -> Path:
    """Write the viewer of ``db`` (default: ``<db without .vis.db>.html`` beside it) atomically."""
    db = Path(db)
    if output is None:
        stem = db.name[: -len(".vis.db")] if db.name.endswith(".vis.db") else db.stem
        output = db.with_name(f"{stem}.html")
    html = render_html(load_payload(db, step, rank))
    output.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(output, "w", encoding="utf-8") as handle:
        handle.write(html)
    return output
