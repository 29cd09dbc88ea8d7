"""Flatten dump entries into rows (one row per leaf), in msProbe's names and order."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from probe.errors import InputError
from probe.formats.msprobe.dtypes import PROCESS_GROUP, TORCH_SIZE
from probe.formats.msprobe.names import backward_stem, renumbered
from probe.jsonio import available_memory
from probe.model import NA, Row, RowList

MAX_DEPTH = 400
ROW_BYTES = 1024
"""Memory one row costs through a compare, about (its object, its pair and its result)."""
MIN_ROW_LIMIT = 4_000_000
"""A dump may always have this many rows, whatever memory the machine reports free."""

# Keys of a forward/backward entry, in the order their rows are output:
# inputs first, then parameters, then outputs.
ENTRY_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("input_args", "input", "input"),
    ("input_kwargs", "input", "input"),
    ("input", "input", "input"),
    ("parameters", "parameters", "parameters"),
    ("output", "output", "output"),
)

_SECTIONS = tuple((key, state, f".{prefix}", True) for key, state, prefix in ENTRY_SECTIONS)
""":data:`ENTRY_SECTIONS` with the row-name tails of the sections (``.input``...), their items indexed."""

COMM_SCALAR_NAMES = frozenset({"src", "dst", "group_src", "group_dst"})
NO_STATS = (None, None, None, None)
EMPTY_MD5 = "00000000"
"""What msProbe shows for a tensor whose ``md5`` is ``null`` or ``""``."""
_REQUIRES_GRAD = {True: "True", False: "False", "True": "True", "False": "False", "true": "True", "false": "False"}
"""requires_grad as written by dumpers: JSON booleans, or the strings some dumpers write instead."""


def crc32_hex(text: str) -> str:
    """CRC-32 of ``text`` as 8 lower-case hex digits (msProbe's "md5" of non-tensors)."""
    return f"{zlib.crc32(text.encode('utf-8')) & 0xFFFFFFFF:08x}"


def entry_kind(name: str) -> str | None:
    """Classify an entry name: ``forward``, ``backward``, ``parameters_grad`` or ``None``.

    ``None`` means the name does not look like a dump entry (msProbe drops such entries).
    """
    head, _, last = name.rpartition(".")
    kind = _KINDS.get(last)
    if kind is not None:
        return kind if "." in head else None  # None: fewer than three components
    head, dot, second = head.rpartition(".")
    return _KINDS.get(second) if dot else None


_KINDS = {"forward": "forward", "backward": "backward", "parameters_grad": "parameters_grad"}
"""The entry kinds :func:`entry_kind` tells, by the name component that says them."""


def _py_repr(value: Any) -> str:
    """``str(value)`` as Python prints the JSON value (``None``, ``True``, lists...)."""
    return str(value)


def leaf_row(name: str, entry: str, state: str, leaf: dict[str, Any] | None) -> Row:
    """Build the row of one leaf (``None`` for a JSON null)."""
    if leaf is None:
        return Row(name, entry, state, NA, NA, NO_STATS, NA, None, "-1")
    extra = None
    if "tensor" in leaf and leaf.get("class_type", "").endswith("P2POp"):
        extra = {k: leaf.get(k) for k in ("op", "peer", "tag", "group_id")}
        inner = leaf.get("tensor")
        row = leaf_row(name, entry, state, inner if isinstance(inner, dict) else None)
        row.extra = extra
        return row
    data_name = leaf.get("data_name") or "-1"
    if not isinstance(data_name, str):
        raise InputError(f"data_name of {entry} is not text ({type(data_name).__name__})")
    if data_name != "-1":
        if "/" in data_name or "\\" in data_name or data_name in (".", ".."):
            raise InputError(f"data_name {data_name!r} of {entry} points outside its dump directory")
        dot = data_name.rfind(".")
        name = data_name[:dot] if dot > 0 else data_name
    rg = leaf.get("requires_grad")
    requires_grad = NA if rg is None else _REQUIRES_GRAD.get(rg) if rg.__class__ in (bool, str) else None
    if requires_grad is None:
        raise InputError(f"requires_grad of {entry} is {rg!r}; expected true/false (or the strings \"True\"/\"False\")")
    if "dtype" in leaf:
        shape = leaf.get("shape")
        md5 = leaf.get("md5")
        if not md5 and "md5" in leaf:
            md5 = EMPTY_MD5
        return Row(
            name,
            entry,
            state,
            _shared(str(leaf["dtype"])),
            _shape_text(shape),
            (leaf.get("Max"), leaf.get("Min"), leaf.get("Mean"), leaf.get("Norm")),
            requires_grad,
            md5,
            data_name,
        )
    leaf_type = leaf.get("type")
    value = leaf.get("value")
    md5 = leaf.get("md5")
    if leaf_type == TORCH_SIZE:
        text = _py_repr(value)
        return Row(name, entry, state, TORCH_SIZE, text, NO_STATS, requires_grad, md5 or crc32_hex(text), data_name)
    if leaf_type == "slice":
        return Row(
            name, entry, state, "slice", _slice_shape(value), NO_STATS, requires_grad,
            md5 or crc32_hex(_py_repr(value)), data_name,
        )
    if leaf_type == "ellipsis":
        return Row(name, entry, state, "ellipsis", "[]", ("...",) * 4, requires_grad, md5 or crc32_hex("..."), data_name)
    if leaf_type == PROCESS_GROUP:
        ranks = _py_repr(leaf.get("group_ranks"))
        return Row(name, entry, state, PROCESS_GROUP, "[]", (ranks,) * 4, requires_grad, md5 or ranks, data_name)
    if name.rsplit(".", 1)[-1] in COMM_SCALAR_NAMES:
        text = _py_repr(value)
        return Row(name, entry, state, str(leaf_type), "[]", (text,) * 4, requires_grad, md5 or text, data_name)
    dtype, stats, checksum = _scalar_cells(value)
    return Row(name, entry, state, dtype, "[]", stats, requires_grad, md5 or checksum, data_name)


_TEXTS: dict[str, str] = {}
_SCALARS: dict[tuple[type, str], tuple[str, tuple[Any, ...], str]] = {}
_SHAREABLE = frozenset({int, float, bool, str, type(None)})
"""Immutable value types whose rows may share one stats tuple."""


def _scalar_cells(value: Any) -> tuple[str, tuple[Any, ...], str]:
    """The dtype cell, stats and checksum of a scalar leaf's ``value``; rows of equal
    scalars (same type, same text) share them."""
    text = _py_repr(value)
    key = (value.__class__, text)
    cells = _SCALARS.get(key)
    if cells is None:
        cells = (_shared(f"<class '{type(value).__name__}'>"), (value,) * 4, crc32_hex(text))
        if value.__class__ in _SHAREABLE and len(text) <= 64 and len(_SCALARS) < 100_000:
            _SCALARS[key] = cells
    return cells


_SHAPES: dict[tuple, str] = {}


def _shared(text: str) -> str:
    """One string object per distinct dtype text (rows are many, dtypes few)."""
    return _TEXTS.setdefault(text, text)


def _shape_text(shape: Any) -> str:
    """The shape cell (``[2, 3]``); one string object per distinct shape."""
    if shape.__class__ is list:
        # 1, 1.0 and True are equal dict keys: the key holds the item types as well
        key = (*shape, *map(type, shape))
        try:
            text = _SHAPES.get(key)
        except TypeError:  # nested lists or objects: not a plain shape
            return _py_repr(shape)
        if text is None:
            text = _py_repr(shape)
            if len(_SHAPES) < 100_000:
                _SHAPES[key] = text
        return text
    if isinstance(shape, tuple):
        return _py_repr(list(shape))
    return _py_repr(shape)


def _slice_shape(value: Any) -> str:
    if isinstance(value, list):
        # numpy shape of the value: a flat list of n items has shape (n,)
        depth_shape: list[int] = []
        node: Any = value
        while isinstance(node, list):
            depth_shape.append(len(node))
            node = node[0] if node else None
        return str(tuple(depth_shape))
    return "()"


def _walk(value: Any, name: str, entry: str, state: str, out: RowList, depth: int, list_index: bool = True) -> None:
    if depth > MAX_DEPTH:
        raise InputError(f"entry {entry} is nested deeper than {MAX_DEPTH} levels")
    if value is None:
        out.append(leaf_row(name, entry, state, None))
    elif isinstance(value, dict):
        if isinstance(value.get("type"), str) or value.get("class_type"):
            if "md5" in value and "dtype" in value:
                out.has_md5 = True
            row = leaf_row(name, entry, state, value)
            if row.data_name != "-1":  # the only rows named by their data_name
                out.named = True
            out.append(row)
        else:
            _walk_items(value.items(), name, entry, state, out, depth + 1, True, list_index)
    elif isinstance(value, (list, tuple)):
        _walk_items(enumerate(value) if list_index else value, name, entry, state, out, depth + 1, list_index,
                    list_index)
    # scalars outside a leaf object carry no information the reports use: skipped


def _walk_items(items: Iterable[Any], prefix: str, entry: str, state: str, out: RowList, depth: int,
                labelled: bool, list_index: bool) -> None:
    """:func:`_walk` each child of a dict or list: ``(label, value)`` pairs when ``labelled``
    (the child's name is ``prefix.label``), else bare values named ``prefix``.

    The common children are rows built right here (:func:`_tensor_row`, ``null``); any
    other child goes through :func:`_walk`, which gives the same rows more slowly.
    """
    append = out.append
    for item in items:
        if len(out) >= out.limit:
            _too_many(out, entry)
        if labelled:
            label, value = item
            name = f"{prefix}.{label}"
        else:
            value, name = item, prefix
        if value is None and depth <= MAX_DEPTH:
            append(Row(name, entry, state, NA, NA, NO_STATS, NA, None, "-1"))
            continue
        if (value.__class__ is dict and "dtype" in value and depth <= MAX_DEPTH
                and _tensor_row(name, entry, state, value, out)):
            continue
        _walk(value, name, entry, state, out, depth, list_index)


_RG_TEXT = {True: "True", False: "False"}


def _tensor_row(name: str, entry: str, state: str, leaf: dict[str, Any], out: RowList) -> bool:
    """Append the row of a plain tensor leaf, as :func:`leaf_row` builds it; ``False`` (and
    nothing appended) for any other object, which :func:`_walk` then handles."""
    get = leaf.get
    dtype = get("dtype")
    rg = get("requires_grad")
    requires_grad = _RG_TEXT.get(rg) if rg.__class__ is bool else (NA if rg is None else None)
    if (dtype.__class__ is not str or requires_grad is None or get("type").__class__ is not str
            or get("data_name", "-1") != "-1" or "tensor" in leaf):
        return False
    md5 = get("md5")
    if md5 is not None or "md5" in leaf:
        out.has_md5 = True
        if not md5:
            md5 = EMPTY_MD5
    out.append(Row(name, entry, state, _TEXTS.get(dtype) or _shared(dtype), _shape_text(get("shape")),
                   (get("Max"), get("Min"), get("Mean"), get("Norm")), requires_grad, md5, "-1"))
    return True


def flatten_entry(name: str, body: Any, kind: str, out: RowList) -> None:
    """Append the rows of one entry to ``out``.

    ``kind`` is ``forward``/``backward``/``parameters_grad`` for dump.json entries and
    ``debug`` for single-point entries of debug.json.
    """
    _entry_rows(name, body, kind, out, None)


def _entry_rows(name: str, body: Any, kind: str, out: RowList, renamed: str | None) -> None:
    """:func:`flatten_entry`, keying the rows by ``renamed`` (the entry's renumbered name,
    ``None`` to key them by their names)."""
    if kind == "debug":
        _walk(body, name, name, "debug", out, 0)
        return
    if kind == "parameters_grad":
        if isinstance(body, dict):
            _section_rows(name, body, tuple((key, kind, f".{key}", False) for key in body), out, renamed)
        return
    if not isinstance(body, dict):
        raise InputError(f"entry {name} is not a JSON object")
    keys = tuple(body)
    plan = _PLANS.get(keys)
    if plan is None:
        plan = _plan(keys)
    _section_rows(name, body, plan, out, renamed)


_PLANS: dict[tuple[str, ...], tuple[tuple[str, str, str, bool], ...]] = {}


def _plan(keys: tuple[str, ...]) -> tuple[tuple[str, str, str, bool], ...]:
    """The :data:`_SECTIONS` among an entry's ``keys``, in their order (kept for the next entry with these
    keys when they are few: a hostile dump's thousands of layouts or keys are not kept)."""
    plan = tuple(section for section in _SECTIONS if section[0] in keys)
    if len(_PLANS) < 1000 and len(keys) <= 16:
        _PLANS[keys] = plan
    return plan


def _rekey(rows: RowList, start: int, entry: str, renamed: str) -> None:
    """Key the rows of ``entry`` from ``start`` on by the entry's renumbered name, as
    :func:`probe.match.assign_keys` does (rows named otherwise keep their names)."""
    cut = len(entry)
    for index in range(start, len(rows)):
        row = rows[index]
        if row.name.startswith(entry):
            row.key = renamed + row.name[cut:]


_INDEX = tuple(f".{i}" for i in range(64))
"""``.0``, ``.1``...: the name tails of the first items of a list."""
_CELLS: dict[tuple[Any, ...], tuple[str, str, str]] = {}
"""Interned (dtype, shape, requires_grad) cells of plain tensor leaves, keyed by
``(dtype, requires_grad, tuple(shape))`` (only str dtypes, bool/None flags and int dims get in)."""


_OTHER_LEAVES = frozenset({TORCH_SIZE, "slice", "ellipsis", PROCESS_GROUP})
"""Leaf types with cells of their own (see :func:`leaf_row`); other typed values are scalars."""


def _section_rows(entry: str, body: dict[str, Any], plan: tuple[tuple[str, str, str, bool], ...], out: RowList,
                  renamed: str | None) -> None:
    """The rows of an entry's sections ``plan`` (``(key, state, name tail, indexed)`` of each), as
    :func:`_walk` gives them, with the common leaves of list and dict sections made right here; keyed
    by ``renamed`` (see :func:`_entry_rows`).

    Any other section (a leaf, a scalar, ``null``) goes through :func:`_walk` (a falsy one only when
    not ``indexed``: a parameter gradient's ``null`` is a row, a forward entry's ``null`` section none).
    Items of a dict section are named ``<entry><tail>.<label>``; ``indexed``: list items are named
    ``<entry><tail>.<index>`` (else all ``<entry><tail>``). A plain
    tensor leaf (exactly the keys type, dtype, shape, Max, Min, Mean, Norm, requires_grad, and md5 in md5
    dumps; text type and dtype, int dims, a bool or null flag) takes its cells from
    :data:`_CELLS`; a ``null`` and a plain scalar (``{"type": ..., "value": ...}``) make their
    rows here; anything else goes through :func:`_tensor_row` / :func:`_walk`.
    """
    append = out.append
    limit = out.limit
    cells_of = _CELLS.get
    for section, state, tail, indexed in plan:
        items = body[section]
        if items.__class__ is list:
            labelled = False
            pairs: Iterable[tuple[Any, Any]] = enumerate(items)
        elif (items.__class__ is dict and items and not isinstance(items.get("type"), str)
              and not items.get("class_type")):  # labelled items, not a leaf (see _walk)
            labelled = True
            pairs = items.items()
        else:
            if items or not indexed:
                start = len(out)
                _walk(items, entry + tail, entry, state, out, 1, indexed)
                if renamed is not None:
                    _rekey(out, start, entry, renamed)
            continue
        if not items:
            continue
        prefix = name = entry + tail
        key_prefix = None if renamed is None else renamed + tail
        key = key_prefix
        guard = len(out) + len(items) > limit  # else every item making one row stays within the limit
        for label, value in pairs:
            if guard and len(out) >= limit:
                _too_many(out, entry)
            if labelled:
                name = f"{prefix}.{label}"
                if key_prefix is not None:
                    key = f"{key_prefix}.{label}"
            elif indexed:
                dot = _INDEX[label] if label < 64 else f".{label}"
                name = prefix + dot
                if key_prefix is not None:
                    key = key_prefix + dot
            if value is None:
                append(Row(name, entry, state, NA, NA, NO_STATS, NA, None, "-1", None, key))
                continue
            if value.__class__ is dict:
                size = len(value)
                if size == 8 or size == 9:  # nine: with an "md5" (md5 dumps)
                    try:
                        kind = value["type"]
                        dtype = value["dtype"]
                        shape = value["shape"]
                        rg = value["requires_grad"]
                        stats = (value["Max"], value["Min"], value["Mean"], value["Norm"])
                        md5 = value["md5"] if size == 9 else None
                    except KeyError:
                        pass
                    else:
                        if (kind.__class__ is str and dtype.__class__ is str and shape.__class__ is list
                                and (rg is True or rg is False or rg is None)):
                            for dim in shape:
                                if dim.__class__ is not int:
                                    break
                            else:
                                cells = cells_of((dtype, rg, tuple(shape))) or _plain_cells(dtype, rg, shape)
                                if size == 9:
                                    out.has_md5 = True
                                    if not md5:
                                        md5 = EMPTY_MD5
                                append(Row(name, entry, state, cells[0], cells[1], stats, cells[2], md5, "-1", None,
                                           key))
                                continue
                elif size == 2:  # a scalar: {"type": ..., "value": ...}
                    try:
                        kind = value["type"]
                        scalar = value["value"]
                    except KeyError:
                        pass
                    else:
                        if (kind.__class__ is str and kind not in _OTHER_LEAVES
                                and (indexed and not labelled or name.rpartition(".")[2] not in COMM_SCALAR_NAMES)):
                            dtype, stats, checksum = _scalar_cells(scalar)
                            append(Row(name, entry, state, dtype, "[]", stats, NA, checksum, "-1", None, key))
                            continue
            start = len(out)
            if value.__class__ is not dict or "dtype" not in value or not _tensor_row(name, entry, state, value, out):
                _walk(value, name, entry, state, out, 2, indexed)
            if renamed is not None:
                _rekey(out, start, entry, renamed)
            guard = True  # the item made any number of rows: the later ones are tested


def _plain_cells(dtype: str, rg: bool | None, shape: list[int]) -> tuple[str, str, str]:
    """The dtype, shape and requires_grad cells of a plain tensor leaf, kept in :data:`_CELLS`."""
    cells = (_shared(dtype), _shape_text(shape), NA if rg is None else _RG_TEXT[rg])
    if len(_CELLS) < 100_000:
        _CELLS[(dtype, rg, tuple(shape))] = cells
    return cells


def _too_many(rows: RowList, entry: str) -> None:
    raise InputError(f"has too many leaves for the memory available (over {rows.limit:,} rows, about "
                     f"{ROW_BYTES} bytes each through a compare; at entry {entry})")


def row_limit() -> int:
    """The most rows one dump may flatten to: what half the available memory holds (the
    other half is the other dump's), at least :data:`MIN_ROW_LIMIT`."""
    free = available_memory()
    return MIN_ROW_LIMIT if free is None else max(MIN_ROW_LIMIT, free // (2 * ROW_BYTES))


def flatten_entries(
    entries: Iterable[tuple[str, Any]], debug: bool = False, names: list[str] | None = None,
    max_rows: int | None = None, renames: Mapping[str, str] | None = None,
) -> tuple[RowList, list[str], int]:
    """Flatten all entries; return ``(rows, skipped entry names, entry count)``.

    ``names``, when given, receives every entry name in file order (skipped ones too).
    Past ``max_rows`` rows the dump is refused (an :class:`InputError`) before memory runs
    out: a few bytes of JSON (``null,``) make a row of a few hundred bytes.

    Rows are keyed as :func:`probe.match.assign_keys` keys them: backward entries renamed
    by ``renames`` when given (entries of a dump read a window at a time), else renumbered
    in the order their entries first give rows."""
    rows = RowList()
    if max_rows is not None:
        rows.limit = max_rows
    skipped: list[str] = []
    count = 0
    numbered: dict[str, str] = {}
    counters: dict[str, int] = {}
    limit = rows.limit
    for name, body in entries:
        if len(rows) >= limit:
            _too_many(rows, name)
        count += 1
        if names is not None:
            names.append(name)
        if debug:
            flatten_entry(name, body, "debug", rows)
            continue
        kind = entry_kind(name)
        if kind is None:
            skipped.append(name)
            continue
        if "backward" not in name:
            renamed = None
        elif renames is not None:
            renamed = renames.get(name)
            if renamed == name:
                renamed = None
        else:
            _numbered(name, body, kind, rows, numbered, counters)
            continue
        if body.__class__ is dict and kind != "parameters_grad":  # most entries: their plan straight away
            keys = tuple(body)
            _section_rows(name, body, _PLANS.get(keys) or _plan(keys), rows, renamed)
        else:
            _entry_rows(name, body, kind, rows, renamed)
    rows.keyed = not debug
    return rows, skipped, count


def _numbered(name: str, body: Any, kind: str, rows: RowList, numbered: dict[str, str],
              counters: dict[str, int]) -> None:
    """The rows of backward entry ``name``, keyed renumbered in the order backward entries first
    give rows (as :func:`probe.match.assign_keys` keys them)."""
    renamed = numbered.get(name)
    found = None if renamed is not None else backward_stem(name)
    if found is not None:
        renamed = renumbered(found[0], found[1], counters.get(found[0], 0))
    start = len(rows)
    _entry_rows(name, body, kind, rows, None if renamed == name else renamed)
    if found is not None and len(rows) > start:
        counters[found[0]] = counters.get(found[0], 0) + 1
        numbered[name] = renamed
