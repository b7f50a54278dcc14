"""The search's reduced view: the kernel model of the presolved problem, and the way back.

Why: on most contest instances forbidden entries tie nodes into long chains. An edge ``u -> v`` is
*functional* when every usable strategy of ``u`` has exactly one allowed partner in ``v``: in any
forbidden-free plan ``v`` is then a function of ``u``. A move of a merged root *is* the "follow"
move of its whole group, so searching over roots is exact for forbidden-free plans and much stronger
than single-node moves that every chain blocks (A: 35k nodes collapse to a few hundred groups,
techniques.md section 0).

The merging itself is the presolve's (:mod:`portfolio.presolve.merge`, with its consistency pass):
one implementation, tested once. The kernels ask only for the reductions that keep *every*
forbidden-free plan (``KERNEL_SWITCHES``), so the search space is the original's forbidden-free
plans, re-parametrised; the full presolve (dominance, elimination, memory bounds) is the runner's
job before a backend starts. When the presolve proves that no forbidden-free plan fits, the search
works on the original model (the identity), where it can still hand back a plan.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..presolve import SWITCHES, Presolved, presolve
from ..problem import Problem
from .model import KModel, build_model

KERNEL_SWITCHES = {s: s in ("forbidden", "arc_consistency", "functional", "edge_tables", "single",
                            "time_points") for s in SWITCHES}
"""Presolve switches for the search's view: only reductions that keep every forbidden-free plan
(dominance, memory-free elimination and memory bounds drop plans another backend may hand over)."""


class Reduction(NamedTuple):
    """A reduced model plus the way back to the original plans."""

    model: KModel                    # the kernel view of the reduced problem
    presolved: Optional[Presolved]   # None: the identity (nothing was reduced)


def identity(m: KModel) -> Reduction:
    """The original model as its own reduction."""
    return Reduction(m, None)


def reduce_problem(problem: Problem, m: KModel) -> Reduction:
    """Merge functional groups of ``problem`` (whose kernel view is ``m``) with the presolve."""
    pre = presolve(problem, **KERNEL_SWITCHES)
    if pre.reduced is None or _same_space(problem, pre.reduced):
        return identity(m)
    return Reduction(build_model(pre.reduced), pre)


def _same_space(problem: Problem, reduced: Problem) -> bool:
    """Whether the reduction kept every node and strategy (the usual case when the runner hands
    over an already presolved problem): the original model is then the search space already, and
    building a second one (and mapping every plan through it) is pure cost."""
    return (reduced.num_nodes == problem.num_nodes
            and np.array_equal(reduced.strategy_offsets, problem.strategy_offsets))


def expand(red: Reduction, sol: np.ndarray) -> np.ndarray:
    """The original plan of a reduced plan."""
    if red.presolved is None:
        return np.array(sol, dtype=np.int64)
    return red.presolved.expand(sol)


def contract(red: Reduction, sol: np.ndarray) -> Optional[np.ndarray]:
    """The reduced plan of an original plan, or None when the plan is not one of its expansions
    (it then has a forbidden choice the reduction ruled out)."""
    if red.presolved is None:
        return np.array(sol, dtype=np.int64)
    return red.presolved.restrict(sol)
