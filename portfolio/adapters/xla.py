"""XLA's ``AutoShardingSolverRequest``: read and write it, binary (``.pb``, ``.binpb``) or text
(``.textproto``, ``.txtpb``, ``.pbtxt``), gzip when the name ends in ``.gz``.

The message goes to and from :class:`~.request.SolverRequest` here; what the fields mean, and the
conversion to a :class:`Problem`, live in :mod:`.request`.
"""

from __future__ import annotations

import gzip
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..io import PathLike, ProblemFormatError, read_bytes
from ..problem import Problem
from . import xla_proto
from .request import Conversion, Rows, SolverRequest, from_problem, to_problem

BINARY_SUFFIXES = (".pb", ".binpb")
TEXT_SUFFIXES = (".textproto", ".txtpb", ".pbtxt")


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


def parse_request(data: bytes, path: PathLike = "<bytes>", text: bool | None = None) -> tuple[Any, list[str]]:
    """The message in ``data`` (text when ``text``, or when None and the name says so), and notes."""
    from google.protobuf.message import DecodeError
    from google.protobuf.text_format import ParseError

    as_text = is_text_name(path) if text is None else text
    try:
        if as_text:
            return xla_proto.parse_text(data.decode("utf-8")), []
        msg = xla_proto.parse_binary(data)
    except (DecodeError, ParseError) as exc:
        kind = "text" if as_text else "binary"
        raise ProblemFormatError(path, "", f"not a {kind} AutoShardingSolverRequest ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ProblemFormatError(path, "", f"not valid UTF-8 text ({exc.reason})") from None
    unknown = xla_proto.unknown_field_numbers(msg)
    notes = [f"fields not read (numbers {', '.join(map(str, unknown))}): departure, makespan, "
             f"overbudget and solver settings have no place in this problem"] if unknown else []
    return msg, notes


def read_request(path: PathLike, cost_scale: float = 1.0, text: bool | None = None) -> Conversion:
    """Read an XLA request file and convert it (see :func:`.request.to_problem`)."""
    msg, notes = parse_request(read_bytes(path), path, text)
    conv = to_problem(message_to_request(msg), path, cost_scale)
    if notes:
        conv = Conversion(conv.problem, conv.node_of, conv.cost_scale, conv.cost_error_bound,
                          conv.cost_shift, conv.notes + tuple(notes))
    return conv


def write_request(problem: Problem, path: PathLike, cost_scale: float = 1.0,
                  text: bool | None = None) -> None:
    """Write ``problem`` as a request (text when ``text``, or when None and the name says so)."""
    msg = request_to_message(from_problem(problem, cost_scale))
    as_text = is_text_name(path) if text is None else text
    data = xla_proto.to_text(msg).encode() if as_text else msg.SerializeToString()
    p = Path(path)
    if p.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6)
    p.write_bytes(data)
