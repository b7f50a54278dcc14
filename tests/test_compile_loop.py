"""Issue 42, the compile loop: short budgets used to their end, a re-solve's cold part, a re-solve
that says what the change cost, and outputs whose words mean one thing each."""

from __future__ import annotations

import numpy as np
import pytest

from portfolio.backend import Backend, Capabilities, SolveResult, Status
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.progress import copies_line
from portfolio.runner import run_portfolio
from portfolio.runner.deadlines import MARGIN_FULL, deadline_plan, stop_margins
from portfolio.runner.warmstart import report_text, starts_cold

from conftest import bundled_example_path


# ------------------------------------------------------------------------------------------ margins
def test_a_short_run_uses_its_budget_and_long_ones_keep_their_margins():
    soft, hard, end = deadline_plan(100.0, 10.0)
    assert end == 110.0 and 109.4 <= soft < hard < end          # a 10 s run stops at 9.4 s or later
    for limit in (60.0, 120.0, 180.0, 240.0, 300.0):            # the contest limits: as before
        assert stop_margins(limit) == (min(4.0, 1.2 + 0.02 * limit), min(2.0, 0.8 + 0.02 * limit))
    margins = [stop_margins(t) for t in (1.0, 5.0, 10.0, 30.0, MARGIN_FULL - 1e-9, MARGIN_FULL)]
    assert all(a[0] <= b[0] + 1e-9 and a[1] <= b[1] + 1e-9 for a, b in zip(margins, margins[1:]))
    assert all(0 < hard < soft for soft, hard in margins)      # ask first, kill later


# ------------------------------------------------------------------------------------------ cold part
class Recorder(Backend):
    """Returns the start plan it was given (or the least-memory plan) and says what it got."""

    capabilities = Capabilities(warm_start=True, anytime=True)

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = "records its warm start"

    def solve(self, problem, deadline, seed, warm_start, report):
        got = "none" if warm_start is None else ",".join(map(str, np.asarray(warm_start)))
        plan = np.asarray(problem.min_usage_strategies if warm_start is None else warm_start)
        return SolveResult(Status.FEASIBLE, plan.astype(np.int64), note=got)


GIVEN = [0, 1, 0, 0, 0, 1, 2, 0]   # a feasible plan of the bundled example (cost 410)


@pytest.mark.parametrize("cold", [(), ("b",), ("a", "b")])
def test_a_resolves_cold_part_starts_without_the_warm_plan(cold):
    problem = load_problem(bundled_example_path())
    result = run_portfolio(problem, [Recorder("a"), Recorder("b")],
                           RunOptions(time_limit=3, warm_start=GIVEN, cold=cold))
    given = ",".join(map(str, GIVEN))
    for name in ("a", "b"):
        note = result.runs[name].note
        assert (note != given) == (name in cold), (name, note)
    assert result.warm_start["cold"] == sorted(cold)
    assert result.cost <= 410   # the warm plan is an incumbent of the run either way


class Watcher(Backend):
    """Reads the portfolio's best plan for a second and says which plans it saw."""

    capabilities = Capabilities(warm_start=True, anytime=True)
    name, description = "watch", "records the shared plans it reads"

    def solve(self, problem, deadline, seed, warm_start, report):
        import time

        seen = set()
        if warm_start is not None:
            seen.add(",".join(map(str, np.asarray(warm_start))))
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            plan = report.best()
            if plan is not None:
                seen.add(",".join(map(str, np.asarray(plan))))
            time.sleep(0.02)
        return SolveResult(Status.FEASIBLE, np.asarray(problem.min_usage_strategies, np.int64),
                           note=";".join(sorted(seen)))


@pytest.mark.parametrize("cold", [(), ("watch",)])
def test_a_resolves_cold_part_never_reads_the_warm_plan_or_the_warm_parts_plans(cold):
    """The cold part shares its own board: neither the warm plan nor a warm backend's plan made
    from it (``a`` reports the warm plan as its own) reaches it; the warm part reads everything."""
    problem = load_problem(bundled_example_path())
    result = run_portfolio(problem, [Recorder("a"), Watcher()],
                           RunOptions(time_limit=3, warm_start=GIVEN, cold=cold, presolve=False))
    seen = result.runs["watch"].note.split(";")
    assert (",".join(map(str, GIVEN)) in seen) == (cold == ()), seen
    assert result.cost <= 410


def test_without_a_warm_start_nobody_is_cold_and_the_default_is_named():
    assert not starts_cold("toulbar2", ())
    assert starts_cold("toulbar2", ("toulbar2",))
    problem = load_problem(bundled_example_path())
    result = run_portfolio(problem, [Recorder("a")], RunOptions(time_limit=3, cold=("a",)))
    assert result.runs["a"].note == "none"


def _far(cheap: int):
    """Two overlapping nodes whose cheap strategy (cost ``cheap``, 10 units) fits only for one of
    them under the limit of 11; the other strategy costs 10 and uses 1 unit."""
    from tiny import make_problem
    from portfolio.problem import Capacity

    return make_problem([[cheap, 10], [cheap, 10]], [(0, 2), (0, 2)], [[10, 1], [10, 1]], [], [],
                        capacity=Capacity.uniform(11))


@pytest.mark.parametrize("cheap, everyone", [(1, True), (9, False)])
def test_without_a_given_cold_part_the_repair_decides_it(cheap, everyone):
    """[0, 0] is over memory: its repair moves one node to the dear strategy, 1 + 10 against 2
    (450 % dearer: every backend starts cold) or 9 + 10 against 18 (5.6 %: the default)."""
    from portfolio.runner.warmstart import COLD, FAR_REPAIR

    problem = _far(cheap)
    result = run_portfolio(problem, [Recorder("a"), Recorder("toulbar2")],
                           RunOptions(time_limit=3, warm_start=[0, 0], presolve=False))
    assert result.warm_start["status"] == "repaired"
    rise = result.warm_start["repair"]["cost"] / (2 * cheap) - 1
    assert (rise > FAR_REPAIR) == everyone
    if everyone:
        assert result.warm_start["cold"] == ["a", "toulbar2"]
        assert "every backend starts cold" in result.warm_start["cold_why"]
        assert result.runs["a"].note == "none"              # it did not start from the plan
    else:
        assert result.warm_start["cold"] == sorted(COLD)
        assert result.warm_start["cold_why"].startswith("the default")
    given = run_portfolio(problem, [Recorder("a"), Recorder("toulbar2")],
                          RunOptions(time_limit=3, warm_start=[0, 0], cold=(), presolve=False))
    assert given.warm_start["cold"] == [] and given.warm_start["cold_why"] == "given"


def test_cold_must_be_backend_names():
    from portfolio.errors import ProblemError

    with pytest.raises(ProblemError, match="cold: expected a tuple of backend names"):
        RunOptions(cold=["a"])


# ------------------------------------------------------------------------------------------ words
def test_a_resolves_line_says_what_the_change_cost():
    doc = {"status": "repaired", "cost": None, "why": "over the memory limit", "repair":
           {"did": "3 moves", "finished": True, "cost": 1100, "seconds": 0.2, "feasible": True},
           "start_cost": 1100, "final_cost": 1020, "improvement": 80,
           "improvement_percent": 7.2727, "mapping": {"previous_cost": 1000}}
    text = report_text(doc)
    assert "the previous plan cost 1,000 on the previous problem, +10.00 % once mapped" in text
    assert "80 (7.27 %) below the plan the run started from, +2.00 % against the previous" in text
    assert "improved" not in text
    plain = report_text({**doc, "mapping": None})
    assert "previous" not in plain and "below the plan the run started from" in plain


def test_the_resolve_reports_the_previous_plans_cost(tmp_path):
    import portfolio

    problem = load_problem(bundled_example_path())
    tighter = problem.with_limit(int(problem.usage_limit) - 1)
    result = portfolio.resolve(tighter, GIVEN, problem, time_limit=3, exhaustive=False)
    mapping = result.warm_start["mapping"]
    assert mapping["previous_cost"] == portfolio.evaluate(problem, GIVEN).cost == 410


def test_copies_are_explained_and_gaps_named_apart():
    from portfolio.runner.result import BackendRun, PortfolioResult

    runs = {"toulbar2": BackendRun("toulbar2"), "toulbar2+1": BackendRun("toulbar2+1",
                                                                       backend="toulbar2", seed=1)}
    result = PortfolioResult("p", 10.0, runs, None, None, None, 1.0)
    line = copies_line(result)
    assert line.startswith("toulbar2+1 (seed 1): copies of toulbar2") and "idle" in line
    assert copies_line(PortfolioResult("p", 10.0, {"a": BackendRun("a")}, None, None, None,
                                       1.0)) is None
    from portfolio.progress import build_final_table

    headers = [c.header for c in build_final_table(result, 200).columns]
    assert "behind best" in headers and "gap" not in headers
