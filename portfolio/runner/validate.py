"""Checking everything a worker sends before the parent uses any of it.

Workers send plain data only (tuples of str, float, int, numpy int arrays), never backend objects:
unpickling a backend's own classes in the parent would run plugin code there. Each field is checked
on its own; a malformed field is dropped and named, it never raises out of the run loop.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..backend import DEMANDS, Status

RETURNABLE = (Status.OPTIMAL, Status.FEASIBLE, Status.INFEASIBLE_PROVEN, Status.NO_SOLUTION,
              Status.UNSUPPORTED, Status.ERROR)
"""Statuses a backend may return; the others are the runner's own."""

MAX_BOUND_BITS = 256
"""A bound needing more bits than this is refused as malformed (no plan can cost that much)."""

MAX_NOTE = 300

MAX_TRACEBACK = 20_000
"""Characters of a backend's traceback kept (its end: the innermost frames and the exception)."""


class MessageError(ValueError):
    """A message (or a field of it) that cannot be used; the text says what was wrong."""


@dataclass
class Result:
    """A backend's final word after validation. ``problems`` lists the fields that were dropped."""

    status: Status
    solution: Optional[object]
    lower_bound: Optional[int]
    note: str
    problems: list[str]
    safety_net: bool = False   # deterministic mode: stopped on its safety clock, work not done


def note_text(value: object) -> str:
    """A short one-line text for the results table, whatever the backend passed."""
    text = value if isinstance(value, str) else ("" if value is None else repr(value))
    text = " ".join(text.split())
    return text if len(text) <= MAX_NOTE else text[: MAX_NOTE - 3] + "..."


def traceback_text(value: object) -> tuple[str, str]:
    """(last line, whole text) of a traceback a worker sent: the line for the results table, the
    text (its last ``MAX_TRACEBACK`` characters) for ``--json`` and ``--debug``."""
    text = value if isinstance(value, str) else ("" if value is None else repr(value))
    text = text.strip()
    lines = text.splitlines()
    last = note_text(lines[-1]) if lines else "?"
    if len(text) > MAX_TRACEBACK:
        text = "...\n" + text[-MAX_TRACEBACK:]
    return last, text


def bound_value(value: object) -> Optional[int]:
    """A lower bound as an exact int (floats rounded down: weaker, never stronger); None for None.

    Raises MessageError for booleans, NaN, infinities, strings, huge values and anything else.
    """
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        raise MessageError(f"lower_bound {value!r} is a boolean, not a number")
    if isinstance(value, numbers.Integral):
        out = int(value)
    elif isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise MessageError(f"lower_bound {x!r} is not finite")
        out = math.floor(x)
    else:
        raise MessageError(f"lower_bound {note_text(value)[:40]} of type {type(value).__name__} "
                           f"is not a number")
    if out.bit_length() > MAX_BOUND_BITS:
        raise MessageError(f"lower_bound of {out.bit_length()} bits is too large")
    return out


def seconds_value(value: object) -> float:
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(float(value)):
        return float(value)
    raise MessageError(f"time {note_text(value)[:40]} is not a finite number")


def status_value(value: object) -> Status:
    try:
        status = Status(value)
    except (ValueError, TypeError):
        raise MessageError(f"unknown status {note_text(value)[:40]}") from None
    if status not in RETURNABLE:
        raise MessageError(f"status {status.value!r} is reserved for the runner")
    return status


def result_fields(payload: object) -> Result:
    """Validate the ``done`` payload (a dict built by the worker from a SolveResult)."""
    if not isinstance(payload, dict):
        raise MessageError(f"result of type {type(payload).__name__}, expected a dict")
    status = status_value(payload.get("status"))
    problems = []
    try:
        bound = bound_value(payload.get("lower_bound"))
    except MessageError as exc:
        bound = None
        problems.append(str(exc))
    solution = payload.get("solution")
    if status in (Status.OPTIMAL, Status.FEASIBLE) and solution is None:
        raise MessageError(f"status {status.value} without a solution")
    return Result(status, solution, bound, note_text(payload.get("note", "")), problems,
                  payload.get("safety_net") is True)


def message(msg: object) -> tuple[str, tuple]:
    """(kind, fields) of a worker message with each field's type checked; MessageError otherwise."""
    if not isinstance(msg, tuple) or not msg or not isinstance(msg[0], str):
        raise MessageError(f"message of type {type(msg).__name__} is not a tagged tuple")
    kind, rest = msg[0], msg[1:]
    expected = {"incumbent": 3, "bound": 3, "demand": 2, "prepared": 2, "done": 1, "error": 1,
                "point": 5, "held": 4}
    if kind not in expected:
        raise MessageError(f"unknown message kind {note_text(kind)[:40]}")
    if len(rest) != expected[kind]:
        raise MessageError(f"{kind} message with {len(rest)} fields, expected {expected[kind]}")
    if kind == "incumbent":
        return kind, (seconds_value(rest[0]), rest[1], note_text(rest[2]))
    if kind == "bound":  # the value is checked by the receiver: a malformed one is dropped, named
        return kind, (seconds_value(rest[0]), rest[1], note_text(rest[2]))
    if kind in ("point", "held"):  # deterministic mode (see runner/points.py)
        if kind == "point":
            k = rest[0]
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
                raise MessageError(f"exchange point {note_text(repr(k))[:40]} is not a positive integer")
            rest = rest[1:]
        plan, note, bound, bound_note = rest
        fields = (None if plan is None else plan, note_text(note), bound, note_text(bound_note))
        return kind, ((int(k),) + fields if kind == "point" else fields)
    if kind == "demand":
        if rest[0] not in DEMANDS:
            raise MessageError(f"demand {note_text(repr(rest[0]))[:40]}: expected one of "
                               f"{', '.join(DEMANDS)}")
        return kind, (rest[0], note_text(rest[1]))
    if kind == "prepared":   # (seconds, None or (last line, traceback))
        return kind, (seconds_value(rest[0]), None if rest[1] is None else traceback_text(rest[1]))
    if kind == "error":      # ((last line, traceback),)
        return kind, (traceback_text(rest[0]),)
    return kind, rest
