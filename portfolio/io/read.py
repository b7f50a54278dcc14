"""Reading problem and solution files, with validation that names what is wrong.

Loading has two paths. The fast path (:mod:`portfolio.jsonscan`) turns the bytes of a well-formed
file straight into numpy arrays, never building Python lists, so even the 1.3 GB contest files load in
bounded memory. Whenever it meets anything unexpected it steps aside, and the careful path
(``json.loads`` plus a structural walk) finds the first problem and reports it with the file, the
JSON path and the index. Both paths end in the same vectorised checks of the arrays. The extended
format (see :func:`portfolio.io.write.write_extended`) is read here too, field by field.
"""

from __future__ import annotations

import gzip
import json
import zlib
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..problem import INT64_MAX, Capacity, Problem, offsets_from_counts
from .common import EXTENDED_FORMAT, PathLike, ProblemFormatError, SolutionFormatError


# ---------------------------------------------------------------------------------------- bytes
def read_bytes(path: PathLike) -> bytes:
    """The file's bytes, gunzipped when it is gzip (by magic number, not by name)."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ProblemFormatError(path, "", "no such file") from None
    except IsADirectoryError:
        raise ProblemFormatError(path, "", "is a directory, not a problem file") from None
    except OSError as exc:
        raise ProblemFormatError(path, "", f"cannot read: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (EOFError, OSError, zlib.error) as exc:
            raise ProblemFormatError(path, "", f"corrupt or truncated gzip data ({exc})") from None
    return data


# ---------------------------------------------------------------------------------------- careful path
def _is_int(x: Any) -> bool:
    return type(x) is int


def _describe(x: Any) -> str:
    text = json.dumps(x) if not isinstance(x, (list, dict)) else type(x).__name__
    return text if len(text) < 40 else text[:37] + "..."


def _check_int(path: PathLike, where: str, x: Any) -> None:
    if not _is_int(x):
        raise ProblemFormatError(path, where, f"expected a non-negative integer, got {_describe(x)}")
    if x < 0:
        raise ProblemFormatError(path, where, f"must not be negative, got {x}")
    if x > INT64_MAX:
        raise ProblemFormatError(path, where, f"{x} does not fit in a signed 64-bit integer")


def _rows(path: PathLike, where: str, value: Any) -> tuple[np.ndarray, np.ndarray]:
    """Flatten a list of integer lists into (counts, flat int64 values), checking every entry."""
    if not isinstance(value, list):
        raise ProblemFormatError(path, where, f"expected a list of lists, got {_describe(value)}")
    for i, row in enumerate(value):
        if not isinstance(row, list):
            raise ProblemFormatError(path, f"{where}[{i}]", f"expected a list, got {_describe(row)}")
    flat = list(chain.from_iterable(value))
    if not all(_is_int(x) and 0 <= x <= INT64_MAX for x in flat):
        for i, row in enumerate(value):
            for k, x in enumerate(row):
                _check_int(path, f"{where}[{i}][{k}]", x)
    counts = np.fromiter(map(len, value), dtype=np.int64, count=len(value))
    return counts, np.array(flat, dtype=np.int64).reshape(-1)


def _section(path: PathLike, parent: dict, key: str, where: str) -> Any:
    if key not in parent:
        raise ProblemFormatError(path, where, f"missing required field '{key}'")
    return parent[key]


def _sections(path: PathLike, doc: dict) -> tuple[dict, dict, dict]:
    """The ``problem``, ``problem.nodes`` and ``problem.edges`` objects (both formats have them)."""
    problem = _section(path, doc, "problem", "(top level)")
    if not isinstance(problem, dict):
        raise ProblemFormatError(path, "problem", f"expected an object, got {_describe(problem)}")
    nodes = _section(path, problem, "nodes", "problem")
    edges = _section(path, problem, "edges", "problem")
    for key, obj in (("problem.nodes", nodes), ("problem.edges", edges)):
        if not isinstance(obj, dict):
            raise ProblemFormatError(path, key, f"expected an object, got {_describe(obj)}")
    return problem, nodes, edges


def _edge_rows(path: PathLike, edges: dict) -> dict[str, np.ndarray]:
    """``problem.edges`` as flat arrays (node lists and cost tables, entries checked)."""
    out: dict[str, np.ndarray] = {}
    out["edge_node_counts"], out["edge_nodes"] = _rows(
        path, "problem.edges.nodes", _section(path, edges, "nodes", "problem.edges"))
    out["edge_cost_counts"], out["edge_costs"] = _rows(
        path, "problem.edges.costs", _section(path, edges, "costs", "problem.edges"))
    return out


def _name(path: PathLike, problem: dict) -> str | None:
    """The optional ``problem.name`` (a string when present)."""
    name = problem.get("name")
    if name is not None and not isinstance(name, str):
        raise ProblemFormatError(path, "problem.name", f"expected a string, got {_describe(name)}")
    return name


def _flatten_parsed(path: PathLike, doc: Any) -> dict:
    """Walk a parsed document into the same flat arrays the fast scanner returns."""
    if not isinstance(doc, dict):
        raise ProblemFormatError(path, "(top level)", f"expected a JSON object, got {_describe(doc)}")
    problem, nodes, edges = _sections(path, doc)
    out: dict[str, Any] = {}
    for key, count_key in (("intervals", "interval_counts"), ("costs", "cost_counts"),
                           ("usages", "usage_counts")):
        value = _section(path, nodes, key, "problem.nodes")
        out[count_key], out[key] = _rows(path, f"problem.nodes.{key}", value)
    out.update(_edge_rows(path, edges))
    limit = problem.get("usage_limit")
    if limit is not None:
        _check_int(path, "problem.usage_limit", limit)
    out["usage_limit"] = limit
    out["name"] = _name(path, problem)
    return out


TOO_DEEP = "not a problem file: JSON nested too deeply (a problem file nests only a few levels)"
"""Python's json module recurses per nesting level; a hostile file must not end in a traceback."""


def _parse_careful(path: PathLike, data: bytes) -> dict:
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ProblemFormatError(
            path, "", f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except UnicodeDecodeError as exc:
        raise ProblemFormatError(path, "", f"not valid UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise ProblemFormatError(path, "", TOO_DEEP) from None
    if _is_extended(doc):  # "format" not near the start: found only now
        raise _ExtendedFound(doc)
    return _flatten_parsed(path, doc)


class _ExtendedFound(Exception):
    """The careful path met an extended document (its ``format`` field was not near the start)."""

    def __init__(self, doc: dict) -> None:
        super().__init__("extended document")
        self.doc = doc


# ---------------------------------------------------------------------------------------- shared checks
def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_arrays(path: PathLike, raw: dict, tables: bool = True) -> None:
    """Vectorised consistency checks; raise on the first inconsistency, naming its index.
    ``tables=False`` leaves the edge tables' sizes to the caller (arrays without per-edge counts)."""
    n_int, n_cost, n_use = (len(raw[k]) for k in ("interval_counts", "cost_counts", "usage_counts"))
    if not n_int == n_cost == n_use:
        raise ProblemFormatError(
            path, "problem.nodes",
            f"intervals, costs and usages must have one entry per node, got {n_int}, {n_cost}, {n_use}",
        )
    bad = raw["interval_counts"] != 2
    if bad.any():
        i = _first(bad)
        raise ProblemFormatError(path, f"problem.nodes.intervals[{i}]",
                                 f"expected [start, end], got {raw['interval_counts'][i]} numbers")
    iv = raw["intervals"].reshape(-1, 2)
    bad = iv[:, 0] > iv[:, 1]
    if bad.any():
        i = _first(bad)
        raise ProblemFormatError(path, f"problem.nodes.intervals[{i}]",
                                 f"start {iv[i, 0]} is after end {iv[i, 1]}")
    bad = raw["cost_counts"] == 0
    if bad.any():
        raise ProblemFormatError(path, f"problem.nodes.costs[{_first(bad)}]", "node has zero strategies")
    bad = raw["cost_counts"] != raw["usage_counts"]
    if bad.any():
        i = _first(bad)
        raise ProblemFormatError(
            path, f"problem.nodes.usages[{i}]",
            f"has {raw['usage_counts'][i]} entries but costs[{i}] has {raw['cost_counts'][i]}",
        )
    n_en, n_ec = len(raw["edge_node_counts"]), len(raw["edge_cost_counts"])
    if n_en != n_ec:
        raise ProblemFormatError(path, "problem.edges",
                                 f"nodes has {n_en} entries but costs has {n_ec}; they must agree")
    bad = raw["edge_node_counts"] == 0
    if bad.any():
        raise ProblemFormatError(path, f"problem.edges.nodes[{_first(bad)}]", "edge names no node")
    en = raw["edge_nodes"]
    bad = en >= n_int
    if bad.any():
        slot = _first(bad)
        offsets = np.concatenate([[0], np.cumsum(raw["edge_node_counts"])])
        e = int(np.searchsorted(offsets, slot, side="right") - 1)
        raise ProblemFormatError(
            path, f"problem.edges.nodes[{e}][{slot - offsets[e]}]",
            f"node {en[slot]} is out of range (the problem has {n_int} nodes)",
        )
    if tables:
        _check_table_sizes(path, raw)


def _table_sizes(raw: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each edge's table size (the product of its nodes' strategy counts), and where that
    product overflows int64."""
    counts, arity = raw["cost_counts"], raw["edge_node_counts"]
    offsets = np.concatenate([[0], np.cumsum(arity)])[:-1].astype(np.int64)
    expected = np.ones(len(arity), dtype=np.int64)
    wide = np.zeros(len(arity), dtype=bool)
    for p in range(int(arity.max(initial=0))):
        mask = arity > p
        k = counts[raw["edge_nodes"][offsets[mask] + p]]
        wide[mask] |= expected[mask] > INT64_MAX // np.maximum(k, 1)
        expected[mask] *= k
    return expected, wide


def _check_table_sizes(path: PathLike, raw: dict) -> None:
    counts = raw["cost_counts"]
    arity = raw["edge_node_counts"]
    offsets = np.concatenate([[0], np.cumsum(arity)])[:-1]
    expected, wide = _table_sizes(raw)
    bad = wide | (expected != raw["edge_cost_counts"])
    if bad.any():
        e = _first(bad)
        nodes = raw["edge_nodes"][offsets[e]:offsets[e] + arity[e]].tolist()
        ks = [int(counts[v]) for v in nodes]
        product = int(np.prod(np.array(ks, dtype=object)))
        raise ProblemFormatError(
            path, f"problem.edges.costs[{e}]",
            f"has {raw['edge_cost_counts'][e]} entries but its nodes {nodes} have "
            f"{' x '.join(map(str, ks))} = {product} strategy combinations",
        )


def _build(path: PathLike, raw: dict) -> Problem:
    _check_arrays(path, raw)
    return Problem.from_contest_arrays(
        name=raw["name"] if raw["name"] is not None else _stem(path),
        intervals=raw["intervals"],
        strategy_counts=raw["cost_counts"],
        costs=raw["costs"],
        usages=raw["usages"],
        edge_node_counts=raw["edge_node_counts"],
        edge_nodes=raw["edge_nodes"],
        edge_costs=raw["edge_costs"],
        usage_limit=raw["usage_limit"],
    )


def _stem(path: PathLike) -> str:
    name = Path(path).name
    for suffix in (".gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def parse_problem(data: bytes, path: PathLike = "<bytes>", fast: bool = True) -> Problem:
    """Build a validated :class:`Problem` from a problem file's (uncompressed) bytes.

    Contest files and this tool's extended format (``portfolio presolve --write``) are both read; a
    document with a top-level ``"format"`` field is an extended one. ``fast=False`` skips the numba
    scanner (importing numba costs more than ``json`` on a small file; compiling it, much more).
    """
    if b'"format"' in data[:4096]:  # write_extended puts it first; a contest file never has it
        try:
            doc = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            doc = None  # the careful path below reports it
        if _is_extended(doc):
            return _extended_from_doc(path, doc)
        if doc is not None:
            return _build(path, _flatten_parsed(path, doc))
    raw = None
    scan_problem = None
    if fast:
        try:
            from ..jsonscan import ScanFallback, scan_problem
        except ImportError:  # the fast path is optional; the careful path always works
            scan_problem = None
    if scan_problem is not None:
        try:
            raw = scan_problem(data)
        except ScanFallback:
            raw = None
    if raw is None:
        try:
            raw = _parse_careful(path, data)
        except _ExtendedFound as found:
            return _extended_from_doc(path, found.doc)
    return _build(path, raw)


NODE_NAMES = b',"node_names":'
"""How a contest file carries its nodes' names (:func:`portfolio.io.write_problem`'s ``names``):
a last top-level key after ``problem``, one string per node. Contest tools read past it; this
tool's messages name nodes by it (a model's module paths: docs/frontends.md)."""


def split_node_names(data: bytes, path: PathLike = "<bytes>") -> tuple[bytes, tuple[str, ...] | None]:
    """The document without its ``node_names`` (a plain contest document, for either parser) and
    the names, or ``(data, None)`` when it has none. The names are read when they are the
    document's last key, as the writer puts them."""
    end = data.rstrip()
    at = data.rfind(NODE_NAMES)
    if at < 0 or not end.endswith(b"}"):
        return data, None
    try:
        names = json.loads(end[at + len(NODE_NAMES):-1])
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return data, None  # not the writer's trailing key: the parsers judge the document
    if not isinstance(names, list) or not all(isinstance(x, str) for x in names):
        bad = names if not isinstance(names, list) else next(x for x in names if not isinstance(x, str))
        raise ProblemFormatError(path, "node_names", f"expected a list of strings, got {_describe(bad)}")
    return data[:at] + b"}", tuple(names)


def check_node_names(path: PathLike, problem: Problem, names: tuple[str, ...] | None) -> None:
    """One name per node, or :class:`ProblemFormatError` naming the field."""
    if names is not None and len(names) != problem.num_nodes:
        raise ProblemFormatError(path, "node_names", f"has {len(names)} names for "
                                 f"{problem.num_nodes} nodes")


def load_problem(path: PathLike) -> Problem:
    """Load and validate a ``.json`` or ``.json.gz`` problem file."""
    return parse_problem(read_bytes(path), path)


# ---------------------------------------------------------------------------------------- in-memory input
def _plain(x: Any) -> Any:
    """numpy arrays and scalars as Python lists and numbers (tuples as lists), so that a document
    built in Python meets the same walk, and the same messages, as a parsed file."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, (np.ndarray, np.generic)):
        return x.tolist()
    return x


def parse_document(doc: Any, source: PathLike = "<dict>") -> Problem:
    """Build a validated :class:`Problem` from an already parsed document (contest or extended
    layout, numpy values allowed); errors name ``source``, the JSON path and the index."""
    doc = _plain(doc)
    if _is_extended(doc):
        return _extended_from_doc(source, doc)
    return _build(source, _flatten_parsed(source, doc))


def _int_array(source: PathLike, key: str, value: Any) -> np.ndarray:
    """One argument as a flat int64 array of non-negative entries, or an error naming the entry."""
    arr = np.asarray(value)
    if arr.size and arr.dtype.kind not in "iu":
        raise ProblemFormatError(source, key, f"expected integers, got an array of {arr.dtype}")
    arr = arr.reshape(-1)
    bad = np.flatnonzero((arr < 0) | (arr > INT64_MAX)) if arr.size else arr
    if len(bad):
        raise ProblemFormatError(source, f"{key}[{bad[0]}]", f"must be in 0..2**63-1, got {arr[bad[0]]}")
    return arr.astype(np.int64)


def problem_from_arrays(*, intervals: Any, strategy_counts: Any, costs: Any, usages: Any,
                        edge_node_counts: Any, edge_nodes: Any, edge_costs: Any,
                        usage_limit: int | None = None, name: str = "arrays",
                        source: PathLike = "<arrays>") -> Problem:
    """The checked twin of :meth:`Problem.from_contest_arrays` (which trusts its input): the same
    flat arrays, checked as a file is. An error names the argument and its flat index, or, for what
    only the layout can say, the contest field (``problem.nodes.intervals[3]``: start after end).
    """
    got = {key: _int_array(source, key, value) for key, value in (
        ("intervals", intervals), ("strategy_counts", strategy_counts), ("costs", costs),
        ("usages", usages), ("edge_node_counts", edge_node_counts), ("edge_nodes", edge_nodes),
        ("edge_costs", edge_costs))}
    counts, n = got["strategy_counts"], len(got["strategy_counts"])
    for key, want in (("intervals", 2 * n), ("costs", int(counts.sum())), ("usages", int(counts.sum())),
                      ("edge_nodes", int(got["edge_node_counts"].sum()))):
        if len(got[key]) != want:
            raise ProblemFormatError(source, key, f"has {len(got[key])} entries, expected {want} "
                                     f"(from strategy_counts and edge_node_counts)")
    if usage_limit is not None and not isinstance(usage_limit, (int, np.integer)):
        raise ProblemFormatError(source, "usage_limit", f"expected an integer or None, got {usage_limit!r}")
    if usage_limit is not None and not 0 <= usage_limit <= INT64_MAX:
        raise ProblemFormatError(source, "usage_limit", f"must be in 0..2**63-1, got {usage_limit}")
    raw = {"interval_counts": np.full(n, 2, dtype=np.int64), "intervals": got["intervals"],
           "cost_counts": counts, "costs": got["costs"], "usage_counts": counts,
           "usages": got["usages"], "edge_node_counts": got["edge_node_counts"],
           "edge_nodes": got["edge_nodes"], "edge_costs": got["edge_costs"],
           "usage_limit": None if usage_limit is None else int(usage_limit), "name": name,
           # per-edge table sizes are derived below, once the edges' nodes are known to be in range
           "edge_cost_counts": np.zeros(len(got["edge_node_counts"]), dtype=np.int64)}
    _check_arrays(source, raw, tables=False)
    sizes, wide = _table_sizes(raw)
    if wide.any():
        raise ProblemFormatError(source, f"problem.edges.costs[{_first(wide)}]",
                                 "its table would have more than 2**63-1 entries")
    if int(sizes.sum()) != len(raw["edge_costs"]):
        raise ProblemFormatError(source, "edge_costs", f"has {len(raw['edge_costs'])} entries but "
                                 f"the edges' tables need {int(sizes.sum())}")
    return _build(source, {**raw, "edge_cost_counts": sizes})


# ---------------------------------------------------------------------------------------- solutions
def parse_solution_text(text: str, source: str = "<text>") -> list[int]:
    """Read a solution from a JSON list, this tool's result JSON, or contest-style output."""
    stripped = text.strip()
    if not stripped:
        raise SolutionFormatError(f"{source}: empty, expected a list of strategies")
    try:
        doc = json.loads(stripped)
    except RecursionError:
        raise SolutionFormatError(f"{source}: not a solution: JSON nested too deeply") from None
    except json.JSONDecodeError:
        doc = None
        lines = [line.strip() for line in stripped.splitlines() if line.strip()]
        last = lines[-1]
        if last.startswith("[") and last.endswith("]"):
            try:
                doc = json.loads(last)
            except (json.JSONDecodeError, RecursionError):
                pass
        if doc is None:
            raise SolutionFormatError(
                f"{source}: not a solution: expected a JSON list, a result file with a 'solution' "
                f"field, or output whose last non-empty line is '[s0, s1, ...]'"
            ) from None
    if isinstance(doc, dict):
        if "solution" not in doc:
            raise SolutionFormatError(f"{source}: JSON object has no 'solution' field")
        doc = doc["solution"]
        if doc is None:
            raise SolutionFormatError(f"{source}: the result file holds no solution (solution is null)")
    if not isinstance(doc, list):
        raise SolutionFormatError(f"{source}: expected a list of strategies, got {_describe(doc)}")
    for i, s in enumerate(doc):
        if not _is_int(s):
            raise SolutionFormatError(f"{source}: solution[{i}] = {_describe(s)} is not an integer")
    return doc


def read_solution(path: PathLike) -> list[int]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise SolutionFormatError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SolutionFormatError(f"{path}: cannot read ({exc})") from None
    return parse_solution_text(text, str(path))


# ---------------------------------------------------------------------------------------- extended format
def read_extended(path: PathLike) -> Problem:
    """Read and validate a file written by :func:`~portfolio.io.write.write_extended` (``load_problem`` reads it too)."""
    return parse_extended(read_bytes(path), path)


def parse_extended(data: bytes, path: PathLike = "<bytes>") -> Problem:
    """Build a validated :class:`Problem` from an extended-format document's bytes."""
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise ProblemFormatError(
            path, "", f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError as exc:
        raise ProblemFormatError(path, "", f"not valid UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise ProblemFormatError(path, "", TOO_DEEP) from None
    return _extended_from_doc(path, doc)


def _is_extended(doc: Any) -> bool:
    return isinstance(doc, dict) and "format" in doc


def _check_signed(path: PathLike, where: str, x: Any) -> None:
    if not _is_int(x):
        raise ProblemFormatError(path, where, f"expected an integer, got {_describe(x)}")
    if not -INT64_MAX - 1 <= x <= INT64_MAX:
        raise ProblemFormatError(path, where, f"{x} does not fit in a signed 64-bit integer")


def _extended_from_doc(path: PathLike, doc: Any) -> Problem:
    """Validate an extended document field by field (one error naming the field and index)."""
    if not isinstance(doc, dict):
        raise ProblemFormatError(path, "(top level)", f"expected a JSON object, got {_describe(doc)}")
    fmt = doc.get("format")
    if fmt != EXTENDED_FORMAT:
        raise ProblemFormatError(path, "format", f"{_describe(fmt)} is not a format this version "
                                                 f"reads (it reads \"{EXTENDED_FORMAT}\")")
    prob, nodes, edges = _sections(path, doc)
    cost_counts, node_costs = _rows(path, "problem.nodes.costs", _section(path, nodes, "costs", "problem.nodes"))
    n = len(cost_counts)
    intervals = _section(path, nodes, "intervals", "problem.nodes")
    usages = _section(path, nodes, "usages", "problem.nodes")
    for key, value in (("intervals", intervals), ("usages", usages)):
        if not isinstance(value, list) or len(value) != n:
            got = f"{len(value)} entries" if isinstance(value, list) else _describe(value)
            raise ProblemFormatError(path, f"problem.nodes.{key}",
                                     f"expected a list with one entry per node ({n}), got {got}")
    bad = np.flatnonzero(cost_counts == 0)
    if len(bad):
        raise ProblemFormatError(path, f"problem.nodes.costs[{bad[0]}]", "node has zero strategies")
    iv_node: list[int] = []
    iv_bounds: list[list[int]] = []
    for i, (ivs, uses) in enumerate(zip(intervals, usages)):
        where = f"problem.nodes.intervals[{i}]"
        if not isinstance(ivs, list):
            raise ProblemFormatError(path, where, f"expected a list of [start, end], got {_describe(ivs)}")
        if not isinstance(uses, list) or len(uses) != len(ivs):
            got = f"{len(uses)} entries" if isinstance(uses, list) else _describe(uses)
            raise ProblemFormatError(path, f"problem.nodes.usages[{i}]",
                                     f"expected one usage list per interval ({len(ivs)}), got {got}")
        for j, pair in enumerate(ivs):
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ProblemFormatError(path, f"{where}[{j}]", f"expected [start, end], got {_describe(pair)}")
            _check_signed(path, f"{where}[{j}][0]", pair[0])
            _check_signed(path, f"{where}[{j}][1]", pair[1])
            if pair[0] > pair[1]:
                raise ProblemFormatError(path, f"{where}[{j}]", f"start {pair[0]} is after end {pair[1]}")
            iv_node.append(i)
            iv_bounds.append(pair)
    use_counts_parts, use_value_parts = [], []
    for i, node_uses in enumerate(usages):
        counts_i, values_i = _rows(path, f"problem.nodes.usages[{i}]", node_uses)
        bad = np.flatnonzero(counts_i != cost_counts[i])
        if len(bad):
            raise ProblemFormatError(path, f"problem.nodes.usages[{i}][{bad[0]}]",
                                     f"has {counts_i[bad[0]]} entries but costs[{i}] has {cost_counts[i]}")
        use_counts_parts.append(counts_i)
        use_value_parts.append(values_i)
    use_counts = np.concatenate(use_counts_parts) if use_counts_parts else np.zeros(0, dtype=np.int64)
    use_values = np.concatenate(use_value_parts) if use_value_parts else np.zeros(0, dtype=np.int64)
    raw = {"interval_counts": np.full(n, 2, dtype=np.int64), "cost_counts": cost_counts,
           "usage_counts": cost_counts, "intervals": np.zeros(2 * n, dtype=np.int64),
           **_edge_rows(path, edges)}
    _check_arrays(path, raw)  # edge shapes, node ranges and table sizes, as in the contest format
    capacity = prob.get("capacity", {"times": [], "values": []})
    if not isinstance(capacity, dict):
        raise ProblemFormatError(path, "problem.capacity", f"expected an object, got {_describe(capacity)}")
    cap: dict[str, list] = {}
    for key in ("times", "values"):
        value = _section(path, capacity, key, "problem.capacity")
        if not isinstance(value, list):
            raise ProblemFormatError(path, f"problem.capacity.{key}", f"expected a list, got {_describe(value)}")
        for k, x in enumerate(value):
            (_check_signed if key == "times" else _check_int)(path, f"problem.capacity.{key}[{k}]", x)
        cap[key] = value
    if len(cap["times"]) != len(cap["values"]):
        raise ProblemFormatError(path, "problem.capacity", f"times has {len(cap['times'])} entries but "
                                                          f"values has {len(cap['values'])}")
    for k in range(1, len(cap["times"])):
        if cap["times"][k] <= cap["times"][k - 1]:
            raise ProblemFormatError(path, f"problem.capacity.times[{k}]",
                                     "times must be strictly increasing")
    offset = prob.get("cost_offset", 0)
    _check_signed(path, "problem.cost_offset", offset)  # negative from a request's shifted edges
    name = _name(path, prob)
    bounds = np.array(iv_bounds, dtype=np.int64).reshape(-1, 2)
    return Problem(
        name=name if name is not None else _stem(path),
        strategy_offsets=offsets_from_counts(cost_counts),
        node_costs=node_costs,
        interval_node=np.array(iv_node, dtype=np.int64),
        interval_start=bounds[:, 0],
        interval_end=bounds[:, 1],
        interval_usage_offsets=offsets_from_counts(use_counts),
        interval_usages=use_values,
        edge_node_offsets=offsets_from_counts(raw["edge_node_counts"]),
        edge_nodes=raw["edge_nodes"],
        edge_cost_offsets=offsets_from_counts(raw["edge_cost_counts"]),
        edge_costs=raw["edge_costs"],
        capacity=Capacity(np.array(cap["times"], dtype=np.int64), np.array(cap["values"], dtype=np.int64)),
        cost_offset=int(offset),
    )
