"""Plans on the wire: the smallest unsigned integer type that holds every strategy index, zlib
level 1. A 41k-node plan of small indices is 41 kB raw as uint8 and a few kB compressed; JSON
would be ~120 kB. Decoding checks the length, so a truncated message is refused, not padded."""

from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import numpy as np


class PlanDecodeError(ValueError):
    """A plan message that does not decode to ``n`` non-negative indices."""


def encode_plan(plan: Any) -> dict:
    """``{"n", "dtype", "data"}`` with ``data`` the compressed bytes of the plan."""
    arr = np.asarray(plan, dtype=np.int64)
    top = int(arr.max()) if arr.size else 0
    if arr.size and int(arr.min()) < 0:
        raise ValueError("a plan holds negative strategy indices")
    dtype = "u1" if top < 1 << 8 else "u2" if top < 1 << 16 else "u4"
    return {"n": int(arr.size), "dtype": dtype,
            "data": zlib.compress(arr.astype(dtype).tobytes(), 1)}


def decode_plan(message: dict) -> np.ndarray:
    """The int64 plan of an :func:`encode_plan` dict; :class:`PlanDecodeError` when malformed."""
    try:
        n, dtype, data = int(message["n"]), str(message["dtype"]), message["data"]
        if dtype not in ("u1", "u2", "u4"):
            raise PlanDecodeError(f"unknown plan type {dtype!r}")
        raw = zlib.decompress(bytes(data))
        arr = np.frombuffer(raw, dtype=dtype)
    except PlanDecodeError:
        raise
    except Exception as exc:  # KeyError, zlib.error, TypeError, ValueError
        raise PlanDecodeError(f"undecodable plan: {type(exc).__name__}: {exc}") from None
    if arr.size != n:
        raise PlanDecodeError(f"plan of {arr.size} entries where {n} were announced")
    return arr.astype(np.int64)


def to_text(message: dict) -> dict:
    """The JSON-line form (``data`` as base64 text) for the shard process's pipes."""
    return dict(message, data=base64.b64encode(message["data"]).decode("ascii"))


def from_text(message: dict) -> dict:
    """Inverse of :func:`to_text`."""
    try:
        return dict(message, data=base64.b64decode(message["data"]))
    except Exception as exc:
        raise PlanDecodeError(f"undecodable plan text: {exc}") from None


def pack(message: dict) -> dict:
    """A message as Dask carries it: its fields as one JSON text, the plan's bytes beside it.
    Dask's msgpack refuses integers past 64 bits, and a cost may exceed them (a plan with
    forbidden entries costs at least 10**18 per entry); JSON keeps every integer exact."""
    fields = {k: v for k, v in message.items() if k != "data"}
    return {"line": json.dumps(fields, separators=(",", ":")), "data": message.get("data")}


def unpack(item: object) -> dict:
    """Inverse of :func:`pack`; a malformed item gives ``{}``."""
    if not isinstance(item, dict) or not isinstance(item.get("line"), str):
        return {}
    try:
        message = json.loads(item["line"])
    except ValueError:
        return {}
    if not isinstance(message, dict):
        return {}
    message["data"] = item.get("data")
    return message
