"""The step scale of the Polyak subgradient loops on memory prices (local search and bound).

Why one class: both loops move prices by ``beta * (target - value) / |g|^2`` and both shrink
``beta`` the same way when the Lagrangian value stops rising; keeping that rule in one place keeps
the two loops' behaviour comparable when it is tuned. Their dot products are here too: BLAS in a
timed run, a sum whose bits do not depend on the machine's core count in deterministic mode.
"""

from __future__ import annotations

import math

import numpy as np


class StallHalving:
    """``beta`` halves after ``stall`` steps in a row without a new best Lagrangian value."""

    def __init__(self, beta: float, stall: int) -> None:
        self.beta = beta
        self.stall_limit = stall
        self.best = -math.inf
        self.stall = 0

    def observe(self, value: float) -> None:
        """Record one step's Lagrangian value."""
        if value > self.best:
            self.best = value
            self.stall = 0
            return
        self.stall += 1
        if self.stall >= self.stall_limit:
            self.beta *= 0.5
            self.stall = 0

    def restart(self, beta: float, forget_best: bool) -> None:
        """Step again at ``beta`` (after the scale collapsed); optionally forget the best value."""
        self.beta = beta
        if forget_best:
            self.best = -math.inf


def piece_prices(m, lam: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """Per usage piece of kernel model ``m``, the sum of the time-point prices ``lam`` over the
    points it covers (``m.pc_lo`` to ``m.pc_hi``), by prefix sums; ``zero`` when there is none."""
    if len(m.pc_lo) == 0:
        return zero
    csum = np.concatenate([[0.0], np.cumsum(lam)])
    return csum[m.pc_hi] - csum[m.pc_lo]


def blas_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` through BLAS (the timed mode's dot product)."""
    return float(a @ b)


def sum_dot(a: np.ndarray, b: np.ndarray) -> float:
    """``a @ b`` as numpy's own pairwise sum, for deterministic mode: the same bits whatever the
    machine's core count (OpenBLAS splits a long dot product over as many threads as the machine
    has cores, and the partial sums change its last bits)."""
    return float(np.sum(a * b))
