"""Exact presolve (issue #6): every reduction alone and all together, against brute force.

The brute force here is independent of the library: it enumerates every plan of a tiny instance and
scores it with plain Python over every integer time. For each instance we check that

* the best feasible plan without forbidden choices costs the same in the original and the reduced
  instance (``cost_offset`` included), or that neither has one;
* every plan ``x`` of the reduced instance expands to an original plan with the same feasibility, the
  same "has a forbidden choice" status and, without forbidden choices, exactly the same cost;
* ``restrict(expand(x)) == x``;
* an infeasibility proof is only given when brute force finds no feasible plan without forbidden choices.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from portfolio.evaluate import evaluate
from portfolio.presolve import SWITCHES, Presolved, presolve, read_extended, write_extended
from portfolio.problem import Capacity, Problem
from conftest import bench_path
from tiny import best, brute, make_problem, tiny  # noqa: F401 -- shared with other exact tests

F = 10**18


def check(problem: Problem, pre: Presolved, original_scores=None) -> None:
    """The whole contract of ``pre`` against brute force on ``problem``."""
    scores = original_scores if original_scores is not None else brute(problem)
    if pre.infeasible is not None:
        assert pre.reduced is None
        assert best(scores) is None, f"claimed infeasible ({pre.infeasible}) but a plan exists"
        return
    reduced = pre.reduced
    assert pre.offset == reduced.cost_offset
    red_scores = brute(reduced)
    assert best(red_scores) == best(scores)
    for x, _, _, _ in red_scores:
        y = pre.expand(x)
        assert y.dtype == np.int64 and len(y) == problem.num_nodes
        a, b = evaluate(problem, y), evaluate(reduced, x)
        assert a.feasible == b.feasible, (x, y.tolist())
        assert a.has_forbidden == b.has_forbidden, (x, y.tolist())
        if not b.has_forbidden:
            assert a.cost == b.cost, (x, y.tolist())
        assert pre.restrict(y).tolist() == list(x)


# ------------------------------------------------------------------------------------------ instances
@st.composite
def structured(draw) -> Problem:
    """A path plus chords where most edges are functional and many nodes are memory-free: merges,
    strongly connected groups, conflicting cycles and degree-1/2 eliminations happen often."""
    n = draw(st.integers(2, 6))
    counts = [draw(st.integers(2, 3)) for _ in range(n)]
    costs = [[draw(st.integers(0, 9)) for _ in range(k)] for k in counts]
    pairs = [(i, i + 1) for i in range(n - 1)]
    pairs += [tuple(draw(st.permutations(range(n)))[:2]) for _ in range(draw(st.integers(0, 2)))]
    edges, tables = [], []
    for u, v in pairs:
        ku, kv = counts[u], counts[v]
        if draw(st.integers(0, 2)) > 0:  # functional u -> v (a bijection when it happens to be one)
            table = [F] * (ku * kv)
            for p in range(ku):
                table[p * kv + draw(st.integers(0, kv - 1))] = draw(st.integers(0, 9))
        else:
            table = [draw(st.integers(0, 9)) for _ in range(ku * kv)]
        edges.append([u, v] if draw(st.booleans()) else [v, u])
        if edges[-1][0] != u:  # keep the table's meaning when the edge is written reversed
            table = [table[p * kv + q] for q in range(kv) for p in range(ku)]
        tables.append(table)
    intervals, usages = [], []
    for i in range(n):
        s = draw(st.integers(0, 3))
        free = draw(st.booleans())
        intervals.append((s, s if free else s + draw(st.integers(1, 3))))
        usages.append([draw(st.integers(0, 6)) for _ in range(counts[i])])
    low = {}
    for (s, e), u in zip(intervals, usages):
        for t in range(s, e):
            low[t] = low.get(t, 0) + min(u)
    limit = max(low.values(), default=0) + draw(st.integers(0, 6))
    return make_problem(costs, intervals, usages, edges, tables, Capacity.uniform(limit))


PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------ properties
@PROPERTY
@given(tiny())
def test_all_reductions_are_exact(problem):
    check(problem, presolve(problem))


@PROPERTY
@given(structured())
def test_structured_instances_are_exact(problem):
    check(problem, presolve(problem))


@pytest.mark.parametrize("only", SWITCHES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=tiny())
def test_each_reduction_alone_is_exact(only, problem):
    check(problem, presolve(problem, **{s: s == only for s in SWITCHES}))


@pytest.mark.parametrize("off", SWITCHES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problem=tiny())
def test_all_but_one_reduction_is_exact(off, problem):
    check(problem, presolve(problem, **{off: False}))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(general=False))
def test_presolve_of_a_presolved_problem_is_exact(problem):
    first = presolve(problem)
    if first.reduced is not None:
        check(first.reduced, presolve(first.reduced))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny(), st.integers(0, 2**62))
def test_huge_costs_trip_the_magnitude_guard(problem, big):
    """Costs near 2**62 would overflow folded sums: only the removal reductions run, still exactly."""
    costs = problem.node_costs.copy()
    costs[costs != F] += big
    huge = Problem(**{**{k: getattr(problem, k) for k in problem.__dataclass_fields__},
                      "node_costs": costs})
    pre = presolve(huge)
    finite = costs[costs != F]
    if finite.size and int(np.abs(finite).max()) >= 10**18 // 4:
        assert pre.report["magnitude_guard"]
    check(huge, pre)


# ------------------------------------------------------------------------------------------ examples
def chain(length: int, k: int = 3) -> Problem:
    """A path whose every edge is a bijection (a permutation with forbidden elsewhere)."""
    costs = [[(7 * i + 3 * s) % 11 for s in range(k)] for i in range(length)]
    edges, tables = [], []
    for i in range(length - 1):
        table = [F] * (k * k)
        for p in range(k):
            table[p * k + (p + i) % k] = (p * i) % 5
        edges.append([i, i + 1])
        tables.append(table)
    intervals = [(i, i + 2) for i in range(length)]
    usages = [[1 + s for s in range(k)] for _ in range(length)]
    return make_problem(costs, intervals, usages, edges, tables, Capacity.uniform(4))


def test_a_bijective_chain_collapses_to_one_node():
    problem = chain(6)
    pre = presolve(problem)
    assert pre.reduced.num_nodes == 1
    assert pre.report["reductions"]["functional_merged_nodes"] >= 5
    check(problem, pre)


def test_everything_folds_away():
    """With a loose capacity every node is memory-free and the chain reduces to one fixed node."""
    problem = chain(6)
    problem = Problem(**{**{k: getattr(problem, k) for k in problem.__dataclass_fields__},
                         "capacity": Capacity.uniform(100)})
    pre = presolve(problem)
    assert pre.report["after"]["free_nodes"] == 0
    assert pre.reduced.num_nodes == 1 and pre.reduced.num_intervals == 0
    plan = pre.expand([0])
    scores = brute(problem)
    assert evaluate(problem, plan).cost == best(scores) == evaluate(pre.reduced, [0]).cost
    check(problem, pre, scores)


def test_arc_consistency_proves_infeasibility():
    # node 1's strategies are each forbidden with every strategy of node 0 or of node 2
    problem = make_problem(
        costs=[[1, 2], [3, 4], [5, 6]], intervals=[(0, 1)] * 3, usages=[[1, 1]] * 3,
        edges=[[0, 1], [1, 2]], tables=[[F, 0, F, 0], [0, 0, F, F]])
    pre = presolve(problem)
    assert pre.reduced is None and "node 1" in pre.infeasible
    assert pre.report["infeasible"] == pre.infeasible
    assert best(brute(problem)) is None
    with pytest.raises(ValueError):
        pre.expand([0])


def test_forbidden_node_costs_prove_infeasibility():
    problem = make_problem([[F, F], [1]], [(0, 1), (0, 1)], [[1, 1], [1]], [], [])
    pre = presolve(problem)
    assert pre.infeasible is not None and "node 0" in pre.infeasible


def test_memory_proves_infeasibility():
    problem = make_problem([[0, 1], [0]], [(0, 3), (1, 2)], [[5, 6], [4]], [], [],
                           Capacity.uniform(8))
    pre = presolve(problem)
    assert pre.infeasible is not None and "memory" in pre.infeasible
    assert best(brute(problem)) is None


def test_restrict_refuses_plans_outside_the_reduced_space():
    # strategy 1 of node 0 is dominated by strategy 0 (cheaper, no more memory, same edges)
    problem = make_problem([[1, 5], [0, 2]], [(0, 2), (1, 3)], [[1, 3], [2, 1]],
                           [[0, 1]], [[1, 2, 1, 2]], Capacity.uniform(4))
    pre = presolve(problem)
    assert pre.report["reductions"].get("dominated_strategies", 0) >= 1
    assert pre.restrict([1, 0]) is None
    check(problem, pre)


def test_report_shape():
    pre = presolve(chain(5))
    rep = pre.report
    for side in ("before", "after"):
        assert set(rep[side]) >= {"nodes", "strategies", "edges", "time_points", "free_nodes"}
    assert rep["switches"] == {s: True for s in SWITCHES}
    assert rep["seconds"] >= 0 and rep["infeasible"] is None
    json.dumps(rep)  # plain JSON types only


def test_unknown_switch_is_refused():
    with pytest.raises(TypeError):
        presolve(chain(3), not_a_reduction=False)


# ------------------------------------------------------------------------------------------ files + CLI
def test_extended_round_trip(tmp_path):
    problem = chain(5)
    pre = presolve(problem, functional=False, memory_free=False)
    for name in ("r.json", "r.json.gz"):
        path = tmp_path / name
        write_extended(pre.reduced, path)
        back = read_extended(path)
        for x, cost, forbidden, feasible in brute(pre.reduced):
            ev = evaluate(back, x)
            assert (ev.feasible, ev.has_forbidden) == (feasible, forbidden)
            if not forbidden:
                assert ev.cost == cost


def test_cli_presolve(tmp_path, bundled_example):
    from portfolio.cli import cli

    runner = CliRunner()
    out = tmp_path / "reduced.json"
    result = runner.invoke(cli, ["presolve", str(bundled_example), "--json", "--write", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["before"]["nodes"] == 8 and doc["after"]["nodes"] >= 1
    assert out.is_file() and json.loads(out.read_text())["format"].startswith("iopddl-portfolio")
    again = runner.invoke(cli, ["presolve", str(bundled_example), "--write", str(out)])
    assert again.exit_code == 2 and "exists" in again.output
    forced = runner.invoke(cli, ["presolve", str(bundled_example), "--write", str(out), "--force",
                                 "--no-functional", "--no-time-points", "--json"])
    assert forced.exit_code == 0, forced.output
    assert json.loads(forced.stdout)["switches"]["functional"] is False


# ------------------------------------------------------------------------------------------ benchmarks
bench = bench_path


def round_trip(problem: Problem, pre: Presolved, plans: int = 5, seed: int = 0) -> None:
    """Random reduced plans and the min-usage-like plan: same cost (when no forbidden choice) and
    feasibility on the original."""
    reduced = pre.reduced
    rng = np.random.default_rng(seed)
    xs = [reduced.min_usage_strategies] + [rng.integers(0, reduced.strategy_counts)
                                           for _ in range(plans)]
    for x in xs:
        y = pre.expand(x)
        a, b = evaluate(problem, y), evaluate(reduced, x)
        assert (a.feasible, a.has_forbidden) == (b.feasible, b.has_forbidden)
        if not b.has_forbidden:
            assert a.cost == b.cost
        assert np.array_equal(pre.restrict(y), x)


@pytest.mark.parametrize("name", ["B", "G"])
def test_small_benchmarks(name):
    from portfolio.io import load_problem

    problem = load_problem(bench(name))
    pre = presolve(problem)
    assert pre.infeasible is None
    assert pre.report["after"]["free_nodes"] < pre.report["before"]["free_nodes"]
    round_trip(problem, pre)


@pytest.mark.slow
def test_benchmark_a_reduces_to_a_few_hundred_free_nodes():
    from portfolio.io import load_problem

    problem = load_problem(bench("A"))
    pre = presolve(problem)
    assert pre.infeasible is None
    assert 100 <= pre.report["after"]["free_nodes"] <= 1000
    x = pre.reduced.min_usage_strategies
    y = pre.expand(x)
    a, b = evaluate(problem, y), evaluate(pre.reduced, x)
    assert a.feasible and b.feasible and not a.has_forbidden
    assert a.cost == b.cost
    round_trip(problem, pre)
