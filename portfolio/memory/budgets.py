"""A problem at another memory budget, and the ``--budgets`` values of ``portfolio tradeoff``.

A budget is one uniform limit: it replaces the problem's capacity (also a capacity that varies over
time: the budget question is "what if the limit were B everywhere?"). Values are absolute integers
(``472141920``) or fractions of the file's own limit written with a decimal point or a percent sign
(``0.9``, ``1.0``, ``110%``).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Optional, Sequence, Union

from ..errors import ProblemError
from ..problem import INT64_MAX, Capacity, Problem


def at_budget(problem: Problem, budget: Optional[int]) -> Problem:
    """``problem`` with one uniform limit ``budget`` (None: unlimited) instead of its capacity."""
    return replace(problem, capacity=Capacity.uniform(None if budget is None else int(budget)))


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
