"""The ``DumpData`` header schema of GE dump files, for the ``protobuf`` library.

Field numbers follow GE's public ``dump_task.proto`` (package ``toolkit.dump``; see the
TorchAir spec §6.4). The descriptor is built here in Python, so no ``protoc`` and no
generated ``_pb2`` module are needed, and it lives in a private pool (no clash with another
package that registers the same names).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

PACKAGE = "probe_torchair.dump"

_FIELDS: dict[str, list[tuple[str, int, str, bool]]] = {
    # message: (field, number, type or message name, repeated)
    "Shape": [("dim", 1, "uint64", True)],
    "OriginalOp": [("name", 1, "string", False), ("output_index", 2, "uint32", False),
                   ("data_type", 3, "int32", False), ("format", 4, "int32", False)],
    "DimRange": [("dim_start", 1, "uint64", False), ("dim_end", 2, "uint64", False)],
    "OpInput": [
        ("data_type", 1, "int32", False), ("format", 2, "int32", False), ("shape", 3, "Shape", False),
        ("data", 4, "bytes", False), ("size", 5, "uint64", False), ("original_shape", 6, "Shape", False),
        ("sub_format", 7, "int32", False), ("address", 8, "uint64", False), ("offset", 9, "uint64", False),
        ("arg_index", 10, "uint32", False), ("input_type", 11, "uint32", False),
    ],
    "OpOutput": [
        ("data_type", 1, "int32", False), ("format", 2, "int32", False), ("shape", 3, "Shape", False),
        ("original_op", 4, "OriginalOp", False), ("data", 5, "bytes", False), ("size", 6, "uint64", False),
        ("original_shape", 7, "Shape", False), ("sub_format", 8, "int32", False),
        ("address", 9, "uint64", False), ("dim_range", 10, "DimRange", True), ("arg_index", 11, "uint32", False),
    ],
    "OpBuffer": [("buffer_type", 1, "int32", False), ("data", 2, "bytes", False), ("size", 3, "uint64", False)],
    "OpAttr": [("name", 1, "string", False), ("value", 2, "string", False)],
    "Workspace": [("type", 1, "int32", False), ("data", 2, "bytes", False), ("size", 3, "uint64", False),
                  ("arg_index", 4, "uint32", False)],
    "DumpData": [
        ("version", 1, "string", False), ("dump_time", 2, "uint64", False), ("output", 3, "OpOutput", True),
        ("input", 4, "OpInput", True), ("buffer", 5, "OpBuffer", True), ("op_name", 6, "string", False),
        ("attr", 7, "OpAttr", True), ("space", 8, "Workspace", True), ("dfx_message", 9, "string", False),
    ],
}


@lru_cache(maxsize=1)
def dump_data_class() -> Any:
    """The ``DumpData`` message class (built once per process)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    scalar = {"int32": F.TYPE_INT32, "uint32": F.TYPE_UINT32, "uint64": F.TYPE_UINT64,
              "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES}
    file = descriptor_pb2.FileDescriptorProto(name="probe_torchair_dump_task.proto", package=PACKAGE, syntax="proto3")
    for message_name, fields in _FIELDS.items():
        message = file.message_type.add(name=message_name)
        for name, number, kind, repeated in fields:
            field = message.field.add(name=name, number=number,
                                      label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if kind in scalar:
                field.type = scalar[kind]
            else:
                field.type = F.TYPE_MESSAGE
                field.type_name = f".{PACKAGE}.{kind}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.DumpData"))


def parse_dump_data(raw: bytes) -> Any:
    """Decode a ``DumpData`` header; raises ``ValueError`` naming the problem."""
    from google.protobuf.message import DecodeError

    message = dump_data_class()()
    try:
        message.ParseFromString(raw)
    except DecodeError as exc:
        raise ValueError(str(exc) or "not a protobuf message") from None
    return message
