"""Turn a ``.vis.db`` into one self-contained HTML file (inline CSS/JS, data embedded once).

Every (step, rank) graph of the db is one data block (decoded when picked in the page's selector);
when a diagnosis is given (or, without one, from the graph's own metrics) the page also carries the
"error along the network" chart and the suspect list. The page's Content-Security-Policy allows
its own inline script and style only, and data reaches the page as text, never as markup.

The data of a graph is a compact columnar table: parameter items are stored as a schema index (the list
of their keys, shared) plus their values, repeated strings (dtypes, shapes, verdicts...) are
interned, and stacks are stored once and referenced by index. The JSON is gzip-compressed and
base64-encoded; the page inflates it with the browser's ``DecompressionStream``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from probe.errors import InputError
from probe.io import atomic_write
from probe.viewer.chart import chart_data, key_error, load_diagnosis
from probe.regression.nway_data import nway_block
from probe.viewer.page import encode, render_page

#: above this much embedded graph data, each (step, rank) gets its own page (the selector links them)
SPLIT_BYTES = 64 * 1024 * 1024

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

    def add(self, node: str, data: str | None, names: list[str], schemas: list[int], values: list[list]) -> dict:
        """Append the items of one ``input_data``/``output_data`` JSON; returns them."""
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
        return doc


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


def _auto_matches(conn: sqlite3.Connection, prefix: str) -> dict[str, tuple[float, str]]:
    """``{node name: (confidence, why)}`` from ``tb_auto_match`` (graphs built with ``--auto-match``)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tb_auto_match'").fetchone() is None:
        return {}
    rows = conn.execute("SELECT id, confidence, why FROM tb_auto_match WHERE substr(id, 1, ?) = ?",
                        (len(prefix), prefix)).fetchall()
    return {node_id[len(prefix):]: (float(conf), str(why or "")) for node_id, conf, why in rows}


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
        series: list[dict[str, Any]] = []
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
            roots = {row[0] for row in rows if not row[2] or row[2] not in index}
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
                n_in.append(len(items.add(name, in_data, row_names, row_schemas, row_values)))
                outputs = items.add(name, out_data, row_names, row_schemas, row_values)
                n_out.append(len(outputs))
                if side == "NPU" and str(kind) == "1" and graph_type == "compare":
                    series.append({"node": name, "order": len(series), "error": key_error(outputs),
                                   "module": up if up and up not in roots else None})
                merge.append(merge_info or "")
            sides[side] = {
                "names": names, "kinds": kinds, "parents": parents, "precision": prec, "overflow": ovf,
                "micro": micro, "match": match, "stack": stack, "dist": dist, "merge": merge,
                "nIn": n_in, "nOut": n_out, "rowNames": row_names, "rowSchemas": row_schemas, "rowValues": row_values,
            }
            auto = _auto_matches(conn, f"{side}_{step}_{rank}_")
            if auto:  # --auto-match: confidence and why of each automatic pair
                sides[side]["auto"] = [auto.get(name, (None, None))[0] for name in names]
                sides[side]["autoWhy"] = [auto.get(name, (None, None))[1] for name in names]
        if not sides:
            raise InputError(f"has no nodes for step {step} rank {rank}", db)
        return {
            "meta": {
                "source": db.name, "graphType": graph_type, "task": task or "", "microSteps": micro_steps or 1,
                "overflowCheck": bool(overflow_check), "colors": json.loads(colors) if colors and colors != "null" else None,
                "steps": steps, "ranks": ranks, "step": step, "rank": rank,
            },
            "sides": sides,
            "series": {"rank": rank, "step": step, "label": f"step{step}/rank{rank}", "points": series},
            "stacks": stacks,
            "schemas": items.schemas,
            "strings": items.strings,
        }
    finally:
        conn.close()


def graph_keys(db: Path, step: int | None = None, rank: int | None = None) -> list[tuple[int, int]]:
    """The (step, rank) pairs of ``db`` that have nodes, restricted to ``step``/``rank`` when given."""
    conn = _open(db)
    try:
        row = conn.execute("SELECT rank_list, step_list FROM tb_config WHERE id = '1'").fetchone()
        if row is None:
            raise InputError("has no tb_config row", db)
        ranks = json.loads(row[0] or "[]") or [0]
        steps = json.loads(row[1] or "[]") or [0]
        keys = [
            (s, r) for s in steps for r in ranks
            if (step is None or s == step) and (rank is None or r == rank)
            and conn.execute("SELECT 1 FROM tb_nodes WHERE step = ? AND rank = ? LIMIT 1", (s, r)).fetchone()
        ]
    finally:
        conn.close()
    if not keys:
        raise InputError(f"has no graph for step {step if step is not None else '*'} rank "
                         f"{rank if rank is not None else '*'} (steps {steps}, ranks {ranks})", db)
    return keys


def load_page(db: Path, step: int | None = None, rank: int | None = None,
              diagnosis: Mapping[str, Any] | Path | None = None) -> dict[str, Any]:
    """The data blocks of the viewer page: ``page-meta``, ``graph-<k>`` per (step, rank) (encoded as
    soon as read: only the compressed text of each graph stays in memory) and, for a compare (or
    with a diagnosis), ``chart-data``."""
    db = Path(db)
    if diagnosis is not None and not isinstance(diagnosis, Mapping):
        diagnosis = load_diagnosis(Path(diagnosis)) if isinstance(diagnosis, (str, Path)) else diagnosis.to_dict()
    blobs: dict[str, Any] = {}
    graphs, series = [], []
    meta: dict[str, Any] = {}
    for k, (s, r) in enumerate(graph_keys(db, step, rank)):
        payload = load_payload(db, s, r)
        series.append(payload.pop("series"))
        meta = meta or dict(payload["meta"])
        nway = nway_block(db, s, r, payload)  # an N-way db: every target's verdict per golden node
        blobs[f"graph-{k}"] = encode(payload)
        if nway is not None:
            blobs[f"nway-{k}"] = encode(nway)
        graphs.append({"step": s, "rank": r})
    blobs = {"page-meta": {"meta": meta, "graphs": graphs}, **blobs}
    if diagnosis is not None and diagnosis.get("series"):
        blobs["chart-data"] = chart_data(diagnosis)
    elif meta["graphType"] == "compare" or diagnosis is not None:
        doc = {"verdict": (diagnosis or {}).get("verdict", ""), "suspects": (diagnosis or {}).get("suspects", []),
               "series": [x for x in series if x["points"]]}
        if doc["series"] or doc["suspects"]:
            blobs["chart-data"] = chart_data(doc, metric="1 - cosine / relative norm error of the outputs")
    return blobs


def render_html(blobs: dict[str, Any]) -> str:
    """The HTML page of ``blobs`` (from :func:`load_page`)."""
    title = f"probe graph - {blobs['page-meta']['meta']['source']}"
    nway = any(key.startswith("nway-") for key in blobs)
    return render_page("viewer.html", title, scripts=("common.js", "chart.js", "viewer.js") + (("nway.js",) if nway else ()),
                       styles=("viewer.css", "chart.css") + (("nway.css",) if nway else ()), blobs=blobs)


def write_html(db: Path, output: Path | None = None, step: int | None = None, rank: int | None = None,
               diagnosis: Mapping[str, Any] | Path | None = None) -> Path:
    """Write the viewer of ``db`` (default: ``<db without .vis.db>.html`` beside it) atomically: every
    (step, rank) graph unless ``step``/``rank`` pick some, with the chart of ``diagnosis`` if given.

    When the graphs hold more than ``SPLIT_BYTES`` of data, the first one goes to ``output`` and
    each other one to ``<output stem>_step<S>_rank<R>.html`` beside it; the pages link each other.
    Returns ``output``."""
    db = Path(db)
    if output is None:
        stem = db.name[: -len(".vis.db")] if db.name.endswith(".vis.db") else db.stem
        output = db.with_name(f"{stem}.html")
    output = Path(output)
    if output.is_dir():
        raise InputError("is a directory; -o names the HTML file to write", output)
    try:
        blobs = load_page(db, step, rank, diagnosis)
    except (sqlite3.Error, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        detail = str(exc).splitlines()[0][:160] if str(exc) else ""
        raise InputError(f"is not a valid .vis.db graph file ({type(exc).__name__}: {detail})", db) from None
    graphs = blobs["page-meta"]["graphs"]
    sizes = sum(len(v) for k, v in blobs.items() if k.startswith("graph-"))
    output.parent.mkdir(parents=True, exist_ok=True)
    if len(graphs) < 2 or sizes <= SPLIT_BYTES:
        page = atomic_write(output, "w", encoding="utf-8")  # never replaces: output_1.html if taken
        with page as handle:
            handle.write(render_html(blobs))
        return page.path
    else:
        stem = output.name[: -len(".html")] if output.name.endswith(".html") else output.name
        paths = [output] + [output.with_name(f"{stem}_step{g['step']}_rank{g['rank']}.html") for g in graphs[1:]]
        names = [path.name for path in paths]
        pages = {}
        for k, path in enumerate(paths):
            meta = {**blobs["page-meta"], "pages": names, "current": k}
            page = {"page-meta": meta, f"graph-{k}": blobs[f"graph-{k}"]}
            if f"nway-{k}" in blobs:
                page[f"nway-{k}"] = blobs[f"nway-{k}"]
            if "chart-data" in blobs:
                page["chart-data"] = blobs["chart-data"]
            pages[path] = page
    for path, page in pages.items():  # linked by name: a page that exists is an error, not replaced
        with atomic_write(path, "w", encoding="utf-8", rename=False) as handle:
            handle.write(render_html(page))
    return output
