"""Deterministic mode's work units for the kernel backends: their counts turned into units.

A work unit is about one millisecond of one core (:mod:`portfolio.work`). The kernel backends never
time themselves in that mode: they count what they did (strategy evaluations, TRW-S passes over the
edge tables, certified bound evaluations, instance sizes for the one-shot steps) and convert the
counts with the constants below, calibrated once in CPU seconds on the shared contest instances A,
K, N and S and kept fixed (``python benchmarks/work_units.py``; figures and the machine in
docs/benchmarks/determinism.md). They are estimates of CPU time on that machine, not promises: what
matters for determinism is only that they are fixed numbers applied to counts.

- ``EVALS_PER_UNIT``: strategy evaluations (``sc.ints[1]``, counted by every move kernel: the
  descents, the iterated local search, the repairs' polish) per unit.
- ``TRWS_ENTRIES_PER_UNIT``: edge-table entries swept by one TRW-S pass (forward and backward) per
  unit: a Lagrangian round of the local search or a bound step costs ``passes * len(m.ecost)``.
- ``VECTOR_ENTRIES_PER_UNIT``: usage entries plus time points per unit of a round's or a step's
  work on the prices (priced unaries, prefix sums, slacks, the subgradient).
- ``STAR_ENTRIES_PER_UNIT``: edge-table entries plus usage entries per unit of one certified star
  bound (:func:`.bound.star_bound`, directed rounding at every addition).
- ``FLOOR_ENTRIES_PER_UNIT``: strategies plus edge-table entries of the *original* problem per unit
  of the floor of plans with a forbidden choice, which each certification computes again.
- ``PREPARE_ENTRIES_PER_UNIT``: entries of the original problem (strategies plus edge-table
  entries) per unit of :func:`.engine.prepare` (the kernel view and the reduction).
- ``GREEDY_ENTRIES_PER_UNIT``: entries of the reduced view (strategies, edge-table entries, usage
  entries) per unit of the greedy plan and its polish.
- ``MIN_STEP_UNITS``: the least a round or a step counts, so that a loop on a degenerate model (no
  edges, no time points) still ends.
- ``ILS_CHUNK_UNITS``: units of one call of the iterated local search (its evaluations cap) between
  two counts: the granularity of the local search's exchange points and of the safety net.

The backends spend these units through :class:`portfolio.work.Meter` (named here too, with
:func:`~portfolio.work.meter_of`, for the kernel backends): the one pacing primitive, which also
says when an exchange point passed, the only moment they read ``report.best()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..problem import Problem
from ..work import Meter, meter_of

if TYPE_CHECKING:
    from .model import KModel

__all__ = ["EVALS_PER_UNIT", "FLOOR_ENTRIES_PER_UNIT", "GREEDY_ENTRIES_PER_UNIT", "ILS_CHUNK_UNITS",
           "MIN_STEP_UNITS", "Meter", "PREPARE_ENTRIES_PER_UNIT", "STAR_ENTRIES_PER_UNIT",
           "TRWS_ENTRIES_PER_UNIT", "VECTOR_ENTRIES_PER_UNIT", "eval_units", "greedy_units",
           "meter_of", "prepare_units", "star_units", "sweep_units"]

EVALS_PER_UNIT = 4000
TRWS_ENTRIES_PER_UNIT = 140_000
VECTOR_ENTRIES_PER_UNIT = 200_000
STAR_ENTRIES_PER_UNIT = 130_000
FLOOR_ENTRIES_PER_UNIT = 1_800_000
PREPARE_ENTRIES_PER_UNIT = 12_000
GREEDY_ENTRIES_PER_UNIT = 10_000
ILS_CHUNK_UNITS = 100
MIN_STEP_UNITS = 0.01


def prepare_units(problem: Problem) -> float:
    """Units of :func:`.engine.prepare` on ``problem`` (its size: strategies and edge entries)."""
    return (len(problem.node_costs) + len(problem.edge_costs)) / PREPARE_ENTRIES_PER_UNIT


def greedy_units(m: KModel) -> float:
    """Units of the greedy plan (design 2) and its polish on the reduced view ``m``."""
    return (len(m.ncost) + len(m.ecost) + len(m.pc_use)) / GREEDY_ENTRIES_PER_UNIT


def sweep_units(m: KModel, passes: int) -> float:
    """Units of ``passes`` TRW-S passes on ``m`` plus one round's (or step's) work on the prices."""
    return (passes * len(m.ecost) / TRWS_ENTRIES_PER_UNIT
            + (len(m.pc_use) + len(m.base)) / VECTOR_ENTRIES_PER_UNIT)


def star_units(m: KModel, problem: Problem) -> float:
    """Units of one certified star bound on ``m``, a view of ``problem`` (with its floor)."""
    return ((len(m.ecost) + len(m.pc_use)) / STAR_ENTRIES_PER_UNIT
            + (len(problem.node_costs) + len(problem.edge_costs)) / FLOOR_ENTRIES_PER_UNIT)


def eval_units(evals: int) -> float:
    """Units of ``evals`` strategy evaluations."""
    return evals / EVALS_PER_UNIT
