"""Prices of the kernels' reduced view against prices of the problem's own time points.

Why: the price board (:mod:`portfolio.prices`) speaks in the time points of the problem a backend
was given; the ``bound`` backend's subgradient runs on ``prep.rm``, whose time points are the
presolve's kept segments, renumbered. On the runner's presolved problem the kernels' reduction
changes nothing (``prep.rm`` is ``prep.model``: measured on the seven contest instances) and the
map is the identity; on an original problem it is not.

Reduced point ``u`` stands for the original time ``T = time_of[tau_u]``
(:attr:`portfolio.presolve.Presolved.time_of`); its constraint is the original one at ``T`` for
every plan without a forbidden choice. It maps to the problem's last time point ``t_j <= T``: no
interval starts and no capacity changes in ``(t_j, T]`` (each would be a time point), so the
intervals live at ``T`` are live at ``t_j`` under the same capacity, and with usages >= 0
``usage_T(x) - cap_T <= usage_j(x) - cap_j``: a price moved from ``T`` to ``t_j`` never lowers
the priced objective, so the bound the prices certified still holds at the mapped ones (equal
when ``T`` is a time point, the usual case). The way back splits a problem price evenly among the
reduced points mapped onto it: any prices >= 0 are valid, and the subgradient certifies its own.
"""

from __future__ import annotations

from typing import Optional

import numpy as np


class PointMap:
    """``index[u]``: the problem's time point that the view's point ``u`` maps to."""

    def __init__(self, index: np.ndarray, size: int) -> None:
        self.index = np.asarray(index, dtype=np.int64)
        self.size = int(size)
        self.share = np.bincount(self.index, minlength=self.size).astype(np.float64)

    @classmethod
    def of(cls, prep) -> Optional["PointMap"]:
        """The map of ``prep.rm``'s points onto ``prep.problem``'s, or None when it cannot be made
        (usages below zero break the dominance argument; a reduction without its time map)."""
        problem, view = prep.problem, prep.rm
        points = np.asarray(problem.time_points, dtype=np.int64)
        pre = prep.red.presolved
        if pre is None:
            return cls(np.arange(len(points)), len(points)) if len(view.base) == len(points) else None
        if len(problem.interval_usages) and int(problem.interval_usages.min()) < 0:
            return None
        reduced, time_of = pre.reduced, np.asarray(pre.time_of, dtype=np.int64)
        tau = np.asarray(reduced.time_points, dtype=np.int64)
        if len(view.base) != len(tau) or (len(tau) and (tau.min() < 0 or tau.max() >= len(time_of))):
            return None
        index = np.searchsorted(points, time_of[tau], side="right") - 1
        if len(index) and index.min() < 0:
            return None
        return cls(index, len(points))

    def to_problem(self, lam: np.ndarray) -> np.ndarray:
        """View prices as problem prices (those mapped onto one point add up)."""
        out = np.zeros(self.size)
        np.add.at(out, self.index, np.asarray(lam, dtype=np.float64))
        return out

    def from_problem(self, lam: np.ndarray) -> np.ndarray:
        """Problem prices as view prices (a point's price split among the view's points on it)."""
        lam = np.asarray(lam, dtype=np.float64)
        return lam[self.index] / np.maximum(self.share[self.index], 1.0)
