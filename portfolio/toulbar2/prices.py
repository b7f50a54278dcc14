"""Memory prices for the toulbar2 penalty search: the Lagrangian rule (issue 21).

The original method charges node ``i`` a weight ``w_i`` per unit of usage above its least usage,
wherever its interval lies. Most of that usage is free: on N a polished feasible plan pays twenty
times its real cost in such penalties at the first weights (measured), because memory is tight at
few time points only. The Lagrangian relaxation says what a unit of memory is worth at each time
point: with prices ``lam_t >= 0`` the priced unary of strategy ``s`` of node ``i`` is
``cost(s) + sum over the node's usage pieces p of (sum of lam_t over p's points) * usage_p(s)``.
The penalty here is that price part, shifted so each node's least priced strategy pays 0: nodes
whose intervals cross no priced point pay nothing, nodes at the tightest points pay most. The
per-node weights of the bracketing then become multipliers of this penalty (1 = the prices as
they are).

The prices come from the project's own subgradient (:class:`portfolio.kernels.bound.LagrangeBound`,
the ``bound`` backend's engine) on the kernel model of the backend's problem, run a few seconds
before the first round and a little more between rounds (in deterministic mode a number of
steps, :meth:`PriceModel.advance_steps`, each costing :attr:`PriceModel.step_units`). The kernel
model used is ``prep.model``, the problem's own view (same nodes and strategies), never the
kernels' reduced one, so the penalty lines up with the network's variables. In a timed run the
prices are also exchanged with the run's price board (:meth:`PriceModel.share`): the ``bound``
backend's better-converged prices, when their certified bound is higher, replace these.
"""

from __future__ import annotations

import time
from typing import Optional

import numpy as np

from portfolio.prices import PriceLink, price_key
from portfolio.problem import Problem

from .pace import COSTS


class PriceModel:
    """A Lagrangian subgradient on ``problem``'s kernel model, read as per-strategy penalties."""

    def __init__(self, problem: Problem, prep, seed: int = 0, report: object = None,
                 t0: Optional[float] = None) -> None:
        from portfolio.kernels.bound import LagrangeBound

        self.problem, self.m = problem, prep.model
        if not np.array_equal(np.asarray(self.m.soff), np.asarray(problem.strategy_offsets)):
            raise ValueError("kernel model and problem disagree on strategies")
        self.engine = LagrangeBound(problem, self.m, seed=seed, offset=int(problem.cost_offset))
        # the problem's own view: its time points are the board's coordinates as they are
        self.link = PriceLink(report, price_key(problem), self.engine, take_bound=True,
                              t0=time.monotonic() if t0 is None else t0)
        """The run's price board (:mod:`portfolio.prices`), through ``report``'s optional price
        methods; used by :meth:`share` only (timed runs)."""
        self.step_units = (COSTS.price_edge * len(problem.edge_costs)
                           + COSTS.price_usage * len(problem.interval_usages))
        """Deterministic mode's work units of one step (:mod:`.pace`)."""

    @property
    def steps(self) -> int:
        return int(self.engine.steps)

    def advance(self, seconds: float, plan: Optional[np.ndarray] = None,
                max_steps: Optional[int] = None) -> None:
        """Subgradient steps for about ``seconds`` (at most ``max_steps``: tests ask for a count, not a
        time, so a busy machine cannot change what they see), towards ``plan``'s cost when known."""
        from portfolio.kernels import incremental as inc

        ub = None
        if plan is not None:
            cost, forbidden = inc.plan_cost(self.m, np.require(plan, np.int64, ["C", "W"]))
            ub = None if forbidden else int(cost)
        self.engine.run(time.monotonic() + max(0.0, seconds), ub=ub, max_steps=max_steps)

    def share(self) -> None:
        """Exchange with the run's price board: prices another backend certified higher than this
        engine's best become its best (the penalty's) and its current ones (its steps go on from
        them); its own best goes to the board when it beats what is there. Timed runs only:
        deterministic mode's reporter shares nothing anyway."""
        self.link.exchange()

    def advance_steps(self, steps: int, plan: Optional[np.ndarray] = None) -> None:
        """Exactly ``steps`` more subgradient steps (deterministic mode: no clock decides)."""
        if steps > 0:
            self.advance(0.0, plan, max_steps=self.steps + int(steps))

    def penalty(self) -> np.ndarray:
        """Per strategy: the priced usage at the best prices, minus the node's least (>= 0);
        0 for strategies that cannot be used in a forbidden-free plan."""
        m = self.m
        theta = self.engine.best_unaries()
        pen = theta - np.asarray(m.ncost, dtype=np.float64)
        alive = np.asarray(m.alive, dtype=bool)
        pen = np.where(alive & np.isfinite(pen), np.maximum(pen, 0.0), np.inf)
        starts = np.asarray(self.problem.strategy_offsets[:-1])
        low = np.minimum.reduceat(pen, starts) if len(pen) else pen
        low = np.where(np.isfinite(low), low, 0.0)
        out = pen - np.repeat(low, self.problem.strategy_counts)
        return np.where(np.isfinite(out), out, 0.0)

    def priced_nodes(self, penalty: np.ndarray) -> np.ndarray:
        """Per node: some strategy pays a positive penalty (the node's weight matters)."""
        starts = np.asarray(self.problem.strategy_offsets[:-1])
        if len(penalty) == 0:
            return np.zeros(self.problem.num_nodes, dtype=bool)
        return np.maximum.reduceat(penalty, starts) > 0
