"""Infeasible, explained: when a run ends with no plan that fits, how far the least peak is from
the limit, where, and whether that is proven or only what was found in time.

Built on what the run already knows: an infeasibility proof of the runner (its memory check) or an
exact backend's standing claim (``PortfolioResult.infeasible_proven_by``), to which the certified
bound (:mod:`.bound`) adds the least peak any plan needs; the best plan found is the least-memory
plan made forbidden-free by the runner's own repair (:func:`portfolio.runner.fallback.safe_plan`).

One time point per document: where the certified bound is reached (every plan needs at least that
much there: the reason no plan fits); the plan found is reported at that point too, and peaks
there whenever it reaches the bound. Nodes are named in the input file's own numbering (the
conversion's :class:`~portfolio.adapters.naming.NodeNaming`), computed on the problem as read.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from ..adapters.naming import NodeNaming
from ..evaluate import evaluate
from ..problem import Problem
from .bound import PeakBound, least_peak_bound
from .budgets import at_budget
from .peak import PeakReport, peak_report, point_index

SAFE_PLAN_SECONDS = 1.0
"""The repair's share of a timed run's explanation (deterministic mode: run to its end)."""


FORBIDDEN_ONLY = "every plan is forbidden"
"""The verdict when no plan without forbidden choices exists at all: not a memory question, and the
contest's answer is then a forbidden plan (cost 10**18 and more), not an infeasible run."""


def least_peak_plan(problem: Problem, deterministic: bool = False) -> Optional[np.ndarray]:
    """The runner's least-memory plan made forbidden-free (no memory limit), or None when the
    repair leaves a forbidden choice."""
    from ..runner.fallback import safe_plan

    free = at_budget(problem, None)
    plan = np.asarray(safe_plan(free, math.inf if deterministic else SAFE_PLAN_SECONDS),
                      dtype=np.int64)
    return None if evaluate(free, plan).has_forbidden else plan


def explain(problem: Problem, result: Any, deterministic: bool = False,
            bound: Optional[PeakBound] = None, naming: Optional[NodeNaming] = None) -> dict:
    """The ``memory`` document of a run that found no plan that fits (see docs/budgets.md):
    ``limit``, ``time`` (the one time point the document is about: where the certified bound is
    reached), ``bound`` (the certified least peak), ``best`` (the least-memory plan found: its
    ``peak`` and ``peak_time``, its ``usage`` and top nodes at ``time``), ``verdict`` (``proven
    infeasible`` or ``not found in time``, or ``every plan is forbidden`` when no plan avoids
    forbidden choices at all), ``proof`` (why, when proven) and ``text`` (the one paragraph the CLI
    prints). Nodes are in ``naming``'s file numbering (the problem's own when None)."""
    limit = problem.usage_limit
    bound = least_peak_bound(problem, naming=naming) if bound is None else bound
    plan = least_peak_plan(problem, deterministic)
    k = point_index(problem, bound.time)
    best = None if plan is None else peak_report(problem, plan, naming=naming, prefer=k, at=k)
    proof = None
    if bound.value is None:   # memory is not the cause: every plan takes a forbidden choice
        proof = f"no plan without forbidden choices exists ({bound.why})"
    elif limit is not None and bound.value > limit:
        proof = "the certified least peak exceeds the limit"
    elif getattr(result, "infeasible_proven_by", None):
        proof = f"claimed by {result.infeasible_proven_by}"
    verdict = (FORBIDDEN_ONLY if bound.value is None else "proven infeasible" if proof
               else "not found in time")
    time = bound.time if bound.time is not None else None if best is None else best.time
    doc = {"limit": limit, "time": time, "bound": bound.to_dict(),
           "best": None if best is None else best.to_dict(), "verdict": verdict, "proof": proof}
    doc["text"] = _paragraph(doc, bound, best)
    return doc


def _paragraph(doc: dict, bound: PeakBound, best: Optional[PeakReport]) -> str:
    """One paragraph about one time point (``doc["time"]``): what every plan needs there, what
    the plan found uses there; when the plan peaks elsewhere its peak is said without a second
    time (``best.peak_time`` has it)."""
    limit = doc["limit"]
    limit_text = f"the limit {limit:,}" if limit is not None else "the capacity (it varies over time)"
    if doc["verdict"] == FORBIDDEN_ONLY:
        return f"Every plan takes a forbidden choice, whatever the memory: {doc['proof']}."
    parts = [f"No plan without forbidden choices fits {limit_text}: {doc['verdict']}"
             + (f" ({doc['proof']})." if doc["proof"] else ".")]
    at = "" if doc["time"] is None else f"At t={doc['time']}, "
    if bound.value is not None:
        over = (f", {bound.value - limit:,} above the limit" if limit is not None
                and bound.value > limit else "")
        parts.append(f"{at}every plan uses at least {bound.value:,}{over} (the certified least "
                     f"peak, stage {bound.method}).")
    if best is not None and best.time is None:
        parts.append(f"The least-memory plan found: {best.text()}.")
    elif best is not None and best.at_peak:
        parts.append(f"The least-memory plan found peaks there, at {best.peak:,} "
                     f"({best.nodes_text()}).")
    elif best is not None:
        parts.append(f"The least-memory plan found uses {best.usage:,} there "
                     f"({best.nodes_text()}); its own peak, {best.peak:,}, is at another time "
                     f"point.")
    if doc["verdict"] == "not found in time" and best is not None and limit is not None \
            and best.peak <= limit:
        parts.append("That plan fits: a longer run may find it.")
    return " ".join(parts)
