"""The ``toulbar2`` backend and its engine :mod:`portfolio.toulbar2` (issue 21): penalised network,
scaling, weight rule, child, CLI."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from portfolio.backend import NullReporter, Status
from portfolio.evaluate import evaluate
from portfolio.problem import Capacity, Problem
from portfolio.toulbar2 import rounds
from portfolio.toulbar2.child import KILL_GRACE, run_in_child, started_search
from portfolio.toulbar2.network import build_network, build_tables
from portfolio.toulbar2.penalty import penalised_child
from portfolio.toulbar2.scaling import MAX_SCALE, TOTAL_LIMIT, ScalingError, choose_scale
from portfolio.toulbar2.weights import broken_nodes, next_weights, update_bracket
from portfolio_plugins import toulbar2
from conftest import live_children
from tiny import brute, make_problem, scaled_costs, tiny

F = 10**18


def overload() -> Problem:
    """Two nodes live together, each with a cheap heavy and a dear light strategy; capacity 10
    fits one heavy choice only. A third node lives alone (never broken, never breakable)."""
    return make_problem(costs=[[0, 100], [0, 120], [5, 0]],
                        intervals=[(0, 2), (1, 3), (5, 6)],
                        usages=[[8, 1], [8, 1], [1, 2]],
                        edges=[[0, 1]], tables=[[0, 1, 2, 3]],
                        capacity=Capacity.uniform(10))


def solve_child(problem: Problem, weights, ub=None) -> np.ndarray:
    net = build_network(build_tables(problem), np.asarray(weights, dtype=float))
    outcome, value = run_in_child(penalised_child, (net, 1, 2.0, ub), 20.0)
    assert outcome == "ok", value
    return np.asarray(value["plan"], dtype=np.int64)


# ------------------------------------------------------------------------------------------ weights
def test_a_node_broken_at_weight_w_gets_a_higher_lower_bound():
    """Hand-made overload: at weight 0 toulbar2 picks both heavy strategies, memory overflows
    inside both nodes' intervals; the rule raises their lower bounds to w and looks above it."""
    problem = overload()
    tables = build_tables(problem)
    assert tables.breakable.tolist() == [True, True, False]
    w = 1.0
    plan = solve_child(problem, [w, w, 0.0])
    assert plan.tolist()[:2] == [0, 0]
    broken = broken_nodes(problem, plan)
    assert broken.tolist() == [True, True, False]
    lb, ub = update_bracket(np.zeros(3), np.full(3, np.inf), np.array([[w, w, 0.0]]), broken[None])
    assert lb[0] == lb[1] == w and np.isinf(ub[:2]).all()
    nxt = next_weights(lb, ub, 3, np.random.default_rng(0), tables.breakable)
    assert (nxt[:, :2] > w).all() and (nxt[:, 2] == 0).all()
    # a weight far above the cost difference per unit of memory: the light choice, unbroken
    high = 1000.0
    plan = solve_child(problem, [high, high, 0.0])
    assert evaluate(problem, plan).feasible
    assert not broken_nodes(problem, plan)[:2].any()
    lb2, ub2 = update_bracket(lb, ub, np.array([[high, high, 0.0]]),
                              broken_nodes(problem, plan)[None])
    assert (ub2[:2] == high).all() and (lb2[:2] <= high).all()
    nxt = next_weights(lb2, ub2, 3, np.random.default_rng(0), tables.breakable)
    assert (nxt[:, :2] > lb2[:2]).all() and (nxt[:, :2] <= high).all()


def test_bracket_keeps_moving_when_a_round_says_the_same_thing():
    lb, ub = np.array([2.0]), np.array([8.0])
    lb2, ub2 = update_bracket(lb, ub, np.array([[3.0], [5.0]]), np.array([[True], [True]]))
    assert lb2[0] == 5.0 and ub2[0] > 8.0          # broken throughout: upper bound grows
    lb3, ub3 = update_bracket(lb, ub, np.array([[3.0], [5.0]]), np.array([[False], [False]]))
    assert ub3[0] == 3.0 and lb3[0] < 2.0          # never broken: lower bound shrinks


@settings(max_examples=25, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=tiny())
def test_at_weight_zero_toulbar2_finds_the_cheapest_plan_ignoring_memory(problem):
    """The network is the problem's cost exactly (self-loops, hyperedges, one-node edges, parallel
    edges, forbidden entries): at weight 0 toulbar2's optimum is brute force's cheapest plan
    without forbidden choices, memory ignored."""
    scored = brute(problem)
    clean = [c for _, c, forbidden, _ in scored if not forbidden]
    if not clean:
        return
    net = build_network(build_tables(problem), np.zeros(problem.num_nodes))
    assert net.scale == 1
    outcome, value = run_in_child(penalised_child, (net, 1, 5.0, None), 30.0)
    assert outcome == "ok", value
    ev = evaluate(problem, np.asarray(value["plan"], dtype=np.int64))
    assert not ev.has_forbidden and ev.cost == min(clean)


def test_a_merged_node_pays_the_sum_of_its_intervals_excess():
    """Node 0 owns two intervals at disjoint times; strategy 1 is heavier on both: its excess is
    the sum (3 + 5), each interval against its own least usage; an interval where capacity is
    unlimited (before the capacity's first time) counts for nothing."""
    problem = make_problem(costs=[[0, 0], [0]], intervals=[(0, 1), (2, 3), (4, 5)],
                           usages=[[1, 4], [2, 7], [9]], edges=[], tables=[], owners=[0, 0, 1],
                           capacity=Capacity(np.array([0]), np.array([8])))
    tables = build_tables(problem)
    assert tables.excess.tolist() == [0.0, 8.0, 0.0]
    assert tables.breakable.tolist() == [False, True]
    late = make_problem(costs=[[0, 0]], intervals=[(0, 1), (2, 3)], usages=[[1, 4], [2, 7]],
                        edges=[], tables=[], owners=[0, 0],
                        capacity=Capacity(np.array([2]), np.array([10])))
    assert build_tables(late).excess.tolist() == [0.0, 5.0]


# ------------------------------------------------------------------------------------------ scaling
def test_scaling_refuses_rather_than_wraps():
    with pytest.raises(ScalingError):
        choose_scale(float("inf"))
    with pytest.raises(ScalingError):
        choose_scale(1e40)                          # would need a divisor above MAX_SCALE
    big = make_problem(costs=[[0, 9 * 10**17 - 1], [0, 9 * 10**17 - 1]], intervals=[(0, 1), (0, 1)],
                       usages=[[1, 1], [1, 1]], edges=[[0, 1]], tables=[[0, 9 * 10**17, 1, 2]])
    tables = build_tables(big)
    with pytest.raises(ScalingError):
        build_network(tables, np.zeros(2), max_scale=1)   # 2.7e18 does not fit in 2**50 unscaled
    net = build_network(tables, np.zeros(2))
    assert net.scale <= MAX_SCALE
    with pytest.raises(ScalingError):
        build_network(tables, np.array([np.inf, 0.0]))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=tiny())
def test_contest_magnitudes_scale_without_overflow(problem):
    """Costs near 1e13 and 1e15 and large weights: every entry is an exact integer double, the
    sum of the largest entries stays below the limit, and forbidden entries stay hard."""
    for scale in (10**13, 10**15):
        big = scaled_costs(problem, scale)
        tables = build_tables(big)
        net = build_network(tables, np.full(big.num_nodes, 1e9))
        total = 0.0
        for row in [r for r in net.unary if r is not None] + net.tables:
            finite = row[np.isfinite(row)]
            assert (finite == np.round(finite)).all() and (finite >= 0).all()
            total += finite.max() if len(finite) else 0.0
        assert total <= TOTAL_LIMIT + len(net.unary) + len(net.tables)
        # a plan without forbidden choices has a finite scaled penalised cost in toulbar2's eyes
        for plan, _, forbidden, _ in brute(big)[:20]:
            if not forbidden:
                assert net.cost_of(np.array(plan)) is not None


# ------------------------------------------------------------------------------------------ backend
def run_backend(problem: Problem, seconds: float, backend=None, options=None) -> tuple:
    """``backend`` (default: toulbar2) called directly with ``options`` (its declared ones)."""
    backend = backend or toulbar2.Toulbar2Backend()
    report = NullReporter(options)
    t0 = time.monotonic()
    result = backend.solve(problem, time.time() + seconds, 0, None, report)
    return result, report, time.monotonic() - t0


@pytest.mark.slow
@settings(max_examples=5, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=tiny())
def test_every_reported_plan_is_feasible(problem):
    # the penalty search itself, not the exact mode
    result, report, _ = run_backend(problem, 4.0, options={"exact": False})
    assert "solves=0," not in result.note   # toulbar2 ran
    for _, plan, _ in report.reports:
        assert evaluate(problem, plan).feasible
    if result.solution is not None:
        assert evaluate(problem, result.solution).feasible
    assert result.status in (Status.FEASIBLE, Status.NO_SOLUTION)


def test_backend_on_the_bundled_example(bundled_example):
    from portfolio.io import load_problem

    problem = load_problem(bundled_example)
    result, report, took = run_backend(problem, 3.0)
    assert result.status == Status.OPTIMAL and took < 4.0      # the exact mode proves it
    ev = evaluate(problem, result.solution)
    assert ev.feasible and ev.cost == 305 == result.lower_bound
    assert report.reports and all(evaluate(problem, p).feasible for _, p, _ in report.reports)


def _sleeper(net, seed, seconds, ub, start=None):
    time.sleep(60)


def test_a_child_that_overruns_is_killed_and_the_backend_still_answers():
    before = live_children()
    t0 = time.monotonic()
    assert run_in_child(_sleeper, (None, 0, 0, None), 0.5) == ("killed", None)
    assert time.monotonic() - t0 < 3.0
    backend = toulbar2.Toulbar2Backend()
    backend.child = _sleeper
    result, report, took = run_backend(overload(), 3.5, backend, {"exact": False})
    assert took < 5.0
    assert result.status == Status.FEASIBLE and evaluate(overload(), result.solution).feasible
    assert "killed=" in result.note and "killed=0" not in result.note
    assert not live_children() - before  # every killed child is gone, nothing left running


def test_scaling_error_makes_the_backend_unsupported(monkeypatch):
    from portfolio.toulbar2 import network

    monkeypatch.setattr(network, "choose_scale",
                        lambda *a, **k: (_ for _ in ()).throw(ScalingError("too big")))
    result, _, _ = run_backend(overload(), 2.0)
    assert result.status == Status.UNSUPPORTED and "too big" in result.note


def test_missing_pytoulbar2_makes_the_backend_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pytoulbar2", None)
    ok, why = toulbar2.Toulbar2Backend().available()
    assert not ok
    assert "pip install 'pytoulbar2>=" in why and "comes with iopddl-portfolio" in why
    assert toulbar2.Toulbar2Backend.meta.install_hint == "pip install 'pytoulbar2>=1.4'"


def test_in_the_default_portfolio_and_selectable_alone():
    from portfolio.registry import Registry

    registry = Registry()
    assert "toulbar2" in [b.name for b in registry.select(None)]
    assert [b.name for b in registry.select(["toulbar2"])] == ["toulbar2"]


def test_backends_lists_it(portfolio_cli):
    doc = json.loads(portfolio_cli.run("backends", "--json").stdout)
    row = [b for b in doc["backends"] if b["name"] == "toulbar2"][0]
    assert row["available"] is True


@pytest.mark.slow
def test_cli_toulbar2_on_the_bundled_example(bundled_example, portfolio_cli):
    out = portfolio_cli.run("solve", bundled_example, "-b", "toulbar2", "-t", "6", "--json",
                            "-q", "--no-exhaustive", timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["feasible"] is True and doc["cost"] >= 305


def test_an_overloading_plan_is_repaired_into_a_feasible_cheaper_one():
    """A penalised solve may return a plan that overloads memory: the polisher repairs it (the
    kernels' greedy repair) and polishes it, instead of discarding it."""
    from portfolio.generate import generate_problem
    from portfolio.kernels.engine import min_volume_plan, prepare

    problem = generate_problem(300, seed=3, forbidden_fraction=0.0)
    soff = problem.strategy_offsets
    cheapest = np.array([int(np.argmin(problem.node_costs[soff[i]:soff[i + 1]]))
                         for i in range(problem.num_nodes)], dtype=np.int64)
    assert not evaluate(problem, cheapest).feasible          # memory is what stops it
    notes: list = []
    polish = rounds.Polisher(problem, 0, notes)
    assert not notes
    fixed = polish(cheapest)
    assert fixed is not None
    ev = evaluate(problem, fixed)
    assert ev.feasible
    prep = prepare(problem)
    safe = prep.expand(min_volume_plan(prep.rm))
    assert ev.cost < evaluate(problem, safe).cost              # better than the least-memory plan
    again = polish(fixed)                                        # a feasible plan only gets cheaper
    assert again is not None and evaluate(problem, again).cost <= ev.cost


# ------------------------------------------------------------------------------------------ rules
def test_the_per_node_rule_moves_only_broken_nodes_up():
    from portfolio.toulbar2.weights import Bracketing

    rng = np.random.default_rng(0)
    breakable = np.array([True, True, True, False])
    first = np.array([[1.0, 1.1, 0.9, 1.0], [4.0, 4.2, 3.9, 4.0]])
    assert (Bracketing(first, rng, breakable).vectors()[:, 3] == 0).all()   # not breakable
    per_node = Bracketing(first, rng, breakable)
    per_node.update(first, np.array([[False, False, True, False], [False, False, False, False]]))
    mixed = per_node.vectors()
    assert (mixed[:, 2] > first[0, 2]).all() and (mixed[:, 0] <= first[0, 0]).all()


def test_prices_charge_only_where_memory_binds():
    """overload(): nodes 0 and 1 share a point where both heavy choices cannot fit, node 2 lives
    alone with room to spare. After some subgradient steps the heavy strategies of nodes 0 and 1
    pay a positive priced penalty, the light ones none, node 2 nothing at all."""
    from portfolio.kernels.engine import prepare
    from portfolio.toulbar2.prices import PriceModel

    problem = overload()
    prices = PriceModel(problem, prepare(problem), seed=0)
    prices.advance(60.0, max_steps=200)
    assert prices.steps == 200
    pen = prices.penalty()
    soff = problem.strategy_offsets
    assert (pen >= 0).all()
    assert pen[soff[0]] > 0 and pen[soff[1]] > 0            # heavy strategies priced
    assert pen[soff[0] + 1] == 0 and pen[soff[1] + 1] == 0   # the light ones are the least
    assert (pen[soff[2]:soff[3]] == 0).all()                 # no pressure where node 2 lives
    assert prices.priced_nodes(pen).tolist() == [True, True, False]


@pytest.mark.parametrize("rule", ["prices", "nodes"])
def test_each_rule_reports_only_feasible_plans(rule):
    from portfolio.generate import generate_problem

    problem = generate_problem(300, seed=5, forbidden_fraction=0.0)
    backend = toulbar2.Toulbar2Backend()
    backend.rule = rule
    # the exact mode off: the instance is small enough for it otherwise
    result, report, took = run_backend(problem, 6.0, backend, {"exact": False})
    assert f"rule={rule}," in result.note and "solves=0," not in result.note
    assert took < 7.5
    assert result.status == Status.FEASIBLE and evaluate(problem, result.solution).feasible
    assert report.reports and all(evaluate(problem, p).feasible for _, p, _ in report.reports)


def test_a_start_plan_is_followed_and_never_makes_the_answer_worse():
    """With the incumbent as every variable's preferred value, toulbar2 still returns the
    penalised optimum on small networks (it proves it), from a good and from a bad start."""
    problem = overload()
    net = build_network(build_tables(problem), np.array([1000.0, 1000.0, 0.0]))
    plain = solve_child(problem, [1000.0, 1000.0, 0.0])
    for start in (plain, np.array([0, 0, 1])):
        outcome, value = run_in_child(penalised_child, (net, 1, 2.0, None, start), 20.0)
        assert outcome == "ok", value
        assert net.cost_of(np.array(value["plan"])) == net.cost_of(plain)
    # a start that already is the optimum, with the upper bound at its cost: nothing better
    outcome, value = run_in_child(
        penalised_child, (net, 1, 2.0, net.cost_of(plain), plain), 20.0)
    assert outcome == "ok" and value["plan"] is None


@pytest.mark.slow
def test_ctrl_c_through_the_runner_ends_toulbar2_children_and_prints_the_best_plan(tmp_path,
                                                                                   portfolio_cli):
    """Ctrl-C while toulbar2's forked solver child runs (runner -> worker -> toulbar2 child): the
    command prints its best verified plan at once and exits 130, and no process it started (the
    toulbar2 child included) outlives it."""
    import os
    import signal

    import psutil

    from portfolio.generate import generate_problem
    from portfolio.io import write_problem

    instance = tmp_path / "generated.json"
    problem = generate_problem(1500, seed=7, forbidden_fraction=0.0)
    write_problem(problem, instance)
    proc = portfolio_cli.popen("solve", instance, "-b", "toulbar2", "-t", "60", "-q",
                               "--no-early-stop", start_new_session=True)
    try:
        deadline, depth = time.monotonic() + 40, 0
        while time.monotonic() < deadline and depth < 3:   # wait for a toulbar2 grandchild
            time.sleep(0.5)
            kids = psutil.Process(proc.pid).children(recursive=True)
            depth = max((len([p for p in k.parents() if p.pid != proc.pid and
                              p.pid in {c.pid for c in kids}]) + 2 for k in kids), default=0)
        assert depth >= 3, "no toulbar2 child started"
        in_session = {p.pid for p in psutil.process_iter() if _session(p) == proc.pid}
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert time.monotonic() - t0 < 5
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    plan = json.loads(out.strip().splitlines()[-1])
    assert evaluate(problem, plan).feasible
    time.sleep(1.0)
    left = [pid for pid in in_session if psutil.pid_exists(pid)
            and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running after Ctrl-C: {left}"


def _session(p) -> int:
    import os

    try:
        return os.getsid(p.pid)
    except OSError:
        return -1


@settings(max_examples=15, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(problem=tiny())
def test_the_exact_mode_proves_the_brute_force_optimum_through_the_backend(problem):
    plans = brute(problem)
    clean = [cost for _, cost, forbidden, feasible in plans if feasible and not forbidden]
    result, report, took = run_backend(problem, 4.0)
    assert took < 5.0
    if clean:
        assert result.status == Status.OPTIMAL, result.note
        assert evaluate(problem, result.solution).cost == min(clean) + problem.cost_offset \
            or evaluate(problem, result.solution).cost == min(clean)
        assert result.lower_bound == evaluate(problem, result.solution).cost
    elif not any(feasible for *_, feasible in plans):
        assert result.status in (Status.INFEASIBLE_PROVEN, Status.NO_SOLUTION)
        assert result.solution is None
    else:   # only plans with forbidden choices fit: never claimed optimal
        assert result.status != Status.OPTIMAL


def test_an_exact_bound_above_the_incumbent_is_a_disagreement_not_a_proof(bundled_example,
                                                                          monkeypatch):
    """The exact mode answering "no plan costs UB or less" while the incumbent is a verified plan
    at UB: the network and the problem disagree, so the backend notes it and claims nothing (it
    once called the incumbent optimal on that answer)."""
    from portfolio.io import load_problem
    from portfolio.toulbar2 import exact

    asked = []

    def disagreeing(problem, seconds, seed=0, ub=None, start=None, **limits):
        asked.append((ub, None if start is None else evaluate(problem, start).cost))
        return {"plan": None, "cost": None, "proven": False, "infeasible": False,
                "dual": None if ub is None else ub + 1, "timings": {}, "work": {},
                "note": f"toulbar2 proved that no plan costs {ub} or less"}

    monkeypatch.setattr(exact, "solve_exact", disagreeing)
    problem = load_problem(bundled_example)
    result, report, _ = run_backend(problem, 3.0)
    (ub, start_cost), = asked   # the exact mode ran once, bounded by its verified incumbent
    assert ub is not None and start_cost == ub
    assert result.status is not Status.OPTIMAL, result.note
    assert f"exact mode disagrees with the problem: its bound {ub + 1} is above the cost {ub}" \
        in result.note
    assert result.lower_bound is None and ub + 1 not in [b for _, b, _ in report.bounds]
    assert evaluate(problem, result.solution).cost <= ub   # the search went on from the incumbent


def _long_search(net, seed, seconds, ub, start=None):
    """Says its search started, then 'searches' until SIGVTALRM arrives (toulbar2's own way
    out), and answers."""
    import signal

    stopped = []
    signal.signal(signal.SIGVTALRM, lambda *_: stopped.append(time.monotonic()))
    started_search()
    while not stopped:
        time.sleep(0.01)
    return {"plan": [0], "stopped_at": stopped[0]}


def test_a_solve_running_into_the_cap_is_stopped_before_it_not_killed():
    t0 = time.monotonic()
    cap = t0 + 2.0
    outcome, value = run_in_child(_long_search, (None, 0, 30.0, None), 60.0, search=30.0,
                                  cap=cap)
    assert outcome == "ok", value
    assert value["stopped_at"] <= cap - KILL_GRACE + 0.3
    assert time.monotonic() - t0 < 2.5


def test_the_solve_limits_follow_the_options():
    """``first_limit`` and ``limit_step`` set the timed pace's solve limits: the first round's,
    then one step more a round, never above the cap."""
    from portfolio.toulbar2.pace import SCHEDULE, TimedPace
    from portfolio.toulbar2.settings import Settings

    settings = Settings.of({"first_limit": 4.0, "limit_step": 0.0, "other": 1})
    pace = TimedPace(NullReporter(), time.monotonic() + 100, overload(), settings.first_limit,
                     settings.limit_step)
    pace.next_round()
    assert pace.limit == 4.0                       # constant solves
    pace = TimedPace(NullReporter(), time.monotonic() + 100, overload(), settings.first_limit, 30.0)
    pace.next_round()
    assert pace.limit == SCHEDULE.limit_max        # capped


def test_both_paces_answer_the_whole_pace_protocol():
    """The engine asks one interface (:class:`Pace`); each pace answers every question of it, a
    timed one by the clock and a work one by counts, and neither answers for the other's mode."""
    import inspect

    from portfolio.toulbar2.pace import Pace, TimedPace, WorkPace
    from portfolio.work import CountingWork

    report = NullReporter()
    report.work = CountingWork(5000, 1000)
    stop = time.monotonic() + 100
    timed = TimedPace(NullReporter(), stop, overload(), 4.0, 2.0)
    work = WorkPace(report, stop, overload(), 4.0, 2.0)
    asked = {name for name, _ in inspect.getmembers(Pace, inspect.isfunction)
             if not name.startswith("_")}
    assert {"charge", "child_limits", "solved", "another_round", "exchanged"} <= asked
    for pace in (timed, work):
        assert isinstance(pace, Pace)
        assert all(callable(getattr(pace, name)) for name in asked)
    assert not timed.deterministic and work.deterministic
    assert timed.charge(10**9) and not timed.exhausted()          # the clock decides, not units
    assert timed.solved("ok", {"build_s": 0.1, "solve_s": 1.0}) == 0.0
    assert work.charge(600) and work.timings == {"units": 600.0}
    assert not work.charge(10**9) and work.exhausted() and not work.another_round()
