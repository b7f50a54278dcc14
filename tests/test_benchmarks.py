"""The contest instances: the library's loader and evaluator against an independent reading of the
files (gzip + json, Python ints, a difference array over the integer time horizon); and the scripts
in benchmarks/: few, plainly named, each naming the docs page of its figures."""

from __future__ import annotations

import gzip
import re
import json
from itertools import accumulate
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import BENCH_NAMES, FORBIDDEN, bench_path, reference_cost
from portfolio.cli import cli
from portfolio.evaluate import evaluate
from portfolio.io import load_problem

SMALL = {"B", "G"}  # ~3 MB of JSON each; the others are 30-90 MB and marked slow


def read_raw(name: str) -> dict:
    with gzip.open(bench_path(name), "rt") as f:
        return json.load(f)["problem"]


def slow_memory(raw: dict, plan: list[int]) -> tuple[int, bool]:
    """(peak usage over every integer time, feasible) via a difference array over the horizon."""
    intervals, usages = raw["nodes"]["intervals"], raw["nodes"]["usages"]
    horizon = max((b for _, b in intervals), default=0)
    diff = [0] * (horizon + 1)
    for (a, b), row, s in zip(intervals, usages, plan):
        if b > a:
            diff[a] += row[s]
            diff[b] -= row[s]
    peak = max(accumulate(diff[:horizon]), default=0)
    limit = raw.get("usage_limit")
    return max(peak, 0), limit is None or peak <= limit


def flat(rows: list[list[int]]) -> list[int]:
    return [x for row in rows for x in row]


def _params():
    return [pytest.param(n, marks=() if n in SMALL else pytest.mark.slow, id=n) for n in BENCH_NAMES]


@pytest.mark.parametrize("name", _params())
def test_benchmark_against_independent_reading(name):
    raw = read_raw(name)
    problem = load_problem(bench_path(name))
    nodes, edges = raw["nodes"], raw["edges"]
    n = len(nodes["costs"])

    # the loaded arrays are the file's numbers
    assert problem.num_nodes == n and problem.num_edges == len(edges["nodes"])
    assert problem.usage_limit == raw.get("usage_limit")
    assert problem.strategy_counts.tolist() == [len(c) for c in nodes["costs"]]
    assert problem.node_costs.tolist() == flat(nodes["costs"])
    assert problem.interval_usages.tolist() == flat(nodes["usages"])
    assert problem.interval_start.tolist() == [a for a, _ in nodes["intervals"]]
    assert problem.interval_end.tolist() == [b for _, b in nodes["intervals"]]
    assert problem.edge_nodes.tolist() == flat(edges["nodes"])
    assert problem.edge_costs.tolist() == flat(edges["costs"])

    # the all-zeros plan: cost, feasibility, peak
    zeros = [0] * n
    ev = evaluate(problem, zeros)
    peak, feasible = slow_memory(raw, zeros)
    assert ev.cost == reference_cost({"problem": raw}, zeros)
    assert (ev.feasible, ev.peak_usage) == (feasible, peak)
    assert ev.forbidden_node_choices == sum(1 for c in nodes["costs"] if c[0] == FORBIDDEN)

    # the min-usage plan: every node's least-usage allowed strategy; it must be feasible
    plan = problem.min_usage_strategies.tolist()
    for i, s in enumerate(plan):
        allowed = [k for k, c in enumerate(nodes["costs"][i]) if c != FORBIDDEN]
        assert allowed, f"node {i} has no allowed strategy"
        assert nodes["costs"][i][s] != FORBIDDEN
        a, b = nodes["intervals"][i]
        if b > a:
            assert nodes["usages"][i][s] == min(nodes["usages"][i][k] for k in allowed)
    ev = evaluate(problem, plan)
    peak, feasible = slow_memory(raw, plan)
    assert ev.cost == reference_cost({"problem": raw}, plan)
    assert ev.peak_usage == peak
    assert ev.feasible and feasible
    assert ev.forbidden_node_choices == 0
    assert ev.margin == raw["usage_limit"] - peak


def test_info_json_on_B():
    raw = read_raw("B")
    result = CliRunner().invoke(cli, ["info", "--json", str(bench_path("B"))])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    nodes, edges = raw["nodes"], raw["edges"]
    assert summary["name"] == raw.get("name", "asplos-2025-iopddl-B")
    assert summary["nodes"] == summary["intervals"] == len(nodes["costs"])
    assert summary["edges"] == len(edges["nodes"])
    assert summary["strategies"]["total"] == sum(map(len, nodes["costs"]))
    assert summary["strategies"]["max"] == max(map(len, nodes["costs"]))
    assert summary["single_strategy_nodes"] == sum(1 for c in nodes["costs"] if len(c) == 1)
    assert summary["forbidden_node_strategies"] == flat(nodes["costs"]).count(FORBIDDEN)
    assert summary["edge_table_entries"] == sum(map(len, edges["costs"]))
    assert summary["forbidden_edge_entries"] == flat(edges["costs"]).count(FORBIDDEN)
    arity: dict[str, int] = {}
    for e in edges["nodes"]:
        arity[str(len(e))] = arity.get(str(len(e)), 0) + 1
    assert summary["edge_arity"] == arity
    assert summary["usage_limit"] == raw["usage_limit"]
    assert summary["zero_length_intervals"] == sum(1 for a, b in nodes["intervals"] if a == b)
    assert summary["distinct_time_points"] == len({a for a, b in nodes["intervals"] if b > a})


# ------------------------------------------------------------------ the scripts in benchmarks/
SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def test_benchmarks_folder_is_small_and_plain():
    """At most 17 scripts (the peer solver autoparallel_ilp.py and the PyTorch front end's among them),
    none named like an importable module it would shadow when it runs
    (a script's folder comes first on sys.path), none reading the reference CSVs itself or keeping
    results in a format of its own (sweeps are `portfolio bench`, docs/bench.md)."""
    import importlib.util
    import sys

    assert 0 < len(SCRIPTS) <= 17, [p.name for p in SCRIPTS]
    for path in SCRIPTS:
        stem = path.stem
        assert stem not in sys.stdlib_module_names, f"{path.name} shadows the standard library's {stem}"
        assert importlib.util.find_spec(stem) is None, f"{path.name} shadows the installed {stem}"
        text = path.read_text()
        assert "best_known.csv" not in text, f"{path.name}: read reference costs through portfolio.data.contest"
        for own in ("rows.jsonl", "runs.csv", "table.md"):
            assert own not in text, f"{path.name} writes {own}: results go through portfolio bench"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_each_script_names_the_page_its_figures_go_to(path):
    import ast

    repo = Path(__file__).resolve().parents[1]
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    assert doc, f"{path.name} has no docstring"
    if path.stem == "common":
        return
    pages = re.findall(r"docs/[\w/.-]+\.md", doc)
    assert pages, f"{path.name}: its docstring names no docs page"
    for page in pages:
        assert (repo / page).is_file(), f"{path.name} names {page}, which does not exist"
