"""The instances ``portfolio check-plugin`` runs a backend on, each with what is known of it.

Why these: the bundled example (8 nodes; its optimum by scoring every plan) is what every plugin
author tries first; ``forbidden`` (bundled, 9 nodes) is built so that the least-memory plan
(``Problem.min_usage_strategies``) takes a forbidden entry on every chain edge and only 20 of its
19,683 plans avoid every forbidden entry within the memory limit (the trap contest instance B sets
on a larger scale); ``generated`` is a contest-shaped synthetic instance too large to enumerate,
with forbidden entries and the contest's tight memory; ``infeasible`` is the example with a memory
limit below its least memory, where no plan fits. On the first two the optimum is proven by
enumeration, so any claim can be judged exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Optional

from ..evaluate import evaluate
from ..exhaustive import enumerate_optimum
from ..problem import Capacity, Problem

GENERATED_NODES = 150
"""Size of the generated instance: beyond enumeration, small enough for a few seconds' search."""


@dataclass(frozen=True)
class CheckInstance:
    """One instance of the check and what is known of it, for judging a backend's claims."""

    name: str
    problem: Problem
    what: str
    feasible: bool
    """Whether some plan fits in memory (a claim of infeasibility is then false)."""
    optimum: Optional[int] = None
    """The optimal cost, proven by enumeration (None: not known)."""
    known_cost: Optional[int] = None
    """The cost of a feasible plan without forbidden choices known before the run (a claimed bound
    above it is false)."""
    clean: bool = False
    """A feasible plan without any forbidden choice exists: a plan of the backend's with one is a
    breach (it is valid, but never the answer)."""


def data_path(name: str) -> Path:
    """A file shipped in ``portfolio/data``."""
    return Path(str(resources.files("portfolio.data") / name))


def _load(name: str) -> Problem:
    from ..io import load_problem

    return load_problem(data_path(name))


def _enumerated(name: str, problem: Problem, what: str) -> CheckInstance:
    found = enumerate_optimum(problem)
    if found is None or found.plan is None:  # the shipped files are small and feasible
        raise RuntimeError(f"check instance {name} could not be enumerated")
    cost = evaluate(problem, found.plan).cost
    return CheckInstance(name, problem, what, True, optimum=cost, known_cost=cost, clean=True)


def _generated() -> CheckInstance:
    from ..generate import generate_problem
    from ..runner.fallback import safe_plan

    problem = generate_problem(GENERATED_NODES, strategies=6, seed=34, forbidden_fraction=0.2,
                               name="check-generated")
    ev = evaluate(problem, safe_plan(problem, 1.0))
    clean = ev.feasible and not ev.has_forbidden
    return CheckInstance("generated", problem,
                         f"synthetic, {GENERATED_NODES} nodes, forbidden entries, memory at 1.1 x "
                         f"least", True, known_cost=ev.cost if clean else None, clean=clean)


def _infeasible(example: Problem) -> CheckInstance:
    least = evaluate(example, example.min_usage_strategies).peak_usage
    problem = replace(example, capacity=Capacity.uniform(int(least) - 1), name="check-infeasible")
    return CheckInstance("infeasible", problem, f"the example with memory {int(least) - 1}, below "
                         f"its least memory {int(least)}: no plan fits", False)


def check_instances() -> list[CheckInstance]:
    """Every instance of the check, in the order it runs them."""
    example = _load("example.json")
    return [
        _enumerated("example", example, "the bundled example, 8 nodes, 432 plans"),
        _enumerated("forbidden", _load("check-forbidden.json"),
                    "9 nodes; the least-memory plan takes 8 forbidden entries; 20 clean plans fit"),
        _generated(),
        _infeasible(example),
    ]

