"""Test helper: write GE dump files (and graph text files) from numpy arrays.

Independent of the reader under test: it encodes protobuf by hand following the field
numbers of GE's ``dump_task.proto`` and builds device layouts with explicit index loops.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

# numpy dtype name -> GE OutputDataType
GE_DTYPE = {
    "float32": 1, "float16": 2, "int8": 3, "uint8": 4, "int16": 5, "uint16": 6, "int32": 7,
    "int64": 8, "uint32": 9, "uint64": 10, "bool": 11, "float64": 12, "complex64": 16,
}
ND, NCHW, NC1HWC0, FRACTAL_NZ = 2, 0, 3, 29
BF16 = 27


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_varint(number: int, value: int) -> bytes:
    return varint(number << 3) + varint(value)


def field_bytes(number: int, value: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(value)) + value


def shape_msg(dims, packed: bool = True) -> bytes:
    if packed:
        return field_bytes(1, b"".join(varint(d) for d in dims)) if dims else b""
    return b"".join(field_varint(1, d) for d in dims)


class Tensor:
    """One tensor as it will be written: its payload bytes and header fields."""

    def __init__(self, payload: bytes, data_type: int, fmt: int, shape, original_shape, size=None):
        self.payload = payload
        self.data_type = data_type
        self.fmt = fmt
        self.shape = list(shape)
        self.original_shape = list(original_shape)
        self.size = len(payload) if size is None else size

    def message(self, is_input: bool, packed: bool = True) -> bytes:
        size_no, orig_no = (5, 6) if is_input else (6, 7)
        return (
            field_varint(1, self.data_type)
            + field_varint(2, self.fmt)
            + field_bytes(3, shape_msg(self.shape, packed))
            + field_varint(size_no, self.size)
            + field_bytes(orig_no, shape_msg(self.original_shape, packed))
        )


def plain(array: np.ndarray) -> Tensor:
    """An ND tensor of a numpy array."""
    array = np.array(array, order="C")  # ascontiguousarray would turn 0-d into 1-d
    return Tensor(array.tobytes(), GE_DTYPE[array.dtype.name], ND, array.shape, array.shape)


def bf16(array: np.ndarray) -> Tensor:
    """A BF16 tensor (the array must hold bf16-representable float32 values)."""
    raw = (np.ascontiguousarray(array, dtype=np.float32).view(np.uint32) >> 16).astype("<u2")
    return Tensor(raw.tobytes(), BF16, ND, array.shape, array.shape)


def nc1hwc0(array: np.ndarray, c0: int = 16) -> Tensor:
    """NCHW array stored as NC1HWC0 with zero padding of C."""
    n, c, h, w = array.shape
    c1 = -(-c // c0)
    out = np.zeros((n, c1, h, w, c0), dtype=array.dtype)
    for ni in range(n):
        for ci in range(c):
            for hi in range(h):
                for wi in range(w):
                    out[ni, ci // c0, hi, wi, ci % c0] = array[ni, ci, hi, wi]
    return Tensor(out.tobytes(), GE_DTYPE[array.dtype.name], NC1HWC0, out.shape, array.shape)


def fractal_nz(array: np.ndarray, block: int = 16) -> Tensor:
    """(M, N) matrix stored as FRACTAL_NZ [ceil(N/16), ceil(M/16), 16, 16]."""
    m, n = array.shape
    out = np.zeros((-(-n // block), -(-m // block), block, block), dtype=array.dtype)
    for mi in range(m):
        for ni in range(n):
            out[ni // block, mi // block, mi % block, ni % block] = array[mi, ni]
    return Tensor(out.tobytes(), GE_DTYPE[array.dtype.name], FRACTAL_NZ, out.shape, array.shape)


def ge_bytes(op_name: str, inputs: list[Tensor], outputs: list[Tensor], packed=True) -> bytes:
    """The full bytes of a GE dump file."""
    header = field_bytes(1, b"2.0") + field_varint(2, 1)
    for t in outputs:
        header += field_bytes(3, t.message(False, packed))
    for t in inputs:
        header += field_bytes(4, t.message(True, packed))
    header += field_bytes(6, op_name.encode())
    body = b"".join(t.payload for t in inputs) + b"".join(t.payload for t in outputs)
    return struct.pack("<Q", len(header)) + header + body


def write_ge(directory: Path, op_type: str, op_name: str, inputs, outputs, task=1, ts=1700000000000000,
             packed=True) -> Path:
    """Write ``{op_type}.{op_name}.{task}.2.{ts}`` in ``directory``; arrays become ND tensors."""
    directory.mkdir(parents=True, exist_ok=True)
    to_t = lambda x: x if isinstance(x, Tensor) else plain(np.asarray(x))  # noqa: E731
    path = directory / f"{op_type}.{op_name}.{task}.2.{ts}"
    path.write_bytes(ge_bytes(op_name, [to_t(x) for x in inputs], [to_t(x) for x in outputs], packed))
    return path


def graph_text(ops: list[dict]) -> str:
    """A GE graph text file: each op is {name, type, inputs: [src:idx], fx: [tensor names]}."""
    lines = ['name: "graph"']
    for op in ops:
        lines += ["op {", f'  name: "{op["name"]}"', f'  type: "{op["type"]}"']
        lines += [f'  input: "{src}"' for src in op.get("inputs", [])]
        for fx in op.get("fx", []):
            lines += [
                "  output_desc {", '    name: "y"', "    attr {", '      key: "_fx_tensor_name"',
                "      value {", f'        s: "{fx}"', "      }", "    }", "  }",
            ]
        lines.append("}")
    return "\n".join(lines) + "\n"
