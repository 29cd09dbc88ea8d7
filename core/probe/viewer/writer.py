"""Turn a ``.vis.db`` into one self-contained HTML file (inline CSS/JS, data embedded once).

The data is a compact columnar table: parameter items are stored as a schema index (the list
of their keys, shared) plus their values, repeated strings (dtypes, shapes, verdicts...) are
interned, and stacks are stored once and referenced by index. The JSON is gzip-compressed and
base64-encoded; the page inflates it with the browser's ``DecompressionStream``.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from probe.errors import InputError
from probe.io import atomic_write

SIDES = ("NPU", "Bench")
_NUMBER = re.compile(r"^-?(\d|inf|nan)", re.IGNORECASE)


class _Items:
    """Parameter items of one page as columns: key-set schemas, interned strings, raw numbers."""

    def __init__(self) -> None:
        self.schemas: list[list[str]] = []
        self.schema_index: dict[tuple[str, ...], int] = {}
        self.strings: list[str] = []
        self.string_index: dict[str, int] = {}

    def value(self, value: Any) -> Any:
        text = value if isinstance(value, str) else json.dumps(value)
        if _NUMBER.match(text) and len(text) > 3:
            return text  # numbers are unique: store them as they are
        index = self.string_index.get(text)
        if index is None:
            index = self.string_index[text] = len(self.strings)
            self.strings.append(text)
        return index

    def add(self, node: str, data: str | None, names: list[str], schemas: list[int], values: list[list]) -> int:
        """Append the items of one ``input_data``/``output_data`` JSON; returns how many."""
        doc = orjson.loads(data) if data else {}
        for name, item in doc.items():
            names.append(name[len(node):] if name.startswith(node + ".") else name)
            if not isinstance(item, dict):
                item = {"value": item}
            keys = tuple(item)
            schema = self.schema_index.get(keys)
            if schema is None:
                schema = self.schema_index[keys] = len(self.schemas)
                self.schemas.append(list(keys))
            schemas.append(schema)
            values.append([self.value(v) for v in item.values()])
        return len(doc)


def _asset(name: str) -> str:
    return resources.files("probe.viewer").joinpath("assets", name).read_text(encoding="utf-8")


def _open(db: Path) -> sqlite3.Connection:
    if not db.is_file():
        raise InputError("file does not exist", db)
    try:
        # read-only and immutable: no -wal/-shm files are left beside the db; as_uri() escapes the path
        conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
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
        items = _Items()
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
            names, kinds, parents, prec, ovf, micro, match, stack, dist, merge = ([] for _ in range(10))
            n_in: list[int] = []
            n_out: list[int] = []
            row_names: list[str] = []
            row_schemas: list[int] = []
            row_values: list[list] = []
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
                n_in.append(items.add(name, in_data, row_names, row_schemas, row_values))
                n_out.append(items.add(name, out_data, row_names, row_schemas, row_values))
                merge.append(merge_info or "")
            sides[side] = {
                "names": names, "kinds": kinds, "parents": parents, "precision": prec, "overflow": ovf,
                "micro": micro, "match": match, "stack": stack, "dist": dist, "merge": merge,
                "nIn": n_in, "nOut": n_out, "rowNames": row_names, "rowSchemas": row_schemas, "rowValues": row_values,
            }
        if not sides:
            raise InputError(f"has no nodes for step {step} rank {rank}", db)
        from probe.regression.nway_graph import load_nway  # N-way dbs: every target's verdict per golden node

        nway = load_nway(conn, step, rank, sides["Bench"]["names"]) if "Bench" in sides else None
        return {
            **({"nway": nway} if nway else {}),
            "meta": {
                "source": db.name, "graphType": graph_type, "task": task or "", "microSteps": micro_steps or 1,
                "overflowCheck": bool(overflow_check), "colors": json.loads(colors) if colors and colors != "null" else None,
                "steps": steps, "ranks": ranks, "step": step, "rank": rank,
            },
            "sides": sides,
            "stacks": stacks,
            "schemas": items.schemas,
            "strings": items.strings,
        }
    finally:
        conn.close()


def encode_payload(payload: dict[str, Any]) -> str:
    """The payload as base64 of gzip-compressed JSON (what the page embeds)."""
    return base64.b64encode(gzip.compress(orjson.dumps(payload), compresslevel=6, mtime=0)).decode("ascii")


def render_html(payload: dict[str, Any]) -> str:
    """The HTML page for ``payload`` (base64 text cannot close its script tag)."""
    from probe.regression.nway_graph import nway_page_parts

    title = f"probe graph - {payload['meta']['source']}"
    page = _asset("viewer.html")
    payload = dict(payload)
    nway_css, nway_js, nway_data = nway_page_parts(payload.pop("nway", None), payload["sides"].get("Bench", {}).get("names", ()))
    html = (
        page.replace("__TITLE__", title.replace("&", "&amp;").replace("<", "&lt;"))
        .replace("/*__CSS__*/", _asset("viewer.css") + nway_css)
        .replace("/*__JS__*/", _asset("viewer.js") + nway_js)
        .replace("__DATA__", encode_payload(payload))
    )
    head, end, tail = html.rpartition("</body>")
    return head + nway_data + end + tail if nway_data else html


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
