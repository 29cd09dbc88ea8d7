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
