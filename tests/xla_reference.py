"""Tiny random solver requests and a brute force written from the request's semantics alone.

A request here is a plain dict with XLA's field names and Python lists; ``to_message`` fills the
protobuf message the adapter reads. The brute force scores every plan in plain Python: node cost
computation + communication, edge entry ``r[s_u * s_len(v) + s_v]``, an alias entry with value
above the threshold is a violation, followers equal their leader, node ``i`` holds ``m[i][s]`` at
every time it is live (``live`` lists, groups expanded, or inclusive ``node_intervals``), and a
budget ``<= 0`` is no limit. It shares no code with the adapter.
"""

from __future__ import annotations

import random
from itertools import product

PAIR_FIELDS = ("edges", "aliases", "node_intervals")
COST_FIELDS = ("computation_costs", "communication_costs", "memory_costs", "resharding_costs",
               "value_costs")


HALVES = {"num_nodes": 4, "s_len": [2, 2, 2, 2], "s_follow": [-1, -1, 1, -1], "request_name": "halves",
          "computation_costs": [[0.5, 2], [1, 0.5], [1.5, 2.5], [2, 1]],
          "communication_costs": [[0, 0.5], [0.5, 0], [0, 0], [0, 0]],
          "memory_costs": [[1, 2], [2, 1], [1, 1], [3, 1]],
          "edges": [[0, 1], [2, 3]], "resharding_costs": [[0, 1.5, 1, 0], [0.5, 2, 1, 1]],
          "node_intervals": [[0, 2], [1, 3], [2, 4], [3, 5]], "memory_budget": 5}
"""The issue's example: 4 nodes, node 2 follows node 1, costs in halves. The one optimum is
[0, 0, 0, 1] at 6.5 (``brute_optimum``); [0, 0, 0, 0] (6.0) is over the budget."""


def random_request(rng: random.Random, fractional: bool = False, negative_edges: bool = True) -> dict:
    """A request of 1-5 nodes with followers, aliases, groups and gaps in liveness (some of each)."""
    n = rng.randint(1, 5)
    s_len = [rng.randint(1, 3) for _ in range(n)]
    cost = (lambda: rng.randint(0, 40) / 4) if fractional else (lambda: rng.randint(0, 20))
    follow = [-1] * n
    for i in range(n):
        peers = [j for j in range(n) if j != i and s_len[j] == s_len[i]]
        if peers and rng.random() < 0.3:
            follow[i] = rng.choice(peers)
    edges = [[rng.randrange(n), rng.randrange(n)] for _ in range(rng.randint(0, 5))]
    low = -5 if negative_edges else 0
    resharding = [[(rng.randint(low, 20) / (4 if fractional else 1)) for _ in range(s_len[u] * s_len[v])]
                  for u, v in edges]
    aliases = [[rng.randrange(n), rng.randrange(n)] for _ in range(rng.randint(0, 2))]
    values = [[rng.choice([0, 0, 0, 1, 0.25]) for _ in range(s_len[u] * s_len[v])] for u, v in aliases]
    groups = [rng.sample(range(n), rng.randint(1, n)) for _ in range(rng.randint(0, 2))]
    req: dict = {
        "num_nodes": n, "s_len": s_len, "s_follow": follow,
        "computation_costs": [[cost() for _ in range(k)] for k in s_len],
        "communication_costs": [[cost() for _ in range(k)] for k in s_len],
        "memory_costs": [[rng.randint(0, 10) for _ in range(k)] for k in s_len],
        "edges": edges, "resharding_costs": resharding, "aliases": aliases, "value_costs": values,
        "node_groups": groups,
        "request_name": "tiny",
    }
    kind = rng.choice(["live", "live", "intervals", "none"])
    if kind == "live":  # random subsets per time: gaps in a node's liveness are common
        ids = range(n + len(groups))
        req["live"] = [rng.sample(ids, rng.randint(0, min(3, len(ids)))) for _ in range(rng.randint(1, 8))]
    elif kind == "intervals":
        count = n + (len(groups) if rng.random() < 0.5 else 0)
        req["node_intervals"] = []
        for _ in range(count):
            a = rng.randint(0, 6)
            req["node_intervals"].append([a, a + rng.randint(-1, 4)])  # second < first: never live
    # Budgets that bind: exactly some plan's peak (a liveness widened over its gaps would show).
    plan = [rng.randrange(k) for k in s_len]
    peak = max((sum(req["memory_costs"][i][plan[i]] for i in live) for live in live_sets(req)), default=0)
    req["memory_budget"] = rng.choice([0, -1, peak, peak, max(1, peak - 1)])
    return req


def to_message(req: dict):  # noqa: ANN201 -- the adapter's message class
    """The protobuf message of a request dict."""
    from portfolio.adapters.xla_proto import new_request

    msg = new_request()
    for key in ("num_nodes", "memory_budget", "request_name"):
        if key in req:
            setattr(msg, key, req[key])
    for key in ("s_len", "s_follow", "s_hint"):
        getattr(msg, key).extend(req.get(key, []))
    for key in PAIR_FIELDS:
        for first, second in req.get(key, []):
            pair = getattr(msg, key).add()
            pair.first, pair.second = first, second
    for key in COST_FIELDS:
        for row in req.get(key, []):
            getattr(msg, key).add().costs.extend(row)
    for row in req.get("live", []):
        msg.live.add().nodes.extend(row)
    for row in req.get("node_groups", []):
        msg.node_groups.add().prims.extend(row)
    return msg


def live_sets(req: dict) -> list[set[int]]:
    """Per time, the set of live nodes (each node counted once)."""
    n, groups = req["num_nodes"], req.get("node_groups", [])
    def members(i: int) -> list[int]:
        return [i] if i < n else list(groups[i - n])
    if req.get("live"):
        return [{m for i in ids for m in members(i)} for ids in req["live"]]
    times: dict[int, set[int]] = {}
    for i, (first, second) in enumerate(req.get("node_intervals", [])):
        for t in range(first, second + 1):
            times.setdefault(t, set()).update(members(i))
    return [times[t] for t in sorted(times)]


def score(req: dict, plan: tuple[int, ...], threshold: float = 0.0) -> tuple[float, bool, bool]:
    """(cost, alias violated, memory fits) of a plan that honours the followers."""
    s_len = req["s_len"]
    cost = sum(req["computation_costs"][i][s] + req["communication_costs"][i][s] for i, s in enumerate(plan))
    for (u, v), row in zip(req.get("edges", []), req.get("resharding_costs", [])):
        cost += row[plan[u] * s_len[v] + plan[v]]
    violated = any(row[plan[u] * s_len[v] + plan[v]] > threshold
                   for (u, v), row in zip(req.get("aliases", []), req.get("value_costs", [])))
    budget = req.get("memory_budget", 0)
    fits = budget <= 0 or all(sum(req["memory_costs"][i][plan[i]] for i in live) <= budget
                              for live in live_sets(req))
    return cost, violated, fits


def honours_followers(req: dict, plan: tuple[int, ...]) -> bool:
    return all(f < 0 or plan[i] == plan[f] for i, f in enumerate(req.get("s_follow", [])))


def plans(req: dict):  # noqa: ANN201 -- an iterator of tuples
    return product(*(range(k) for k in req["s_len"]))


def brute_optimum(req: dict, threshold: float = 0.0, fixed: dict[int, int] | None = None) -> float | None:
    """The least cost of a plan that honours followers, aliases, fixed nodes and the budget."""
    best = None
    for plan in plans(req):
        if not honours_followers(req, plan) or any(plan[i] != s for i, s in (fixed or {}).items()):
            continue
        cost, violated, fits = score(req, plan, threshold)
        if not violated and fits and (best is None or cost < best):
            best = cost
    return best
