"""Fast, memory-lean scanner for IOPDDL problem files.

``json.loads`` of a 1.3 GB contest file builds hundreds of millions of
Python ints (~8 GB).  This module walks the raw bytes once with a
numba-compiled parser to validate the structure and count the numbers,
then walks only the five number regions again to fill exactly-sized int64
arrays.  Peak memory is therefore the input bytes plus the output arrays.

The scanner accepts only the well-formed, expected shape with non-negative
int64 integers.  Anything else (floats, negatives, overflow, unknown or
duplicate keys, bad JSON, ...) raises :class:`ScanFallback`; the loader then
uses the slow ``json.loads`` path, whose validator produces precise errors.
The scanner never guesses: if it returns, the data equals what
``json.loads`` would give.
"""

from __future__ import annotations

import json
from typing import NoReturn

import numba
import numpy as np

__all__ = ["ScanFallback", "scan_problem"]


class ScanFallback(Exception):
    """Input is not a plain well-formed problem file; use the slow path."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# Key ids; the parser matches key bytes against this table.
_KEYS = (b"problem", b"name", b"nodes", b"edges", b"usage_limit",
         b"intervals", b"costs", b"usages")
_K_PROBLEM, _K_NAME, _K_NODES, _K_EDGES, _K_LIMIT, _K_INTERVALS, _K_COSTS, _K_USAGES = range(8)
_KEY_TABLE = np.zeros((len(_KEYS), max(map(len, _KEYS))), np.uint8)
for _k, _key in enumerate(_KEYS):
    _KEY_TABLE[_k, : len(_key)] = np.frombuffer(_key, np.uint8)
_KEY_LENS = np.array([len(k) for k in _KEYS], np.int64)

# Sections (list-of-int-lists regions), in output order.
_SECTIONS = ("interval", "cost", "usage", "edge_node", "edge_cost")
_S_INTERVALS, _S_COSTS, _S_USAGES, _S_EDGE_NODES, _S_EDGE_COSTS = range(5)

# The section each key opens inside "nodes" (row 0) and inside "edges" (row 1); -1: not allowed there.
_GROUPS = ({_K_INTERVALS: _S_INTERVALS, _K_COSTS: _S_COSTS, _K_USAGES: _S_USAGES},
           {_K_NODES: _S_EDGE_NODES, _K_COSTS: _S_EDGE_COSTS})
_SECTION_OF = np.full((len(_GROUPS), len(_KEYS)), -1, np.int64)
for _g, _group_keys in enumerate(_GROUPS):
    for _k, _s in _group_keys.items():
        _SECTION_OF[_g, _k] = _s
_GROUP_NEEDS = np.array([sum(1 << s for s in g.values()) for g in _GROUPS], np.int64)
"""Per group, the bit set of the sections it must hold (all of its keys are required)."""

# info[] layout shared by the compiled parser and the wrapper.
_I_ERR, _I_POS, _I_NAME0, _I_NAME1, _I_HASLIM, _I_LIMIT = range(6)
_I_SEC = 6  # per section s: start offset, n_lists, n_values at 6 + 3*s
_INFO_LEN = _I_SEC + 3 * 5

_ERRORS = {
    1: "truncated or malformed JSON",
    2: "number is not a non-negative JSON integer <= int64 max",
    3: "unexpected, duplicate or escaped key",
    4: "missing required key",
    5: "value of unexpected type",
    6: "trailing data after top-level object",
    7: "inconsistent second pass",
}

_INT64_MAX = np.int64(9223372036854775807)

_jit = numba.njit(cache=True, nogil=True)


@_jit
def _ws(buf, i):
    """Skip JSON whitespace."""
    n = buf.shape[0]
    while i < n:
        c = buf[i]
        if c == 32 or c == 10 or c == 13 or c == 9:
            i += 1
        else:
            break
    return i


@_jit
def _fail(info, code, pos):
    """Record the first error and return the error sentinel -1."""
    if info[_I_ERR] == 0:
        info[_I_ERR] = code
        info[_I_POS] = pos
    return -1


@_jit
def _string_end(buf, i, info):
    """buf[i] is '"'; return index after the closing quote, or -1."""
    n = buf.shape[0]
    j = i + 1
    while j < n:
        c = buf[j]
        if c == 34:
            return j + 1
        if c == 92:
            j += 2
            continue
        if c < 32:  # raw control characters are invalid JSON
            return _fail(info, 1, j)
        j += 1
    return _fail(info, 1, i)


@_jit
def _digits(buf, i, n):
    """The decimal digits from ``i`` as uint64 (wraps past 20 digits: callers reject more than 19);
    returns (end, value)."""
    v = np.uint64(0)
    j = i
    while j < n:
        d = np.uint8(buf[j] - 48)
        if d > 9:
            break
        v = v * np.uint64(10) + np.uint64(d)
        j += 1
    return j, v


@_jit
def _number(buf, i, info):
    """Parse one non-negative int64 JSON integer at i; return (end, value).

    Used for usage_limit only; the list sections use the same rules inline.
    """
    j, v = _digits(buf, i, buf.shape[0])
    if j == i or j - i > 19 or (buf[i] == 48 and j - i > 1) or v > np.uint64(_INT64_MAX):
        return _fail(info, 2, i), np.int64(0)
    return j, np.int64(v)


@_jit
def _count_lists(buf, i, info):
    """Pass 1: validate ``[[int,...],...]`` at i (buf[i] == '[').

    One flat loop (no per-token calls: this is the hot path) tracking the
    depth and the previous token class.  Integers are only checked for
    syntax, leading zeros and length <= 19 here; _fill checks the int64
    bound.  Returns (end, n_lists, n_values).
    """
    n = buf.shape[0]
    nl = 0
    nv = 0
    depth = 1
    prev = 0  # 0: '[' just opened, 1: value or inner list just closed, 2: ','
    i += 1
    while i < n:
        c = buf[i]
        if np.uint8(c - 48) <= 9:
            if depth != 2 or prev == 1:
                return _fail(info, 2, i), nl, nv
            j = i + 1
            while j < n and np.uint8(buf[j] - 48) <= 9:
                j += 1
            if (c == 48 and j - i > 1) or j - i > 19:
                return _fail(info, 2, i), nl, nv
            nv += 1
            prev = 1
            i = j
            continue
        if c == 44:
            if prev != 1:
                return _fail(info, 1, i), nl, nv
            prev = 2
        elif c == 93:
            if prev == 2:
                return _fail(info, 1, i), nl, nv
            if depth == 1:
                return i + 1, nl, nv
            nl += 1
            depth = 1
            prev = 1
        elif c == 91:
            if depth != 1 or prev == 1:
                return _fail(info, 5, i), nl, nv
            depth = 2
            prev = 0
        elif not (c == 32 or c == 10 or c == 13 or c == 9):
            return _fail(info, 2 if depth == 2 else 5, i), nl, nv
        i += 1
    return _fail(info, 1, i), nl, nv


@_jit
def _fill(buf, i, counts, vals, info):
    """Pass 2: re-parse one section already validated by _count_lists.

    Up to 19 digits fit in uint64 without wrapping, so one comparison with
    int64 max catches overflow (10**18 etc. stay exact; no float).  The
    structure is trusted (same bytes as pass 1) but every write is
    bounds-checked so a buffer mutated in between cannot corrupt memory.
    """
    n = buf.shape[0]
    nl = 0
    nv = 0
    k = 0
    depth = 0
    while i < n:
        c = buf[i]
        if np.uint8(c - 48) <= 9:
            j, v = _digits(buf, i, n)
            if j - i > 19 or v > np.uint64(_INT64_MAX) or nv >= vals.shape[0]:
                return _fail(info, 2, i)
            vals[nv] = np.int64(v)
            nv += 1
            k += 1
            i = j
            continue
        if c == 91:
            depth += 1
            k = 0
        elif c == 93:
            depth -= 1
            if depth == 0:
                break
            if nl >= counts.shape[0]:
                return _fail(info, 7, i)
            counts[nl] = k
            nl += 1
        i += 1
    if depth != 0 or nl != counts.shape[0] or nv != vals.shape[0]:
        return _fail(info, 7, i)
    return i + 1


@_jit
def _key(buf, i, table, lens, info):
    """Parse ``"key" :`` at i; return (index after ':' and ws, key id)."""
    n = buf.shape[0]
    if i >= n or buf[i] != 34:
        return _fail(info, 1, i), -1
    e = _string_end(buf, i, info)
    if e < 0:
        return -1, -1
    length = e - i - 2
    kid = -1
    for k in range(lens.shape[0]):
        if lens[k] == length:
            same = True
            for t in range(length):
                if buf[i + 1 + t] != table[k, t]:
                    same = False
                    break
            if same:
                kid = k
                break
    if kid < 0:
        return _fail(info, 3, i), -1
    e = _ws(buf, e)
    if e >= n or buf[e] != 58:
        return _fail(info, 1, e), -1
    return _ws(buf, e + 1), kid


@_jit
def _after_value(buf, i, info):
    """After an object member: return (next key index, done) or (-1, _)."""
    n = buf.shape[0]
    i = _ws(buf, i)
    if i >= n:
        return _fail(info, 1, i), True
    if buf[i] == 44:
        return _ws(buf, i + 1), False
    if buf[i] == 125:
        return i + 1, True
    return _fail(info, 1, i), True


@_jit
def _section(buf, i, s, seen, info):
    """Count-parse one list-of-lists section and record where it starts."""
    if seen & (1 << s):
        return _fail(info, 3, i)
    if i >= buf.shape[0] or buf[i] != 91:
        return _fail(info, 5, i)
    e, nl, nv = _count_lists(buf, i, info)
    if e < 0:
        return -1
    info[_I_SEC + 3 * s] = i
    info[_I_SEC + 3 * s + 1] = nl
    info[_I_SEC + 3 * s + 2] = nv
    return e


@_jit
def _group(buf, i, is_edges, table, lens, info):
    """Parse the "nodes" or "edges" object at i (buf[i] == '{')."""
    n = buf.shape[0]
    if i >= n or buf[i] != 123:
        return _fail(info, 5, i)
    i = _ws(buf, i + 1)
    seen = 0
    if i < n and buf[i] == 125:
        return _fail(info, 4, i)
    while True:
        i, kid = _key(buf, i, table, lens, info)
        if i < 0:
            return -1
        s = _SECTION_OF[1 if is_edges else 0, kid]
        if s < 0:
            return _fail(info, 3, i)
        i = _section(buf, i, s, seen, info)
        if i < 0:
            return -1
        seen |= 1 << s
        i, done = _after_value(buf, i, info)
        if i < 0:
            return -1
        if done:
            break
    if seen != _GROUP_NEEDS[1 if is_edges else 0]:
        return _fail(info, 4, i)
    return i


@_jit
def _problem(buf, i, table, lens, info):
    """Parse the "problem" object at i (buf[i] == '{')."""
    n = buf.shape[0]
    if i >= n or buf[i] != 123:
        return _fail(info, 5, i)
    i = _ws(buf, i + 1)
    if i < n and buf[i] == 125:
        return _fail(info, 4, i)
    seen = 0
    while True:
        i, kid = _key(buf, i, table, lens, info)
        if i < 0:
            return -1
        if (seen >> kid) & 1 or kid == _K_PROBLEM or kid >= _K_INTERVALS:
            return _fail(info, 3, i)
        seen |= 1 << kid
        if kid == _K_NAME:
            if i >= n or buf[i] != 34:
                return _fail(info, 5, i)
            e = _string_end(buf, i, info)
            if e < 0:
                return -1
            info[_I_NAME0] = i
            info[_I_NAME1] = e
            i = e
        elif kid == _K_LIMIT:
            i, v = _number(buf, i, info)
            if i < 0:
                return -1
            info[_I_HASLIM] = 1
            info[_I_LIMIT] = v
        else:
            i = _group(buf, i, kid == _K_EDGES, table, lens, info)
            if i < 0:
                return -1
        i, done = _after_value(buf, i, info)
        if i < 0:
            return -1
        if done:
            break
    if not ((seen >> _K_NODES) & 1 and (seen >> _K_EDGES) & 1):
        return _fail(info, 4, i)
    return i


@_jit
def _scan(buf, table, lens, info):
    """Pass 1: validate the whole document, count, locate sections."""
    n = buf.shape[0]
    i = _ws(buf, 0)
    if i >= n or buf[i] != 123:
        return _fail(info, 5 if i < n else 1, i)
    i = _ws(buf, i + 1)
    if i < n and buf[i] == 125:
        return _fail(info, 4, i)
    i, kid = _key(buf, i, table, lens, info)
    if i < 0:
        return -1
    if kid != _K_PROBLEM:
        return _fail(info, 3, i)
    i = _problem(buf, i, table, lens, info)
    if i < 0:
        return -1
    i = _ws(buf, i)
    if i >= n or buf[i] != 125:  # a second top-level key is unknown/duplicate
        return _fail(info, 3 if i < n and buf[i] == 44 else 1, i)
    i = _ws(buf, i + 1)
    if i != n:
        return _fail(info, 6, i)
    return i


def _as_u8(data: bytes | bytearray | memoryview | np.ndarray) -> np.ndarray:
    """Zero-copy read-only uint8 view (one numba specialisation only)."""
    if isinstance(data, np.ndarray):
        arr = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    else:
        arr = np.frombuffer(data, dtype=np.uint8)
    arr = arr.view()
    arr.flags.writeable = False
    return arr


def _raise(info: np.ndarray) -> NoReturn:
    code = int(info[_I_ERR])
    raise ScanFallback(f"{_ERRORS.get(code, 'error')} (byte {int(info[_I_POS])})")


def scan_problem(data: bytes | memoryview | np.ndarray) -> dict:
    """Scan a problem file's bytes into flat int64 arrays.

    Returns name, usage_limit and, for each of interval/cost/usage/
    edge_node/edge_cost, ``<x>_counts`` (length of each inner list) and the
    concatenated values (keys 'intervals', 'costs', 'usages', 'edge_nodes',
    'edge_costs').  Raises ScanFallback for anything unexpected.
    """
    buf = _as_u8(data)
    info = np.zeros(_INFO_LEN, np.int64)
    info[_I_NAME0] = info[_I_NAME1] = -1
    if _scan(buf, _KEY_TABLE, _KEY_LENS, info) < 0 or info[_I_ERR]:
        _raise(info)

    name = None
    if info[_I_NAME0] >= 0:
        raw = bytes(buf[info[_I_NAME0]: info[_I_NAME1]])
        try:  # exact JSON string semantics (escapes, control chars, UTF-8)
            name = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ScanFallback(f"bad name string: {exc}") from None

    out: dict = {
        "name": name,
        "usage_limit": int(info[_I_LIMIT]) if info[_I_HASLIM] else None,
    }
    plural = ("intervals", "costs", "usages", "edge_nodes", "edge_costs")
    for s, (prefix, key) in enumerate(zip(_SECTIONS, plural)):
        start, nl, nv = (int(x) for x in info[_I_SEC + 3 * s: _I_SEC + 3 * s + 3])
        counts = np.empty(nl, np.int64)
        vals = np.empty(nv, np.int64)
        if _fill(buf, start, counts, vals, info) < 0:
            _raise(info)
        out[f"{prefix}_counts"] = counts
        out[key] = vals
    return out
