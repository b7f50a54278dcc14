"""Deliberately faulty backends for the runner's fault-containment tests (and one honest exact one).

Importable as a plugin module: ``PORTFOLIO_PLUGINS=faulty_backends`` with this folder on PYTHONPATH.
"""

from __future__ import annotations

import ctypes
import faulthandler
import itertools
import os
import signal
import time

import numpy as np

from portfolio.backend import Backend, BackendMeta, Capabilities, SolveResult, Status
from portfolio.evaluate import evaluate
from portfolio.hookspecs import hookimpl


class _Test(Backend):
    meta = BackendMeta(test_only=True)
    description = "test backend"


class BruteForce(_Test):
    """Honest exact backend for tiny instances: enumerates every plan."""

    name = "bruteforce"
    capabilities = Capabilities(exact=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        best = None
        for plan in itertools.product(*[range(int(k)) for k in problem.strategy_counts]):
            ev = evaluate(problem, list(plan))
            if ev.feasible and (best is None or ev.cost < best[0]):
                best = (ev.cost, np.array(plan))
                report(best[1], "enumeration")
        if best is None:
            return SolveResult(Status.INFEASIBLE_PROVEN)
        return SolveResult(Status.OPTIMAL, best[1], lower_bound=best[0])


class BruteForceReduced(BruteForce):
    """The same enumeration, on the presolved problem when the runner has one."""

    name = "bruteforce-reduced"
    capabilities = Capabilities(exact=True, reduced=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        result = super().solve(problem, deadline, seed, warm_start, report)
        result.note = f"{problem.num_nodes} nodes"
        return result


class Enumerate(BruteForce):
    """The same enumeration without claiming optimality (so a run does not stop early)."""

    name = "enumerate"
    capabilities = Capabilities()

    def solve(self, problem, deadline, seed, warm_start, report):
        result = super().solve(problem, deadline, seed, warm_start, report)
        return SolveResult(Status.FEASIBLE, result.solution)


class Raises(_Test):
    name = "raises"

    def solve(self, problem, deadline, seed, warm_start, report):
        raise RuntimeError("boom in solve")


class Hangs(_Test):
    """Reports the min-usage plan, then ignores the deadline forever."""

    name = "hangs"

    def solve(self, problem, deadline, seed, warm_start, report):
        report(problem.min_usage_strategies, "before hanging")
        while True:
            time.sleep(0.05)


class HangsSilently(_Test):
    name = "hangs-silently"

    def solve(self, problem, deadline, seed, warm_start, report):
        while True:
            time.sleep(0.05)


class Segfaults(_Test):
    name = "segfaults"

    def solve(self, problem, deadline, seed, warm_start, report):
        faulthandler.disable()  # pytest enables it; keep the expected crash quiet
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return SolveResult(Status.NO_SOLUTION)


class Exits(_Test):
    name = "exits"

    def solve(self, problem, deadline, seed, warm_start, report):
        os.kill(os.getpid(), signal.SIGKILL)
        return SolveResult(Status.NO_SOLUTION)


class WrongLength(_Test):
    name = "wrong-length"

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, np.zeros(problem.num_nodes + 1, dtype=np.int64))


class OutOfRange(_Test):
    name = "out-of-range"

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = np.zeros(problem.num_nodes, dtype=np.int64)
        plan[-1] = problem.strategy_counts[-1]
        report(plan, "one past the last strategy")
        return SolveResult(Status.FEASIBLE, plan)


class Infeasible(_Test):
    """Reports the cheapest plan ignoring memory (infeasible on the bundled example) as feasible."""

    name = "infeasible"

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = np.array([0, 1, 0, 1, 0, 0, 1, 1])  # cost 250, peak above the limit of 70
        report(plan, "cheap but over the limit")
        return SolveResult(Status.FEASIBLE, plan)


class FalseOptimum(_Test):
    """Claims optimality for a feasible but poor plan, after the honest backends had time to finish."""

    name = "false-optimum"
    capabilities = Capabilities(exact=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        time.sleep(1.0)
        return SolveResult(Status.OPTIMAL, np.array(problem.min_usage_strategies))


class FalseBound(_Test):
    name = "false-bound"

    def solve(self, problem, deadline, seed, warm_start, report):
        time.sleep(1.0)
        return SolveResult(Status.NO_SOLUTION, lower_bound=10**9)


class BadStatus(_Test):
    name = "bad-status"

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.RUNNING, np.array(problem.min_usage_strategies))


class WarmStartSpy(_Test):
    """Waits for a shared incumbent via report.best() and returns it, proving cooperation works."""

    name = "warm-spy"
    capabilities = Capabilities(warm_start=True, anytime=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        while time.time() < deadline:
            best = report.best()
            if best is not None:
                return SolveResult(Status.FEASIBLE, best, note="got a shared plan")
            time.sleep(0.02)
        return SolveResult(Status.NO_SOLUTION, note="never received a plan")


FAULTY = [Raises(), Hangs(), HangsSilently(), Segfaults(), Exits(), WrongLength(),
       OutOfRange(), Infeasible(), FalseOptimum(), FalseBound(), BadStatus()]
ALL = [BruteForce(), BruteForceReduced(), Enumerate(), *FAULTY, WarmStartSpy()]


@hookimpl
def portfolio_backends():
    return ALL


# ---------------------------------------------------------------------------------- issue 12 and 14
class ClaimsInfeasible(_Test):
    """An exact backend that claims infeasibility of any instance, at once."""

    name = "claims-infeasible"
    capabilities = Capabilities(exact=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.INFEASIBLE_PROVEN)


class QuickFalseOptimum(_Test):
    """An exact backend that calls the min-usage plan optimal at once (465 on the example)."""

    name = "quick-false-optimum"
    capabilities = Capabilities(exact=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.OPTIMAL, np.array(problem.min_usage_strategies),
                           lower_bound=int(evaluate(problem, problem.min_usage_strategies).cost))


class OptimumThenFalseBound(BruteForce):
    """Reports the true optimum (verified), then claims a lower bound above it."""

    name = "optimum-then-false-bound"
    capabilities = Capabilities()

    def solve(self, problem, deadline, seed, warm_start, report):
        result = super().solve(problem, deadline, seed, warm_start, report)
        return SolveResult(Status.FEASIBLE, result.solution, lower_bound=10**9)


class OddBound(BruteForce):
    """Finds the optimum honestly, then returns it with a malformed lower bound (set per instance)."""

    capabilities = Capabilities()

    def __init__(self, bound, name="odd-bound"):
        self.bound, self.name = bound, name

    def solve(self, problem, deadline, seed, warm_start, report):
        result = super().solve(problem, deadline, seed, warm_start, report)
        return SolveResult(Status.FEASIBLE, result.solution, lower_bound=self.bound)


class FloodsReports(_Test):
    """Reports plans as fast as it can until the deadline (the reporter must throttle them)."""

    name = "floods"
    capabilities = Capabilities(anytime=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        plan = np.array(problem.min_usage_strategies)
        n = 0
        while time.time() < deadline:
            report(plan, f"flood {n}")
            n += 1
        return SolveResult(Status.FEASIBLE, plan, note=f"{n} reports")


class SendsGarbage(_Test):
    """Writes malformed messages straight into its pipe (a plugin can reach the reporter's conn)."""

    name = "sends-garbage"

    def __init__(self, message=("incumbent", float("nan"), None, None), name="sends-garbage"):
        self.message, self.name = message, name

    def solve(self, problem, deadline, seed, warm_start, report):
        report.conn.send(self.message)
        time.sleep(0.5)
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies))


class PrepareHangs(BruteForce):
    name = "prepare-hangs"
    capabilities = Capabilities()

    def prepare(self):
        while True:
            time.sleep(0.05)


class PrepareRaises(Enumerate):
    name = "prepare-raises"

    def prepare(self):
        raise RuntimeError("boom in prepare")


class PrepareSegfaults(Enumerate):
    name = "prepare-segfaults"

    def prepare(self):
        faulthandler.disable()
        ctypes.string_at(0)


class Spin(_Test):
    """Burns CPU until the deadline; its note says how many cores the runner gave it."""

    capabilities = Capabilities(anytime=True)

    def __init__(self, name="spin", threads=False):
        self.name = name
        if threads:
            self.capabilities = Capabilities(anytime=True, threads=True)

    def solve(self, problem, deadline, seed, warm_start, report):
        from portfolio.backend import allotted_cores

        report(np.array(problem.min_usage_strategies), "spinning")
        x = 0
        while time.time() < deadline - 0.05:
            for _ in range(10000):
                x += 1
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies),
                           note=f"cores={allotted_cores()} seed={seed}")


class RandomSpin(Spin):
    def __init__(self, name="random-spin"):
        super().__init__(name)
        self.capabilities = Capabilities(anytime=True, randomized=True)


NEW = [ClaimsInfeasible(), QuickFalseOptimum(), OptimumThenFalseBound(), FloodsReports(),
       SendsGarbage(), PrepareHangs(), PrepareRaises(), PrepareSegfaults(), Spin(), Spin("spin-2")]
ALL.extend(NEW)


# ---------------------------------------------------------------------------------------- issue 47
class StopsOnSafetyNet(_Test):
    """Returns the least-memory plan saying its wall-clock safety net stopped it
    (``SolveResult.safety_net``), in a timed run too."""

    name = "safety-net-stop"

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.FEASIBLE, np.array(problem.min_usage_strategies),
                           note="the clock stopped it", safety_net=True)


class ClaimsBound(_Test):
    """Not exact: claims ``bound`` as a lower bound, with no plan of its own (so that whoever finds
    a plan of that cost is not its finder)."""

    capabilities = Capabilities()

    def __init__(self, bound, name="claims-bound"):
        self.bound, self.name = bound, name

    def solve(self, problem, deadline, seed, warm_start, report):
        return SolveResult(Status.NO_SOLUTION, lower_bound=self.bound, note="a bound, no plan")


class ClaimsOptimal(BruteForce):
    """Not exact: enumerates the optimum (a true claim) and returns it as ``OPTIMAL``."""

    name = "claims-optimal"
    capabilities = Capabilities()


ALL.extend([StopsOnSafetyNet(), ClaimsOptimal()])


# ---------------------------------------------------------------------------------------- issue 50
class Improves(_Test):
    """Anytime and randomized: every ``every`` seconds it reports a cheaper feasible plan of its own
    (random plans, sorted by cost: each far from the one before, a region of its own), and spins in
    between; its note says its nice value at the end (its worker's, read from /proc)."""

    capabilities = Capabilities(anytime=True, randomized=True)

    def __init__(self, name="improves", every=0.1):
        self.name, self.every = name, every

    def solve(self, problem, deadline, seed, warm_start, report):
        rng = np.random.default_rng(seed)
        counts = problem.strategy_counts
        plans = []
        for _ in range(400):
            plan = (rng.random(problem.num_nodes) * counts).astype(np.int64)
            ev = evaluate(problem, plan)
            if ev.feasible and not ev.has_forbidden:
                plans.append((ev.cost, plan))
        plans.sort(key=lambda cp: -cp[0])
        best, due, x = None, time.monotonic(), 0
        while time.time() < deadline - 0.05:
            if plans and time.monotonic() >= due:
                cost, plan = plans.pop(0)
                if best is None or cost < best[0]:
                    best = (cost, plan)
                    report(plan, "improved")
                due = time.monotonic() + self.every
            for _ in range(5000):
                x += 1
        return SolveResult(Status.FEASIBLE, None if best is None else best[1],
                           note=f"nice={nice_of(os.getpid())}")


class Stalls(_Test):
    """Anytime: spins to the deadline and finds nothing (a backend that does not improve); its
    note says its nice value at the end."""

    capabilities = Capabilities(anytime=True)

    def __init__(self, name="stalls"):
        self.name = name

    def solve(self, problem, deadline, seed, warm_start, report):
        x = 0
        while time.time() < deadline - 0.05:
            for _ in range(5000):
                x += 1
        return SolveResult(Status.NO_SOLUTION, note=f"nice={nice_of(os.getpid())}")


class Proves(Stalls):
    """Exact and anytime: declares a proof search (its model fits) and spins, finding nothing."""

    capabilities = Capabilities(exact=True, anytime=True)

    def __init__(self, name="proves"):
        self.name = name

    def solve(self, problem, deadline, seed, warm_start, report):
        report.demand("proof", "full model")
        return super().solve(problem, deadline, seed, warm_start, report)


def nice_of(pid: int) -> int:
    """A process's nice value, field 19 of /proc/PID/stat (after the command's closing bracket)."""
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[16])
