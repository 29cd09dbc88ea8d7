"""Reading dump.json piece by piece must give exactly what one whole parse gives."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from probe import jsonio
from probe.errors import InputError
from probe.jsonio import read_json, read_json_member

CASES = Path(__file__).parent / "data" / "pytorch"


def _entries(path: Path) -> tuple[dict, list]:
    doc, entries = read_json_member(path, "data")
    assert entries is not None, "the indent=1 layout should be read piece by piece"
    return doc, list(entries)


@pytest.mark.parametrize("case", ["stat_mix_tfm", "md5_mix_tfm", "nan_inf_cnn"])
def test_pieces_give_the_whole_parse(case: str, monkeypatch) -> None:
    path = CASES / case / "target" / "step0" / "rank0" / "dump.json"
    whole = read_json(path)
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 300)  # many pieces
    doc, entries = _entries(path)
    assert entries == list(whole["data"].items())
    assert doc == {**whole, "data": {}}


def _write(path: Path, data: dict, indent: int | None = 1) -> Path:
    doc = {"task": "statistics", "level": "L1", "framework": "pytorch", "data": data}
    path.write_text(json.dumps(doc, indent=indent))
    return path


def _entry(value: float) -> dict:
    return {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2],
                            "Max": value, "Min": 0.0, "Mean": 0.5, "Norm": 1.0, "requires_grad": False}]}


def test_nan_token_in_a_later_piece_falls_back_without_losing_entries(tmp_path: Path, monkeypatch) -> None:
    data = {f"Functional.relu.{i}.forward": _entry(float(i)) for i in range(40)}
    data["Functional.relu.30.forward"] = _entry(float("nan"))  # json writes the NaN token
    path = _write(tmp_path / "dump.json", data)
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 500)
    _, entries = _entries(path)
    assert [name for name, _ in entries] == list(data)
    got = dict(entries)["Functional.relu.30.forward"]["input_args"][0]["Max"]
    assert got != got  # NaN
    assert dict(entries)["Functional.relu.39.forward"] == data["Functional.relu.39.forward"]


def test_syntax_error_in_a_later_piece_names_the_line(tmp_path: Path, monkeypatch) -> None:
    data = {f"Functional.relu.{i}.forward": _entry(float(i)) for i in range(40)}
    path = _write(tmp_path / "dump.json", data)
    text = path.read_text()
    cut = text.index('"Functional.relu.35.forward"')
    path.write_text(text[:cut] + text[cut:].replace('"Min": 0.0', '"Min": 0.0,,', 1))
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 500)
    with pytest.raises(InputError, match=r"dump.json: is not valid JSON \(line \d+"):
        _entries(path)


@pytest.mark.parametrize("indent", [None, 2])
def test_other_layouts_are_parsed_whole(tmp_path: Path, indent) -> None:
    data = {"Functional.relu.0.forward": _entry(1.0)}
    doc, entries = read_json_member(_write(tmp_path / "dump.json", data, indent), "data")
    assert entries is None
    assert doc["data"] == data


def test_mapped_pieces_released_and_read_again_on_fallback(tmp_path: Path, monkeypatch) -> None:
    data = {f"Functional.relu.{i}.forward": _entry(float(i)) for i in range(400)}
    data["Functional.relu.300.forward"] = _entry(float("nan"))  # a late piece falls back to the whole file
    path = _write(tmp_path / "dump.json", data)
    monkeypatch.setattr(jsonio, "MAP_BYTES", 0)  # memory-mapped, released piece by piece
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 5000)
    _, entries = _entries(path)
    assert [name for name, _ in entries] == list(data)
    assert dict(entries)["Functional.relu.399.forward"] == data["Functional.relu.399.forward"]


def _rss_file_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    pytest.skip("no RssFile in /proc/self/status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="Linux only")
def test_a_mapped_dump_read_in_pieces_does_not_stay_resident(tmp_path: Path, monkeypatch) -> None:
    data = {f"Functional.relu.{i}.forward": _entry(float(i)) for i in range(60_000)}  # about 16 MB
    path = _write(tmp_path / "dump.json", data)
    monkeypatch.setattr(jsonio, "MAP_BYTES", 0)
    before = _rss_file_kib()
    _, entries = read_json_member(path, "data")
    assert entries is not None
    count, peak = 0, 0
    for _ in entries:  # the file stays mapped until the last entry is taken
        count += 1
        if count % 1000 == 0:  # while the rows are built, the file does not count
            peak = max(peak, _rss_file_kib() - before)
    assert count == len(data)
    size_kib = path.stat().st_size // 1024
    assert size_kib > 10_000
    assert peak < size_kib // 2, f"{peak} KiB of the mapped file stayed resident"


@pytest.mark.parametrize("case", ["stat_mix_tfm", "md5_mix_tfm", "nan_inf_cnn"])
def test_member_taken_as_last_gives_the_exact_read(case: str, monkeypatch) -> None:
    path = CASES / case / "target" / "step0" / "rank0" / "dump.json"
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 300)
    doc, entries = read_json_member(path, "data")
    fast_doc, fast = read_json_member(path, "data", exact=False)
    assert fast is not None and fast_doc == doc and list(fast) == list(entries)


@pytest.mark.parametrize("chunk", [200, 1 << 20])
@pytest.mark.parametrize("after", [{"extra": {"a": 1}}, {"task": "tensor", "more": {"b": [1]}}, {"n": 1}])
def test_members_after_data_are_never_lost(tmp_path: Path, monkeypatch, chunk: int, after: dict) -> None:
    from probe.formats.msprobe.reader import MsprobeJsonReader

    data = {f"Functional.relu.{i}.backward": _entry(float(i)) for i in range(12)}
    doc = {"task": "statistics", "framework": "pytorch", "data": data, **after}
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc, indent=1))
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", chunk)
    exact_doc, exact = read_json_member(path, "data")
    fast_doc, fast = read_json_member(path, "data", exact=False)
    if exact_doc != fast_doc:  # a member closes after "data": iterating says so
        with pytest.raises(jsonio.MemberMisplaced):
            list(fast)
    else:
        assert list(fast) == list(exact)
    reader = MsprobeJsonReader()
    dump = reader.load(path, with_stack=False)
    info, entries = reader.read(path)
    assert dump.info == info and dump.info.task == {**doc}["task"]
    assert [row.name for row in dump.rows] == [f"Functional.relu.{i}.backward.input.0" for i in range(12)]
    assert dump.entries == list(dict(entries))


# --------------------------------------------------------------------------------------
# one cutter and one run parser for every piece-by-piece read
# --------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from probe import memberindex  # noqa: E402

_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
_NAME = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
# integers orjson reads as integers: it reads larger ones as floats, the standard parser (taken for a piece,
# or a whole file, that orjson refuses, e.g. for a NaN token) exactly, so a piece may differ from a whole read
_VALUE = st.recursive(st.none() | st.booleans() | st.integers(-(1 << 63), (1 << 64) - 1) | st.text(max_size=6),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NAME, inner, max_size=3),
                      max_leaves=6)
_BYTES = [b",", b"}", b"{", b"\n", b" ", b"\x0b", b"\x0c", b'"', b"]", b"x", b"\t", b"", b'\n  "', b"\n }", b"NaN",
          b"\x00", b",\n", b"\xef\xbb\xbf"]
_EDITS = st.lists(st.tuples(st.integers(0, 1 << 16), st.sampled_from(_BYTES)), max_size=2)


@_SETTINGS
@given(text=st.lists(st.sampled_from([b"\n  ", b"\n ", b'"', b"a", b",", b" "]), max_size=60).map(b"".join),
       marker=st.sampled_from([jsonio.ENTRY_START, jsonio.MEMBER_START]), size=st.integers(1, 20),
       begin=st.integers(0, 5), cut_end=st.integers(0, 5))
def test_cuts_cover_the_text_and_cut_only_at_markers(text, marker, size, begin, cut_end) -> None:
    end = max(begin, len(text) - cut_end)
    spans = list(jsonio.cuts(text, begin, end, marker, size))
    assert spans[0][0] == begin and spans[-1][1] == end
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    for start, stop in spans[:-1]:
        assert text.startswith(marker, stop) and stop > start
        if stop - start > size:  # a longer span only when no marker lets it end sooner
            assert text.find(marker, start + 1, start + size + len(marker)) < 0
    last = spans[-1][0]
    assert end - last <= size or text.find(marker, last + size, end) < 0


@pytest.mark.parametrize(("text", "comma", "expected"), [
    (b'\n  "a": 1,\n', True, {"a": 1}),
    (b'\n  "a": 1 ,  ', True, {"a": 1}),
    (b'\n  "a": 1', False, {"a": 1}),
    (b'\n  "a": 1', True, None),  # no comma where more members follow
    (b'\n  "a": 1,', False, None),  # a comma after the last member
    (b" , ", True, None),  # "{,": no member before the comma
    (b'\n  "a": 1,\x0c', True, None),  # a form feed is no JSON blank
    (b'"a": NaN,', True, "nan"),
    (b'\x00"\x00a\x00"\x00:\x001\x00', False, None),  # never read as UTF-16
    (b"", False, {}),
])
def test_a_run_parses_only_as_the_slice_of_a_whole_document(text, comma, expected) -> None:
    for raw in (text, bytearray(b"xx" + text + b"yy")):
        start = 0 if isinstance(raw, bytes) else 2
        part = jsonio.parse_run(raw, start, start + len(text), comma)
        if expected == "nan":
            assert list(part) == ["a"] and part["a"] != part["a"]
        else:
            assert part == expected


def _member_outcome(read, path: Path):
    """``("read", header without data, data's items as text)``, or ``("error", ...)``."""
    try:
        doc, entries = read(path)
        if entries is not None:
            items = list(entries)
        elif isinstance(doc, dict) and isinstance(doc.get("data"), dict):
            items = list(doc["data"].items())
        else:
            items = None
    except InputError as exc:
        return "error", str(exc)
    if not isinstance(doc, dict):
        return "read", repr(doc), None
    return "read", repr({k: v for k, v in doc.items() if k != "data"}), repr(items)


@_SETTINGS
@given(data=st.dictionaries(_NAME, _VALUE, min_size=1, max_size=10), after=st.sampled_from([{}, {"n": 1}]),
       repeat=st.none() | st.tuples(st.integers(0, 9), st.integers(0, 9)), edits=_EDITS,
       chunk=st.integers(1, 120), exact=st.booleans())
def test_a_member_read_a_piece_at_a_time_equals_one_read_whole(tmp_path, monkeypatch, data, after, repeat, edits,
                                                              chunk, exact) -> None:
    text = json.dumps({"task": "statistics", "data": data, **after}, indent=1).encode()
    names = list(data)
    if repeat is not None:  # one name written twice
        old, new = (json.dumps(names[i % len(names)]).encode() for i in repeat)
        text = text.replace(b'\n  ' + old + b': ', b'\n  ' + new + b': ', 1)
    for at, new_byte in edits:
        at %= len(text) + 1
        text = text[:at] + new_byte + text[at + 1:]
    path = tmp_path / "dump.json"
    path.write_bytes(text)
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", chunk)
    whole = _member_outcome(lambda p: (jsonio.read_json(p), None), path)
    try:
        pieces = _member_outcome(lambda p: jsonio.read_json_member(p, "data", exact), path)
    except jsonio.MemberMisplaced:
        assert not exact
        pieces = _member_outcome(lambda p: jsonio.read_json_member(p, "data"), path)
    if pieces[0] == "error" and "twice in 'data'" in pieces[1]:  # a name repeated across pieces
        name = pieces[1].split("has the entry ")[1].rsplit(" twice", 1)[0]
        assert text.count(json.dumps(ast.literal_eval(name)).encode()) >= 2
        return
    assert pieces[0] == whole[0]
    if whole[0] == "read":
        assert pieces == whole


def test_a_name_repeated_in_a_later_piece_is_an_error_naming_it(tmp_path: Path, monkeypatch) -> None:
    data = {f"Functional.relu.{i}.forward": _entry(float(i)) for i in range(20)}
    path = _write(tmp_path / "dump.json", data)
    path.write_text(path.read_text().replace('"Functional.relu.15.forward"', '"Functional.relu.2.forward"'))
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 300)
    with pytest.raises(InputError, match=r"has the entry 'Functional.relu.2.forward' twice in 'data'"):
        _entries(path)
    monkeypatch.setattr(jsonio, "CHUNK_BYTES", 1 << 20)  # within one piece: what a whole read gives
    assert _entries(path)[1] == list(read_json(path)["data"].items())


@pytest.mark.parametrize("change", [(b"\n }\n}", b",\n }\n}"),
                                    (b'},\n  "Functional.relu.3', b'}\n  "Functional.relu.3')])
def test_indexed_runs_parse_only_as_slices_of_a_whole_document(tmp_path: Path, change) -> None:
    data = {f"Functional.relu.{i}.forward": _entry(float(i)) for i in range(6)}
    path = _write(tmp_path / "dump.json", data)
    index = memberindex.index_member(path, "data")
    assert index is not None and index.parse(0, 6) == list(data.items())
    path.write_bytes(path.read_bytes().replace(*change))  # a comma too many / one missing
    index = memberindex.index_member(path, "data")
    assert index is not None and index.parse(0, 6) is None
    with pytest.raises(InputError):
        read_json(path)


@pytest.mark.parametrize("text", [
    b'{,\n "a": 1,\n "b": 2\n}',  # a bare comma first: no whole read takes it
    b'{\n "a": 1,\x0c\n "b": 2\n}',  # a form feed is no JSON blank
    b'{\n "a": 1\n "b": 2\n}',  # a comma missing between members
    b'{\n "a": 1,\n "b": 2,\n}',  # a comma after the last member
    b'{\n "a": 1,\n "a": 2,\n "b": 3\n}',  # a repeated name: the first place, the last value
    b'{\n "a": NaN,\n "b": 2\n}  \n',
    b' \n {\n "a": [1,\n 2],\n "b": {\n "c": 1}\n}',  # members at the same indentation inside values
])
@pytest.mark.parametrize("piece", [1, 4, 1 << 20])
def test_an_object_read_in_runs_takes_only_what_a_whole_read_takes(tmp_path: Path, text: bytes, piece: int) -> None:
    path = tmp_path / "object.json"
    path.write_bytes(text)
    try:
        whole = read_json(path)
    except InputError as exc:
        with pytest.raises(InputError, match="is not valid JSON"):
            jsonio.read_json_object(path, piece)
        assert "is not valid JSON" in str(exc)
        return
    assert repr(jsonio.read_json_object(path, piece)) == repr(whole)
    assert list(jsonio.read_json_object(path, piece)) == list(whole)
