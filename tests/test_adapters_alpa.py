"""The Alpa drop-in returns the brute-force optimum of tiny random instances (followers, aliases,
fixed nodes, gaps in liveness, fractional and negative costs) and raises as Alpa's solver does."""

from __future__ import annotations

import random

import numpy as np
import pytest

from xla_reference import brute_optimum, honours_followers, random_request, score

from portfolio.adapters import alpa
from portfolio.adapters.alpa import solve_serialized_args
from portfolio.io import ProblemFormatError


def _alpa_case(seed: int) -> tuple[dict, list]:
    """A random request in Alpa's shape (N time steps, no groups, distinct edges) and its arguments."""
    rng = random.Random(seed)
    req = random_request(rng, fractional=seed % 2 == 1)
    n = req["num_nodes"]
    req["node_groups"] = []
    req.pop("node_intervals", None)
    req["live"] = [rng.sample(range(n), rng.randint(0, min(2, n))) for _ in range(n)]
    seen: dict[tuple[int, int], list] = {}
    for pair, table in zip(req["edges"], req["resharding_costs"]):
        seen.setdefault(tuple(pair), table)
    req["edges"], req["resharding_costs"] = [list(p) for p in seen], list(seen.values())
    flat = lambda rows: [x for row in rows for x in row]  # noqa: E731
    args = [n, req["memory_budget"], req["s_len"], req["s_follow"], flat(req["edges"]),
            flat(req["aliases"]), [len(ids) for ids in req["live"]] + flat(req["live"]),
            flat(req["computation_costs"]), flat(req["communication_costs"]),
            flat(req["memory_costs"]), flat(req["resharding_costs"]), flat(req["value_costs"])]
    return req, args


@pytest.mark.parametrize("seed", range(24))
def test_alpa_drop_in_finds_the_brute_force_optimum(seed):
    req, args = _alpa_case(seed)
    rng = random.Random(-seed)
    fixed = {i: rng.randrange(k) for i, k in enumerate(req["s_len"]) if rng.random() < 0.25}
    triples = [x for i, s in fixed.items() for x in (i, s, 1)]
    triples += [0, 0, 0]  # a hint, not a constraint
    best = brute_optimum(req, threshold=alpa.ALIAS_THRESHOLD, fixed=fixed)
    if best is None:
        with pytest.raises(RuntimeError, match="budget|fixed"):
            solve_serialized_args(*args, s_init=triples, time_limit=10)
        return
    s_val, e_val, objective, status = solve_serialized_args(*args, s_init=triples, time_limit=10)
    plan = tuple(int(s) for s in s_val)
    assert status == 1 and honours_followers(req, plan)
    assert all(plan[i] == s for i, s in fixed.items())
    cost, violated, fits = score(req, plan, alpa.ALIAS_THRESHOLD)
    assert not violated and fits
    assert objective == pytest.approx(cost) and objective == pytest.approx(best, abs=1e-9)
    s_len = req["s_len"]
    assert [int(x) for x in e_val] == [plan[u] * s_len[v] + plan[v] for u, v in req["edges"]]


def _small() -> list:
    # two nodes, an edge, both live at time 0 and node 1 at time 1
    return [2, 10, [2, 2], [-1, -1], [0, 1], [], [2, 1, 0, 1, 1], [1.0, 2.0, 0.0, 0.0],
            [0.5, 0.0, 0.0, 0.0], [4, 6, 4, 6], [0.0, 1.0, 1.0, 0.0], []]


def test_a_duplicate_edge_is_a_value_error():
    args = _small()
    args[4] = [0, 1, 0, 1]
    args[10] = [0.0, 1.0, 1.0, 0.0] * 2
    with pytest.raises(ValueError, match="duplicate edge \\(0, 1\\)"):
        solve_serialized_args(*args, time_limit=5)


def test_no_plan_within_the_budget_is_a_runtime_error():
    args = _small()
    args[1] = 7  # both nodes are live at time 0: at least 4 + 4
    with pytest.raises(RuntimeError):
        solve_serialized_args(*args, time_limit=5)


def test_sizes_that_disagree_name_the_argument():
    args = _small()
    args[7] = [1.0, 2.0, 3.0]
    with pytest.raises(ProblemFormatError, match="<alpa arguments>: c: has 3 values but its rows need 4"):
        solve_serialized_args(*args, time_limit=5)
    args = _small()
    args[3] = [-1, 5]
    with pytest.raises(ProblemFormatError, match="s_follow\\[1\\]"):
        solve_serialized_args(*args, time_limit=5)


def test_tiny_costs_keep_their_order():
    """Costs of 1e-6 seconds (Alpa's units) are scaled, not truncated to zero."""
    args = _small()
    args[7], args[8] = [2e-6, 1e-6, 0.0, 0.0], [0.0] * 4
    args[10] = [0.0, 0.0, 0.0, 0.0]
    s_val, _, objective, _ = solve_serialized_args(*args, time_limit=5)
    assert s_val[0] == 1 and objective == pytest.approx(1e-6)
    assert alpa.last_conversion is not None and alpa.last_conversion.cost_scale > 1e6
    assert np.isfinite(alpa.last_conversion.cost_error_bound)
