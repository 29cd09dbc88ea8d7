"""A minimal protobuf wire-format reader (enough for GE's DumpData header).

No schema is needed: a message is decoded into ``{field_number: [values]}`` where a value
is an ``int`` (varint / fixed) or ``bytes`` (length-delimited: strings, sub-messages,
packed repeated fields). Callers know which fields are sub-messages.
"""

from __future__ import annotations

import struct


class WireError(ValueError):
    """The bytes are not a valid protobuf message."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Decode one varint at ``pos``; return ``(value, next_pos)``."""
    result = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise WireError("truncated varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise WireError("varint longer than 10 bytes")


def parse_message(buf: bytes) -> dict[int, list[int | bytes]]:
    """Decode every field of a message; repeated fields keep their order."""
    fields: dict[int, list[int | bytes]] = {}
    pos = 0
    end = len(buf)
    while pos < end:
        key, pos = read_varint(buf, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire_type == 0:
            value, pos = read_varint(buf, pos)
        elif wire_type == 2:
            length, pos = read_varint(buf, pos)
            if pos + length > end:
                raise WireError(f"field {number} runs past the end of the message")
            value = bytes(buf[pos : pos + length])
            pos += length
        elif wire_type == 1:
            if pos + 8 > end:
                raise WireError("truncated fixed64")
            (value,) = struct.unpack_from("<Q", buf, pos)
            pos += 8
        elif wire_type == 5:
            if pos + 4 > end:
                raise WireError("truncated fixed32")
            (value,) = struct.unpack_from("<I", buf, pos)
            pos += 4
        else:
            raise WireError(f"unsupported wire type {wire_type} for field {number}")
        fields.setdefault(number, []).append(value)
    return fields


def unpack_varints(values: list[int | bytes]) -> list[int]:
    """A repeated integer field, whether written packed (bytes) or one value per tag."""
    out: list[int] = []
    for value in values:
        if isinstance(value, bytes):
            pos = 0
            while pos < len(value):
                item, pos = read_varint(value, pos)
                out.append(item)
        else:
            out.append(value)
    return out


def first_int(fields: dict[int, list[int | bytes]], number: int, default: int = 0) -> int:
    """The last value of a scalar integer field (protobuf's last-one-wins), or ``default``."""
    values = fields.get(number)
    if not values:
        return default
    value = values[-1]
    if isinstance(value, bytes):
        raise WireError(f"field {number} should be an integer")
    return value


def first_str(fields: dict[int, list[int | bytes]], number: int) -> str:
    """A string field decoded as UTF-8 (invalid bytes replaced), or ``""``."""
    values = fields.get(number)
    if not values:
        return ""
    value = values[-1]
    if not isinstance(value, bytes):
        raise WireError(f"field {number} should be a string")
    return value.decode("utf-8", errors="replace")

