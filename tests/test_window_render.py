"""Windows judged and taken by the forked child of a streamed compare give a serial stream's reports."""

from __future__ import annotations

import json

import pytest

import probe.runtime as runtime
import probe.window_render as window_render
from probe.export_stream import CsvStream
from probe.window_render import WindowRenderer
from report_snapshots import DIGESTS, collect, probe_argv, snapshot_cases

EXPECTED = json.loads(DIGESTS.read_text())
CASES = [c for c in snapshot_cases() if not any(o in c[2] for o in ("-dm", "-fm", "-da", "-am", "-cm", "-lm"))]

pytestmark = pytest.mark.skipif(not runtime.allowed(), reason="needs fork and two CPUs")


class _Nowhere:
    """The parent's position as the child sees it: always the first window."""

    size = 8

    def pack_into(self, page, offset, index) -> None:
        pass

    def unpack_from(self, page, offset) -> tuple[int]:
        return (0,)


@pytest.fixture
def taken(monkeypatch):
    """Windows the child judged, per streamed plan: the child takes every window (the parent
    never says where it is) and the parent waits for each (whether or not the child took it yet)."""
    counts: list[int] = []
    close = WindowRenderer.close

    def spy(self):
        counts.append(self.taken)
        close(self)

    monkeypatch.setattr(window_render, "LEAD", 0)
    monkeypatch.setattr(window_render, "_AT", _Nowhere())
    monkeypatch.setattr(WindowRenderer, "_child_took", lambda self, index: True)
    monkeypatch.setattr(WindowRenderer, "close", spy)
    return counts


@pytest.mark.parametrize("case,label,argv", [pytest.param(*c, id=f"{c[0].name}-{c[1]}") for c in CASES])
def test_child_rendered_reports_are_byte_identical(case, label, argv, tmp_path, run_probe, taken) -> None:
    result = run_probe(*probe_argv(argv, tmp_path / "out"), "--window", "2", cwd=case)
    got = {"exit_code": str(result.code), **collect(tmp_path / "out")}
    expected = EXPECTED[f"{case.parent.name}/{case.name}/{label}"]
    changed = sorted(name for name in set(got) | set(expected) if got.get(name) != expected.get(name))
    assert not changed, f"reports differ: {changed} (windows the child judged: {taken})"
    assert not list((tmp_path / "out").rglob(".probe-tmp.*")), "temporaries left behind"


def test_most_streamed_windows_come_from_the_child(tmp_path, run_probe, taken) -> None:
    for case, label, argv in CASES:
        run_probe(*probe_argv(argv, tmp_path / label / case.name), "--window", "2", cwd=case)
    assert len(taken) >= 25 and sum(taken) >= 100


STAT_CASE = next(c for c in CASES if c[0].name == "stat_mix_tfm" and c[1] == "csv")


def _reports(fmt: str, tmp_path, run_probe, window: str) -> dict[str, str]:
    case, _, argv = STAT_CASE
    args = [a for a in probe_argv(argv, tmp_path / window) if a != "csv,json"]
    args[args.index("--format") + 1:args.index("--format") + 1] = [fmt]
    assert run_probe(*args, "--window", window, cwd=case).code == 0
    return collect(tmp_path / window)


@pytest.mark.parametrize("fmt,limit", [("csv,json", 50), ("csv", 219), ("csv", 7), ("xlsx", 60)])
def test_row_limit_cuts_fall_where_the_whole_report_cuts(fmt, limit, tmp_path, run_probe, monkeypatch,
                                                        taken) -> None:
    from probe.exporters import CsvExporter, XlsxExporter

    monkeypatch.setattr(CsvExporter, "max_rows", limit)
    monkeypatch.setattr(XlsxExporter, "max_rows", limit)
    assert _reports(fmt, tmp_path, run_probe, "0") == _reports(fmt, tmp_path, run_probe, "5")
    assert taken and taken[0] > 0


def test_a_child_that_fails_leaves_the_rest_to_the_parent(tmp_path, run_probe, monkeypatch, taken) -> None:
    calls = []
    render = CsvStream.render

    def failing(self, result, file):  # runs in the child only: the third window fails there
        calls.append(file)
        if len(calls) == 3:
            raise OSError("no space left")
        render(self, result, file)

    monkeypatch.setattr(CsvStream, "render", failing)
    assert _reports("csv,json", tmp_path, run_probe, "0") == _reports("csv,json", tmp_path, run_probe, "3")
    assert taken == [2]


def test_windows_the_parent_began_first_are_dropped(tmp_path, run_probe, monkeypatch, taken) -> None:
    take = WindowRenderer._take

    def every_other(self, index):  # the child took even windows after the parent began them
        return None if index % 2 == 0 else take(self, index)

    monkeypatch.setattr(WindowRenderer, "_take", every_other)
    assert _reports("csv,json", tmp_path, run_probe, "0") == _reports("csv,json", tmp_path, run_probe, "2")
    assert taken and taken[0] > 0


class _Refusing:
    """A digest builder's merging side that refuses every other part (as on a wrong assumption)."""

    def __init__(self, merger) -> None:
        self.merger, self.calls = merger, 0

    def skip(self, names) -> None:
        self.merger.skip(names)

    def part(self, window):
        return self.merger.part(window)

    def merge(self, part) -> bool:
        self.calls += 1
        return self.calls % 2 == 0 and self.merger.merge(part)


def test_windows_a_builder_cannot_merge_are_judged_here(tmp_path, run_probe, monkeypatch, taken) -> None:
    init = WindowRenderer.__init__

    def refusing(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.mergers = [_Refusing(m) for m in self.mergers]

    monkeypatch.setattr(WindowRenderer, "__init__", refusing)
    for case, label, argv in CASES[:12]:
        got = run_probe(*probe_argv(argv, tmp_path / label / case.name), "--window", "2", cwd=case)
        files = {"exit_code": str(got.code), **collect(tmp_path / label / case.name)}
        expected = EXPECTED[f"{case.parent.name}/{case.name}/{label}"]
        assert files == expected, case.name
    assert sum(taken) >= 20


def test_builders_without_parts_get_the_childs_rows(tmp_path, run_probe, monkeypatch, taken) -> None:
    monkeypatch.setattr(window_render, "_mergeable", window_render._ByRows)  # as a builder without part
    for case, label, argv in CASES[:12]:
        got = run_probe(*probe_argv(argv, tmp_path / label / case.name), "--window", "2", cwd=case)
        files = {"exit_code": str(got.code), **collect(tmp_path / label / case.name)}
        assert files == EXPECTED[f"{case.parent.name}/{case.name}/{label}"], case.name
    assert sum(taken) >= 20


# --------------------------------------------------------------------------------------
# judged rows cross as plain tuples and come back the same (property test)
# --------------------------------------------------------------------------------------

import pickle  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from probe.model import Pair, Row  # noqa: E402
from probe.modes.statistics import StatRowResult  # noqa: E402
from probe.result import RowResult  # noqa: E402
from probe.rowpack import pack, unpack  # noqa: E402

_TEXT = st.text(max_size=8)
_VALUE = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _TEXT)
_ROW = st.builds(Row, _TEXT, _TEXT, st.sampled_from(["input", "output", "parameters"]), _TEXT, _TEXT,
                 st.tuples(_VALUE, _VALUE, _VALUE, _VALUE), _TEXT, st.none() | _TEXT, _TEXT,
                 st.none() | st.dictionaries(_TEXT, _VALUE, max_size=2))


@st.composite
def _records(draw) -> RowResult:
    target, golden = draw(_ROW), draw(st.none() | _ROW)
    target.key = draw(_TEXT)
    pair = Pair(target, golden, draw(st.booleans()))
    record = StatRowResult(pair) if golden is not None and draw(st.booleans()) else RowResult(pair, (NA_METRIC,))
    if draw(st.booleans()):
        record.metrics = tuple(draw(st.lists(_VALUE, max_size=3)))
    record.verdict = draw(st.sampled_from(["pass", "warning", "error", "N/A"]))
    for name in ("messages", "notes"):
        if draw(st.booleans()):
            setattr(record, name, draw(st.lists(_TEXT, max_size=2)))
    if draw(st.booleans()):
        record.extra["stack"] = draw(_TEXT)
    return record


NA_METRIC = "N/A"


def _state(record: RowResult) -> str:
    rows = [record.pair.target, record.pair.golden]
    slots = [None if r is None else [getattr(r, s) for s in Row.__slots__] for r in rows]
    own = [RowResult.__dict__[s].__get__(record, RowResult) for s in RowResult.__slots__ if s != "pair"]
    return repr((type(record), slots, record.pair.fuzzy, own))


@settings(max_examples=200, deadline=None)
@given(records=st.lists(_records(), max_size=6))
def test_packed_records_come_back_the_same(records) -> None:
    back = unpack(pickle.loads(pickle.dumps(pack(records))))
    assert [_state(r) for r in back] == [_state(r) for r in records]
    assert repr([r.metrics for r in back]) == repr([r.metrics for r in records])  # computed when read


def test_records_that_keep_state_elsewhere_are_not_packed() -> None:
    class Tagged(RowResult):
        pass  # a __dict__ of its own

    row = Row("a.input.0", "a", "input", "torch.float32", "[1]", (1.0, 1.0, 1.0, 1.0), "True", None, "")
    with pytest.raises(TypeError):
        pack([Tagged(Pair(row, None), ())])


# --------------------------------------------------------------------------------------
# the golden dump is indexed in a child: the index crosses without its mapping
# --------------------------------------------------------------------------------------


def test_a_member_index_maps_its_file_again_when_unpickled(tmp_path) -> None:
    from probe.memberindex import index_member

    path = tmp_path / "dump.json"
    entries = {f"Torch.add.{i}.forward": {"output": [{"type": "int", "value": i}]} for i in range(5)}
    path.write_text(json.dumps({"task": "statistics", "data": entries}, indent=1))
    index = index_member(path, "data")
    copy = pickle.loads(pickle.dumps(index))
    assert copy.names == index.names and copy.parse(1, 4) == index.parse(1, 4)
    path.write_text(json.dumps({"task": "statistics", "data": dict(list(entries.items())[:2])}, indent=1))
    assert pickle.loads(pickle.dumps(index)).parse(1, 4) is None  # the file changed: no longer these entries


_UNPICKLED: list[str] = []


class _Tripwire:
    """Unpickling this records that it happened."""

    def __reduce__(self):
        return (_UNPICKLED.append, ("unpickled",))


def test_rows_files_are_unpickled_only_when_sealed_by_the_child() -> None:
    _seal, _unseal = window_render._seal, window_render._unseal
    key = b"k" * 32
    assert _unseal(key, _seal(key, [1, "a"])) == [1, "a"]
    forged = pickle.dumps(_Tripwire())
    sealed = _seal(key, "fine")
    for data in (b"\0" * 32 + forged, sealed[:32] + forged, _seal(b"x" * 32, "fine"), b""):
        with pytest.raises(ValueError):
            _unseal(key, data)
    assert _UNPICKLED == []


@pytest.mark.parametrize("kernel", ["copies", "refuses", "stops early"])
def test_appended_window_bytes_are_the_file_less_its_skip(tmp_path, monkeypatch, kernel) -> None:
    import os

    from probe.export_stream import _copy

    real = os.copy_file_range

    def refusing(*args):
        raise OSError(18, "cross-device")

    def short(src, dst, count):  # copies a little, then the system says no more
        return real(src, dst, min(count, 3)) if short.calls.append(1) or len(short.calls) == 1 else 0

    short.calls = []
    if kernel == "refuses":
        monkeypatch.setattr(os, "copy_file_range", refusing)
    elif kernel == "stops early":
        monkeypatch.setattr(os, "copy_file_range", short)
    source = tmp_path / "window"
    source.write_bytes(b",\nabcdefghij" * 1000)
    with open(tmp_path / "report", "wb") as handle:
        handle.write(b"head")  # still buffered: must land before the window's bytes
        _copy(source, handle, 2)
        handle.write(b"tail")
    assert (tmp_path / "report").read_bytes() == b"head" + source.read_bytes()[2:] + b"tail"


@settings(max_examples=300, deadline=None)
@given(sizes=st.lists(st.integers(1, 3000), max_size=12))
def test_tapered_windows_cover_the_same_entries_and_end_smaller(sizes) -> None:
    bounds, lo = [], 0
    for size in sizes:
        bounds.append((lo, lo + size))
        lo += size
    cut = window_render.tapered(bounds)
    # the same entries, in order, each in one window of at least one entry, never across an original window's end
    assert [e for a, b in cut for e in range(a, b)] == list(range(lo))
    assert all(b > a for a, b in cut)
    ends = {b for _, b in bounds}
    assert ends <= {b for _, b in cut}
    head = max(0, len(bounds) - len(window_render.TAPER))
    assert cut[:head] == bounds[:head]
    for (a, b), pieces in zip(bounds[head:], window_render.TAPER[len(window_render.TAPER) - (len(bounds) - head):]):
        inside = [(x, y) for x, y in cut if a <= x and y <= b]
        assert len(inside) == min(pieces, b - a)
        assert max(y - x for x, y in inside) - min(y - x for x, y in inside) <= 1
