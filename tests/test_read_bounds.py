"""Dumps that would flatten to more rows than memory holds are refused in one line, early."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PYTORCH_CASES
from probe.errors import InputError
from probe.formats.msprobe import flatten
from probe.formats.msprobe.reader import MsprobeJsonReader

GOLDEN = PYTORCH_CASES / "stat_mix_tfm/golden/step0/rank0/dump.json"


def _null_dump(path: Path, entries: int, nulls: int, indent: int | None) -> Path:
    """A dump whose entries are lists of ``null``: five bytes of JSON per row."""
    data = {f"Functional.f.{i}.forward": {"input_args": [None] * nulls} for i in range(entries)}
    path.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch", "data": data}, indent=indent)
    (path / "dump.json").write_text(text)
    return path / "dump.json"


@pytest.mark.parametrize("indent", [1, None])
@pytest.mark.parametrize(("entries", "nulls"), [(1, 5000), (5000, 1)])
def test_too_many_rows_refused(tmp_path, monkeypatch, indent, entries, nulls) -> None:
    dump = _null_dump(tmp_path, entries, nulls, indent)
    monkeypatch.setattr("probe.formats.msprobe.reader.row_limit", lambda: 1000)
    with pytest.raises(InputError, match="too many leaves for the memory available") as caught:
        MsprobeJsonReader().load(dump)
    assert str(dump) in str(caught.value)
    monkeypatch.setattr("probe.formats.msprobe.reader.row_limit", lambda: 5000)
    assert len(MsprobeJsonReader().load(dump).rows) == 5000  # exactly at the limit: read


def test_row_limit_follows_available_memory(monkeypatch) -> None:
    monkeypatch.setattr(flatten, "available_memory", lambda: 100 << 30)
    assert flatten.row_limit() == (100 << 30) // (2 * flatten.ROW_BYTES)
    monkeypatch.setattr(flatten, "available_memory", lambda: None)
    assert flatten.row_limit() == flatten.MIN_ROW_LIMIT
    monkeypatch.setattr(flatten, "available_memory", lambda: 1 << 20)
    assert flatten.row_limit() == flatten.MIN_ROW_LIMIT


def test_too_many_rows_is_one_line_exit_2(tmp_path) -> None:
    dump = _null_dump(tmp_path / "t", 200, 100, 1)
    code = (
        "import sys, probe.formats.msprobe.reader as reader\n"
        "reader.row_limit = lambda: 1000\n"
        "from probe.cli import main\n"
        f"sys.exit(main(['compare', '-tp', {str(dump)!r}, '-gp', {str(GOLDEN)!r}, '-o', {str(tmp_path / 'o')!r}]))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("probe: error")]
    assert len(lines) == 1 and str(dump) in lines[0] and "too many leaves" in lines[0], run.stderr
    assert "Traceback" not in run.stderr
