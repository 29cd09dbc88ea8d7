"""Read a plain tensor saved by ``torch.save`` straight from its zip container, without torch.

A ``.pt`` file is a zip archive holding ``<name>/data.pkl`` (a tiny pickle describing the
tensor) and ``<name>/data/<key>`` (the raw storage bytes, stored uncompressed). The pickle
is *not* unpickled: its opcodes are only tokenised with :mod:`pickletools` and matched
against the one shape a plain tensor has (``torch._utils._rebuild_tensor_v2`` of one
storage). Anything else returns ``None`` and the caller falls back to
``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import functools
import math
import os
import pickletools
import struct
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

_STORAGE_DTYPES = {
    "FloatStorage": np.dtype("<f4"),
    "DoubleStorage": np.dtype("<f8"),
    "HalfStorage": np.dtype("<f2"),
    "BFloat16Storage": np.dtype("<u2"),  # widened to float32 below
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
}
_REBUILD = "torch._utils _rebuild_tensor_v2"
_MARK = object()
_LOCAL_HEADER = 30
_WHOLE_FILE = 16 * 1024 * 1024  # files up to this size are read in one go
_TAIL = 65536 + 22  # the end-of-central-directory record lies in the last 64 KiB + 22 bytes
_END = b"PK\x05\x06"
_END_RECORD = struct.Struct("<4s4H2LH")
"""The end-of-central-directory record (22 bytes without its comment)."""
_CENTRAL = struct.Struct("<4s6xH12xL3H8xL")
"""A central directory header: signature, method, uncompressed size, name / extra / comment
lengths and the offset of the member's local header (46 bytes)."""


class _Unusual(Exception):
    """The file is not the plain-tensor layout this reader understands."""


def _tensor_spec(pkl: bytes) -> tuple[str, str, int, int, tuple[int, ...], tuple[int, ...]]:
    """``(storage class, storage key, storage numel, offset, size, stride)`` from data.pkl.

    A small stack machine over the pickle's opcodes; it builds only tuples, ints and
    strings and never calls or imports anything.
    """
    stack: list[Any] = []
    memo: dict[int, Any] = {}
    storage = None
    reduced = 0
    for op, arg, _ in pickletools.genops(pkl):
        name = op.name
        if name in ("PROTO", "FRAME"):
            continue
        if name == "GLOBAL":
            stack.append(("global", arg.replace("\n", " ")))
        elif name in ("BINUNICODE", "SHORT_BINUNICODE", "BININT", "BININT1", "BININT2", "LONG1"):
            stack.append(arg)
        elif name in ("NEWFALSE", "NEWTRUE"):
            stack.append(name == "NEWTRUE")
        elif name == "NONE":
            stack.append(None)
        elif name in ("BINPUT", "LONG_BINPUT", "MEMOIZE"):
            memo[arg if name != "MEMOIZE" else len(memo)] = stack[-1]
        elif name in ("BINGET", "LONG_BINGET"):
            stack.append(memo[arg])
        elif name == "MARK":
            stack.append(_MARK)
        elif name == "TUPLE":
            at = len(stack) - 1 - stack[::-1].index(_MARK)
            items = tuple(stack[at + 1 :])
            del stack[at:]
            stack.append(items)
        elif name in ("EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"):
            n = {"EMPTY_TUPLE": 0, "TUPLE1": 1, "TUPLE2": 2, "TUPLE3": 3}[name]
            items = tuple(stack[len(stack) - n :]) if n else ()
            del stack[len(stack) - n :]
            stack.append(items)
        elif name == "BINPERSID":
            pid = stack.pop()
            if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and storage is None):
                raise _Unusual("persistent id")
            storage = pid
            stack.append(("storage",))
        elif name == "REDUCE":
            args = stack.pop()
            func = stack.pop()
            if func == ("global", "collections OrderedDict") and args == ():
                stack.append(("dict",))
            elif func == ("global", _REBUILD) and reduced == 0:
                reduced += 1
                stack.append(("tensor", args))
            else:
                raise _Unusual("call")
        elif name == "EMPTY_DICT":
            stack.append(("dict",))
        elif name == "STOP":
            break
        else:
            raise _Unusual(name)
    if len(stack) != 1 or not (isinstance(stack[0], tuple) and stack[0][0] == "tensor") or storage is None:
        raise _Unusual("not a tensor")
    args = stack[0][1]
    if len(args) < 4 or args[0] != ("storage",) or args[4:5] not in ((), (False,), (True,)):
        raise _Unusual("rebuild arguments")
    if len(args) > 5 and args[5] != ("dict",):  # backward hooks must be empty
        raise _Unusual("hooks")
    kind = storage[1]
    if not (isinstance(kind, tuple) and kind[0] == "global" and kind[1].startswith("torch ")):
        raise _Unusual("storage type")
    offset, size, stride = args[1], args[2], args[3]
    if not (isinstance(offset, int) and isinstance(size, tuple) and isinstance(stride, tuple)):
        raise _Unusual("geometry")
    return kind[1][6:], str(storage[2]), int(storage[4]), offset, size, stride


def read_pt(source: Path | BinaryIO) -> np.ndarray | None:
    """The tensor in ``source`` (a path or a file opened in binary mode) as a numpy array,
    or ``None`` when the layout is unusual.

    bfloat16 is widened to float32 (exactly). Raises ``OSError``/``zipfile.BadZipFile``
    for unreadable files.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            return read_pt(handle)
    fd = source.fileno()
    return read_pt_fd(fd, os.fstat(fd).st_size)


def read_pt_fd(fd: int, size: int) -> np.ndarray | None:
    """:func:`read_pt` of the open file ``fd`` of ``size`` bytes, read from its start.

    A file up to :data:`_WHOLE_FILE` bytes is read with one ``pread`` into an uninitialised
    array (no zero-filling, no buffering layer); of a larger one the zip directory is read
    from its tail, then the tensor's bytes where they lie.
    """
    if size > _WHOLE_FILE:
        with open(fd, "rb", closefd=False) as handle:
            return _read_tail_first(handle, size)
    raw = np.empty(size, dtype=np.uint8)  # the array stays writable
    if _pread_into(fd, raw) != size:
        return None
    members = _members(raw, 0)
    if members is None:
        with open(fd, "rb", closefd=False) as handle:
            return _read_with_zipfile(handle)
    view = memoryview(raw)
    located = _locate(members, lambda offset, length: bytes(view[offset : offset + length]))
    if located is None:
        return None
    kind, dtype, start, count, shape = located
    return _shaped(kind, np.frombuffer(raw, dtype=dtype, count=count, offset=start), count, shape)


def _pread_into(fd: int, raw: np.ndarray) -> int:
    """Bytes read from the start of ``fd`` into ``raw`` (one system call where ``preadv`` exists)."""
    if hasattr(os, "preadv"):
        return os.preadv(fd, [raw], 0)
    with open(fd, "rb", closefd=False) as handle:
        handle.seek(0)
        return handle.readinto(raw) or 0


def _read_tail_first(handle: BinaryIO, size: int) -> np.ndarray | None:
    """A large file: the zip directory from its tail, then the tensor's bytes where they lie."""
    tail_start = max(0, size - _TAIL)
    handle.seek(tail_start)
    members = _members(handle.read(), tail_start, handle)
    if members is None:
        return _read_with_zipfile(handle)
    return _read_members(handle, members)


def _shaped(kind: str, data: np.ndarray, count: int, shape: tuple[int, ...]) -> np.ndarray | None:
    """The flat storage read from the zip as an array of ``shape``; bfloat16 widened to float32.

    ``None`` when the file held fewer elements than the tensor needs.
    """
    if data.size != count:
        return None
    if kind == "BFloat16Storage":
        data = (data.astype(np.uint32) << 16).view(np.float32)
    return data.reshape(shape)


def _members(buf: Any, buf_start: int, handle: Any = None) -> dict[str, tuple[int, int, int]] | None:
    """``{name: (method, size, local header offset)}`` from the zip's central directory.

    ``buf`` holds the file from ``buf_start`` on (the whole file, or its tail). ``None``
    for anything this small parser does not handle (zip64, multi-disk): the zipfile
    module then reads the archive.
    """
    view = memoryview(buf)
    size = len(view)
    if size >= 22 and bytes(view[size - 22 :]).rfind(_END) == 0:
        end = size - 22  # no archive comment: the record closes the file (torch's case)
    else:
        tail_start = max(0, size - _TAIL)
        end = bytes(view[tail_start:]).rfind(_END)
        if end < 0:
            return None
        end += tail_start
    if end + 22 > size:
        return None
    _, disk, cd_disk, _, entries, cd_size, cd_offset, _ = _END_RECORD.unpack_from(view, end)
    if disk or cd_disk or entries == 0xFFFF or cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
        return None
    if cd_offset >= buf_start:
        directory = bytes(view[cd_offset - buf_start : cd_offset - buf_start + cd_size])
    elif handle is not None:
        handle.seek(cd_offset)
        directory = handle.read(cd_size)
    else:
        return None
    members: dict[str, tuple[int, int, int]] = {}
    unpack = _CENTRAL.unpack_from
    last = len(directory) - _CENTRAL.size  # where the last whole header may start
    pos = 0
    for _ in range(entries):
        if pos > last:
            return None
        signature, method, usize, name_len, extra_len, comment_len, offset = unpack(directory, pos)
        if signature != b"PK\x01\x02" or usize == 0xFFFFFFFF or offset == 0xFFFFFFFF:
            return None
        pos += 46
        members[directory[pos : pos + name_len].decode("utf-8", "replace")] = (method, usize, offset)
        pos += name_len + extra_len + comment_len
    return members


def _locate(members: dict[str, tuple[int, int, int]], read: Any) -> tuple[str, np.dtype, int, int, tuple] | None:
    """Storage kind, dtype, byte offset, element count and shape of the tensor, or ``None``."""
    pkl_name = next((n for n in members if n.endswith("/data.pkl")), None)
    if pkl_name is None:
        return None
    prefix = pkl_name[: -len("data.pkl")]

    def member(name: str) -> bytes | None:
        entry = members.get(name)
        if entry is None or entry[0] != zipfile.ZIP_STORED:
            return None
        start = _data_start(read, entry[2])
        return None if start is None else read(start, entry[1])

    order = members.get(prefix + "byteorder")
    if order is not None and (member(prefix + "byteorder") or b"").strip() != b"little":
        return None
    pkl = member(pkl_name)
    if pkl is None:
        return None
    try:
        kind, key, numel, offset, shape, count = _cached_spec(pkl)
    except (_Unusual, ValueError, IndexError, KeyError, TypeError):
        return None
    dtype = _STORAGE_DTYPES.get(kind)
    entry = members.get(f"{prefix}data/{key}")
    if dtype is None or entry is None or entry[0] != zipfile.ZIP_STORED:
        return None
    if numel * dtype.itemsize != entry[1]:
        return None
    start = _data_start(read, entry[2])
    if start is None:
        return None
    return kind, dtype, start + offset * dtype.itemsize, count, shape


def _data_start(read: Any, header_offset: int) -> int | None:
    header = read(header_offset, _LOCAL_HEADER)
    if len(header) != _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
        return None
    name_len, extra_len = struct.unpack_from("<2H", header, 26)
    return header_offset + _LOCAL_HEADER + name_len + extra_len


@functools.lru_cache(maxsize=1024)
def _cached_spec(pkl: bytes) -> tuple[str, str, int, int, tuple[int, ...], int]:
    """``(storage class, storage key, storage numel, offset, size, element count)`` of a
    plain contiguous tensor, remembered: tensors of one shape and dtype share their data.pkl.

    Raises :class:`_Unusual` for views and odd layouts (left to torch).
    """
    kind, key, numel, offset, shape, stride = _tensor_spec(pkl)
    if not all(isinstance(s, int) for s in shape + stride):
        raise _Unusual("geometry")
    count = math.prod(shape)
    if any(s < 0 for s in shape) or offset < 0:
        raise _Unusual("geometry")
    if count and (_contiguous_strides(shape) != stride or offset + count > numel):
        raise _Unusual("view")
    return kind, key, numel, offset, shape, count


def _read_with_zipfile(handle: Any) -> np.ndarray | None:
    """The same reading through the zipfile module (zip64 and other rarer containers)."""
    handle.seek(0)
    archive = zipfile.ZipFile(handle)
    members = {i.filename: (i.compress_type, i.file_size, i.header_offset) for i in archive.infolist()}
    return _read_members(handle, members)


def _read_members(handle: Any, members: dict[str, tuple[int, int, int]]) -> np.ndarray | None:
    """The tensor of the zip ``members`` (see :func:`_members`), read from ``handle`` where it lies."""

    def read(offset: int, length: int) -> bytes:
        handle.seek(offset)
        return handle.read(length)

    located = _locate(members, read)
    if located is None:
        return None
    kind, dtype, start, count, shape = located
    handle.seek(start)
    return _shaped(kind, np.fromfile(handle, dtype=dtype, count=count), count, shape)


def _contiguous_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    step = 1
    for dim in reversed(size):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))
