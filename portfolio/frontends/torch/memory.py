"""Memory in the problem: what each tensor holds on one rank, over which steps, and the budget.

A node's tensor (each output of an op with several) holds its per-rank bytes at the node's
placement from the node's step to the step of its last user, in graph order (the problem's
half-open interval ``[step, last use + 1)``); a user output until the end. Parameters and buffers
hold their bytes over the whole run; in training a parameter also holds its gradient and its
optimizer state in the parameter's placement (Adam: two tensors, SGD: none), over the whole run,
and the backward's gradient node hands its tensor over at once (its interval is its own step).
Views are counted as tensors of their own (an upper bound on what an allocator holds: a view shares
its base's storage), and an op with several outputs holds all of them until its last ``getitem``
while each ``getitem`` holds its own element (again an upper bound, for a few steps).
Verification measures the same thing on every rank (:mod:`.verify`).

A budget is bytes (``12GiB``, ``512MB``, ``1.5e9``) or a share of the unsharded peak (``60%``: of
the peak of the plan that replicates everything).
"""

from __future__ import annotations

import re
from typing import Optional, Union

from ...errors import ProblemError

UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "m": 10**6, "mb": 10**6, "g": 10**9,
         "gb": 10**9, "t": 10**12, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
         "tib": 2**40}

BudgetLike = Union[int, float, str, None]
"""``None`` (no limit), bytes as a number, or a text: ``12GiB``, ``512 MB``, ``60%``."""


def parse_budget(value: BudgetLike) -> tuple[Optional[int], Optional[float]]:
    """``(bytes, None)`` for an absolute budget, ``(None, share)`` for a share of the unsharded
    peak (``0.6`` for ``60%``), ``(None, None)`` for none; :class:`ProblemError` naming the value
    otherwise."""
    if value is None:
        return None, None
    if isinstance(value, bool):
        raise ProblemError(f"memory: expected bytes ('12GiB') or a share ('60%'), got {value!r}")
    if isinstance(value, (int, float)):
        if value < 0:
            raise ProblemError(f"memory: must not be negative, got {value!r}")
        return int(value), None
    text = str(value).strip().lower().replace(" ", "")
    share = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)%", text)
    if share:
        fraction = float(share.group(1)) / 100
        if fraction <= 0:
            raise ProblemError(f"memory: a share must be above 0 %, got {value!r}")
        return None, fraction
    size = re.fullmatch(r"(\d+(?:\.\d*)?(?:e\d+)?|\.\d+)([a-z]*)", text)
    if not size or size.group(2) not in UNITS:
        raise ProblemError(f"memory: expected bytes with a unit (12GiB, 512MB) or a share of the "
                           f"unsharded peak (60%), got {value!r}")
    return int(float(size.group(1)) * UNITS[size.group(2)]), None


def budget_bytes(value: BudgetLike, unsharded_peak: int) -> Optional[int]:
    """The budget in bytes per rank (None: no limit)."""
    absolute, share = parse_budget(value)
    if share is not None:
        return int(unsharded_peak * share)
    return absolute


def state_factor(training: bool, optimizer_states: int) -> int:
    """How many tensors of a parameter's shape it holds over the run: itself, and in training its
    gradient and optimizer state."""
    return 2 + optimizer_states if training else 1


def bytes_text(n: Optional[int]) -> str:
    """``1.50 GiB``, ``12.0 MiB``, ``800 B``."""
    if n is None:
        return "none"
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"
