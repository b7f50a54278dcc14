"""Instance features (portfolio/features.py): the names are stable for their version, and each
value agrees with a plain-Python reading of the contest document."""

from __future__ import annotations

import copy
import json
import math
import statistics

import pytest

from conftest import FORBIDDEN, write_json
from portfolio import features
from portfolio.features import (CHEAP_FEATURES, FEATURE_NAMES, FEATURES_VERSION, PRESOLVED_FEATURES,
                                Features, cheap_features, instance_features)
from portfolio.io import load_problem
from portfolio.presolve import presolve

VERSION_1_NAMES = (
    "nodes", "edges", "free_nodes", "strategies", "strategies_mean", "strategies_q50",
    "strategies_q90", "strategies_max", "edges_per_node", "edge_density", "degree_q90",
    "degree_max", "isolated_share", "edge_entries_per_edge", "forbidden_node_share",
    "forbidden_edge_share", "zero_edge_share", "time_points", "live_mean", "live_max",
    "live_max_share", "has_limit", "least_peak_ratio", "cheapest_peak_ratio",
    "cheapest_over_share", "usage_spread", "node_cost_log_spread", "edge_cost_log_spread",
    "edge_cost_share", "cheapest_forbidden_share",
    "presolved_nodes", "presolved_edges", "presolved_free_nodes", "presolved_free_share",
    "presolved_strategies_mean", "presolved_strategies_max", "presolved_edges_per_node",
    "presolved_degree_max", "presolved_edge_entries_log", "presolved_time_points",
    "presolved_tightness", "presolved_settled", "presolved_infeasible",
)
"""Version 1's names in their order, written out: a selector trained on version 1 reads them so.
Renaming, reordering or dropping one needs a new version (and this list of it)."""

DOC = {"problem": {
    "name": "features-small",
    "nodes": {
        "intervals": [[0, 4], [1, 3], [2, 6], [5, 6], [3, 3]],
        "costs": [[4, 1, FORBIDDEN], [7, 2], [3], [0, 9, 5], [6, 6]],
        "usages": [[5, 2, 1], [4, 8], [3], [2, 1, 7], [9, 0]],
    },
    "edges": {
        "nodes": [[0, 1], [1, 3], [0, 2]],
        "costs": [[1, 0, 3, 2, FORBIDDEN, 8], [0, 0, 0, 5, 6, FORBIDDEN], [10, 20, 30]],
    },
    "usage_limit": 9,
}}


def _reference(doc: dict) -> dict:
    """The features of a contest document, from its lists, in plain Python (Python ints)."""
    p = doc["problem"]
    costs, usages, intervals = p["nodes"]["costs"], p["nodes"]["usages"], p["nodes"]["intervals"]
    edges, tables, limit = p["edges"]["nodes"], p["edges"]["costs"], p.get("usage_limit")
    points = sorted({a for a, b in intervals if b > a})
    live = [[i for i, (a, b) in enumerate(intervals) if a <= t < b] for t in points]
    least = [min(u for u, c in zip(usages[i], costs[i]) if c != FORBIDDEN) for i in range(len(costs))]
    cheap = [min(range(len(c)), key=lambda s, c=c: (c[s], s)) for c in costs]
    cheap_profile = [sum(usages[i][cheap[i]] for i in here) for here in live]
    entries = [t[cheap[u] * len(costs[v]) + cheap[v]] for (u, v), t in zip(edges, tables)]
    flat_edges = [x for t in tables for x in t]
    flat_nodes = [x for c in costs for x in c]
    finite_e = [x for x in flat_edges if x != FORBIDDEN]
    finite_n = [x for x in flat_nodes if x != FORBIDDEN]
    on_edges = statistics.mean(finite_e) * len(edges)
    on_nodes = statistics.mean(finite_n) * len(costs)
    spread = [(max(u) - min(u)) / max(u) for u in usages if max(u) > 0]
    return {
        "nodes": len(costs), "edges": len(edges), "strategies": len(flat_nodes),
        "free_nodes": sum(len(c) > 1 for c in costs), "strategies_max": max(map(len, costs)),
        "strategies_mean": statistics.mean(map(len, costs)),
        "forbidden_node_share": flat_nodes.count(FORBIDDEN) / len(flat_nodes),
        "forbidden_edge_share": flat_edges.count(FORBIDDEN) / len(flat_edges),
        "zero_edge_share": flat_edges.count(0) / len(flat_edges),
        "time_points": len(points), "live_max": max(map(len, live)),
        "live_mean": statistics.mean(map(len, live)),
        "least_peak_ratio": max(sum(least[i] for i in here) for here in live) / limit,
        "cheapest_peak_ratio": max(cheap_profile) / limit,
        "cheapest_over_share": sum(x > limit for x in cheap_profile) / len(points),
        "cheapest_forbidden_share": entries.count(FORBIDDEN) / len(entries),
        "edge_cost_share": on_edges / (on_edges + on_nodes),
        "edge_cost_log_spread": math.log10(max(finite_e) / statistics.mean(finite_e)),
        "node_cost_log_spread": math.log10(max(finite_n) / statistics.mean(finite_n)),
        "usage_spread": statistics.mean(spread),
        "degree_max": max(sum(n in e for e in edges) for n in range(len(costs))),
        "isolated_share": sum(all(n not in e for e in edges) for n in range(len(costs))) / len(costs),
    }


def test_version_one_names_are_stable():
    assert FEATURES_VERSION == 1
    assert FEATURE_NAMES == VERSION_1_NAMES
    assert all(CHEAP_FEATURES[name] for name in CHEAP_FEATURES)      # each one says what it is
    assert all(PRESOLVED_FEATURES[name] for name in PRESOLVED_FEATURES)


def test_cheap_features_agree_with_a_plain_reading(tmp_path):
    values = cheap_features(load_problem(write_json(tmp_path / "small.json", DOC)))
    assert list(values) == list(CHEAP_FEATURES)
    for name, expected in _reference(DOC).items():
        assert values[name] == pytest.approx(expected, rel=1e-5), name
    assert values["has_limit"] == 1


def test_the_bundled_example_agrees_too(bundled_example, bundled_doc):
    values = cheap_features(load_problem(bundled_example))
    for name, expected in _reference(bundled_doc).items():
        assert values[name] == pytest.approx(expected, rel=1e-5), name


def test_without_a_limit_memory_never_binds(tmp_path):
    doc = copy.deepcopy(DOC)
    del doc["problem"]["usage_limit"]
    values = cheap_features(load_problem(write_json(tmp_path / "free.json", doc)))
    assert values["has_limit"] == 0
    assert values["least_peak_ratio"] == values["cheapest_peak_ratio"] == 0.0
    assert values["cheapest_over_share"] == 0.0


def test_a_node_with_only_forbidden_strategies_has_no_floor(tmp_path):
    doc = copy.deepcopy(DOC)
    doc["problem"]["nodes"]["costs"][4] = [FORBIDDEN, FORBIDDEN]
    values = cheap_features(load_problem(write_json(tmp_path / "dead.json", doc)))
    assert values["least_peak_ratio"] is None
    assert json.loads(json.dumps(values))["least_peak_ratio"] is None   # stored as null


def test_presolved_step_reads_the_presolve(tmp_path):
    problem = load_problem(write_json(tmp_path / "small.json", DOC))
    pre = presolve(problem)
    got = instance_features(problem, presolved=pre)
    red = pre.reduced
    free = int((red.strategy_counts > 1).sum())
    assert got.values["presolved_nodes"] == red.num_nodes
    assert got.values["presolved_edges"] == red.num_edges
    assert got.values["presolved_free_nodes"] == free
    assert got.values["presolved_free_share"] == pytest.approx(free / problem.num_nodes)
    assert got.values["presolved_time_points"] == len(red.time_points)
    assert got.values["presolved_settled"] == int(free == 0)
    assert got.values["presolved_infeasible"] == 0
    assert set(got.seconds) == {"cheap", "presolved"}   # presolve was the caller's
    assert list(got.values) == list(FEATURE_NAMES)


def test_an_infeasible_limit_is_said_by_the_presolved_step(tmp_path):
    doc = copy.deepcopy(DOC)
    doc["problem"]["usage_limit"] = 3       # below the least peak: presolve proves it
    got = instance_features(load_problem(write_json(tmp_path / "tight.json", doc)))
    assert got.values["least_peak_ratio"] > 1
    assert got.values["presolved_infeasible"] == 1 and got.values["presolved_settled"] == 1
    assert "presolve" in got.seconds and got.error is None


def test_cheap_only_leaves_the_presolved_step_empty(tmp_path):
    got = instance_features(load_problem(write_json(tmp_path / "small.json", DOC)), presolve=False)
    assert all(got.values[name] is None for name in PRESOLVED_FEATURES)
    assert all(got.values[name] is not None for name in CHEAP_FEATURES)
    assert set(got.seconds) == {"cheap"}


def test_a_failed_presolve_is_reported_not_raised(tmp_path, monkeypatch):
    import portfolio.presolve as pre

    def broken(problem):
        raise RuntimeError("boom")

    monkeypatch.setattr(pre, "presolve", broken)
    got = instance_features(load_problem(write_json(tmp_path / "small.json", DOC)))
    assert got.error == "presolve failed: RuntimeError: boom"
    assert got.values["presolved_nodes"] is None and got.values["nodes"] == 5


def test_the_record_survives_json():
    got = Features({"nodes": 3}, {"cheap": 0.0123456}, error="x")
    back = Features.from_json(json.loads(json.dumps(got.to_json())))
    assert back.values == {"nodes": 3} and back.version == FEATURES_VERSION and back.error == "x"
    assert back.seconds == {"cheap": 0.0123}


def test_edge_entries_follow_the_mixed_radix(tmp_path):
    """The all-cheapest plan's entry of edge [u, v] is table[s_u * k_v + s_v]."""
    problem = load_problem(write_json(tmp_path / "small.json", DOC))
    plan = features._cheapest_plan(problem)
    assert plan.tolist() == [1, 1, 0, 0, 0]
    assert features._edge_entries(problem, plan).tolist() == [2, 5, 20]


# ------------------------------------------------------------------------------------------ info
def _invoke(*args):
    from click.testing import CliRunner

    from portfolio.cli import cli

    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


def test_info_features_json(tmp_path):
    path = write_json(tmp_path / "small.json", DOC)
    result = _invoke("info", "--features", "--json", path)
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)["features"]
    assert record["version"] == FEATURES_VERSION
    assert list(record["values"]) == list(FEATURE_NAMES)
    assert record["values"] == instance_features(load_problem(path)).values
    assert set(record["seconds"]) == {"load", "cheap", "presolve", "presolved"}


def test_info_features_table_and_plain_info_without_them(tmp_path):
    path = write_json(tmp_path / "small.json", DOC)
    shown = _invoke("info", "--features", path)
    assert shown.exit_code == 0, shown.output
    assert "presolved_free_share" in shown.stderr and "least_peak_ratio" in shown.stderr
    plain = _invoke("info", "--json", path)
    assert "features" not in json.loads(plain.stdout)   # only when asked: presolve costs time


def test_every_feature_is_documented():
    """docs/features.md lists every name of the version, each with its step."""
    from conftest import REPO

    page = (REPO / "docs" / "features.md").read_text()
    for name in CHEAP_FEATURES:
        assert f"| `{name}` | cheap |" in page, name
    for name in PRESOLVED_FEATURES:
        assert name.startswith("presolved_") and f"| `{name}` | presolved |" in page, name
