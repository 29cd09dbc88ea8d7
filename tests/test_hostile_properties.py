"""Property-based hostile inputs (hypothesis): every reader either reads or raises a one-line InputError."""

from __future__ import annotations

import json

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the property tests need hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import hostile_targets as targets  # noqa: E402

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def _mutations(doc: bytes) -> st.SearchStrategy[bytes]:
    """Truncations, byte flips and splices of a valid document."""
    def mutate(args: tuple[int, int, bytes]) -> bytes:
        at, cut, insert = args
        at %= max(len(doc), 1)
        return doc[:at] + insert + doc[at + cut:]

    return st.tuples(st.integers(0, 10**6), st.integers(0, 64), st.binary(max_size=16)).map(mutate)


VALID_DUMP = json.dumps({
    "task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None,
    "data": {"Functional.relu.0.forward": {"input_args": [
        {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 2], "Max": 1.0, "Min": 0.0,
         "Mean": 0.5, "Norm": 1.0, "requires_grad": False, "data_name": "x.pt"}]}},
}, indent=1).encode()


@SETTINGS
@given(st.binary(max_size=2048) | _mutations(VALID_DUMP))
def test_json_readers_bytes(data):
    targets.json_reader(data)
    targets.dump_reader(data)


@SETTINGS
@given(json_values)
def test_dump_reader_any_json_structure(value):
    doc = {"task": "statistics", "data": {"Functional.x.0.forward": {"input_args": [value], "output": value}}}
    targets.dump_reader(json.dumps(doc, indent=1).encode())


@SETTINGS
@given(st.binary(max_size=1024) | st.text(max_size=400).map(str.encode)
       | _mutations(b"a: &x [1, 2]\nb: *x\nc: {d: e}\n- f\n"))
def test_yaml_reader(data):
    targets.yaml_reader(data)


@SETTINGS
@given(st.binary(max_size=2048) | _mutations(b'Op Type,Op Name,Task ID\nAdd,"a,b",1\n'))
def test_csv_reader(data):
    targets.csv_reader(data)


def _npy_bytes() -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.arange(6, dtype=np.float32).reshape(2, 3))
    return buffer.getvalue()


@SETTINGS
@given(st.binary(max_size=512) | _mutations(_npy_bytes()))
def test_npy_loader(data):
    targets.npy_loader(data)


@SETTINGS
@given(st.binary(max_size=512))
def test_ge_reader(data):
    targets.ge_reader(data)


@SETTINGS
@given(st.text(max_size=60))
def test_cell_text_never_splits_or_evaluates(text):
    targets.csv_exporter(text.encode())


@SETTINGS
@given(st.lists(st.text(max_size=30), min_size=1, max_size=6))
def test_exported_csv_rows_survive_cr_splitting(names):
    """The CSV exporter end to end: rows stay rows even for a reader that splits at CR."""
    import csv
    import io

    from probe.cells import FORMULA_START
    from probe.cells import safe_row

    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([safe_row([n, 1.5, n]) for n in names])
    rows = list(csv.reader(io.StringIO(buffer.getvalue().replace("\r", "\n"))))
    assert len(rows) == len(names)
    for row in rows:
        assert len(row) == 3
        head = row[0].lstrip(" ")
        assert not head or head[0] not in FORMULA_START or targets._is_number(row[0])
