"""Reading a dump a window at a time: fast paths equal the slow ones, odd files run whole."""

from __future__ import annotations

import json
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import probe.memberindex as memberindex
from probe.errors import NotStreamable
from probe.formats.msprobe.flatten import entry_kind, flatten_entries
from probe.formats.msprobe.names import backward_stem, renumbered
from probe.formats.msprobe.reader import MsprobeJsonReader
from probe.formats.msprobe.stream import skipped_names
from probe.match import assign_keys, backward_numbers, backward_renames
from probe.windows import ALL_MET, GoldenIndex, TargetWindows, entry_keys, nested_prefixes, nestings
from report_snapshots import collect
from test_streaming import _DUMP, _NAMES, _write


@settings(max_examples=200, deadline=None)
@given(entries=_DUMP, offset=st.integers(0, 3))
def test_rows_keyed_by_given_renames_are_those_assign_keys_gives(entries, offset) -> None:
    names = [name for name, _ in entries]
    renames = backward_renames(names, {"Functional.relu": offset, "Module.m.Linear": offset})
    fast = flatten_entries(entries, renames=renames)[0]
    slow = flatten_entries(entries)[0]
    assign_keys(slow, True, renames)
    assert [(row.name, row.key) for row in fast] == [(row.name, row.key) for row in slow]


@given(keys=st.lists(st.sampled_from(_NAMES + ["a.b.forward.output.forward", "x.parameters_grad.y.z"]), max_size=8))
def test_nestings_are_the_nested_prefixes_of_every_key(keys) -> None:
    assert list(nestings(keys)) == [(i, prefix) for i, key in enumerate(keys) for prefix in nested_prefixes(key)]


_PARTS = ["forward", "backward", "parameters_grad", "input", "output", "parameters", "0", "3", "x", "",
          "Functional", "backwardx", "xforward", "parameters_gradx", "input_args"]
_ENTRY_NAMES = st.one_of(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=7).map(".".join),
                         st.text(st.sampled_from(".abdfgkrw_"), max_size=20))


@settings(max_examples=400)
@given(names=st.lists(_ENTRY_NAMES, max_size=12))
def test_entry_keys_are_the_renames_numbers_and_skipped_names_one_at_a_time(names) -> None:
    keys, numbers, skipped = entry_keys(names)
    found = {position: (renumbered(stem, api, number), number)
             for position, stem, api, number in backward_numbers(names, {})}
    assert keys == [found[i][0] if i in found else name for i, name in enumerate(names)]
    assert list(numbers) == [found[i][1] if i in found else -1 for i in range(len(names))]
    if len(set(names)) == len(names):
        assert keys == [backward_renames(names).get(name, name) for name in names]
    assert skipped == skipped_names(names) == [name for name in names if entry_kind(name) is None]


def _partitioned_stem(entry: str) -> tuple[str, bool] | None:
    """backward_stem as it was first written (two partitions from the right)."""
    head, _, last = entry.rpartition(".")
    stem, dot, second = head.rpartition(".")
    if "backward" not in entry or not dot:
        return None
    return (stem, True) if last == "backward" else (stem, False) if second == "backward" else None


@settings(max_examples=400)
@given(name=_ENTRY_NAMES)
def test_backward_stem_equals_partitioning_the_name(name) -> None:
    assert backward_stem(name) == _partitioned_stem(name)


def _split_prefixes(key: str) -> list[str]:
    """nested_prefixes as it was first written (every key split at its dots)."""
    if not any(part in key for part in (".input.", ".output.", ".parameters.", ".parameters_grad.")):
        return []
    kinds = ("forward", "backward", "parameters_grad")
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(3, len(parts))
            if (parts[i - 1] in kinds or parts[i - 2] in kinds)
            and (parts[i] in ("input", "output", "parameters") or "parameters_grad" in (parts[i - 1], parts[i - 2]))]


@settings(max_examples=400)
@given(key=_ENTRY_NAMES)
def test_nested_prefixes_fast_path_equals_splitting_the_key(key) -> None:
    assert nested_prefixes(key) == _split_prefixes(key)


def _golden(tmp_path, sizes: list[int]) -> GoldenIndex:
    entries = [(f"Torch.add.{i}.forward", {"output": [{"type": "int", "value": 1}] * size})
               for i, size in enumerate(sizes)]
    _write(tmp_path / "g" / "dump.json", entries)
    return GoldenIndex(MsprobeJsonReader().stream(tmp_path / "g" / "dump.json", with_stack=False))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 4), min_size=1, max_size=5),
       meetings=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 15), st.booleans()), max_size=12))
def test_golden_rows_met_count_as_with_explicit_masks(tmp_path, sizes, meetings) -> None:
    """A mark of every row met (ALL_MET) counts as the full mask of the entry's rows; rows
    never met are those no mark met, however often an entry is met."""
    short, full = _golden(tmp_path, sizes), _golden(tmp_path, sizes)
    met = [set() for _ in sizes]
    for index, mask, everything in meetings:
        index %= len(sizes)
        size = sizes[index]
        mask = (1 << size) - 1 if everything else mask & ((1 << size) - 1)
        short.apply([(index, ALL_MET, 0) if everything else (index, mask, size)])
        full.apply([(index, mask, size)])
        met[index].update(p for p in range(size) if mask >> p & 1)
    touched = {index % len(sizes) for index, _, _ in meetings}
    want = sum(sizes[i] - len(met[i]) for i in touched)
    assert short.golden_only == full.golden_only == want
    assert short.partial == full.partial


def _entry(value: float, data_name: str | None = None) -> dict:
    leaf = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": value, "Min": value,
            "Mean": value, "Norm": value, "requires_grad": False}
    if data_name is not None:
        leaf["data_name"] = data_name
    return {"input_args": [leaf], "output": [leaf]}


def test_rows_named_by_their_files_past_the_first_bytes_stop_the_stream(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(memberindex, "PROBE_BYTES", 64)  # the probe sees the first entry only
    entries = [("Torch.add.0.forward", _entry(1.0)), ("Torch.add.1.forward", _entry(2.0, "Torch.add.1.forward.pt"))]
    for side in ("t", "g"):
        _write(tmp_path / side / "dump.json", entries)
    reader = MsprobeJsonReader()
    target, golden = reader.stream(tmp_path / "t" / "dump.json"), reader.stream(tmp_path / "g" / "dump.json")
    assert target is not None and golden is not None
    with pytest.raises(NotStreamable, match="data_name"):
        list(TargetWindows(target, GoldenIndex(golden), 1))


def _misplaced(path, entries) -> None:
    """A dump.json whose ``data`` member is followed by another object member."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch", "data": dict(entries),
                                "extra": {"Torch.mul.0.forward": _entry(3.0)}}, indent=1))


def test_a_data_member_that_is_not_last_compares_as_a_whole_one(tmp_path, run_probe) -> None:
    entries = [(f"Torch.add.{i}.forward", _entry(float(i))) for i in range(4)]
    _misplaced(tmp_path / "t" / "dump.json", entries)
    _misplaced(tmp_path / "g" / "dump.json", entries[1:])
    target = MsprobeJsonReader().stream(tmp_path / "t" / "dump.json")
    with pytest.raises(NotStreamable):  # the last entry holds the member's close
        target.rows(0, len(target.names), {})
    argv = ["compare", "-tp", tmp_path / "t" / "dump.json", "-gp", tmp_path / "g" / "dump.json", "--format", "csv"]
    whole = run_probe(*argv, "-o", tmp_path / "whole", "--window", "0")
    windowed = run_probe(*argv, "-o", tmp_path / "windowed", "--window", "1")
    assert whole.code == windowed.code == 0
    assert collect(tmp_path / "whole") == collect(tmp_path / "windowed")


def test_a_golden_index_unpickles_only_where_string_hashes_are_its_own(tmp_path, monkeypatch) -> None:
    import probe.strhash as strhash

    index = _golden(tmp_path, [1, 2])
    again = pickle.loads(pickle.dumps(index))  # a forked child's index, back in its parent
    assert again.ordinals(list(index.dump.names)) == index.ordinals(list(index.dump.names))
    data = pickle.dumps(index)
    monkeypatch.setattr(strhash, "_SALT", "another process's hashes")  # hashes differ there
    with pytest.raises(TypeError, match="hashes"):
        pickle.loads(data)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(_ENTRY_NAMES, min_size=1, max_size=10, unique=True),
       wanted=st.lists(_ENTRY_NAMES, max_size=6))
def test_candidates_by_hash_are_those_a_dict_of_nested_keys_gives(tmp_path, names, wanted) -> None:
    """The golden entries nested in a key are kept as hashes; they are those a dict from each key to the
    entries nested in it finds."""
    path = tmp_path / "d" / "dump.json"
    _write(path, [(name, {}) for name in names])
    dump = MsprobeJsonReader().stream(path, with_stack=False)
    if dump is None:
        return
    try:
        golden = GoldenIndex(dump)
    except NotStreamable:  # keys that repeat once renumbered
        return
    keys = entry_keys(list(dump.names))[0]
    nested: dict[str, list[int]] = {}
    for index, prefix in nestings(keys):
        nested.setdefault(prefix, []).append(index)
    wanted = wanted + keys[::2] + [prefix for _, prefix in nestings(keys)]
    expected = set(golden.ordinals(wanted)) | set(golden.ordinals([p for _, p in nestings(wanted)]))
    expected.update(i for key in wanted for i in nested.get(key, ()))
    assert golden.candidates(wanted) == sorted(expected)
    again = pickle.loads(pickle.dumps(golden))
    assert again.candidates(wanted) == sorted(expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(st.tuples(_ENTRY_NAMES, st.just({})), min_size=1, max_size=8, unique_by=lambda e: e[0]))
def test_streamed_dumps_skip_the_entries_a_whole_read_skips(tmp_path, entries) -> None:
    """Skipped names come from the index here and from the golden index's one pass there."""
    path = tmp_path / "d" / "dump.json"
    _write(path, entries)
    reader = MsprobeJsonReader()
    whole = reader.load(path, with_stack=False).skipped_entries
    streamed = reader.stream(path, with_stack=False)
    if streamed is None:  # names the index scan does not find (escapes): read whole
        return
    assert streamed.header().skipped_entries == whole
    try:
        golden = GoldenIndex(reader.stream(path, with_stack=False))
    except NotStreamable:  # keys that repeat once renumbered
        return
    assert golden.dump.header().skipped_entries == whole


def _index_by_regex(raw: bytes, body: int, end: int) -> tuple[list[str], list[int]] | None:
    """The entry scan as one regex pass (what :func:`memberindex.index_member` gives)."""
    names, starts = [], []
    try:
        for match in memberindex._ENTRY.finditer(raw, body, end):
            names.append(match[1].decode())
            starts.append(match.start())
    except UnicodeDecodeError:
        return None
    if not starts or starts[0] != body or len(set(names)) != len(names):
        return None
    return names, starts


_NAME_TEXT = st.one_of(st.text(st.sampled_from('ab.\\"\n é'), max_size=8),
                       st.text(st.sampled_from("abc._0"), min_size=80, max_size=130))
_LINE = st.one_of(
    _NAME_TEXT.map(lambda n: b'  "' + n.encode() + b'": {'),
    _NAME_TEXT.map(lambda n: b'  "' + n.encode() + b'": null,'),
    _NAME_TEXT.map(lambda n: b'  "' + n.encode() + b'":{'),
    _NAME_TEXT.map(lambda n: b'  "' + n.encode() + b'"'),
    _NAME_TEXT.map(lambda n: b'   "' + n.encode() + b'": 1,'),
    st.binary(max_size=12).map(lambda b: b'  "' + b),
    st.sampled_from([b"  }", b"   [", b'  "\xff": {', b'  "a\xc3": 1', b"", b"  ", b'  "']),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=30), block=st.sampled_from([7, 64, 1 << 20]), scan=st.sampled_from([5, 200, 1 << 26]),
       batch=st.sampled_from([1, 3, 16384]))
def test_entry_scan_equals_one_regex_pass(lines, block, scan, batch, tmp_path, monkeypatch) -> None:
    """The word-compare scan with names cut in bulk finds exactly the regex's entries, whatever the
    lines (escapes, long names, no ``": ``, bad UTF-8) and wherever blocks and pieces are cut."""
    monkeypatch.setattr(memberindex, "BLOCK_BYTES", block)
    monkeypatch.setattr(memberindex, "SCAN_BYTES", scan)
    monkeypatch.setattr(memberindex, "_NAME_BATCH", batch)
    raw = b'{\n "task": "statistics",\n "data": {\n  "first": {' + b"\n".join([b""] + lines + [b'   "pad": "' + b"x" * 120 + b'"']) + b"\n }\n}\n"
    path = tmp_path / "dump.json"
    path.write_bytes(raw)
    body, end = memberindex.member_span(raw, "data", last=True)
    index = memberindex.index_member(path, "data")
    expected = _index_by_regex(raw, body, end)
    assert (index.names, list(index.starts)) == expected if expected else index is None


@settings(max_examples=200, deadline=None)
@given(names=st.lists(st.text(st.characters(blacklist_characters="\n"), max_size=6), min_size=1, max_size=9),
       lo=st.integers(-11, 11), hi=st.integers(-11, 11), step=st.sampled_from([None, 1, 2, -1]))
def test_names_kept_joined_read_as_the_list(names, lo, hi, step) -> None:
    index = memberindex.MemberIndex(None, names, memberindex.array("q", range(len(names))), len(names))
    joined = pickle.loads(pickle.dumps(index)).names
    assert isinstance(joined, memberindex.JoinedNames)
    assert len(joined) == len(names) and list(joined) == names
    assert [joined[i] for i in range(-len(names), len(names))] == names + names
    assert joined[lo:hi:step] == names[lo:hi:step]
    for bad in (len(names), -len(names) - 1):
        with pytest.raises(IndexError):
            joined[bad]


def test_a_golden_index_from_a_child_reads_the_rows_of_its_entries(tmp_path) -> None:
    index = _golden(tmp_path, [1, 2, 3])
    again = pickle.loads(pickle.dumps(index))
    assert isinstance(again.dump.names, memberindex.JoinedNames)
    ordinals = list(range(len(index.dump.names)))
    assert [r.key for r in again.rows(ordinals)] == [r.key for r in index.rows(ordinals)]
    assert again.renames(ordinals) == index.renames(ordinals)


_BACKWARD = ["Functional.relu.0.backward", "Functional.relu.1.backward", "Functional.relu.4.backward",
             "Module.m.L.backward.0", "Module.m.L.backward.2", "Torch.add.0.forward", "Module.m.L.forward.1"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(st.sampled_from(_BACKWARD), min_size=1, unique=True), data=st.data())
def test_golden_renames_taken_from_the_target_equal_those_made_afresh(tmp_path, names, data) -> None:
    entries = [(name, {"output": [{"type": "int", "value": 1}]}) for name in names]
    _write(tmp_path / "g" / "dump.json", entries)
    golden = GoldenIndex(MsprobeJsonReader().stream(tmp_path / "g" / "dump.json", with_stack=False))
    ordinals = sorted(data.draw(st.sets(st.integers(0, len(names) - 1))))
    target = data.draw(st.lists(st.sampled_from(_BACKWARD), unique=True))  # another order: other numbers
    numbers: dict[str, int] = {}
    known = backward_renames(target, {"Functional.relu": data.draw(st.integers(0, 2))}, numbers)
    assert golden.renames(ordinals, known, numbers) == golden.renames(ordinals)
    assert golden.renames(ordinals) == {name: backward_renames(names)[name] for name in golden.names_of(ordinals)
                                        if name in backward_renames(names)}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(0, 3), min_size=1, max_size=6), data=st.data())
def test_golden_marks_are_each_entrys_rows_met_whether_or_not_every_entry_has_rows(tmp_path, sizes, data) -> None:
    golden = _golden(tmp_path, sizes)
    joined = pickle.loads(pickle.dumps(golden))  # names kept joined, as from the child
    ordinals = sorted(data.draw(st.sets(st.integers(0, len(sizes) - 1), min_size=1)))
    rows = golden.rows(ordinals)
    met = {row.key for row in rows if data.draw(st.booleans())}
    want = []
    for index in ordinals:
        mine = [row.key in met for row in rows if row.entry == golden.dump.names[index]]
        mask = sum(1 << p for p, hit in enumerate(mine) if hit)
        want.append((index, mask, len(mine)))
    if all(hit for _, mask, size in want for hit in [mask == (1 << size) - 1]):
        want = [(index, ALL_MET, 0) for index in ordinals]
    assert golden.marks(ordinals, rows, met) == joined.marks(ordinals, joined.rows(ordinals), met) == want
