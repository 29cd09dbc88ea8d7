"""GE ``OutputDataType`` enum values and how to decode their payload bytes into numpy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

DTYPE_NAMES: dict[int, str] = {
    0: "UNDEFINED", 1: "FLOAT", 2: "FLOAT16", 3: "INT8", 4: "UINT8", 5: "INT16", 6: "UINT16",
    7: "INT32", 8: "INT64", 9: "UINT32", 10: "UINT64", 11: "BOOL", 12: "DOUBLE", 13: "STRING",
    14: "DUAL_SUB_INT8", 15: "DUAL_SUB_UINT8", 16: "COMPLEX64", 17: "COMPLEX128", 18: "QINT8",
    19: "QINT16", 20: "QINT32", 21: "QUINT8", 22: "QUINT16", 23: "RESOURCE", 24: "STRING_REF",
    25: "DUAL", 26: "VARIANT", 27: "BF16", 28: "INT4", 29: "UINT1", 30: "INT2", 31: "UINT2",
    32: "COMPLEX32", 33: "HIFLOAT8", 34: "FLOAT8_E5M2", 35: "FLOAT8_E4M3FN", 36: "FLOAT8_E8M0",
    37: "FLOAT6_E3M2", 38: "FLOAT6_E2M3", 39: "FLOAT4_E2M1", 40: "FLOAT4_E1M2", 41: "HIFLOAT4",
    42: "HIFLOAT4_SCALE",
}

# Types stored with one numpy element per value.
_NATIVE: dict[int, np.dtype] = {
    0: np.dtype(np.int8), 1: np.dtype("<f4"), 2: np.dtype("<f2"), 3: np.dtype(np.int8),
    4: np.dtype(np.uint8), 5: np.dtype("<i2"), 6: np.dtype("<u2"), 7: np.dtype("<i4"),
    8: np.dtype("<i8"), 9: np.dtype("<u4"), 10: np.dtype("<u8"), 11: np.dtype(np.bool_),
    12: np.dtype("<f8"), 16: np.dtype("<c8"), 17: np.dtype("<c16"), 18: np.dtype(np.int8),
    19: np.dtype("<i2"), 20: np.dtype("<i4"), 21: np.dtype(np.uint8), 22: np.dtype("<u2"),
    23: np.dtype("<i8"),
}


def _bf16(raw: np.ndarray) -> np.ndarray:
    return (raw.astype(np.uint32) << 16).view(np.float32)


def _e5m2(raw: np.ndarray) -> np.ndarray:
    # E5M2 is the high byte of an IEEE half.
    return (raw.astype(np.uint16) << 8).view(np.float16).astype(np.float32)


def _e4m3fn(raw: np.ndarray) -> np.ndarray:
    sign = np.where(raw & 0x80, -1.0, 1.0)
    exp = ((raw >> 3) & 0xF).astype(np.int32)
    mant = (raw & 0x7).astype(np.float64)
    value = np.where(exp == 0, mant / 8.0 * 2.0**-6, (1.0 + mant / 8.0) * np.exp2(exp - 7.0))
    value = np.where((raw & 0x7F) == 0x7F, np.nan, value)
    return (sign * value).astype(np.float32)


def _e8m0(raw: np.ndarray) -> np.ndarray:
    value = np.exp2(raw.astype(np.float64) - 127.0)
    return np.where(raw == 0xFF, np.nan, value).astype(np.float32)


def _complex32(raw: np.ndarray) -> np.ndarray:
    halves = raw.view("<f2").astype(np.float32)
    return (halves[0::2] + 1j * halves[1::2]).astype(np.complex64)


# dtype -> (bits per element, decoder(raw uint8 bytes, count) -> array of `count` values)
def _sub_byte(bits: int, signed: bool) -> Callable[[np.ndarray, int], np.ndarray]:
    per_byte = 8 // bits
    mask = (1 << bits) - 1

    def decode(raw: np.ndarray, count: int) -> np.ndarray:
        # Low-order bits hold the first element (GE's packing of INT4/INT2/UINT2).
        shifts = np.arange(per_byte, dtype=np.uint8) * bits
        values = ((raw[:, None] >> shifts) & mask).reshape(-1)[:count].astype(np.int8)
        if signed:
            values = np.where(values >= 1 << (bits - 1), values - (1 << bits), values).astype(np.int8)
        return values

    return decode


def _uint1(raw: np.ndarray, count: int) -> np.ndarray:
    return np.unpackbits(raw)[:count]


_PACKED: dict[int, tuple[int, Callable[[np.ndarray, int], np.ndarray]]] = {
    28: (4, _sub_byte(4, True)),
    29: (1, _uint1),
    30: (2, _sub_byte(2, True)),
    31: (2, _sub_byte(2, False)),
}

# dtype -> (bytes per element, converter of the raw unsigned view)
_CONVERTED: dict[int, tuple[np.dtype, Callable[[np.ndarray], np.ndarray]]] = {
    27: (np.dtype("<u2"), _bf16),
    32: (np.dtype("<u4"), lambda raw: _complex32(raw.view(np.uint16))),
    34: (np.dtype(np.uint8), _e5m2),
    35: (np.dtype(np.uint8), _e4m3fn),
    36: (np.dtype(np.uint8), _e8m0),
}


def dtype_name(code: int) -> str:
    """The enum name of a GE data type (``"FLOAT16"``), or ``"<code>"`` when unknown."""
    return DTYPE_NAMES.get(code, str(code))


def payload_bytes(code: int, count: int) -> int:
    """Bytes needed for ``count`` elements of type ``code``; raises ``ValueError`` if unsupported."""
    if code in _NATIVE:
        return count * _NATIVE[code].itemsize
    if code in _CONVERTED:
        return count * _CONVERTED[code][0].itemsize
    if code in _PACKED:
        bits = _PACKED[code][0]
        return (count * bits + 7) // 8
    if code in DTYPE_NAMES:
        raise ValueError(f"data type {DTYPE_NAMES[code]} ({code}) is not supported")
    raise ValueError(f"unknown data type enum {code}")


def decode(code: int, raw: bytes, count: int) -> np.ndarray:
    """Decode ``count`` elements of GE type ``code`` from ``raw`` into a flat numpy array.

    BF16 and the 8-bit float types come back as float32 (numpy has no such types).
    """
    if code in _NATIVE:
        return np.frombuffer(raw, dtype=_NATIVE[code], count=count)
    if code in _CONVERTED:
        view, convert = _CONVERTED[code]
        return convert(np.frombuffer(raw, dtype=view, count=count))
    if code in _PACKED:
        return _PACKED[code][1](np.frombuffer(raw, dtype=np.uint8), count)
    payload_bytes(code, count)  # raises the right message
    raise AssertionError("unreachable")
