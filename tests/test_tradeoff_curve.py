"""``portfolio tradeoff`` where a user decides: default budgets around the file's limit, the
marginal price of memory, plans taken from a larger budget's run said out loud, ``report`` on a
tradeoff run, ``--plot`` without matplotlib, ``Problem.with_limit``, the curve's picture.

Most tests build their rows or fake the runs, so they are quick and exact; the end-to-end ones run
the bundled example (432 plans, each budget settled by scoring them all)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import bench_path, extra
from portfolio.cli import cli
from portfolio.cli.tradeoff import progress_line
from portfolio.errors import ProblemError
from portfolio.evaluate import evaluate
from portfolio.memory import tradeoff as tradeoff_module
from portfolio.memory.budgets import POINTS, WINDOW, at_budget, default_budgets
from portfolio.memory.storage import save_tradeoff
from portfolio.options import RunOptions
from portfolio.problem import Capacity
from portfolio.report.tradeoff import GIB, curve_fields, footnotes, taken_over
from portfolio.testing import PortfolioCli
from tiny import make_problem

K_LIMIT, K_LEAST, K_FREE = 472_141_920, 429_430_076, 6_316_275_212
"""K's limit, its certified least peak (met by the least-memory plan) and the peak of the cheapest
unconstrained plan of a 5-minute tradeoff (docs/benchmarks/budgets.md)."""


def within(budgets: list[int], limit: int, lo: float, hi: float) -> list[int]:
    return [b for b in budgets if lo * limit <= b <= hi * limit]


# ------------------------------------------------------------------------------------------ budgets
def test_k_default_budgets_meet_the_target():
    """Issue 42's target: at least half the default budgets within 1.0-2.0x the file's limit."""
    budgets, why = default_budgets(K_LEAST, K_FREE, K_LIMIT, POINTS)
    assert len(budgets) == POINTS and budgets == sorted(set(budgets))
    assert budgets[0] == K_LEAST and budgets[-1] == K_FREE and K_LIMIT in budgets
    assert 2 * len(within(budgets, K_LIMIT, 1.0, 2.0)) >= len(budgets), budgets
    assert len(within(budgets, K_LIMIT, WINDOW[0], WINDOW[1])) == POINTS - 1   # all but the top end
    assert "around the file's limit" in why


@pytest.mark.slow
def test_k_default_budgets_from_the_file_itself():
    """The same with the least peak and the limit read from K (the least-memory plan and the
    certified bound: a couple of seconds, no solve)."""
    from portfolio.api import load
    from portfolio.memory.bound import least_peak_bound
    from portfolio.memory.explain import least_peak_plan
    from portfolio.memory.peak import peak_report

    problem = load(bench_path("K"))
    low = peak_report(problem, least_peak_plan(problem)).peak
    certified = least_peak_bound(problem).value
    assert certified <= low <= problem.usage_limit
    budgets, _ = default_budgets(low, K_FREE, problem.usage_limit)
    assert 2 * len(within(budgets, problem.usage_limit, 1.0, 2.0)) >= len(budgets)
    assert min(budgets) >= certified   # no budget below the certified least peak is proposed


def test_window_budgets_are_denser_near_the_limit():
    budgets, _ = default_budgets(40, 10_000, 1000, 12)
    above = [b for b in budgets if 1000 <= b <= WINDOW[1] * 1000]
    gaps = np.diff(above)
    assert len(above) >= 5 and bool(np.all(np.diff(gaps) > 0)), above   # the steps grow
    assert above[1] - 1000 < 0.05 * 1000    # the first step above the limit is small
    assert max(above) == WINDOW[1] * 1000   # the window's top is a budget
    assert any(WINDOW[0] * 1000 <= b < 1000 for b in budgets)   # and a little below the limit


def test_a_tiny_instance_with_known_least_peak_and_limit(bundled_example):
    """The bundled example: least peak 40 (certified), limit 70, cheapest plan's peak 95."""
    from portfolio.api import load
    from portfolio.memory.bound import least_peak_bound

    problem = load(bundled_example)
    assert least_peak_bound(problem).value == 40 and problem.usage_limit == 70
    budgets, _ = default_budgets(40, 95, 70)
    assert budgets[0] == 40 and budgets[-1] == 95 and 70 in budgets
    assert all(63 <= b <= 95 for b in budgets[1:])   # the rest within 0.9x .. the top end
    assert len(budgets) == POINTS


def test_no_limit_spreads_on_a_log_scale_and_says_so():
    budgets, why = default_budgets(100, 100_000, None, 4)
    assert budgets == [100, 1000, 10_000, 100_000]
    assert why.startswith("no memory limit in the file")


def test_a_limit_that_does_not_bind_is_said():
    budgets, why = default_budgets(100, 10_000, 20_000, 3)
    assert budgets == [100, 1000, 10_000] and "does not bind" in why


def test_a_limit_below_the_least_peak_is_its_own_row_and_the_window_starts_at_the_least_peak():
    budgets, why = default_budgets(1000, 100_000, 800, 6)
    assert budgets[0] == 800 and budgets[1] == 1000 and budgets[-1] == 100_000
    assert all(1000 < b <= 1500 for b in budgets[2:-1]) and "below it" in why


def test_an_unknown_top_end_falls_back_to_the_window():
    budgets, why = default_budgets(900, 900, 1000, 6)   # the no-limit run found nothing cheaper
    assert budgets[0] == 900 and budgets[-1] == 1500 and 1000 in budgets
    assert "found no plan cheaper" in why


# ------------------------------------------------------------------------------------------ prices
def rows(*pairs, limit=None) -> list[dict]:
    return [{"budget": b, "cost": c, "own_limit": b == limit} for b, c in pairs]


def test_marginal_price_of_memory():
    limit = 4 * GIB
    out = curve_fields(rows((2 * GIB, None), (4 * GIB, 1000), (5 * GIB, 700), (7 * GIB, 500),
                            limit=limit), limit)
    first, at, one, two = out[1], out[1], out[2], out[3]
    assert out[0]["saved_per_gib"] is None and out[0]["multiple"] == 0.5
    assert first["saved"] is None and at["cost_vs_limit_percent"] == 0.0
    assert one["saved"] == 300 and one["saved_per_gib"] == 300.0      # 300 saved over 1 GiB
    assert one["saved_per_limit_percent"] == 300 / 25                 # 1 GiB is 25 % of the limit
    assert two["saved_per_gib"] == 100.0 and two["cost_vs_limit_percent"] == -50.0
    assert two["multiple"] == 1.75


def test_prices_skip_budgets_without_a_plan_and_need_no_limit():
    out = curve_fields(rows((GIB, 900), (2 * GIB, None), (3 * GIB, 500)), None)
    assert out[2]["saved"] == 400 and out[2]["saved_per_gib"] == 200.0   # from 1 GiB, 2 GiB away
    assert out[2]["saved_per_limit_percent"] is None and out[2]["multiple"] is None
    assert out[2]["cost_vs_limit_percent"] is None


# ------------------------------------------------------------------------------------------ monotone
def three_plans():
    """Two nodes live together: [0,0] costs 20 and peaks at 8, [1,0] 10 at 10, [1,1] 0 at 12."""
    return make_problem(costs=[[10, 0], [10, 0]], intervals=[(0, 2), (0, 2)],
                        usages=[[4, 6], [4, 6]], edges=[], tables=[],
                        capacity=Capacity.uniform(10))


def ran(plan, claims=(), winner="finder", infeasible_by=None):
    """A run's result as the tradeoff reads it: its plan, its standing claims, who found the plan
    (a row of backend ``finder``), whether an exact backend claimed the budget infeasible."""
    return SimpleNamespace(solution=None if plan is None else np.array(plan), claims=list(claims),
                           best_bound=max(claims, key=lambda c: (c.value, c.exact), default=None),
                           winner=winner, runs={winner: SimpleNamespace(backend=winner)},
                           infeasible_proven_by=infeasible_by)


def bound(value, source, exact):
    from portfolio.runner.claims import LOWER_BOUND, Claim

    return Claim(LOWER_BOUND, source, source, value, 1.0, exact)


def test_a_cheaper_plan_from_a_larger_budgets_run_is_told_and_marked(monkeypatch):
    problem = three_plans()
    answers = {10: [0, 0], 20: [1, 0]}   # the run at 10 misses [1, 0]; the run at 20 finds it

    def fake_run(prob, budget, backends, options, seconds, warm):
        return ran(answers[budget])

    monkeypatch.setattr(tradeoff_module, "_one_run", fake_run)
    told = []
    out = tradeoff_module.run_tradeoff(problem, [], RunOptions(10, presolve=False), [10, 20],
                                       on_point=lambda p: told.append(
                                           (p.budget, p.cost, p.revised, progress_line(p))))
    assert [t[:3] for t in told] == [(10, 20, False), (20, 10, False), (10, 10, True)]
    assert "now 10: a cheaper plan of the run at budget 20 (peak 10) fits it" in told[2][3]
    low = out.points[0]
    assert (low.cost, low.run_cost, low.source, low.found_at) == (10, 20, "larger", 20)
    assert low.taken_over_run and not out.points[1].taken_over_run
    doc = out.to_dict()
    assert taken_over(doc["rows"][0]) and doc["rows"][0]["source"] == "larger"
    notes = footnotes(doc)
    assert len(notes) == 1 and "its own run answered 20" in notes[0]


def test_an_equal_cost_is_credited_to_the_budgets_own_run(monkeypatch):
    problem = three_plans()
    monkeypatch.setattr(tradeoff_module, "_one_run", lambda prob, budget, *a: ran([1, 0]))
    out = tradeoff_module.run_tradeoff(problem, [], RunOptions(10, presolve=False), [10, 12])
    assert [p.source for p in out.points] == ["own", "own"]
    assert not any(p.taken_over_run for p in out.points)


def test_budgets_below_the_certified_least_peak_are_not_solved(monkeypatch):
    problem = three_plans()   # every plan peaks at 8 or more
    calls = []
    monkeypatch.setattr(tradeoff_module, "_one_run", lambda prob, budget, *a: calls.append(budget)
                        or ran([0, 0]))
    told = []
    out = tradeoff_module.run_tradeoff(problem, [], RunOptions(10, presolve=False), [7, 8],
                                       on_point=lambda p: told.append(progress_line(p)))
    assert calls == [8] and out.points[0].status == "infeasible"
    assert "below the certified least peak 8" in told[0]


# ------------------------------------------------------------------------------------- proof words
def trade(monkeypatch, results: dict, budgets: list[int], told: list = None):
    """The tradeoff of ``three_plans`` at ``budgets``, each budget's run answering ``results``."""
    monkeypatch.setattr(tradeoff_module, "_one_run", lambda prob, budget, *a: results[budget])
    return tradeoff_module.run_tradeoff(
        three_plans(), [], RunOptions(10, presolve=False), budgets,
        on_point=None if told is None else lambda p: told.append(progress_line(p)))


@pytest.mark.parametrize("exact", [True, False])
def test_a_point_is_optimal_only_by_an_exact_bound(monkeypatch, exact):
    """Issue 47: the runner's rule per point. ``bounder`` (exact or not) claims 10 at budget 10,
    where ``finder``'s plan [1, 0] costs 10."""
    out = trade(monkeypatch, {10: ran([1, 0], [bound(10, "bounder", exact)])}, [10])
    point = out.points[0]
    assert (point.cost, point.bound, point.bound_by, point.bound_exact) == (10, 10, "bounder", exact)
    if exact:
        assert point.status == "optimal" and point.claim is None
        assert point.proof == "proven optimal: plan by finder meets the bound of bounder"
    else:
        assert point.status == "feasible" and point.proof is None
        assert point.claim == "claimed optimal by bounder (not exact): plan by finder meets its bound"
    row = out.to_dict()["rows"][0]
    assert row["status"] == point.status and row["claim"] == point.claim
    assert row["bound_exact"] is exact


def test_a_bound_a_cheaper_verified_plan_contradicts_is_flagged_and_left_out(monkeypatch):
    """The run at 12 claims 10 (exact), but the run at 14 finds [1, 1], cost 0 at peak 12: the
    bound is false at 12, and carried down it would have called budget 10 optimal."""
    out = trade(monkeypatch, {10: ran([1, 0]), 12: ran([1, 0], [bound(10, "bounder", True)]),
                              14: ran([1, 1])}, [10, 12, 14])
    at10, at12, at14 = out.points
    assert (at12.cost, at12.status, at12.bound) == (0, "feasible", None)
    assert at12.false_bounds == ["lower bound 10 by bounder (run at budget 12) is false: a plan of "
                                 "cost 0 (peak 12) fits budget 12"]
    assert (at10.cost, at10.status, at10.bound) == (10, "feasible", None)   # not carried down
    assert at14.bound is None and at14.false_bounds == []
    rows = out.to_dict()["rows"]
    assert rows[1]["false_bounds"] == at12.false_bounds
    assert any("is false" in line for line in footnotes(out.to_dict()))


def test_an_exact_bound_carried_from_a_larger_budget_proves_a_smaller_one(monkeypatch):
    out = trade(monkeypatch, {10: ran([1, 0]), 12: ran([1, 0], [bound(10, "bounder", True)])},
                [10, 12])
    assert [(p.cost, p.status, p.bound) for p in out.points] == [(10, "optimal", 10),
                                                                 (10, "optimal", 10)]


def test_an_infeasible_point_is_refuted_by_a_plan_found_later(monkeypatch):
    """The run at 10 ends with an exact backend's infeasibility claim; the run at 12 finds [1, 0],
    peak 10: it fits budget 10, so budget 10 is not infeasible. (No least-peak plan here: it
    would fit budget 10 and refute the claim at once.)"""
    monkeypatch.setattr(tradeoff_module, "least_peak_plan", lambda problem: None)
    told: list[str] = []
    out = trade(monkeypatch, {10: ran(None, infeasible_by="liar"), 12: ran([1, 0])}, [10, 12],
                told)
    low = out.points[0]
    assert (low.status, low.cost, low.peak) == ("feasible", 10, 10)
    assert low.refuted == ("infeasible (claimed by liar) refuted: the plan of the run at budget "
                           "12 (peak 10) fits")
    assert told[0].startswith("budget 10 (1.000x the limit): infeasible (claimed by liar)")
    assert "now 10: infeasible (claimed by liar) refuted" in told[-1], told
    assert out.to_dict()["rows"][0]["refuted"] == low.refuted
    assert any("refuted" in line for line in footnotes(out.to_dict()))


# ------------------------------------------------------------------------------------------ report
def saved_doc() -> dict:
    limit = 4 * GIB
    rows_ = [{"budget": 3 * GIB, "cost": None, "bound": None, "status": "infeasible", "plan": None,
              "peak": None, "found_at": None, "source": None, "run_cost": None,
              "proof": "below the certified least peak", "seconds": 0.0, "own_limit": False},
             {"budget": limit, "cost": 1000, "bound": 900, "status": "feasible", "plan": [0],
              "peak": limit, "found_at": 5 * GIB, "source": "larger", "run_cost": 1100,
              "proof": None, "seconds": 1.0, "own_limit": True},
             {"budget": 5 * GIB, "cost": 700, "bound": 700, "status": "optimal", "plan": [1],
              "peak": 5 * GIB, "found_at": 5 * GIB, "source": "own", "run_cost": 700,
              "proof": None, "seconds": 1.0, "own_limit": False}]
    return {"problem": "toy", "limit": limit, "time_limit": 2.0, "elapsed": 2.0,
            "least_peak_bound": {"value": 3 * GIB + 1}, "rows": curve_fields(rows_, limit),
            "notes": ["budgets given"]}


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


def test_report_on_a_tradeoff_run_shows_the_tradeoff_not_a_leaderboard(tmp_path):
    folder = save_tradeoff(saved_doc(), "toy.json", 0, tmp_path, "t")
    res = invoke("report", folder)
    assert res.exit_code == 0, res.output
    assert "cost against memory budget" in res.stderr and "saved per GiB" in res.stderr
    assert "300" in res.stderr and "run at 1.250x †" in res.stderr   # price; the dagger
    assert "its own run answered 1,100" in res.stderr
    for leaderboard_word in ("points", "vs best", "rank"):
        assert leaderboard_word not in res.stderr
    doc = json.loads(invoke("report", folder, "--format", "json").stdout)
    assert [r["budget"] for r in doc["rows"]] == [3 * GIB, 4 * GIB, 5 * GIB]
    assert doc["rows"][2]["saved_per_gib"] == 300.0 and doc["limit"] == 4 * GIB
    csv_text = invoke("report", folder, "--format", "csv").stdout
    assert csv_text.splitlines()[0].startswith("problem,budget,multiple,cost")
    assert "**4,294,967,296**" in invoke("report", folder, "--format", "markdown").stdout


def test_report_refuses_leaderboard_options_and_mixed_runs(tmp_path):
    folder = save_tradeoff(saved_doc(), "toy.json", 0, tmp_path, "t")
    res = invoke("report", folder, "--at", "1")
    assert res.exit_code == 2 and "--at: not for a tradeoff run" in res.stderr
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "results.jsonl").write_text(json.dumps(
        {"instance": "toy", "configuration": "a", "status": "feasible", "cost": 5,
         "feasible": True}) + "\n")
    res = invoke("report", folder, bench)
    assert res.exit_code == 2 and "is a tradeoff run and" in res.stderr


def test_report_plot_draws_the_curve(tmp_path, monkeypatch):
    matplotlib = extra("matplotlib")
    monkeypatch.setitem(matplotlib.rcParams, "svg.fonttype", "none")   # texts readable in the SVG
    folder = save_tradeoff(saved_doc(), "toy.json", 0, tmp_path, "t")
    res = invoke("report", folder, "--plot")
    assert res.exit_code == 0, res.output
    svg = (folder / "plots" / "tradeoff-toy.svg").read_text()
    png = (folder / "plots" / "tradeoff-toy.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    for text in ("memory budget, GiB", "multiple of the file", "below the certified least peak",
                 "the file&#x27;s limit (4 GiB)", "optimal (cost meets its bound)",
                 "lower bound (holds for every smaller budget)"):
        assert text in svg.replace("'", "&#x27;"), text
    assert "every budget" not in svg   # one panel: the budgets span less than a decade


def test_a_curve_spanning_decades_gets_a_log_axis_and_a_panel_near_the_limit(tmp_path,
                                                                            monkeypatch):
    matplotlib = extra("matplotlib")
    monkeypatch.setitem(matplotlib.rcParams, "svg.fonttype", "none")
    from portfolio.report.tradeoff_plot import write_tradeoff_plot

    budgets, _ = default_budgets(K_LEAST, K_FREE, K_LIMIT)
    costs = list(range(4000, 4000 - 300 * len(budgets), -300))
    doc = {"problem": "K-like", "limit": K_LIMIT, "least_peak_bound": {"value": K_LEAST},
           "rows": curve_fields([{"budget": b, "cost": c, "bound": c - 50, "status": "feasible",
                                  "own_limit": b == K_LIMIT} for b, c in zip(budgets, costs)],
                                K_LIMIT)}
    written = write_tradeoff_plot(doc, tmp_path)
    svg = next(p for p in written if p.suffix == ".svg").read_text()
    assert "every budget" in svg and "near the file" in svg


# ------------------------------------------------------------------------------------------ --plot
def _without_matplotlib(cli: PortfolioCli, folder: Path) -> PortfolioCli:
    """Commands in which ``import matplotlib`` fails, as on the plain install: a package of that
    name raising ImportError, first on their path."""
    (folder / "matplotlib").mkdir(parents=True)
    (folder / "matplotlib" / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    return cli.configured(path=[folder], timeout=60)


def test_tradeoff_plot_without_matplotlib_fails_at_once(tmp_path, bundled_example, portfolio_cli):
    runs = tmp_path / "runs"
    runs.mkdir()
    proc = _without_matplotlib(portfolio_cli, tmp_path / "blocked").run(
        "tradeoff", bundled_example, "--plot", "-t", "60", "--runs-dir", runs)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --plot needs matplotlib"), lines
    assert "pip install 'iopddl-portfolio[plot]'" in lines[0]
    assert not any(runs.iterdir())   # nothing solved, nothing saved


def test_report_plot_without_matplotlib_on_a_tradeoff_run(tmp_path, portfolio_cli):
    folder = save_tradeoff(saved_doc(), "toy.json", 0, tmp_path, "t")
    proc = _without_matplotlib(portfolio_cli, tmp_path / "blocked").run("report", folder, "--plot")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: --plot needs matplotlib")


def test_api_plot_without_matplotlib_raises_before_solving(tmp_path, bundled_example,
                                                          monkeypatch):
    import portfolio

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(tradeoff_module, "run_tradeoff", lambda *a, **k: pytest.fail("solved"))
    with pytest.raises(ProblemError, match="--plot needs matplotlib"):
        portfolio.tradeoff(bundled_example, plot=True, runs_dir=tmp_path, time_limit=5)


# ------------------------------------------------------------------------------------------ CLI
def test_cli_default_tradeoff_of_the_example(tmp_path, bundled_example, portfolio_cli):
    res = portfolio_cli.run("tradeoff", bundled_example, "-t", "10", "--json",
                            "--runs-dir", tmp_path, "--name", "d")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    budgets = [r["budget"] for r in doc["rows"]]
    assert budgets[0] == doc["least_peak_bound"]["value"] == 40 and 70 in budgets
    assert "around the file's limit" in " ".join(doc["notes"])
    priced = [r for r in doc["rows"][1:] if r["cost"] is not None]
    for before, r in zip(doc["rows"], doc["rows"][1:]):
        if before["cost"] is not None and r["cost"] is not None:
            assert r["saved_per_gib"] == round((before["cost"] - r["cost"]) * GIB
                                               / (r["budget"] - before["budget"]), 3)
    assert priced and "saved per byte" in res.stderr and "x limit" in res.stderr
    for r in doc["rows"]:   # each progress line's last word on a budget is the table's cost
        said = [line for line in res.stderr.splitlines()
                if line.startswith(f"budget {r['budget']:,} (")]
        assert said and f"{r['cost']:,}" in said[-1], (r, said)


# ------------------------------------------------------------------------------------------ with_limit
def test_with_limit_is_a_new_problem_sharing_the_arrays():
    problem = three_plans()
    looser = problem.with_limit(12)
    assert looser is not problem and looser.usage_limit == 12 and problem.usage_limit == 10
    assert np.shares_memory(looser.node_costs, problem.node_costs)
    assert not evaluate(problem, [1, 1]).feasible and evaluate(looser, [1, 1]).feasible
    assert problem.with_limit(None).capacity.is_unlimited
    assert problem.with_limit(np.int64(9)).usage_limit == 9
    assert at_budget(problem, 12).usage_limit == 12   # the memory modules' name for it


def test_with_limit_replaces_a_capacity_that_varies_over_time():
    p = make_problem(costs=[[1]], intervals=[(0, 3)], usages=[[5]], edges=[], tables=[],
                     capacity=Capacity(np.array([0, 2]), np.array([10, 3])))
    assert p.usage_limit is None and not evaluate(p, [0]).feasible
    assert evaluate(p.with_limit(5), [0]).feasible


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (2**63, ValueError), (1.5, TypeError),
                                        ("10", TypeError), (True, TypeError)])
def test_with_limit_refuses_what_is_no_limit(bad, error):
    with pytest.raises(error, match="with_limit"):
        three_plans().with_limit(bad)
