"""Fuzz targets over probe's readers and exporters: each takes bytes and may only raise InputError.

Used by the hypothesis suite (tests/test_hostile_properties.py) and, with atheris, by
``python tests/hostile_targets.py TARGET -max_total_time=N`` (tests/test_hostile_fuzz.py).
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

import numpy as np

from probe.errors import InputError

_DIR = Path(tempfile.mkdtemp(prefix="probe-fuzz-"))


def _file(name: str, data: bytes) -> Path:
    path = _DIR / name
    path.write_bytes(data)
    return path


def json_reader(data: bytes) -> None:
    """dump.json through the streaming member reader and the plain reader."""
    from probe.jsonio import read_json, read_json_member

    path = _file("dump.json", data)
    for read in (lambda: read_json(path), lambda: _drain(read_json_member(path, "data"))):
        try:
            read()
        except InputError:
            pass


def _drain(result) -> None:
    _, entries = result
    if entries is not None:
        for _ in entries:
            pass


def dump_reader(data: bytes) -> None:
    """A whole dump through the registered reader and the flattening."""
    from probe.plugins import default_host
    from probe.stages import pick_reader

    path = _file("dump.json", data)
    try:
        pick_reader(path, default_host()).load(path)
    except InputError:
        pass


def yaml_reader(data: bytes) -> None:
    from probe.jsonio import read_yaml

    try:
        read_yaml(_file("map.yaml", data))
    except InputError:
        pass


def csv_reader(data: bytes) -> None:
    from probe.jsonio import csv_rows

    try:
        for _ in csv_rows(_file("statistic.csv", data)):
            pass
    except InputError:
        pass


def npy_loader(data: bytes) -> None:
    """A tensor file through the loader registered for .npy (never unpickles)."""
    from probe.modes.tensor import load_tensor
    from probe.plugins import default_host

    path = _file("x.npy", data)
    try:
        load_tensor(path, default_host().tensor_loaders.as_dict())
    except InputError:
        pass


def ge_reader(data: bytes) -> None:
    """A TorchAir GE dump file (protobuf header + tensors)."""
    try:
        from probe_torchair import gedump
    except ImportError:
        return
    path = _file("Add.Add_2.1.2.1706151078787351", data)
    try:
        header = gedump.read_header(path)
        for desc in header.inputs + header.outputs:
            gedump.load_tensor(path, desc)
    except (InputError, gedump.GeFormatError):
        pass


def csv_exporter(data: bytes) -> None:
    """Arbitrary text in a report cell: one CSV row per record, nothing a spreadsheet runs."""
    import csv

    from probe.cells import FORMULA_START, safe_cell

    text = data.decode("utf-8", "replace")
    cell = safe_cell(text)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow([cell, "x"])
    rows = list(csv.reader(io.StringIO(buffer.getvalue().replace("\r", "\n"))))
    assert len(rows) == 1 and rows[0][1] == "x", rows
    head = cell.lstrip(" ")
    assert not head or head[0] not in FORMULA_START or _is_number(cell), cell


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


TARGETS = {f.__name__: f for f in (json_reader, dump_reader, yaml_reader, csv_reader, npy_loader, ge_reader,
                                   csv_exporter)}


def every_reader(data: bytes) -> None:
    """All targets in one process (CI): the first byte picks the target."""
    if data:
        names = sorted(TARGETS)
        TARGETS[names[data[0] % len(names)]](data[1:])


TARGETS_AND_ALL = {**TARGETS, "all": every_reader}


def main() -> None:
    import atheris

    name = sys.argv.pop(1)
    with atheris.instrument_imports():
        import probe.cells  # noqa: F401
        import probe.jsonio  # noqa: F401
    atheris.Setup(sys.argv, TARGETS_AND_ALL[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
