"""Reading dump.json piece by piece must give exactly what one whole parse gives."""

from __future__ import annotations

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
