"""Run one backend through the contract on the check instances and name every breach.

Each instance is one real portfolio run (forked worker, deadline, every message validated and every
plan verified by the runner) with the backend alone, the runner's shortcuts off (no scoring of every
plan, no early stop: the backend runs even where the runner could settle the instance), presolve on
for a backend declaring ``reduced`` (so its reduced path runs), a memory cap, and the worker's stdout
captured in a file instead of stderr. The run's rows then say what happened; what the runner
tolerates but the contract forbids (output on stdout, a plan with a forbidden choice where clean ones
exist, a claim above a cost known beforehand) is judged here against what each
:class:`~.instances.CheckInstance` knows.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Optional

from ..backend import BackendLike, Status
from ..evaluate import evaluate
from .instances import CheckInstance

CHECKS = ("registers", "runs", "on time", "quiet stdout", "valid output", "no forbidden",
          "true claims")
"""What is checked, in the order the table shows it: the plugin registered without warnings; no
exception, crash or memory overrun; returned before its deadline; printed nothing on stdout; sent
only plans and messages the runner accepts; no forbidden choice in its plans where a clean plan
exists; no claim (optimal, infeasible, a bound) contradicted by what is known."""

DEFAULT_TIME_LIMIT = 5.0
"""Seconds per instance (the run's budget: the backend's deadline falls about 1.3 s before it)."""

DEFAULT_MEMORY_LIMIT = 1 << 30
"""Memory cap of the backend on these small instances (1 GiB)."""


@dataclass
class Breach:
    """One breach of the contract: which check, on which instance, what happened."""

    check: str
    instance: str
    detail: str

    def to_dict(self) -> dict:
        return {"check": self.check, "instance": self.instance, "detail": self.detail}


@dataclass
class InstanceOutcome:
    """One instance's run, as the report shows it."""

    instance: CheckInstance
    status: str = ""
    note: str = ""
    cost: Optional[int] = None
    seconds: Optional[float] = None
    stdout: str = ""
    traceback: Optional[str] = None
    breaches: list[Breach] = field(default_factory=list)

    def reference(self) -> str:
        """What the instance's cost is judged against, in words."""
        inst = self.instance
        if not inst.feasible:
            return "infeasible"
        if inst.optimum is not None:
            return f"optimum {inst.optimum:,}"
        return f"known {inst.known_cost:,}" if inst.known_cost is not None else "-"

    def to_dict(self) -> dict:
        return {"instance": self.instance.name, "what": self.instance.what, "status": self.status,
                "note": self.note, "cost": self.cost, "optimum": self.instance.optimum,
                "known_cost": self.instance.known_cost, "feasible": self.instance.feasible,
                "seconds": self.seconds, "stdout": self.stdout, "traceback": self.traceback,
                "breaches": [b.to_dict() for b in self.breaches]}


def judge_run(outcome: InstanceOutcome, result: Any, name: str) -> None:
    """Fill ``outcome`` from the portfolio result of the run and name its breaches."""
    inst = outcome.instance
    rows = [r for r in result.runs.values() if r.backend == name] or list(result.runs.values())
    first = rows[0]
    outcome.status, outcome.note, outcome.seconds = first.status.value, first.note, first.finished
    outcome.traceback = next((r.traceback for r in rows if r.traceback), None)
    costs = [r.best_cost for r in rows if r.best_cost is not None]
    outcome.cost = min(costs) if costs else None
    add = outcome.breaches.append
    for run in rows:
        who = "" if len(rows) == 1 else f"{run.name}: "
        if run.status in (Status.ERROR, Status.CRASHED):
            add(Breach("runs", inst.name, f"{who}{run.status.value}: {run.note}"))
        elif run.traceback:   # prepare() raised, solve went on
            add(Breach("runs", inst.name, f"{who}{run.note}"))
        if run.status is Status.TIMEOUT:
            add(Breach("on time", inst.name, f"{who}{run.note or 'killed at the deadline'}"))
        if run.status is Status.REJECTED:
            add(Breach("valid output", inst.name, f"{who}{run.note}"))
        elif "dropped:" in run.note:
            add(Breach("valid output", inst.name, f"{who}{run.note}"))
        if run.best_solution is not None and inst.clean:
            ev = evaluate(inst.problem, run.best_solution)
            if ev.has_forbidden:
                count = ev.forbidden_node_choices + ev.forbidden_edge_entries
                add(Breach("no forbidden", inst.name, f"{who}its best plan takes {count} "
                           f"forbidden choice{'s' if count != 1 else ''} (cost >= 10**18); a "
                           f"feasible plan without any exists"))
        for text in _false_claims(run, inst):
            add(Breach("true claims", inst.name, who + text))


def _false_claims(run: Any, inst: CheckInstance) -> list[str]:
    """Each claim of the row that the runner found false or that what is known contradicts."""
    out: list[str] = []
    known = inst.optimum if inst.optimum is not None else inst.known_cost
    source = "the optimum (by enumeration)" if inst.optimum is not None else "a known plan"
    values = [(c.what(), c.kind, c.value, c.false, c.why_false) for c in run.claims]
    values += [(f"bound {b.value:,} (sent with report.bound)", "bound", b.value, False, "")
               for b in run.bounds]
    for what, kind, value, false, why in values:
        if kind == "infeasible":
            if inst.feasible:
                out.append(f"claims infeasible; a feasible plan exists")
            continue
        if false:
            out.append(f"false claim: {what}; {why}" if why else f"false claim: {what}")
        elif value is not None and known is not None and value > known:
            out.append(f"claims {what}, above {source}, cost {known:,}")
    return list(dict.fromkeys(out))


def run_instance(backend: BackendLike, inst: CheckInstance, time_limit: float,
                 memory_limit: Optional[int]) -> InstanceOutcome:
    """One portfolio run of ``backend`` alone on ``inst``; the outcome with its breaches."""
    from ..options import RunOptions
    from ..runner import run_portfolio
    from ..runner.contain import worker_stdout_to

    outcome = InstanceOutcome(inst)
    options = RunOptions(time_limit, presolve=bool(backend.capabilities.reduced), exhaustive=False,
                         early_stop=False, memory_limit=memory_limit)
    fd, path = tempfile.mkstemp(prefix="portfolio-check-stdout-")
    os.close(fd)
    try:
        with worker_stdout_to(path):
            result = run_portfolio(inst.problem, [backend], options)
        with open(path, "rb") as f:
            outcome.stdout = f.read(4000).decode("utf-8", "replace")
    finally:
        os.unlink(path)
    judge_run(outcome, result, backend.name)
    if outcome.stdout.strip():
        first = outcome.stdout.strip().splitlines()[0][:120]
        outcome.breaches.append(Breach("quiet stdout", inst.name,
                                       f"printed on stdout: {first!r}"))
    return outcome
