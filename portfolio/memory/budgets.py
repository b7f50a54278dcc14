"""A problem at another memory budget, the ``--budgets`` values of ``portfolio tradeoff`` and its
default budgets.

A budget is one uniform limit: it replaces the problem's capacity (also a capacity that varies over
time: the budget question is "what if the limit were B everywhere?"). Values are absolute integers
(``472141920``) or fractions of the file's own limit written with a decimal point or a percent sign
(``0.9``, ``1.0``, ``110%``).

The default budgets go where a user decides: around the file's limit (``WINDOW``, 0.9-1.5x), the
closer to it the denser, with the least peak found and the unconstrained plan's peak as the two ends
(:func:`default_budgets`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Optional, Sequence, Union

from ..errors import ProblemError
from ..problem import INT64_MAX, Problem

POINTS = 8
"""Default budgets of a tradeoff, the two ends included (the file's limit is always among them)."""

WINDOW = (0.9, 1.5)
"""Where the default budgets gather, as multiples of the file's limit: a little less memory than
the file gives, and up to half as much again, the range a compiler's user chooses a limit in."""

SPACING = 2.0
"""Budgets in the window sit at distances from the limit that grow as this power of their rank:
dense next to the limit (K: +3 %, +12 %, +28 %, +50 %), where the first extra bytes buy the most."""


def at_budget(problem: Problem, budget: Optional[int]) -> Problem:
    """``problem`` with one uniform limit ``budget`` (None: unlimited) instead of its capacity:
    :meth:`Problem.with_limit`, the one implementation, under the name the memory modules use."""
    return problem.with_limit(budget)


def _one(text: str, index: int, limit: Optional[int]) -> int:
    where = f"budgets: value {index} ({text!r})"
    raw = text.strip()
    if not raw:
        raise ProblemError(f"{where} is empty")
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    try:
        value = Fraction(number)
    except (ValueError, ZeroDivisionError):
        raise ProblemError(f"{where} is not a number: give an integer in the problem's units or a "
                           f"fraction of its limit such as 0.9 or 90%") from None
    if value <= 0:
        raise ProblemError(f"{where} must be positive")
    if percent or "." in number or "/" in number or "e" in number.lower():
        if limit is None:
            raise ProblemError(f"{where} is a fraction, but the problem has no single memory limit "
                               f"to take it of: give absolute budgets")
        value = value / 100 if percent else value
        budget = int(value * limit)   # rounded down: the budget never exceeds the fraction
    else:
        budget = int(value)
    if budget > INT64_MAX:
        raise ProblemError(f"{where} is above the largest limit a problem can hold (2**63 - 1)")
    if budget <= 0:
        raise ProblemError(f"{where} gives a budget of {budget}: it must be positive")
    return budget


def parse_budgets(values: Union[str, Sequence[Union[str, int, float]]],
                  limit: Optional[int]) -> list[int]:
    """The sorted distinct budgets of ``values`` (a comma-separated text or a sequence) for a
    problem whose limit is ``limit``; a bad value raises :class:`ProblemError` naming it."""
    if isinstance(values, str):
        items: list = values.split(",")
    elif isinstance(values, (list, tuple)):
        items = list(values)
    else:
        raise ProblemError(f"budgets: expected a list of numbers or a text such as '0.9,1.0,1.1', "
                           f"got {type(values).__name__}")
    if not items:
        raise ProblemError("budgets: no value given")
    out = []
    for i, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise ProblemError(f"budgets: value {i} ({item!r}) is not a number")
        if isinstance(item, float):
            item = repr(item)
        out.append(_one(str(item), i, limit))
    return sorted(set(out))


def _toward(anchor: int, edge: int, count: int, edge_is_end: bool) -> list[int]:
    """``count`` budgets from ``anchor`` toward ``edge``, the k-th at the fraction
    ``(k / count) ** SPACING`` of the way; short of ``edge`` when ``edge`` is already an end."""
    steps = count + (1 if edge_is_end else 0)
    return [int(round(anchor + (edge - anchor) * (k / steps) ** SPACING)) for k in range(1, count + 1)]


def _log_spread(low: int, high: int, points: int) -> list[int]:
    """``points`` budgets from ``low`` to ``high``, evenly on a log scale (evenly when ``low`` is 0)."""
    if low <= 0:
        return [low + (high - low) * i // (points - 1) for i in range(points)]
    ratio = high / low
    inner = [int(round(low * ratio ** (i / (points - 1)))) for i in range(1, points - 1)]
    return [low, *inner, high]


def default_budgets(low: int, high: int, limit: Optional[int],
                    points: int = POINTS) -> tuple[list[int], str]:
    """The default budgets of a tradeoff and one sentence saying how they were chosen.

    ``low`` is the least peak found (a plan fits it), ``high`` the peak of the cheapest plan found
    with no limit (no budget above it can buy anything), ``limit`` the file's. Both ends are
    budgets; the ``points - 2`` others gather in ``WINDOW`` around the limit (clipped to the ends),
    the limit itself among them, denser near it (``SPACING``), the sides sharing them by their
    widths. Without a limit, or with one that does not bind (at or above ``high``), they are
    spread evenly on a log scale from ``low`` to ``high``. A limit below ``low`` is a budget too (the
    file's own row: proven infeasible without a run when it is below the certified least peak),
    and the window then starts at ``low``. When the run with no limit found nothing cheaper than
    the least-peak plan (``high <= low``: a short run on a loaded machine), the window's top stands
    in for the unknown high end.
    """
    if points < 2:
        raise ValueError(f"points: at least 2, got {points}")
    unknown = ""
    if high <= low:
        if limit is None:
            return [low], ("the cheapest plan found with no limit has the least peak found "
                           f"({low:,}) and the file has no limit: one budget")
        high = max(low + 1, int(math.ceil(WINDOW[1] * max(limit, low))))
        unknown = (f"the window's top ({high:,}; the run with no limit found no plan cheaper "
                   f"than the least-peak plan in its time)")
    if limit is None:
        return sorted(set(_log_spread(low, high, points))), (
            "no memory limit in the file: budgets spread evenly on a log scale from the least "
            f"peak found ({low:,}) to the unconstrained plan's peak ({high:,})")
    if limit >= high:
        return sorted(set(_log_spread(low, high, points))), (
            f"the file's limit ({limit:,}) is at or above the unconstrained plan's peak "
            f"({high:,}), so it does not bind: budgets spread evenly on a log scale from the "
            f"least peak found ({low:,}) to that peak")
    anchor = max(limit, low)
    lo = max(low, int(math.floor(WINDOW[0] * anchor)))
    hi = min(high, int(math.ceil(WINDOW[1] * anchor)))
    inner = points - 2 - (1 if anchor > low else 0)   # the limit itself is one of the inner budgets
    down_span, up_span = anchor - lo, hi - anchor
    down = 0 if down_span <= 0 or inner < 2 else max(1, round(inner * down_span / (down_span + up_span)))
    up = max(0, inner - down)
    if up_span <= 0:
        down, up = inner, 0
    budgets = {low, high, anchor, *([limit] if limit < low else [])}
    budgets |= set(_toward(anchor, lo, down, lo == low)) | set(_toward(anchor, hi, up, hi == high))
    where = ("around the file's limit" if anchor == limit else
             f"just above the least peak found (the file's limit {limit:,} is below it)")
    top = unknown or f"the unconstrained plan's peak ({high:,})"
    return sorted(budgets), (
        f"budgets gathered {where} ({WINDOW[0]:g}-{WINDOW[1]:g}x of it, denser near it), with "
        f"the least peak found ({low:,}) and {top} as the ends")
