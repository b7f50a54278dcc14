"""XLA's ``AutoShardingSolverRequest``: read and write it, binary (``.pb``, ``.binpb``) or text
(``.textproto``, ``.txtpb``, ``.pbtxt``), gzip when the name ends in ``.gz``.

Two paths. Solving: the message goes to a :class:`~.request.SolverRequest` and from there to a
:class:`Problem` (:func:`read_request`, :func:`write_request`; what the fields mean lives in
:mod:`.request`). Copying: :func:`load_message` and :func:`save_message` move the message itself,
every field kept, so a request converted to another encoding stays the same request.
"""

from __future__ import annotations

import gzip
from dataclasses import replace
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..io import PathLike, ProblemFormatError, read_bytes
from ..problem import Problem
from . import xla_proto
from .request import Conversion, Rows, SolverRequest, from_problem, to_problem

TEXT_SUFFIXES = (".textproto", ".txtpb", ".pbtxt")
"""The text format's names (the registry, :mod:`.formats`, holds them too)."""


def _rows(repeated: Any, attr: str, dtype: type) -> Rows:
    """A repeated message field of repeated numbers (``costs``, ``nodes``, ``prims``) as :class:`Rows`."""
    lists = [getattr(m, attr) for m in repeated]
    counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    values = np.fromiter(chain.from_iterable(lists), dtype=dtype, count=int(counts.sum()))
    return Rows(counts, values)


def _pairs(repeated: Any) -> np.ndarray:
    flat = np.fromiter(chain.from_iterable((p.first, p.second) for p in repeated), dtype=np.int64,
                       count=2 * len(repeated))
    return flat.reshape(-1, 2)


def message_to_request(msg: Any) -> SolverRequest:
    """The arrays of a parsed request message."""
    return SolverRequest(
        num_nodes=int(msg.num_nodes),
        s_len=np.array(msg.s_len, dtype=np.int64),
        s_follow=np.array(msg.s_follow, dtype=np.int64),
        computation_costs=_rows(msg.computation_costs, "costs", np.float64),
        communication_costs=_rows(msg.communication_costs, "costs", np.float64),
        memory_costs=_rows(msg.memory_costs, "costs", np.float64),
        edges=_pairs(msg.edges),
        resharding_costs=_rows(msg.resharding_costs, "costs", np.float64),
        aliases=_pairs(msg.aliases),
        value_costs=_rows(msg.value_costs, "costs", np.float64),
        live=_rows(msg.live, "nodes", np.int64),
        node_intervals=_pairs(msg.node_intervals),
        node_groups=_rows(msg.node_groups, "prims", np.int64),
        memory_budget=int(msg.memory_budget),
        request_name=str(msg.request_name),
        s_hint=np.array(msg.s_hint, dtype=np.int64),
        instruction_names=tuple(msg.instruction_names),
    )


def _fill_rows(repeated: Any, attr: str, rows: Rows) -> None:
    values, bounds = rows.values.tolist(), rows.offsets.tolist()
    for a, b in zip(bounds[:-1], bounds[1:]):
        getattr(repeated.add(), attr).extend(values[a:b])


def _fill_pairs(repeated: Any, pairs: np.ndarray) -> None:
    for first, second in pairs.tolist():
        p = repeated.add()
        p.first, p.second = first, second


def request_to_message(req: SolverRequest) -> Any:
    """A request message holding ``req`` (empty optional fields stay unset)."""
    msg = xla_proto.new_request()
    msg.num_nodes = len(req.s_len) if req.num_nodes is None else req.num_nodes
    msg.memory_budget = int(req.memory_budget)
    msg.s_len.extend(req.s_len.tolist())
    msg.s_follow.extend(req.s_follow.tolist())
    _fill_pairs(msg.edges, req.edges)
    _fill_rows(msg.live, "nodes", req.live)
    for name in ("computation_costs", "communication_costs", "memory_costs", "resharding_costs",
                 "value_costs"):
        _fill_rows(getattr(msg, name), "costs", getattr(req, name))
    _fill_pairs(msg.aliases, req.aliases)
    _fill_pairs(msg.node_intervals, req.node_intervals)
    _fill_rows(msg.node_groups, "prims", req.node_groups)
    msg.request_name = req.request_name
    return msg


def is_text_name(path: PathLike) -> bool:
    name = str(path).lower()
    name = name[:-3] if name.endswith(".gz") else name
    return name.endswith(TEXT_SUFFIXES)


def _parse(data: bytes, path: PathLike, text: bool | None) -> tuple[Any, str]:
    """The message in ``data`` and the first field name a text file gave that is not declared."""
    from google.protobuf.message import DecodeError
    from google.protobuf.text_format import ParseError

    as_text = is_text_name(path) if text is None else text
    try:
        if as_text:
            return xla_proto.parse_text(data.decode("utf-8"))
        return xla_proto.parse_binary(data), ""
    except (DecodeError, ParseError) as exc:
        kind = "text" if as_text else "binary"
        raise ProblemFormatError(path, "", f"not a {kind} AutoShardingSolverRequest ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ProblemFormatError(path, "", f"not valid UTF-8 text ({exc.reason})") from None


def parse_request(data: bytes, path: PathLike = "<bytes>", text: bool | None = None) -> tuple[Any, list[str]]:
    """The message in ``data`` (text when ``text``, or when None and the name says so), and notes:
    what it holds that the problem does not use, and what reading it skipped."""
    msg, skipped = _parse(data, path, text)
    notes = []
    unused = xla_proto.unused_fields(msg)
    if unused:
        notes.append(f"fields not used by this problem: {', '.join(unused)} (departure and makespan "
                     f"terms, soft budgets, edge memory and solver settings have no place in it)")
    unknown = xla_proto.unknown_field_numbers(msg)
    if unknown:
        notes.append(f"fields unknown to this version skipped (numbers {', '.join(map(str, unknown))})")
    if skipped:
        notes.append(f"field '{skipped}' (and any other name this version does not declare) skipped")
    return msg, notes


def read_request(path: PathLike, cost_scale: float = 1.0, text: bool | None = None) -> Conversion:
    """Read an XLA request file and convert it (see :func:`.request.to_problem`)."""
    msg, notes = parse_request(read_bytes(path), path, text)
    return to_problem(message_to_request(msg), path, cost_scale).with_notes(*notes)


def write_request(problem: Problem, path: PathLike, cost_scale: float = 1.0,
                  text: bool | None = None) -> None:
    """Write ``problem`` as a request (text when ``text``, or when None and the name says so)."""
    save_message(request_to_message(from_problem(problem, cost_scale)), path, text)


# ------------------------------------------------------------------------------------------ copying
def load_message(path: PathLike, text: bool | None = None,
                 drop_unknown: bool = False) -> tuple[Any, Conversion]:
    """The request message of a file, whole, for a copy in another encoding (checked: a request
    that does not convert to a problem is refused as for solving). The conversion's notes are
    the copy's: what it cannot keep. A text file naming a field this version does not declare is
    refused (a copy would lose it) unless ``drop_unknown``."""
    msg, skipped = _parse(read_bytes(path), path, text)
    notes: tuple[str, ...] = ()
    if skipped and not drop_unknown:
        raise ProblemFormatError(path, skipped, "is not a field of AutoShardingSolverRequest as "
                                 "declared here, so a copy would lose it (--drop-unknown, or "
                                 "drop_unknown=True, copies without it)")
    if skipped:
        notes = (f"field '{skipped}' (and any other name this version does not declare) dropped",)
    return msg, replace(to_problem(message_to_request(msg), path), notes=notes)


def save_message(msg: Any, path: PathLike, text: bool | None = None,
                 drop_unknown: bool = False) -> tuple[str, ...]:
    """Write a request message, binary or text, gzip when the name ends in ``.gz``; returns notes.

    Binary keeps every field, unknown ones included. Text cannot hold a field it cannot name: a
    message with unknown fields is refused (``ValueError``) unless ``drop_unknown``."""
    as_text = is_text_name(path) if text is None else text
    notes: tuple[str, ...] = ()
    if as_text and xla_proto.has_unknown_fields(msg):
        numbers = ", ".join(map(str, xla_proto.unknown_field_numbers(msg))) or "inside nested messages"
        if not drop_unknown:
            raise ValueError(f"the request holds fields unknown to this version (numbers {numbers}) "
                             f"that text format cannot hold; write it as binary, or drop them "
                             f"(--drop-unknown, or drop_unknown=True)")
        bare = type(msg)()
        bare.CopyFrom(msg)
        bare.DiscardUnknownFields()
        msg = bare
        notes = (f"fields unknown to this version dropped (numbers {numbers}): text format cannot "
                 f"hold them",)
    data = xla_proto.to_text(msg).encode() if as_text else msg.SerializeToString()
    p = Path(path)
    if p.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    p.write_bytes(data)
    return notes
