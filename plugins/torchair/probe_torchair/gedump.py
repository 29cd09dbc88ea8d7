"""Reading GE dump files: the 8-byte header length, the DumpData header, the raw payload.

Layout of one file (see the TorchAir section of the docs; the header is decoded by the
``protobuf`` library with the schema in :mod:`probe_torchair.dump_proto`)::

    uint64 LE  H          length of the header
    H bytes               protobuf DumpData with empty ``data`` fields
    payload               input[0..], output[0..], buffer[0..], space[0..], each ``size`` bytes

Also reads the two numpy side-car forms: ``{name}.npz`` (keys ``inputs``/``outputs``, full
data) and ``{name}_min_max.npz`` (same keys, one ``[min, max(, mean)]`` row per tensor).
"""

from __future__ import annotations

import math
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probe_torchair import dtypes, formats
from probe_torchair.dump_proto import parse_dump_data
from probe_torchair.tensors import Loaded, TensorRef

HEADER_LEN = 8
NANO_MAGIC = 0x5A5A5A5A
MIN_MAX_SUFFIX = "_min_max.npz"
_IGNORED_SUFFIXES = (".txt", ".npy", ".bin", ".csv", ".json")
_DIGITS = re.compile(r"^\d+$")

_GE_TORCH_NAMES = {
    1: "torch.float32", 2: "torch.float16", 3: "torch.int8", 4: "torch.uint8", 5: "torch.int16",
    6: "torch.uint16", 7: "torch.int32", 8: "torch.int64", 9: "torch.uint32", 10: "torch.uint64",
    11: "torch.bool", 12: "torch.float64", 16: "torch.complex64", 17: "torch.complex128",
    18: "torch.qint8", 20: "torch.qint32", 21: "torch.quint8", 27: "torch.bfloat16",
    32: "torch.complex32", 34: "torch.float8_e5m2", 35: "torch.float8_e4m3fn",
    36: "torch.float8_e8m0fnu", 29: "torch.bool",
}


class GeFormatError(ValueError):
    """A GE dump file that cannot be decoded; the message names the problem."""


@dataclass(frozen=True)
class GeName:
    """The parts of a GE dump file name."""

    op_type: str
    op_name: str
    task_id: str
    timestamp: int
    kind: str = "dump"  # "dump", "npz" (converted data) or "min_max"


def parse_name(name: str) -> GeName | None:
    """Split ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` (also CANN's longer
    ``{op_type}.{op_name}.{task_id}.{timestamp}.{task_type}.{context_id}.{thread_id}.{device_id}``).

    Returns ``None`` for names that are not GE dump files.
    """
    kind = "dump"
    if name.endswith(MIN_MAX_SUFFIX):
        name, kind = name[: -len(MIN_MAX_SUFFIX)], "min_max"
    elif name.endswith(".npz"):
        name, kind = name[:-4], "npz"
    elif name.endswith(_IGNORED_SUFFIXES):
        return None
    parts = name.split(".")
    if len(parts) < 5:
        return None
    if _DIGITS.match(parts[-1]) and len(parts[-1]) >= 13:
        return GeName(parts[0], ".".join(parts[1:-3]), parts[-3], int(parts[-1]), kind)
    if len(parts) >= 8 and _DIGITS.match(parts[-5]) and len(parts[-5]) >= 13:
        return GeName(parts[0], ".".join(parts[1:-6]), parts[-6], int(parts[-5]), kind)
    return None


@dataclass(frozen=True)
class TensorDesc:
    """One input or output of a GE dump file, located in the payload."""

    kind: str  # "inputs" or "outputs"
    index: int
    data_type: int
    format: int
    shape: tuple[int, ...]
    original_shape: tuple[int, ...]
    offset: int
    size: int


@dataclass
class GeHeader:
    """The decoded DumpData header of one file."""

    op_name: str
    dump_time: int
    inputs: list[TensorDesc] = field(default_factory=list)
    outputs: list[TensorDesc] = field(default_factory=list)


def read_header(path: Path) -> GeHeader:
    """Decode and validate the header of a GE dump file (the payload is not read)."""
    try:
        file_size = os.path.getsize(path)
        with open(path, "rb") as handle:
            head = handle.read(HEADER_LEN + 4)
            if len(head) <= HEADER_LEN:
                raise GeFormatError(f"file is too short for a GE dump ({file_size} bytes)")
            if len(head) >= 12 and struct.unpack_from("<I", head, 8)[0] == NANO_MAGIC:
                raise GeFormatError("nano (TLV) dump format is not supported")
            (length,) = struct.unpack_from("<Q", head, 0)
            if length > file_size - HEADER_LEN:
                raise GeFormatError(
                    f"header length {length} is larger than the file ({file_size} bytes)"
                )
            handle.seek(HEADER_LEN)
            raw = handle.read(length)
    except OSError as exc:
        raise GeFormatError(f"cannot read: {exc.strerror or exc}") from exc
    try:
        message = parse_dump_data(raw)
    except ValueError as exc:
        raise GeFormatError(f"corrupt DumpData header: {exc}") from exc
    header = GeHeader(message.op_name, message.dump_time)
    # Payload order is inputs, outputs, buffers, workspaces.
    offset = HEADER_LEN + length
    for kind, tensors in (("inputs", message.input), ("outputs", message.output)):
        descs = getattr(header, kind)
        for index, tensor in enumerate(tensors):
            descs.append(TensorDesc(kind, index, tensor.data_type, tensor.format, tuple(tensor.shape.dim),
                                    tuple(tensor.original_shape.dim), offset, tensor.size))
            offset += tensor.size
    offset += sum(b.size for b in message.buffer) + sum(s.size for s in message.space)
    if offset > file_size:
        raise GeFormatError(f"truncated: the header announces {offset} bytes, the file has {file_size}")
    return header


def load_tensor(path: Path, desc: TensorDesc) -> Loaded:
    """Read and decode one tensor, converted back to its original shape."""
    shape = desc.shape
    if desc.data_type == 0:  # UNDEFINED: raw bytes
        shape = (desc.size,)
    count = math.prod(shape)
    try:
        need = dtypes.payload_bytes(desc.data_type, count)
    except ValueError as exc:
        raise GeFormatError(f"{desc.kind}[{desc.index}]: {exc}") from exc
    if need > desc.size:
        raise GeFormatError(
            f"{desc.kind}[{desc.index}]: shape {list(shape)} of {dtypes.dtype_name(desc.data_type)}"
            f" needs {need} bytes but size is {desc.size}"
        )
    with open(path, "rb") as handle:
        handle.seek(desc.offset)
        raw = handle.read(need)
    if len(raw) < need:
        raise GeFormatError(f"{desc.kind}[{desc.index}]: payload is truncated")
    flat = dtypes.decode(desc.data_type, raw, count)
    try:
        array = formats.to_original(flat, desc.format, shape, desc.original_shape or shape)
    except ValueError as exc:
        raise GeFormatError(f"{desc.kind}[{desc.index}]: {exc}") from exc
    label = _GE_TORCH_NAMES.get(desc.data_type, dtypes.dtype_name(desc.data_type))
    return Loaded.from_array(array, label)


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            return {key: npz[key] for key in ("inputs", "outputs") if key in npz.files}
    except (OSError, ValueError) as exc:
        raise GeFormatError(f"cannot read npz: {exc}") from exc


class GeTensorRef(TensorRef):
    """Input or output ``index`` of one GE dump file (binary, ``.npz`` or min/max)."""

    def __init__(self, op: GeOpFile, kind: str, index: int) -> None:
        self.op = op
        self.kind = kind
        self.index = index
        self.path_label = f"{op.real_path},{kind},{index}"

    def load(self) -> Loaded:
        return self.op.load(self.kind, self.index)


class GeOpFile:
    """One dumped GE op (one file) with lazily decoded header and tensors."""

    def __init__(self, path: Path, name: GeName) -> None:
        self.path = path
        self.name = name
        self.real_path = os.path.realpath(path)
        self._header: GeHeader | None = None
        self._npz: dict[str, np.ndarray] | None = None

    @property
    def op_name(self) -> str:
        return self.name.op_name

    @property
    def op_type(self) -> str:
        return self.name.op_type

    def _arrays(self) -> dict[str, np.ndarray]:
        if self._npz is None:
            self._npz = _load_npz(self.path)
        return self._npz

    def header(self) -> GeHeader:
        """The decoded header (binary dumps only); raises :class:`GeFormatError`."""
        if self._header is None:
            self._header = read_header(self.path)
        return self._header

    def count(self, kind: str) -> int:
        """Number of inputs or outputs."""
        if self.name.kind == "dump":
            return len(getattr(self.header(), kind))
        return len(self._arrays().get(kind, ()))

    def ref(self, kind: str, index: int) -> GeTensorRef:
        return GeTensorRef(self, kind, index)

    def refs(self, kind: str) -> list[GeTensorRef]:
        return [self.ref(kind, i) for i in range(self.count(kind))]

    def load(self, kind: str, index: int) -> Loaded:
        """Decode one tensor; raises :class:`GeFormatError`."""
        if self.name.kind == "dump":
            return load_tensor(self.path, getattr(self.header(), kind)[index])
        rows = self._arrays().get(kind)
        if rows is None or index >= len(rows):
            raise GeFormatError(f"{kind}[{index}] is missing")
        value = np.asarray(rows[index])
        if self.name.kind == "npz":
            return Loaded.from_array(value)
        return stats_from_row(value, f"{kind}[{index}]")


def stats_from_row(row: np.ndarray, what: str) -> Loaded:
    """A ``[min, max]`` or ``[min, max, mean]`` row of a min/max info file."""
    flat = np.asarray(row, dtype=np.float64).reshape(-1)
    if flat.size not in (2, 3):
        raise GeFormatError(f"{what}: a min/max row needs 2 or 3 values, found {flat.size}")
    mean = float(flat[2]) if flat.size == 3 else None
    return Loaded("N/A", None, None, float(flat[0]), float(flat[1]), mean)
