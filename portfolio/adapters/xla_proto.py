"""XLA's ``AutoShardingSolverRequest`` message, declared here and built at run time.

Why at run time: declaring the fields in a ``FileDescriptorProto`` needs only the ``protobuf``
runtime, no ``protoc`` and no generated module to keep in step. Only the fields this project reads
are declared, with XLA's numbers and names, so binary and text files written by XLA parse here
(other fields are skipped: unknown in binary, ``allow_unknown_field`` in text). The classes live in
a private descriptor pool, so a process that also loads XLA's own proto sees no clash.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

PACKAGE = "xla"
REQUEST = "AutoShardingSolverRequest"

_I64, _DBL, _STR, _MSG = 3, 1, 9, 11       # FieldDescriptorProto.Type values
_OPTIONAL, _REPEATED = 1, 3                # FieldDescriptorProto.Label values

_NESTED: dict[str, list[tuple[str, int, int, int, str]]] = {
    "Pair": [("first", 1, _I64, _OPTIONAL, ""), ("second", 2, _I64, _OPTIONAL, "")],
    "Costs": [("costs", 1, _DBL, _REPEATED, "")],
    "Nodes": [("nodes", 1, _I64, _REPEATED, "")],
    "Group": [("prims", 1, _I64, _REPEATED, "")],
}

_FIELDS: list[tuple[str, int, int, int, str]] = [
    ("num_nodes", 1, _I64, _OPTIONAL, ""),
    ("memory_budget", 2, _I64, _OPTIONAL, ""),
    ("s_len", 3, _I64, _REPEATED, ""),
    ("s_follow", 4, _I64, _REPEATED, ""),
    ("s_hint", 5, _I64, _REPEATED, ""),
    ("edges", 6, _MSG, _REPEATED, "Pair"),
    ("live", 7, _MSG, _REPEATED, "Nodes"),
    ("computation_costs", 8, _MSG, _REPEATED, "Costs"),
    ("communication_costs", 9, _MSG, _REPEATED, "Costs"),
    ("memory_costs", 10, _MSG, _REPEATED, "Costs"),
    ("resharding_costs", 12, _MSG, _REPEATED, "Costs"),
    ("aliases", 14, _MSG, _REPEATED, "Pair"),
    ("value_costs", 15, _MSG, _REPEATED, "Costs"),
    ("request_name", 30, _STR, _OPTIONAL, ""),
    ("node_intervals", 36, _MSG, _REPEATED, "Pair"),
    ("node_groups", 38, _MSG, _REPEATED, "Group"),
]
"""(name, number, type, label, nested type) of every field read: the numbers are XLA's."""

FIELD_NUMBERS = {name: number for name, number, *_ in _FIELDS}


@lru_cache(maxsize=1)
def request_class() -> type:
    """The message class of ``xla.AutoShardingSolverRequest`` (built once per process)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(
        name="portfolio/adapters/xla_request.proto", package=PACKAGE, syntax="proto3")
    req = proto.message_type.add(name=REQUEST)
    for nested, fields in _NESTED.items():
        msg = req.nested_type.add(name=nested)
        for name, number, ftype, label, _ in fields:
            msg.field.add(name=name, number=number, type=ftype, label=label)
    for name, number, ftype, label, nested in _FIELDS:
        field = req.field.add(name=name, number=number, type=ftype, label=label)
        if nested:
            field.type_name = f".{PACKAGE}.{REQUEST}.{nested}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{PACKAGE}.{REQUEST}"))


def new_request() -> Any:
    return request_class()()


def parse_binary(data: bytes) -> Any:
    """A request from wire-format bytes (``DecodeError`` when they are not one)."""
    msg = new_request()
    msg.ParseFromString(data)
    return msg


def parse_text(text: str) -> Any:
    """A request from text format; fields this module does not declare are skipped."""
    from google.protobuf import text_format

    msg = new_request()
    text_format.Parse(text, msg, allow_unknown_field=True)
    return msg


def to_text(msg: Any) -> str:
    from google.protobuf import text_format

    return text_format.MessageToString(msg)


def unknown_field_numbers(msg: Any) -> list[int]:
    """Numbers of the fields present in a parsed binary request but not declared here."""
    try:
        from google.protobuf.unknown_fields import UnknownFieldSet

        return sorted({f.field_number for f in UnknownFieldSet(msg)})
    except Exception:  # noqa: BLE001 -- an older runtime without the API: nothing to report
        return []
