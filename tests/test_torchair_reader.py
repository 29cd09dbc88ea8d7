"""GE dump reader: exact round trips through an independent writer, and bad files."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import torchair_ge_writer as w  # noqa: E402

from probe_torchair.gedump import GeFormatError, GeOpFile, parse_name, read_header  # noqa: E402

WORKED_EXAMPLE = bytes.fromhex(
    "2b00000000000000" "0a03322e30" "1001"
    "1a10" "080110021a030a0102" "3008" "3a030a0102"
    "2210" "080110021a030a0102" "2808" "32030a0102"
    "0000803f00000040" "0000404000008040"
)


def _op(path: Path) -> GeOpFile:
    name = parse_name(path.name)
    assert name is not None
    return GeOpFile(path, name)


def test_worked_example_from_the_format_description(tmp_path):
    path = tmp_path / "Add.Add_2.44.6.1706596912161941"
    path.write_bytes(WORKED_EXAMPLE)
    op = _op(path)
    assert op.op_name == "Add_2" and op.op_type == "Add"
    assert op.count("inputs") == 1 and op.count("outputs") == 1
    np.testing.assert_array_equal(op.load("inputs", 0).array, np.array([1.0, 2.0], np.float32))
    np.testing.assert_array_equal(op.load("outputs", 0).array, np.array([3.0, 4.0], np.float32))


ARRAYS = {
    "float32": np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4),
    "float16": np.linspace(-1, 1, 10, dtype=np.float16),
    "float64": np.array([[1e300, -2.5]], dtype=np.float64),
    "int8": np.array([-128, -1, 0, 1, 127], dtype=np.int8),
    "uint8": np.array([0, 200, 255], dtype=np.uint8),
    "int16": np.array([-300, 300], dtype=np.int16),
    "int32": np.arange(-6, 6, dtype=np.int32).reshape(3, 4),
    "int64": np.array([-(2**40), 2**40, 7], dtype=np.int64),
    "uint16": np.array([1, 65535], dtype=np.uint16),
    "uint32": np.array([4_000_000_000], dtype=np.uint32),
    "bool": np.array([[True, False], [False, True]]),
    "complex64": np.array([1 + 2j, -3j], dtype=np.complex64),
    "scalar": np.array(5.5, dtype=np.float32),
    "empty": np.zeros((0, 3), dtype=np.float32),
}


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("name", sorted(ARRAYS))
def test_native_dtypes_round_trip(tmp_path, name, packed):
    array = ARRAYS[name]
    path = w.write_ge(tmp_path, "Op", "op_1", [array], [array[..., ::-1].copy() if array.ndim else array],
                      packed=packed)
    op = _op(path)
    got = op.load("inputs", 0).array
    assert got.dtype == array.dtype and got.shape == array.shape
    np.testing.assert_array_equal(got, array)


def test_bf16_is_returned_as_float32(tmp_path):
    values = np.array([1.0, -2.5, 0.15625, 2.0**100, -0.0], dtype=np.float32)
    path = w.write_ge(tmp_path, "Op", "bf", [w.bf16(values)], [])
    loaded = _op(path).load("inputs", 0)
    assert loaded.dtype == "torch.bfloat16"
    np.testing.assert_array_equal(loaded.array, values)


def test_nc1hwc0_back_to_nchw(tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 19, 3, 5)).astype(np.float16)
    path = w.write_ge(tmp_path, "Conv2D", "conv", [w.nc1hwc0(x)], [])
    np.testing.assert_array_equal(_op(path).load("inputs", 0).array, x)


@pytest.mark.parametrize("shape", [(5, 7), (16, 16), (33, 17)])
def test_fractal_nz_back_to_nd(tmp_path, shape):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float16)
    path = w.write_ge(tmp_path, "MatMul", "mm", [], [w.fractal_nz(x)])
    np.testing.assert_array_equal(_op(path).load("outputs", 0).array, x)


def test_fractal_nz_int8_with_32_wide_blocks(tmp_path):
    x = np.arange(40 * 3, dtype=np.int8).reshape(3, 40)
    m, n = x.shape
    out = np.zeros((2, 1, 16, 32), dtype=np.int8)
    for i in range(m):
        for j in range(n):
            out[j // 32, i // 16, i % 16, j % 32] = x[i, j]
    t = w.Tensor(out.tobytes(), 3, w.FRACTAL_NZ, out.shape, x.shape)
    path = w.write_ge(tmp_path, "MatMul", "mm8", [t], [])
    np.testing.assert_array_equal(_op(path).load("inputs", 0).array, x)


def _write_raw(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "Add.Add_1.1.2.1700000000000001"
    path.write_bytes(data)
    return path


def test_truncated_payload_is_reported(tmp_path):
    good = w.ge_bytes("Add_1", [w.plain(np.ones(8, np.float32))], [])
    with pytest.raises(GeFormatError, match="truncated"):
        read_header(_write_raw(tmp_path, good[:-4]))


def test_header_length_larger_than_file(tmp_path):
    data = struct.pack("<Q", 10_000) + b"\x0a\x03abc"
    with pytest.raises(GeFormatError, match="larger than the file"):
        read_header(_write_raw(tmp_path, data))


def test_corrupt_header_bytes(tmp_path):
    data = struct.pack("<Q", 4) + b"\xff\xff\xff\xff"
    with pytest.raises(GeFormatError, match="corrupt DumpData header"):
        read_header(_write_raw(tmp_path, data))


def test_unknown_dtype_enum(tmp_path):
    t = w.Tensor(b"\0" * 8, 99, w.ND, [2], [2])
    path = _write_raw(tmp_path, w.ge_bytes("Add_1", [t], []))
    with pytest.raises(GeFormatError, match="unknown data type enum 99"):
        _op(path).load("inputs", 0)


def test_file_names():
    assert parse_name("Add.Add_2.44.6.1706596912161941").op_name == "Add_2"
    assert parse_name("Mul.a.b.c.3.6.1706596912161941").op_name == "a.b.c"
    long = parse_name("Add.Add_2.44.1706596912161941.1.0.3.0")
    assert long is not None and long.op_name == "Add_2" and long.timestamp == 1706596912161941
    assert parse_name("Add.Add_2.44.6.1706596912161941_min_max.npz").kind == "min_max"
    assert parse_name("dynamo_original_graph_1_rank_0.txt") is None
    assert parse_name("a.b.c") is None


def _raw_tensor(tmp_path: Path, code: int, payload: bytes, shape: list[int]):
    t = w.Tensor(payload, code, w.ND, shape, shape)
    path = w.write_ge(tmp_path, "Op", f"t{code}", [t], [])
    return _op(path).load("inputs", 0).array


def test_packed_and_fp8_types(tmp_path):
    # INT4: low nibble first, signed; UINT1: most significant bit first.
    np.testing.assert_array_equal(_raw_tensor(tmp_path, 28, bytes([0x7F, 0x08]), [3]), [-1, 7, -8])
    np.testing.assert_array_equal(_raw_tensor(tmp_path, 29, bytes([0b10100000]), [3]), [1, 0, 1])
    # FLOAT8_E5M2 0x3C = 1.0, 0xC0 = -2.0; E4M3FN 0x38 = 1.0, 0x7F = NaN, 0x01 = 2**-9.
    np.testing.assert_array_equal(_raw_tensor(tmp_path, 34, bytes([0x3C, 0xC0]), [2]), [1.0, -2.0])
    e4m3 = _raw_tensor(tmp_path, 35, bytes([0x38, 0x01, 0x7F]), [3])
    assert e4m3[0] == 1.0 and e4m3[1] == 2.0**-9 and np.isnan(e4m3[2])
    np.testing.assert_array_equal(_raw_tensor(tmp_path, 36, bytes([127, 130]), [2]), [1.0, 8.0])


def test_unsupported_known_dtype_names_it(tmp_path):
    with pytest.raises(GeFormatError, match="HIFLOAT8"):
        _raw_tensor(tmp_path, 33, b"\0\0", [2])


def test_graph_text_value_with_colon_space(tmp_path):
    from probe_torchair.graph import Graph

    path = tmp_path / "dynamo_original_graph_1_rank_0_pid_1_ts_2.txt"
    path.write_text(w.graph_text([{"name": "Add_2", "type": "Add", "inputs": ["x:0", "y:-1"],
                                   "fx": ["add-aten.add.Tensor.OUTPUT.0"]}])
                    + 'op { name: "odd" type: "T" attr { key: "k" value { s: "a: b" } } }\n')
    graph = Graph.read(path)
    assert graph.ops["Add_2"].inputs == ["x"]
    assert graph.ops["Add_2"].fx_outputs == [("add-aten.add.Tensor", 0)]
    assert graph.index_of("odd") == 1


def test_framework_detection(tmp_path):
    from probe_torchair.plugin import probe_detect_framework

    assert probe_detect_framework(str(tmp_path)) is None
    (tmp_path / "dynamo_original_graph_1_rank_0_pid_1_ts_2.txt").write_text("")
    assert probe_detect_framework(str(tmp_path)) == "torchair"
