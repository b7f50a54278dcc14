"""Claims and bounds: what backends *say* (optimal, infeasible, a lower bound), kept apart from what
the runner *verified* (plans).

A claim is recorded with its source and checked against every verified plan. A claim contradicted
by a verified plan (a bound above a verified cost, "infeasible" while a feasible plan exists) is
marked false and named in the results; the plans its source reported stay eligible. Claims decide
nothing about the answer's plan; they may only end a run early, and only when the source declares
the ``exact`` capability (the rule: :func:`.stopping.claim_stop`).

This module is also the place for bound bookkeeping (best bound, its source, the gap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

OPTIMAL, INFEASIBLE, LOWER_BOUND = "optimal", "infeasible", "lower-bound"

PROVEN = "proven optimal"
"""How a verdict that counts as a proof begins (:meth:`ClaimBook.verdict`); a lone backend's
claim about its own plan, or a bound from a backend that does not declare ``exact``, reads
"claimed optimal" instead."""


@dataclass
class Claim:
    """One statement by one source. ``value`` is the claimed bound on the optimal cost (for an
    optimality claim: the verified cost of the plan claimed optimal); None for infeasibility."""

    kind: str
    source: str            # the run's name ("cpsat", "localsearch+1", "presolve")
    backend: str           # the registered backend behind it (independence is judged on this)
    value: Optional[int]
    time: float
    exact: bool            # the source declares the exact capability (or is the runner's own proof)
    false: bool = False
    why_false: str = ""

    def what(self) -> str:
        if self.kind == INFEASIBLE:
            return "infeasible"
        return f"{'optimal at' if self.kind == OPTIMAL else 'lower bound'} {self.value:,}"

    def describe(self) -> str:
        return f"{self.what()} (claimed by {self.source})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "source": self.source, "value": self.value, "time": self.time,
                "exact": self.exact, "false": self.false, "why_false": self.why_false}


class ClaimBook:
    """Every claim of a run, checked against the best verified plan."""

    def __init__(self) -> None:
        self.claims: list[Claim] = []

    def add(self, claim: Claim) -> Claim:
        self.claims.append(claim)
        return claim

    def drop(self, claims: list[Claim]) -> None:
        """``claims`` leave the book (a backend's newer bound implies them)."""
        self.claims = [c for c in self.claims if all(c is not d for d in claims)]

    def standing(self) -> list[Claim]:
        return [c for c in self.claims if not c.false]

    def check(self, best_cost: Optional[int], best_source: Optional[str]) -> list[Claim]:
        """Mark the claims a verified plan contradicts; returns those newly found false."""
        found = []
        if best_cost is None:
            return found
        for c in self.standing():
            if c.kind == INFEASIBLE:
                c.false, c.why_false = True, f"{best_source} verified a feasible plan"
            elif c.value is not None and c.value > best_cost:
                c.false = True
                c.why_false = f"{best_source} verified a plan of cost {best_cost:,}"
            if c.false:
                found.append(c)
        return found

    def best_bound(self) -> Optional[Claim]:
        """The highest standing bound claim (an optimality claim is a bound too)."""
        bounds = [c for c in self.standing() if c.value is not None]
        return max(bounds, key=lambda c: (c.value, c.exact), default=None)

    def meeting(self, best_cost: Optional[int]) -> list[Claim]:
        """Standing claims whose bound equals the verified best cost."""
        if best_cost is None:
            return []
        return [c for c in self.standing() if c.value is not None and c.value >= best_cost]

    def verdict(self, best_cost: Optional[int], winner: Optional[str],
                winner_backend: Optional[str]) -> Optional[str]:
        """How sure the answer is, in words; None when it is only the best plan found.

        Only a source that can prove may make it "proven" (the rule early stopping follows too):
        the runner's own proof, two independent ``exact`` backends whose bounds meet the verified
        cost, or the bound of an ``exact`` backend other than the one that found the plan. Any
        other bound that meets it is that backend's claim, and the words say so.
        """
        meet = self.meeting(best_cost)
        if not meet:
            return None
        own = [c for c in meet if c.backend == "runner"]
        if own:
            return f"{PROVEN} by {own[0].source}"
        exact = sorted({c.backend for c in meet if c.exact})
        if len(exact) >= 2:
            return f"{PROVEN}: " + " and ".join(exact) + " agree"
        others = [b for b in exact if b != winner_backend]
        if others:
            return f"{PROVEN}: plan by {winner} meets the bound of {others[0]}"
        claimers = sorted({c.source for c in meet if c.backend != winner_backend})
        if claimers:
            return (f"claimed optimal by {' and '.join(claimers)} (not exact): plan by {winner} "
                    f"meets {'its' if len(claimers) == 1 else 'their'} bound")
        return f"claimed optimal by {meet[0].source}"

    def infeasible_claims(self) -> list[Claim]:
        return [c for c in self.standing() if c.kind == INFEASIBLE]
