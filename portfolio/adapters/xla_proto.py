"""XLA's ``AutoShardingSolverRequest`` message, declared here and built at run time.

Why at run time: declaring the fields in a ``FileDescriptorProto`` needs only the ``protobuf``
runtime, no ``protoc`` and no generated module to keep in step. The whole message is declared, with
XLA's names, numbers and types (as of XLA's field 41), so a request read and written again keeps
every field, the ones this project does not use included. Fields of a newer XLA are unknown here:
a binary message keeps them (protobuf carries unknown fields through), a text one cannot (text
format has no way to write a field it cannot name); :func:`parse_text` reports the names it skipped.
The classes live in a private descriptor pool, so a process that also loads XLA's own proto sees no
clash.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

PACKAGE = "xla"
REQUEST = "AutoShardingSolverRequest"

_DBL, _I64, _BOOL, _STR, _MSG = 1, 3, 8, 9, 11   # FieldDescriptorProto.Type values
_ONE, _MANY = 1, 3                               # FieldDescriptorProto.Label: optional, repeated

Field = tuple[str, int, int, int, str]
"""(name, number, type, label, nested message type) of one field."""

_NESTED: dict[str, list[Field]] = {
    "Pair": [("first", 1, _I64, _ONE, ""), ("second", 2, _I64, _ONE, "")],
    "Costs": [("costs", 1, _DBL, _MANY, "")],
    "Nodes": [("nodes", 1, _I64, _MANY, "")],
    "Edges": [("edges", 1, _I64, _MANY, "")],
    "Names": [("names", 1, _STR, _MANY, "")],
    "SolverTimeout": [("solver_timeout_in_seconds", 1, _I64, _ONE, "")],
    "Coeff": [("coeff", 1, _DBL, _ONE, "")],
    "Group": [("prims", 1, _I64, _MANY, "")],
}

_FIELDS: list[Field] = [
    ("num_nodes", 1, _I64, _ONE, ""),
    ("memory_budget", 2, _I64, _ONE, ""),
    ("s_len", 3, _I64, _MANY, ""),
    ("s_follow", 4, _I64, _MANY, ""),
    ("s_hint", 5, _I64, _MANY, ""),
    ("edges", 6, _MSG, _MANY, "Pair"),
    ("live", 7, _MSG, _MANY, "Nodes"),
    ("computation_costs", 8, _MSG, _MANY, "Costs"),
    ("communication_costs", 9, _MSG, _MANY, "Costs"),
    ("memory_costs", 10, _MSG, _MANY, "Costs"),
    ("departure_costs", 11, _MSG, _MANY, "Costs"),
    ("resharding_costs", 12, _MSG, _MANY, "Costs"),
    ("duration_costs", 13, _MSG, _MANY, "Costs"),
    ("aliases", 14, _MSG, _MANY, "Pair"),
    ("value_costs", 15, _MSG, _MANY, "Costs"),
    ("instruction_names", 16, _STR, _MANY, ""),
    ("solver_timeout", 17, _MSG, _ONE, "SolverTimeout"),
    ("overbudget_coeff", 18, _MSG, _ONE, "Coeff"),
    ("makespan_coeff", 19, _MSG, _ONE, "Coeff"),
    ("max_departures", 20, _MSG, _ONE, "Coeff"),
    ("crash_at_infinity_costs_check", 21, _BOOL, _ONE, ""),
    ("compute_iis", 22, _BOOL, _ONE, ""),
    ("saltiplier", 23, _DBL, _ONE, ""),
    ("module_name", 24, _STR, _ONE, ""),
    ("max_cost", 25, _MSG, _ONE, "Coeff"),
    ("coeff_limit", 26, _MSG, _ONE, "Coeff"),
    ("deterministic_mode", 27, _BOOL, _ONE, ""),
    ("live_edges", 28, _MSG, _MANY, "Edges"),
    ("memory_edge_costs", 29, _MSG, _MANY, "Costs"),
    ("request_name", 30, _STR, _ONE, ""),
    ("enable_output", 31, _BOOL, _ONE, ""),
    ("strategy_names", 32, _MSG, _MANY, "Names"),
    ("opcodes", 33, _STR, _MANY, ""),
    ("enable_memory_edge_costs", 34, _BOOL, _ONE, ""),
    ("peak_times", 35, _I64, _MANY, ""),
    ("node_intervals", 36, _MSG, _MANY, "Pair"),
    ("edge_intervals", 37, _MSG, _MANY, "Pair"),
    ("node_groups", 38, _MSG, _MANY, "Group"),
    ("edge_groups", 39, _MSG, _MANY, "Group"),
    ("metadata_source_files", 40, _STR, _MANY, ""),
    ("minimize_departures", 41, _BOOL, _ONE, ""),
]
"""Every field of XLA's message: the numbers, names and types are XLA's."""

FIELD_NUMBERS = {name: number for name, number, *_ in _FIELDS}

READ = frozenset({"num_nodes", "memory_budget", "s_len", "s_follow", "edges", "live",
                  "computation_costs", "communication_costs", "memory_costs", "resharding_costs",
                  "aliases", "value_costs", "request_name", "node_intervals", "node_groups",
                  "s_hint"})
"""The fields that make the problem, and the hint the solve starts from (:mod:`.request` reads
them)."""

LABELS = frozenset({"instruction_names", "module_name", "strategy_names", "opcodes",
                    "metadata_source_files"})
"""Names for people reading a request: they change nothing in the problem."""


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
    """A request from wire-format bytes (``DecodeError`` when they are not one); fields unknown
    here are kept in the message and written again by ``SerializeToString``."""
    msg = new_request()
    msg.ParseFromString(data)
    return msg


def parse_text(text: str) -> tuple[Any, str]:
    """A request from text format, and the first field name it skipped ('' when none was).

    A name this declaration lacks (a newer XLA's field, or a typo) is skipped, not refused: the
    text is parsed strictly first, and again leniently only when that names an unknown field."""
    from google.protobuf import text_format

    msg = new_request()
    try:
        text_format.Parse(text, msg)
        return msg, ""
    except text_format.ParseError as exc:
        marker = "has no field named "
        if marker not in str(exc):
            raise
        skipped = str(exc).split(marker, 1)[1].strip().strip('".')
    msg = new_request()
    text_format.Parse(text, msg, allow_unknown_field=True)
    return msg, skipped


def to_text(msg: Any) -> str:
    """The text format of ``msg`` (one printer for every text file written, so that equal messages
    give equal bytes); unknown fields are not printed (text cannot name them)."""
    from google.protobuf import text_format

    return text_format.MessageToString(msg)


def unknown_field_numbers(msg: Any) -> list[int]:
    """Numbers of the top-level fields present in a parsed binary request but not declared here."""
    try:
        from google.protobuf.unknown_fields import UnknownFieldSet

        return sorted({f.field_number for f in UnknownFieldSet(msg)})
    except Exception:  # noqa: BLE001 -- an older runtime without the API: nothing to report
        return []


def has_unknown_fields(msg: Any) -> bool:
    """Whether ``msg`` or any message inside it holds fields not declared here."""
    bare = type(msg)()
    bare.CopyFrom(msg)
    bare.DiscardUnknownFields()
    return bare.ByteSize() != msg.ByteSize()


def unused_fields(msg: Any) -> list[str]:
    """Names of the fields set in ``msg`` that the problem does not read and that are more than
    labels (departure and makespan terms, soft budgets, solver settings, edge memory)."""
    return [f.name for f, _ in msg.ListFields() if f.name not in READ and f.name not in LABELS]
