"""The fast paths of reading and pairing give exactly what the general code gives."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import probe.formats.msprobe.flatten as flatten
from probe.errors import InputError
from probe.match import assign_keys, match_exact
from probe.model import KeyMap, Pair, Row

ROW_FIELDS = ("name", "entry", "state", "dtype", "shape", "stats", "requires_grad", "md5", "data_name", "extra", "key")

_FLOAT32_MAX = 3.4028234663852886e38
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-3, 3),
                    # bounded: unbounded 32-bit floats reject out-of-range draws, and each rejection renders the
                    # whole strategy's repr (a warning)
                    st.floats(-_FLOAT32_MAX, _FLOAT32_MAX, width=32), st.sampled_from([float("inf"), float("-inf")]),
                    st.sampled_from(["", "-1", "x", "True", "false"]))
_text = st.sampled_from(["torch.Tensor", "torch.float32", "torch.bfloat16", "Float32", "-1", "a.pt", "../a.pt",
                         "a/b.pt", "..", "", "torch.Size", "int"])
_leaf = st.fixed_dictionaries(
    {"type": st.one_of(_text, st.integers(0, 1), st.none())},
    optional={
        "dtype": st.one_of(_text, st.integers(0, 2), st.lists(st.integers(0, 2), max_size=2)),
        "shape": st.one_of(st.lists(st.one_of(st.integers(0, 4), st.booleans(), st.floats(0, 2)), max_size=3),
                           st.integers(0, 2), st.none(), _text),
        "Max": _scalar, "Min": _scalar, "Mean": _scalar, "Norm": _scalar,
        "requires_grad": st.one_of(st.booleans(), st.none(), st.sampled_from(["True", "true", "False", "yes"]),
                                   st.integers(0, 1)),
        "md5": st.one_of(st.none(), st.sampled_from(["", "abcd1234"])),
        "data_name": st.one_of(st.none(), st.integers(0, 1), _text),
        "value": _scalar,
        "class_type": st.sampled_from(["", "torch.distributed.P2POp"]),
    },
)
_tensor_leaf = st.fixed_dictionaries(
    {"type": st.just("torch.Tensor"), "dtype": st.sampled_from(["torch.float32", "Float16"]),
     "shape": st.lists(st.integers(0, 4), max_size=3), "Max": _scalar, "Min": _scalar, "Mean": _scalar,
     "Norm": _scalar, "requires_grad": st.one_of(st.booleans(), st.none())},
    optional={"md5": st.one_of(st.none(), st.sampled_from(["", "abcd1234"])),
              "data_name": st.sampled_from(["-1", "", "a.pt"])},
)
_plain_leaf = st.fixed_dictionaries(  # the eight keys of the fast path: mostly plain values, some hostile
    {"type": st.sampled_from(["torch.Tensor", "torch.Tensor", "mindspore.Tensor", 1, None]),
     "dtype": st.one_of(st.sampled_from(["torch.float32", "torch.float32", "Float16", "torch.int64"]),
                        st.sampled_from([0, 1, None, ["torch.float32"]])),
     "shape": st.one_of(st.lists(st.sampled_from([1, 2, 3, 64, 1, 2, 1.0, 2.0, True, False]), max_size=3),
                        st.lists(st.integers(1, 3), max_size=3),
                        st.sampled_from([None, 2, "[1]", [[1, 2]], [None], {"a": 1}])),
     "Max": _scalar, "Min": _scalar, "Mean": _scalar, "Norm": _scalar,
     "requires_grad": st.sampled_from([True, False, None, True, False, 1, 0, "True", "false", 1.0])},
)
_typed_scalar = st.builds(lambda kind, value: {"type": kind, "value": value},
                         st.sampled_from(["int", "float", "bool", "str", "torch.Size"]), _scalar)
_list_item = st.one_of(_plain_leaf, _plain_leaf, _plain_leaf, st.none(), _leaf, _tensor_leaf, _typed_scalar,
                       st.lists(_plain_leaf, max_size=2), st.fixed_dictionaries({"a": _plain_leaf}), _scalar)
_labels = st.sampled_from(["src", "dst", "group_src", "a.dst", "0", "1", "type", "class_type"])
"""Labels of dict sections: communication scalars, a list item's tail, a leaf's own keys."""
_list_entry = st.fixed_dictionaries(
    {}, optional={"input_args": st.lists(_list_item, max_size=5), "output": st.lists(_list_item, max_size=5),
                  "input": st.lists(_list_item, max_size=3), "input_kwargs": st.dictionaries(st.one_of(_text, _labels), _list_item),
                  "parameters": st.dictionaries(st.sampled_from(["weight", "bias", "src"]), _list_item, max_size=2),
                  "weight": st.lists(_list_item, max_size=3)})
_tree = st.recursive(st.one_of(st.none(), _scalar, _leaf, _tensor_leaf, _plain_leaf),
                     lambda kids: st.one_of(st.lists(kids, max_size=3),
                                            st.dictionaries(st.sampled_from(["a", "b", "0"]), kids, max_size=3)),
                     max_leaves=8)
_entry = st.fixed_dictionaries({}, optional={"input_args": _tree, "input_kwargs": _tree, "output": _tree,
                                             "parameters": _tree, "input": _tree})
_names = st.sampled_from(["Functional.relu.0.forward", "Functional.relu.1.backward", "Functional.relu.4.backward",
                          "Module.m.L.forward.0", "Module.m.L.backward.0", "Module.m.L.backward.3",
                          "Module.m.L.parameters_grad", "Module.m.backward.parameters_grad", "Tensor.add.0.forward",
                          "Tensor.add.0.backward", "bad", "a.backward", "backward.x.y"])


def _flatten(entries: list[tuple[str, Any]], debug: bool, limit: int | None = None) -> Any:
    try:
        rows, skipped, count = flatten.flatten_entries(entries, debug=debug, max_rows=limit)
    except InputError as exc:
        return str(exc)
    return [tuple(getattr(row, f) for f in ROW_FIELDS) for row in rows], rows.has_md5, skipped, count


def _plain_flatten(entries: list[tuple[str, Any]], debug: bool, limit: int | None = None) -> Any:
    """Flatten with every fast path off (the general walk), keys given by :func:`assign_keys`."""
    def plain_section_rows(entry, body, plan, out, renamed):
        for section, state, tail, indexed in plan:
            items = body[section]
            if items or not indexed:  # a forward entry's empty or null section has no rows
                flatten._walk(items, entry + tail, entry, state, out, 1, indexed)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(flatten, "_tensor_row", lambda *args: False)
        patch.setattr(flatten, "_section_rows", plain_section_rows)
        patch.setattr(flatten, "_rekey", lambda *args: None)
        try:
            rows, skipped, count = flatten.flatten_entries(entries, debug=debug, max_rows=limit)
        except InputError as exc:
            return str(exc)
    rows.keyed = False
    assign_keys(rows, not debug)
    return [tuple(getattr(row, f) for f in ROW_FIELDS) for row in rows], rows.has_md5, skipped, count


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_names, st.one_of(_list_entry, _list_entry, _entry, _tree)), max_size=6), st.booleans())
def test_flatten_fast_path_equals_the_general_walk(entries, debug) -> None:
    fast = _flatten(entries, debug)
    general = _plain_flatten(entries, debug)
    assert repr(fast) == repr(general)  # repr: NaN-free, but tells 1 from 1.0 and True


_mostly_plain = st.fixed_dictionaries(  # plain leaves, with one field in ten or so hostile
    {"type": st.sampled_from(["torch.Tensor"] * 9 + [1]),
     "dtype": st.sampled_from(["torch.float32"] * 4 + ["Float16", "torch.int64"] * 2 + [0, None]),
     "shape": st.one_of(*[st.lists(st.sampled_from([1, 2, 3]), max_size=3)] * 6,
                        st.lists(st.sampled_from([1, 2, 1.0, 2.0, True, False]), min_size=1, max_size=3),
                        st.sampled_from([None, "[1]", [[1]]])),
     "Max": _scalar, "Min": _scalar, "Mean": _scalar, "Norm": _scalar,
     "requires_grad": st.sampled_from([True, False, None] * 3 + [1, 0, "True"])},
    optional={"md5": st.sampled_from(["abcd1234", "abcd1234", "", None, 0, [1]])},
)
_scalar_leaf = st.fixed_dictionaries(
    {"type": st.sampled_from(["int", "float", "bool", "str", "list", "torch.Size", "slice", "ellipsis",
                              "torch.ProcessGroup", "torch.dtype", 1, None]),
     "value": st.one_of(_scalar, st.lists(st.integers(0, 3), max_size=3), st.lists(st.lists(st.integers(0, 1))))})
_valid_names = st.sampled_from(["Functional.relu.0.forward", "Functional.relu.1.backward", "Functional.relu.4.backward",
                                "Module.m.L.forward.0", "Module.m.L.backward.3", "Module.m.L.parameters_grad"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_valid_names, st.fixed_dictionaries(
    {"input_args": st.lists(st.one_of(_mostly_plain, _mostly_plain, _scalar_leaf, st.none()), max_size=6)},
    optional={"output": st.lists(_mostly_plain, max_size=4), "weight": st.lists(_mostly_plain, max_size=2),
              "src": st.lists(st.one_of(_scalar_leaf, _mostly_plain), max_size=2)})),
    min_size=1, max_size=6))
def test_flatten_fast_path_equals_the_general_walk_on_plain_leaves(entries) -> None:
    assert repr(_flatten(entries, False)) == repr(_plain_flatten(entries, False))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_valid_names, _list_entry), min_size=1, max_size=4), st.integers(0, 12))
def test_flatten_fast_path_stops_at_the_row_limit_where_the_walk_does(entries, limit) -> None:
    assert repr(_flatten(entries, False, limit)) == repr(_plain_flatten(entries, False, limit))


@pytest.mark.parametrize("limit", range(7))
def test_nested_items_count_toward_the_row_limit(limit: int) -> None:
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0,
            "Mean": 0.5, "Norm": 2.0, "requires_grad": True}
    entries = [("Functional.f.0.forward", {"input_args": [[leaf, None, leaf], leaf, None]})]
    fast, general = _flatten(entries, False, limit), _plain_flatten(entries, False, limit)
    assert repr(fast) == repr(general)
    assert isinstance(fast, str) == (limit < 5)


def test_flatten_fast_path_on_long_lists_and_deep_names() -> None:
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.0, "Min": 0.0,
            "Mean": 0.5, "Norm": 2.0, "requires_grad": True}
    body = {"input_args": [dict(leaf, shape=[i]) for i in range(70)] + [None, 3, [leaf, None]],
            "output": [leaf, {**leaf, "md5": "x"}]}
    entries = [("Module.a.L.backward.7", body), ("Functional.f.9.backward", body),
               ("Module.a.L.backward.7", body), ("Module.a.L.backward.8", {}), ("Module.a.L.backward.9", body)]
    fast, general = _flatten(entries, False), _plain_flatten(entries, False)
    assert repr(fast) == repr(general)
    keys = [row[-1] for row in fast[0]]
    assert keys[0] == "Module.a.L.backward.0.input.0" and "Module.a.L.backward.1.output.1" in keys
    assert "Functional.f.0.backward.input.69" in keys


def test_keys_of_a_reader_are_recomputed_after_the_first_assignment() -> None:
    body = {"input": [{"type": "int", "value": 1}]}
    rows = flatten.flatten_entries([("A.f.5.backward", body)])[0]
    assert rows.keyed and rows[0].key == "A.f.0.backward.input.0"
    assign_keys(rows, True)  # taken as they are, once
    assert not rows.keyed and rows[0].key == "A.f.0.backward.input.0"
    rows[0].key = "changed by a normalizer"
    assign_keys(rows, True)
    assert rows[0].key == "A.f.0.backward.input.0"
    rows = flatten.flatten_entries([("A.f.5.backward", body)])[0]
    assign_keys(rows, False)
    assert rows[0].key is rows[0].name


def _reference_match(target: list[Row], golden: list[Row], key_map: KeyMap | None) -> tuple[list[Pair], int]:
    """Exact matching from its definition (one golden lookup per target row)."""
    from probe.formats.msprobe.dtypes import dtypes_compatible

    by_key: dict[str, list[Row]] = {}
    for row in golden:
        by_key.setdefault(row.key, []).append(row)
    gate = None if key_map is not None and key_map.left_join else dtypes_compatible
    pairs, used = [], set()
    for row in target:
        key = row.key
        if key_map is not None and key_map.target_key(row) is not None:
            key = key_map.target_key(row)
        cands = by_key.get(key)
        if not cands:
            pairs.append(Pair(row, None))
        for cand in cands or ():
            used.add(id(cand))
            pairs.append(Pair(row, cand if gate is None or gate(row.dtype, cand.dtype) else None))
    return pairs, len(golden) - len(used)


_row_specs = st.lists(st.tuples(st.sampled_from(["A.f.0.forward", "A.f.1.backward", "A.f.3.backward",
                                                 "M.m.L.backward.2"]),
                                st.sampled_from(["0", "1"]),
                                st.sampled_from(["torch.float32", "torch.float16", "torch.int64", "Float32"])),
                      max_size=12)


def _rows(specs: list[tuple[str, str, str]]) -> list[Row]:
    return [Row(f"{entry}.input.{leaf}", entry, "input", dtype, "[]", (1, 1, 1, 1), "N/A", None, "-1")
            for entry, leaf, dtype in specs]


@settings(max_examples=300, deadline=None)
@given(_row_specs, _row_specs, st.sampled_from([None, "map", "left_join"]), st.booleans())
def test_match_exact_equals_its_definition(target_specs, golden_specs, mapper, renumber) -> None:
    target, golden = _rows(target_specs), _rows(golden_specs)
    assign_keys(target, renumber)
    assign_keys(golden, renumber)
    key_map = None
    if mapper is not None:
        key_map = KeyMap(lambda row: "A.f.0.forward.input.0" if row.dtype == "Float32" else None,
                         left_join=mapper == "left_join")
    got_pairs, got_only = match_exact(target, golden, key_map)
    want_pairs, want_only = _reference_match(target, golden, key_map)
    assert got_only == want_only
    assert [(p.target, p.golden, p.fuzzy) for p in got_pairs] == [(p.target, p.golden, p.fuzzy) for p in want_pairs]


def test_backward_keys_renumber_by_order() -> None:
    rows = _rows([("A.f.3.backward", "0", "Float32"), ("A.f.7.backward", "1", "Float32"),
                  ("A.f.2.forward", "0", "Float32")])
    assign_keys(rows, True)
    assert [row.key for row in rows] == ["A.f.0.backward.input.0", "A.f.1.backward.input.1", "A.f.2.forward.input.0"]
    assert rows[2].key is rows[2].name
    assign_keys(rows, False)
    assert all(row.key is row.name for row in rows)


def test_scalar_rows_share_cells_only_when_type_and_text_agree() -> None:
    values = [0.0, -0.0, 1, 1.0, True, "1", None, 0.0, 1, [1, 2], [1, 2], float("inf")]
    body = {"input_args": [{"type": type(v).__name__, "value": v} for v in values]}
    rows = flatten.flatten_entries([("Functional.f.0.forward", body)])[0]
    for row, value in zip(rows, values):
        assert repr(row.stats) == repr((value,) * 4)
        assert row.dtype == f"<class '{type(value).__name__}'>"
        assert row.md5 == flatten.crc32_hex(str(value))
    assert rows[0].stats is rows[7].stats and rows[2].stats is rows[8].stats
    assert rows[0].stats is not rows[1].stats and rows[2].stats is not rows[3].stats
    assert rows[9].stats[0] is not rows[10].stats[0]  # lists are never shared


def _reference_entry_kind(name: str) -> str | None:
    """:func:`flatten.entry_kind` as it was first written: the last two of three or more components."""
    head, _, last = name.rpartition(".")
    second = head.rpartition(".")
    if not second[1]:
        return None
    for candidate in (last, second[2]):
        if candidate in ("forward", "backward", "parameters_grad"):
            return candidate
    return None


_name_part = st.sampled_from(["forward", "backward", "parameters_grad", "Functional", "relu", "0", "", "x.y",
                              "forwardx", "backward.", ".forward"])


@settings(max_examples=800, deadline=None)
@given(st.one_of(st.lists(_name_part, max_size=5).map(".".join), st.text(alphabet=".abfordw_", max_size=12)))
def test_entry_kind_equals_the_reference(name: str) -> None:
    assert flatten.entry_kind(name) == _reference_entry_kind(name)


_section_keys = st.sampled_from(["input_args", "input_kwargs", "input", "parameters", "output", "weight", "other"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_section_keys, st.one_of(st.lists(_list_item, max_size=3), _tree)), max_size=7),
       st.sampled_from(["Functional.relu.0.forward", "Module.m.L.forward.0"]))
def test_entry_sections_come_in_their_order_whatever_the_order_of_keys(sections, name) -> None:
    """An entry's rows are those of its sections one by one in ENTRY_SECTIONS order, whatever order the
    dump wrote its keys in (and other keys are ignored)."""
    body = dict(sections)
    one_by_one: Any = []
    for key, _state, _prefix in flatten.ENTRY_SECTIONS:
        if key in body:
            rows = _flatten([(name, {key: body[key]})], False)
            if isinstance(rows, str):
                one_by_one = rows
                break
            one_by_one.extend(rows[0])
    whole = _flatten([(name, body)], False)
    assert repr(whole if isinstance(whole, str) else whole[0]) == repr(one_by_one)


@settings(max_examples=300, deadline=None)
@given(_row_specs, st.lists(st.sampled_from(["torch.float32", "torch.float16", "torch.int64", "Float32"]),
                            min_size=12, max_size=12), st.booleans())
def test_match_exact_of_aligned_dumps(specs, dtypes, renumber) -> None:
    """Golden rows of the target's keys in the target's order (the usual pair of dumps, which pairs by
    position) pair as by key: dtype gate, repeated keys and all."""
    target = _rows(specs)
    golden = _rows([(entry, leaf, dtype) for (entry, leaf, _), dtype in zip(specs, dtypes)])
    assign_keys(target, renumber)
    assign_keys(golden, renumber)
    got_pairs, got_only = match_exact(target, golden)
    want_pairs, want_only = _reference_match(target, golden, None)
    assert got_only == want_only
    assert [(p.target, p.golden, p.fuzzy) for p in got_pairs] == [(p.target, p.golden, p.fuzzy) for p in want_pairs]


def _detect_eagerly(path: str) -> str | None:
    """How the framework was detected before the levels were listed lazily (every level first)."""
    from pathlib import Path

    from probe.formats.msprobe.reader import _FRAMEWORK_RE

    root = Path(path)
    candidates = [root]
    if root.is_dir():
        candidates = sorted(root.glob("*.json")) + sorted(root.glob("*/*.json")) + sorted(root.glob("*/*/*.json"))
        candidates = [c for c in candidates if c.name.endswith(("dump.json", "debug.json"))]
    for candidate in candidates[:4]:
        try:
            head = candidate.read_bytes()[: 1 << 16]
        except OSError:
            continue
        match = _FRAMEWORK_RE.search(head)
        if match:
            return match.group(1).decode()
    return None


_PLACES = ["dump.json", "debug.json", "a_dump.json", "other.json", "r0/dump.json", "r1/debug.json",
           "r0/x/dump.json", "r1/y/dump.json", "r2/z/debug.json", "r0/dump_tensor_data/t.json"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(_PLACES), st.sampled_from(["pytorch", "mindspore", None]), max_size=6))
def test_framework_detection_equals_the_eager_walk(tmp_path_factory: Any, files: dict[str, str | None]) -> None:
    from probe.formats.msprobe.reader import detect_framework

    root = tmp_path_factory.mktemp("detect")
    for name, framework in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        key = f'"framework": "{framework}",' if framework else ""
        path.write_text('{"task": "statistics", ' + key + ' "data": {}}')
    assert detect_framework(str(root)) == _detect_eagerly(str(root))
    for name in files:
        assert detect_framework(str(root / name)) == _detect_eagerly(str(root / name))


def test_framework_detection_stops_at_the_first_level_that_answers(tmp_path: Any, monkeypatch: Any) -> None:
    from pathlib import Path

    from probe.formats.msprobe.reader import detect_framework

    (tmp_path / "dump_tensor_data").mkdir()
    (tmp_path / "dump.json").write_text('{"task": "tensor", "framework": "pytorch", "data": {}}')
    listed: list[str] = []
    real_glob = Path.glob
    monkeypatch.setattr(Path, "glob", lambda self, pattern: listed.append(pattern) or real_glob(self, pattern))
    assert detect_framework(str(tmp_path)) == "pytorch"
    assert listed == ["*.json"]  # the tensor files below are never listed
