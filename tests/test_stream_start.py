"""The start of a streamed compare: what is read ahead, indexed or sent between processes equals
what the plain, eager read gives, for fixtures and hostile files alike."""

from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import probe.diagnosis.facts as facts
import probe.formats.msprobe.stack as stack
import probe.jsonio as jsonio
import probe.streaming as streaming
from probe.diagnosis.parents import ParentMap
from probe.errors import InputError
from report_snapshots import collect

DATA = Path(__file__).parent / "data"
STAT = DATA / "graph" / "stat_target"
GOLDEN = DATA / "graph" / "stat_golden"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# --------------------------------------------------------------------------------------
# construct.json read ahead while the golden dump is indexed
# --------------------------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=8)
_CONSTRUCT = st.one_of(
    st.dictionaries(_TEXT, st.none() | _TEXT | st.integers(), max_size=20),  # the usual shape, and wrong values
    _JSON,  # any JSON document
    st.binary(max_size=40).map(lambda b: b"\xff" + b),  # not JSON at all
    st.none(),  # no construct.json
)


def _put(directory: Path, construct: object) -> Path:
    """A dump.json path in ``directory`` beside a construct.json holding ``construct``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "construct.json"
    if path.exists():
        path.unlink()
    if isinstance(construct, bytes):
        path.write_bytes(construct)
    elif construct is not None:
        path.write_text(json.dumps(construct))
    return directory / "dump.json"


@SETTINGS
@given(construct=_CONSTRUCT)
def test_preloaded_parents_equal_a_fresh_read(tmp_path, construct) -> None:
    dump = _put(tmp_path / "rank0", construct)
    fresh = facts.load_parents(dump)
    facts.preload_parents(dump)
    assert _answers(facts.load_parents(dump), construct) == _answers(fresh, construct)
    assert not facts._PRELOADED  # taken once


def _answers(parents: ParentMap, construct: object) -> list[str]:
    """What ``parents`` says of construct.json's names and of names it does not hold."""
    names = list(construct) if isinstance(construct, dict) else []
    return parents.modules_of(names + ["Torch.add.0.forward", "Module.absent.forward.0", ""])


@SETTINGS
@given(construct=_CONSTRUCT)
def test_parents_are_the_text_values_of_construct_json_sharing_equal_strings(tmp_path, construct) -> None:
    dump = _put(tmp_path / "rank0", construct)
    parents = facts.load_parents(dump)
    if isinstance(construct, dict):
        text = {k: v for k, v in construct.items() if isinstance(v, str)}
        assert len(parents) == len(text)
        names = list(construct) + ["Torch.add.0.forward", "Module.absent.forward.0", ""]
        found = parents.modules_of(names)
        assert found == [text.get(name, "") for name in names]
        shared: dict[str, str] = {}
        assert all(shared.setdefault(v, v) is v for v in found)  # one string per module
        assert pickle.loads(pickle.dumps(parents)).modules_of(names) == found  # in this process (or a forked one)
    else:
        assert not len(parents) and parents.modules_of(["x"]) == [""]


@SETTINGS
@given(parts=st.lists(st.dictionaries(st.sampled_from(["a", "b", "Module.c.forward.0", "d.0"]),
                                      st.none() | st.sampled_from(["", "M.0", "M.1"]) | st.integers()
                                      | st.lists(st.none(), max_size=1), max_size=4), max_size=4))
def test_a_parent_map_answers_as_the_merged_members_holding_text(parts) -> None:
    # pieces of one construct.json: a later member of a name wins, also when it holds no text (null)
    merged: dict[str, object] = {}
    for part in parts:
        merged.update(part)
    names = ["a", "b", "Module.c.forward.0", "d.0", "e"]
    assert ParentMap.of(parts).modules_of(names) == [v if isinstance(v, str) else "" for v in map(merged.get, names)]
    assert len(ParentMap.of(parts)) == sum(isinstance(v, str) for v in merged.values())


def test_preloaded_parents_are_taken_once_and_only_while_the_file_is_unchanged(tmp_path) -> None:
    dump = _put(tmp_path / "a", {"Torch.add.0.forward": "Module.m.forward.0"})
    facts.preload_parents(dump)
    kept = facts._PRELOADED[dump.parent / "construct.json"][1]
    assert facts.load_parents(dump) is kept
    assert facts.load_parents(dump) is not kept  # read again
    facts.preload_parents(dump)
    _put(tmp_path / "a", {"Torch.add.0.forward": "Module.other.forward.0"})  # changed since
    assert facts.load_parents(dump).modules_of(["Torch.add.0.forward"]) == ["Module.other.forward.0"]
    facts.preload_parents(dump)
    os.unlink(dump.parent / "construct.json")  # gone since
    assert not len(facts.load_parents(dump))
    other = _put(tmp_path / "b", {"x": "y"})
    facts.preload_parents(dump)
    facts.preload_parents(other)  # only the latest dump's is kept
    assert list(facts._PRELOADED) == [other.parent / "construct.json"]
    assert not len(facts.load_parents(dump))
    facts.load_parents(other)
    assert not facts._PRELOADED


def test_preload_ignores_what_is_not_a_regular_file(tmp_path) -> None:
    dump = tmp_path / "r" / "dump.json"
    (tmp_path / "r" / "construct.json").mkdir(parents=True)
    facts.preload_parents(dump)
    assert not facts._PRELOADED
    assert not len(facts.load_parents(dump))
    os.mkfifo(tmp_path / "f.json")
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.symlink(tmp_path / "f.json", fifo / "construct.json")
    facts.preload_parents(fifo / "dump.json")  # never opened: a FIFO would block
    assert not len(facts.load_parents(fifo / "dump.json"))


def _copy_pair(tmp_path: Path) -> tuple[Path, Path]:
    target, golden = tmp_path / "target", tmp_path / "golden"
    shutil.copytree(STAT, target)
    shutil.copytree(GOLDEN, golden)
    return target, golden


def test_a_streamed_compare_reads_construct_json_ahead_and_uses_it(tmp_path, run_probe, monkeypatch) -> None:
    target, golden = _copy_pair(tmp_path)
    read_ahead: list[Path] = []
    original = facts.preload_parents
    monkeypatch.setattr(facts, "preload_parents", lambda path: (read_ahead.append(path), original(path))[1])
    import probe.diagnosis.analyzer as analyzer

    monkeypatch.setattr(analyzer, "preload_parents", facts.preload_parents)
    runs = {}
    for run, window in (("whole", "0"), ("streamed", "1")):
        result = run_probe("compare", "-tp", target / "dump.json", "-gp", golden / "dump.json",
                           "-o", tmp_path / run, "--format", "csv,json", "--window", window)
        runs[run] = result.code, collect(tmp_path / run)
    assert read_ahead == [target / "dump.json"]
    assert not facts._PRELOADED  # the streamed compare's digest took it
    assert runs["whole"] == runs["streamed"]
    assert any("diagnosis" in name for name in runs["streamed"][1])


class _Failing:
    name = "failing"

    def prefetch(self, path: Path) -> None:
        raise RuntimeError("prefetch failed")


def test_a_failing_prefetch_stops_the_golden_child(tmp_path, monkeypatch) -> None:
    """The forked child indexing the golden dump is stopped when the parent fails during its read-ahead."""
    import probe.runtime as runtime
    from probe.model import CompareRequest, PairPlan
    from probe.plugins import default_host

    target, golden = _copy_pair(tmp_path)
    cancelled: list[int] = []
    original = runtime.Task.cancel
    monkeypatch.setattr(runtime.Task, "cancel", lambda self: (cancelled.append(1), original(self))[1])
    plan = PairPlan("x", target / "dump.json", golden / "dump.json")
    with pytest.raises(RuntimeError, match="prefetch failed"):
        streaming._open(plan, CompareRequest(target, golden), default_host(), [_Failing()])
    assert cancelled


def test_the_registries_of_the_later_stages_fill_while_the_golden_child_works(tmp_path, monkeypatch) -> None:
    """The plugins of the stages after the wait (modes, mappers, pairers, normalizers) register before the parent
    waits for the golden index: their imports are not on the critical path."""
    import probe.runtime as runtime
    from probe.model import CompareRequest, PairPlan
    from probe.plugins import Host

    target, golden = _copy_pair(tmp_path)
    host = Host()
    filled_at_wait: list[set[str]] = []
    original = runtime.Task.result
    monkeypatch.setattr(runtime.Task, "result",
                        lambda self: (filled_at_wait.append(set(vars(host)) & set(streaming._AFTER_OPEN)),
                                      original(self))[1])
    plan = PairPlan("x", target / "dump.json", golden / "dump.json")
    assert streaming._open(plan, CompareRequest(target, golden), host) is not None
    assert filled_at_wait == [{"modes", "mappers", "pairers", "normalizers"}]


# --------------------------------------------------------------------------------------
# the golden index sent back from the forked child
# --------------------------------------------------------------------------------------

_NAME = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10)


@SETTINGS
@given(names=st.lists(_NAME, max_size=12))
def test_a_member_index_pickles_with_its_names_and_offsets(names) -> None:
    """The names cross as one string when none holds a newline, as a list otherwise: equal either way."""
    import pickle
    from array import array

    from probe.memberindex import JoinedNames, MemberIndex

    index = MemberIndex(None, list(names), array("q", range(len(names))), len(names) + 1)
    state = index.__getstate__()
    assert isinstance(state["names"], JoinedNames) == (bool(names) and not any("\n" in n for n in names))
    copy = pickle.loads(pickle.dumps(index, protocol=pickle.HIGHEST_PROTOCOL))
    assert copy.names == names and copy.starts == index.starts and copy.end == index.end
    assert copy.raw is None and index.names is not copy.names


def test_the_golden_index_from_the_child_equals_one_made_here(tmp_path) -> None:
    from probe import runtime
    from probe.formats.msprobe.reader import MsprobeJsonReader

    if not runtime.allowed():
        pytest.skip("no second core to fork to")
    _, golden = _copy_pair(tmp_path)
    reader = MsprobeJsonReader()
    here = streaming._indexed_golden(reader, golden / "dump.json")
    there = runtime.start(streaming._indexed_golden, reader, golden / "dump.json").result()
    assert there.dump.names == here.dump.names and len(here.dump.names) > 10
    assert there.dump.index.starts == here.dump.index.starts
    assert there.dump.index.parse(0, len(here.dump.names)) == here.dump.index.parse(0, len(here.dump.names))
    assert (there.hashes == here.hashes).all() and (there.order == here.order).all()
    assert there.numbers == here.numbers and (there.nested == here.nested).all()
    assert (there.nested_ordinals == here.nested_ordinals).all()
    assert there.dump.skipped_entries == here.dump.skipped_entries


# --------------------------------------------------------------------------------------
# hostile files beside the target dump: a streamed compare says what a whole one says
# --------------------------------------------------------------------------------------

_BESIDE = {
    "no stack, no construct": (None, None),
    "stack top level a list": (b"[1, 2]", None),
    "stack group not a pair": (b'{"0": [["Torch.add.0.forward"]]}', None),
    "stack lines not a list": (b'{"0": [["Torch.add.0.forward"], 5]}', None),
    "old stack lines not a list": (b'{"Torch.add.0.forward": "x"}', None),
    "stack not JSON": (b'{"0": [', None),
    "stack empty": (b"", None),
    "stack a directory": ("dir", None),
    "construct a list": (None, b"[1, 2]"),
    "construct not JSON": (None, b'{"a": '),
    "construct wrong values": (None, b'{"Torch.add.0.forward": [1], "x": {"y": "z"}, "z": null}'),
    "construct a directory": (None, "dir"),
}


def _beside(directory: Path, name: str, content: bytes | str | None) -> None:
    path = directory / name
    if path.is_dir():
        path.rmdir()
    elif path.exists():
        path.unlink()
    if content == "dir":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)


@pytest.mark.parametrize("case", sorted(_BESIDE))
def test_hostile_files_beside_the_target_give_what_a_whole_compare_gives(case, tmp_path, run_probe) -> None:
    target, golden = _copy_pair(tmp_path)
    stack, construct = _BESIDE[case]
    _beside(target, "stack.json", stack)
    _beside(target, "construct.json", construct)
    runs = {}
    for run, window in (("whole", "0"), ("streamed", "1")):
        result = run_probe("compare", "-tp", target / "dump.json", "-gp", golden / "dump.json",
                           "-o", tmp_path / run, "--format", "csv,json", "--window", window)
        runs[run] = result.code, collect(tmp_path / run), result.err.strip().splitlines()[-1:] if result.code else []
    assert runs["whole"] == runs["streamed"]
    code, _, error = runs["streamed"]
    if stack is not None:  # a bad stack.json is an input error, named in one line
        assert code == 2 and len(error) == 1 and "stack.json" in error[0], error
    else:  # a bad construct.json only costs the module labels
        assert code in (0, 1)
    assert not facts._PRELOADED


# --------------------------------------------------------------------------------------
# construct.json and stack.json parsed a piece at a time
# --------------------------------------------------------------------------------------

_OBJECT = st.dictionaries(_TEXT, st.none() | _TEXT | st.integers() | st.lists(_TEXT, max_size=2), max_size=12)
_EDITS = st.lists(st.tuples(st.integers(0, 1 << 16), st.sampled_from(
    [b",", b"}", b"{", b"\n", b" ", b"\x0b", b"\x0c", b'"', b"]", b"x", b"\t", b"", b'\n "', b"\xef\xbb\xbf"])),
    max_size=2)


def _object_file(tmp_path: Path, doc: dict, indent: int | None, edits: list[tuple[int, bytes]]) -> Path:
    """``doc`` written by ``json.dumps`` with ``indent``, then each of ``edits`` (a byte replaced)."""
    text = json.dumps(doc, indent=indent).encode()
    for at, new in edits:
        at %= len(text) + 1
        text = text[:at] + new + text[at + 1:]
    path = tmp_path / "object.json"
    path.write_bytes(text)
    return path


def _outcome(read, path: Path) -> tuple[str, object]:
    try:
        found = read(path)
    except InputError as exc:
        return "error", str(exc)
    return "read", (found, list(found) if isinstance(found, dict) else None)  # the members' order too


@SETTINGS
@given(doc=_OBJECT, indent=st.sampled_from([1, 1, None, 2]), edits=_EDITS, piece=st.integers(1, 48))
def test_a_json_object_read_a_piece_at_a_time_equals_one_read_whole(tmp_path, doc, indent, edits, piece) -> None:
    path = _object_file(tmp_path, doc, indent, edits)
    assert _outcome(lambda p: jsonio.read_json_object(p, piece), path) == _outcome(jsonio.read_json, path)


@SETTINGS
@given(doc=_OBJECT, edits=_EDITS, piece=st.integers(1, 48))
def test_parents_read_a_piece_at_a_time_are_the_text_values_read_whole(tmp_path, monkeypatch, doc, edits,
                                                                        piece) -> None:
    path = _object_file(tmp_path, doc, 1, edits)
    monkeypatch.setattr(facts, "object_parts", lambda p: jsonio.object_parts(p, piece))
    try:
        whole = jsonio.read_json(path)
    except InputError:
        whole = None
    expected = {k: v for k, v in whole.items() if isinstance(v, str)} if isinstance(whole, dict) else {}
    parents = facts._read_parents(path)
    names = [*expected, "Module.absent.forward.0"]
    assert len(parents) == len(expected)
    assert parents.modules_of(names) == [expected.get(name, "") for name in names]


def test_an_indent_1_object_is_parsed_in_parts_and_other_layouts_whole(tmp_path) -> None:
    doc = {f"Torch.add.{i}.forward": f"Module.m.{i % 3}.forward.0" for i in range(40)}
    doc["Module.m.0.forward.0"] = None
    path = _object_file(tmp_path, doc, 1, [])
    parts = list(jsonio.object_parts(path, 64))
    assert len(parts) > 5 and {k: v for part in parts for k, v in part.items()} == doc
    assert facts._read_parents(path).modules_of(list(doc)) == [v or "" for v in doc.values()]
    path.write_bytes(json.dumps(doc).encode())
    assert list(jsonio.object_parts(path, 1 << 16)) == [doc]  # one line within 16 pieces: one part
    for text in (json.dumps(doc).encode(), b"", b" \n", b"[1]", json.dumps(doc, indent=1).encode() + b"x"):
        path.write_bytes(text)
        with pytest.raises(jsonio.MemberMisplaced):
            list(jsonio.object_parts(path, 64))


def test_a_stack_file_read_a_piece_at_a_time_gives_what_a_whole_read_gives(tmp_path) -> None:
    groups = {str(i): [[f"Torch.add.{i}.forward", f"Torch.add.{i}.backward"], [f"File a.py, line {i}"]]
              for i in range(30)}
    groups["7"] = [["Torch.add.0.forward"], ["File b.py, line 1"]]  # a later group's stack wins
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(groups, indent=1))
    fast = stack.load_stack(path)
    path.write_text(json.dumps(groups))  # one line: read whole
    assert fast == stack.load_stack(path)
    assert list(fast) == list(stack.load_stack(path))


def test_a_parent_map_unpickles_only_where_string_hashes_are_its_own(monkeypatch) -> None:
    import probe.strhash as strhash

    parents = ParentMap.of([{"Functional.relu.0.forward": "Module.m.M.forward.0"}])
    again = pickle.loads(pickle.dumps(parents))  # a forked child's map, back in its parent
    assert again.modules_of(["Functional.relu.0.forward", "x"]) == ["Module.m.M.forward.0", ""]
    data = pickle.dumps(parents)
    monkeypatch.setattr(strhash, "_SALT", "another process's hashes")  # hashes differ there
    with pytest.raises(TypeError, match="parent map holds string hashes"):
        pickle.loads(data)
