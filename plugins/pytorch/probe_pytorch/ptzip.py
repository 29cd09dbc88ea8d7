"""Read a plain tensor saved by ``torch.save`` straight from its zip container, without torch.

A ``.pt`` file is a zip archive holding ``<name>/data.pkl`` (a tiny pickle describing the
tensor) and ``<name>/data/<key>`` (the raw storage bytes, stored uncompressed). The pickle
is *not* unpickled: its opcodes are only tokenised with :mod:`pickletools` and matched
against the one shape a plain tensor has (``torch._utils._rebuild_tensor_v2`` of one
storage). Anything else returns ``None`` and the caller falls back to
``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import pickletools
import zipfile
from pathlib import Path
from typing import Any

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


def read_pt(path: Path) -> np.ndarray | None:
    """The tensor in ``path`` as a numpy array, or ``None`` when the layout is unusual.

    bfloat16 is widened to float32 (exactly). Raises ``OSError``/``zipfile.BadZipFile``
    for unreadable files.
    """
    with open(path, "rb") as handle:
        archive = zipfile.ZipFile(handle)
        infos = archive.infolist()
        pkl_info = next((i for i in infos if i.filename.endswith("/data.pkl")), None)
        if pkl_info is None:
            return None
        prefix = pkl_info.filename[: -len("data.pkl")]
        names = {i.filename: i for i in infos}
        order = names.get(prefix + "byteorder")
        if order is not None and archive.read(order).strip() != b"little":
            return None
        try:
            kind, key, numel, offset, size, stride = _tensor_spec(archive.read(pkl_info))
        except (_Unusual, ValueError, IndexError, KeyError, TypeError):
            return None
        dtype = _STORAGE_DTYPES.get(kind)
        info = names.get(f"{prefix}data/{key}")
        if dtype is None or info is None or info.compress_type != zipfile.ZIP_STORED:
            return None
        count = int(np.prod(size)) if size else 1
        if any(s < 0 for s in size) or offset < 0:
            return None
        if count and (_contiguous_strides(size) != stride or offset + count > numel):
            return None  # views and odd layouts: leave them to torch
        if numel * dtype.itemsize != info.file_size:
            return None
        handle.seek(info.header_offset)
        header = handle.read(_LOCAL_HEADER)
        if len(header) != _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
            return None
        start = info.header_offset + _LOCAL_HEADER + int.from_bytes(header[26:28], "little") + int.from_bytes(
            header[28:30], "little"
        )
        handle.seek(start + offset * dtype.itemsize)
        data = np.fromfile(handle, dtype=dtype, count=count)
    if data.size != count:
        return None
    if kind == "BFloat16Storage":
        data = (data.astype(np.uint32) << 16).view(np.float32)
    return data.reshape(size)


def _contiguous_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    step = 1
    for dim in reversed(size):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))
