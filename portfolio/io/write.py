"""Writing problem and solution files: the contest format (streamed), the extended format, solutions."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..problem import Problem
from .common import EXTENDED_FORMAT, PathLike


# ---------------------------------------------------------------------------------------- contest format
def problem_to_dict(problem: Problem) -> dict:
    """The contest JSON document of a contest-shaped problem."""
    if not problem.is_contest_shaped:
        raise ValueError("only contest-shaped problems (one interval per node, one limit) can be written")

    def rows(flat: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
        # One tolist() and list slices: far cheaper than a numpy view and tolist() per row.
        values, bounds = flat.tolist(), offsets.tolist()
        return [values[a:b] for a, b in zip(bounds[:-1], bounds[1:])]

    doc: dict[str, Any] = {
        "name": problem.name,
        "nodes": {
            "intervals": np.stack([problem.interval_start, problem.interval_end], axis=1).tolist(),
            "costs": rows(problem.node_costs, problem.strategy_offsets),
            "usages": rows(problem.interval_usages, problem.interval_usage_offsets),
        },
        "edges": {
            "nodes": rows(problem.edge_nodes, problem.edge_node_offsets),
            "costs": rows(problem.edge_costs, problem.edge_cost_offsets),
        },
    }
    if problem.usage_limit is not None:
        doc["usage_limit"] = problem.usage_limit
    return {"problem": doc}


def write_problem(problem: Problem, path: PathLike, names: Sequence[str] | None = None) -> None:
    """Stream a contest-shaped problem as compact JSON (gzip when the name ends in ``.gz``);
    ``names`` (one per node) as the document's last key, ``node_names``, which contest tools read
    past and this tool's messages name nodes by (:func:`portfolio.io.read.split_node_names`).

    Why streaming: the biggest contest files hold ~10**8 numbers (1.3 GB); lists plus ``json.dumps``
    would need ~10 GB and minutes. Each CSR array is instead formatted 64k numbers at a time with
    numpy (small blocks stay in cache and reuse memory; ~100 ns a number): every number gets a fixed
    24-byte slot (``[``, ``-``, 20 digits, ``]``, ``,``) whose digits are filled two at a time from a
    00..99 table, and one gather copies the used bytes of each slot. Memory stays flat at a few MB.
    """
    if not problem.is_contest_shaped:
        raise ValueError("only contest-shaped problems (one interval per node, one limit) can be written")
    from typing import IO

    block = 1 << 16
    pairs16 = np.frombuffer(b"".join(b"%02d" % i for i in range(100)), dtype=np.uint16)
    powers = np.array([10**d for d in range(1, 20)], dtype=np.uint64)  # 10 .. 10**19
    e8 = np.uint64(10**8)

    def fill_pairs(slots16: np.ndarray, rows: np.ndarray | None, value: np.ndarray, col: int,
                   passes: int) -> None:
        """Write ``value``'s last ``2 * passes`` digits into 16-bit slot columns ``col``, ``col - 1``..."""
        hundred = value.dtype.type(100)
        for _ in range(passes):
            quotient = value // hundred  # '//' then '-' beats np.divmod severalfold
            pair = pairs16[value - quotient * hundred]
            if rows is None:
                slots16[:, col] = pair
            else:
                slots16[rows, col] = pair
            value, col = quotient, col - 1

    def format_block(values: np.ndarray, first: np.ndarray, last: np.ndarray) -> bytes:
        """The text of ``values``; ``first``/``last`` (indices) open and close rows. No trailing comma."""
        n = len(values)
        negative = values < 0
        mag = values.astype(np.uint64)
        if negative.any():  # exact even for the int64 minimum
            mag[negative] = (~values[negative]).astype(np.uint64) + np.uint64(1)
        ndigits = (np.searchsorted(powers, mag, side="right") + 1).astype(np.int32)
        slots = np.empty((n, 24), dtype=np.uint8)
        slots16 = slots.view(np.uint16)  # column c holds digits 2c-2, 2c-1 of the 20-digit field
        most = int(ndigits.max())
        # Eight digits at a time in uint32 (fast division); higher parts only where they exist.
        fill_pairs(slots16, None, (mag % e8).astype(np.uint32), 10, min(4, (most + 1) // 2))
        if most > 8:
            big = np.flatnonzero(ndigits > 8)
            fill_pairs(slots16, big, ((mag[big] // e8) % e8).astype(np.uint32), 6, 4)
        if most > 16:
            huge = np.flatnonzero(ndigits > 16)
            fill_pairs(slots16, huge, (mag[huge] // (e8 * e8)).astype(np.uint32), 2, 2)
        is_first = np.zeros(n, dtype=bool)
        is_first[first] = True
        is_last = np.zeros(n, dtype=bool)
        is_last[last] = True
        comma = np.ones(n, dtype=bool)
        comma[-1] = False
        flat = slots.reshape(-1)
        base = np.arange(0, 24 * n, 24, dtype=np.int32)
        begin = 22 - ndigits - negative - is_first  # first used byte: '[', '-' sit left of the digits
        flat[base[is_first] + begin[is_first]] = ord("[")
        flat[base[negative] + (21 - ndigits)[negative]] = ord("-")
        flat[base + 22] = np.where(is_last, ord("]"), ord(","))
        flat[base[is_last] + 23] = ord(",")
        length = 22 - begin + is_last + comma
        ends = np.cumsum(length)
        start = base + begin
        # Byte positions to gather: runs of consecutive columns, as a cumsum of steps (np.repeat is
        # slow for many tiny runs).
        step = np.ones(int(ends[-1]), dtype=np.int32)
        step[0] = start[0]
        step[ends[:-1]] = start[1:] - start[:-1] - length[:-1] + 1
        return flat[np.cumsum(step)].tobytes()

    def write_list(out: IO[bytes], key: str, flat: np.ndarray, offsets: np.ndarray) -> None:
        """``"key":[[..],[..]]`` for a CSR array, in blocks of values (a long row may span blocks)."""
        out.write(f'"{key}":['.encode())
        counts = np.diff(offsets)
        if np.any(counts == 0):  # empty rows never occur in valid files: plain Python suffices
            rows = (flat[a:b].tolist() for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()))
            out.write(",".join("[" + ",".join(map(str, row)) + "]" for row in rows).encode())
        else:
            starts, ends = offsets[:-1], offsets[1:] - 1
            for lo in range(0, int(offsets[-1]), block):
                hi = min(lo + block, int(offsets[-1]))
                first = starts[np.searchsorted(starts, lo):np.searchsorted(starts, hi)] - lo
                last = ends[np.searchsorted(ends, lo):np.searchsorted(ends, hi)] - lo
                if lo:
                    out.write(b",")
                out.write(format_block(flat[lo:hi], first, last))
        out.write(b"]")

    n = problem.num_nodes
    intervals = np.stack([problem.interval_start, problem.interval_end], axis=1).ravel()
    p = Path(path)
    out: IO[bytes]
    with (gzip.open(p, "wb", compresslevel=6) if p.name.endswith(".gz") else open(p, "wb")) as out:
        out.write(b'{"problem":{"name":' + json.dumps(problem.name).encode() + b',"nodes":{')
        write_list(out, "intervals", intervals, np.arange(0, 2 * n + 1, 2))
        out.write(b",")
        write_list(out, "costs", problem.node_costs, problem.strategy_offsets)
        out.write(b",")
        write_list(out, "usages", problem.interval_usages, problem.interval_usage_offsets)
        out.write(b'},"edges":{')
        write_list(out, "nodes", problem.edge_nodes, problem.edge_node_offsets)
        out.write(b",")
        write_list(out, "costs", problem.edge_costs, problem.edge_cost_offsets)
        out.write(b"}")
        if problem.usage_limit is not None:
            out.write(b',"usage_limit":' + str(int(problem.usage_limit)).encode())
        out.write(b"}")
        if names is not None:
            if len(names) != n:
                raise ValueError(f"names: {len(names)} names for {n} nodes")
            out.write(b',"node_names":' + json.dumps([str(x) for x in names]).encode())
        out.write(b"}")


# ---------------------------------------------------------------------------------------- solutions
def format_contest(solution: Sequence[int] | np.ndarray | None) -> str:
    """The contest's output line: ``[s0, s1, ...]``, or ``[]`` when there is no solution."""
    if solution is None:
        return "[]"
    return "[" + ", ".join(str(int(s)) for s in solution) + "]"


def write_solution(path: PathLike, solution: Sequence[int] | np.ndarray | None,
                   fmt: str = "contest", extra: dict | None = None) -> None:
    """Write a solution as a contest line (``fmt='contest'``) or as a result JSON (``fmt='json'``)."""
    p = Path(path)
    if fmt == "contest":
        p.write_text(format_contest(solution) + "\n")
    elif fmt == "json":
        doc = dict(extra or {})
        doc["solution"] = None if solution is None else [int(s) for s in solution]
        p.write_text(json.dumps(doc, indent=2) + "\n")
    else:
        raise ValueError(f"unknown solution format {fmt!r}; use 'contest' or 'json'")


# ---------------------------------------------------------------------------------------- extended format
def problem_to_extended(problem: Problem) -> dict:
    """The extended JSON document (see :func:`write_extended`)."""
    so, io_ = problem.strategy_offsets.tolist(), problem.interval_usage_offsets.tolist()
    costs = problem.node_costs.tolist()
    usages = problem.interval_usages.tolist()
    per_node_iv: list[list[list[int]]] = [[] for _ in range(problem.num_nodes)]
    per_node_use: list[list[list[int]]] = [[] for _ in range(problem.num_nodes)]
    for j, (i, s, e) in enumerate(zip(problem.interval_node.tolist(), problem.interval_start.tolist(),
                                      problem.interval_end.tolist())):
        per_node_iv[i].append([s, e])
        per_node_use[i].append(usages[io_[j]:io_[j + 1]])
    eo, co = problem.edge_node_offsets.tolist(), problem.edge_cost_offsets.tolist()
    en, ec = problem.edge_nodes.tolist(), problem.edge_costs.tolist()
    return {
        "format": EXTENDED_FORMAT,
        "problem": {
            "name": problem.name,
            "nodes": {
                "intervals": per_node_iv,
                "costs": [costs[a:b] for a, b in zip(so[:-1], so[1:])],
                "usages": per_node_use,
            },
            "edges": {
                "nodes": [en[a:b] for a, b in zip(eo[:-1], eo[1:])],
                "costs": [ec[a:b] for a, b in zip(co[:-1], co[1:])],
            },
            "capacity": {"times": problem.capacity.times.tolist(),
                         "values": problem.capacity.values.tolist()},
            "cost_offset": int(problem.cost_offset),
        },
    }


def write_extended(problem: Problem, path: PathLike) -> None:
    """Write ``problem`` in the extended JSON format (gzip when the name ends in ``.gz``).

    The contest format cannot hold several intervals per node, a capacity over time or a constant
    cost, so this extension does::

        {"format": "iopddl-portfolio-extended/1",
         "problem": {"name": ...,
                     "nodes": {"intervals": [[[start, end], ...] per node],
                               "costs": [[cost per strategy] per node],
                               "usages": [[[usage per strategy] per interval of the node] per node]},
                     "edges": {"nodes": [[u, v], ...], "costs": [[flat table], ...]},
                     "capacity": {"times": [t0, ...], "values": [c0, ...]},
                     "cost_offset": N}}

    Capacity ``values[k]`` holds from ``times[k]`` until ``times[k+1]``; before ``times[0]`` (or with
    empty lists) usage is unlimited. Everything else reads as in the contest format.
    """
    text = json.dumps(problem_to_extended(problem), separators=(",", ":"))
    p = Path(path)
    if p.name.endswith(".gz"):
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
