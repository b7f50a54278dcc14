"""Every node a user reads is named in the input's own numbering (issue 42, "the compile loop").

An XLA request's followers fold into their leader and its alias pairs become extra edges, and the
runner's presolve renumbers again; none of that may show. The explanation of an infeasible limit,
``--objective peak``, ``tradeoff``, ``evaluate``, ``info``, ``presolve`` and the plan errors name
request nodes by the request's indices and instruction names, followers as followers with their own
usage, aliases as aliases; a contest file's nodes keep their file indices whatever presolve does.
Also here: one definition of the least peak's floor (``info`` = the bound's trivial stage), and one
time point per explanation.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import write_json
from tiny import F, make_problem
from xla_reference import to_message

import portfolio
from portfolio.adapters import xla_proto
from portfolio.adapters.naming import NodeNaming
from portfolio.adapters.xla import read_request
from portfolio.cli import cli
from portfolio.errors import ProblemError
from portfolio.evaluate import SolutionError, min_usage_profile
from portfolio.memory.bound import PeakBound, least_peak_bound
from portfolio.memory.explain import explain
from portfolio.memory.peak import peak_report
from portfolio.problem import Capacity

NAMES = ["lead", "follow", "mid", "big"]
FOLLOWER = {"num_nodes": 4, "s_len": [2, 2, 2, 2], "s_follow": [-1, 0, -1, -1], "request_name": "fol",
            "computation_costs": [[1, 2], [1, 2], [1, 2], [1, 2]],
            "communication_costs": [[0, 0]] * 4,
            "memory_costs": [[4, 4], [6, 6], [1, 2], [100, 100]], "edges": [[0, 2]],
            "resharding_costs": [[0, 1, 1, 0]], "node_intervals": [[0, 3]] * 4,
            "memory_budget": 50}
"""The issue's request: node 1 follows node 0, node 3 (``big``) holds 100 bytes; a limit of 50 that
no plan fits. The leader and its follower hold 4 and 6 (not equal, so a swap or a sum shows)."""

BIG = {"node": 3, "name": "big", "follows": None}
FOLLOW = {"node": 1, "name": "follow", "follows": 0}


def _request(tmp_path, req: dict = FOLLOWER, names=NAMES, name: str = "req.textproto"):
    msg = to_message(req)
    msg.instruction_names.extend(names)
    path = tmp_path / name
    path.write_text(xla_proto.to_text(msg))
    return path


def _json_out(result) -> dict:
    return json.loads(result.stdout[result.stdout.index("{"):])


def _check_follower_document(memory: dict) -> None:
    """The issue's target: node 3 (big) with 100, the follower with its own 6, the leader with 4."""
    best = memory["best"]["top_nodes"]
    assert best[0] == {**BIG, "strategy": 0, "usage": 100}
    by_node = {e["node"]: e for e in best}
    assert by_node[1] == {**FOLLOW, "strategy": 0, "usage": 6}
    assert by_node[0]["usage"] == 4 and by_node[0]["follows"] is None and by_node[0]["name"] == "lead"
    assert memory["best"]["live_nodes"] == 4            # request nodes, not the 3 folded ones
    bound = {e["node"]: e["least_usage"] for e in memory["bound"]["top_nodes"]}
    assert bound == {3: 100, 1: 6, 0: 4, 2: 1}
    assert memory["bound"]["top_nodes"][0] == {**BIG, "least_usage": 100}
    text = memory["text"]
    assert "3 (big): 100" in text and "1 (follow; follows 0): 6" in text and "0 (lead): 4" in text
    assert text.count("t=") == 1 and memory["time"] == memory["bound"]["time"] == memory["best"]["time"]


# ------------------------------------------------------------------------------------------ the target
def test_the_follower_request_is_explained_in_its_own_numbering_api(tmp_path):
    result = portfolio.solve(_request(tmp_path), time_limit=10, backends="greedy")
    assert result.plan == [] and result.memory["verdict"] == "proven infeasible"
    _check_follower_document(result.memory)


def test_the_follower_request_is_explained_in_its_own_numbering_cli(tmp_path, portfolio_cli):
    path = _request(tmp_path)
    proc = portfolio_cli.run("solve", path, "-t", "10", "--json")
    assert proc.returncode == 1, proc.stderr
    _check_follower_document(json.loads(proc.stdout)["memory"])
    assert "3 (big): 100" in proc.stderr.replace("\n", " ")


def test_objective_peak_names_request_nodes(tmp_path):
    result = portfolio.solve(_request(tmp_path), time_limit=8, backends="greedy", objective="peak")
    memory = result.memory
    assert memory["least_peak"] == 111 and memory["proven"]
    assert memory["best"]["top_nodes"][0] == {**BIG, "strategy": 0, "usage": 100}
    assert {**FOLLOW, "strategy": 0, "usage": 6} in memory["best"]["top_nodes"]
    assert "3 (big): 100" in memory["text"] and memory["text"].count("t=") == 1


def test_tradeoff_bound_names_request_nodes(tmp_path):
    # budgets below the certified least peak need no run: the bound alone answers them
    doc = portfolio.tradeoff(_request(tmp_path), time_limit=5, budgets=[60, 100], backends="greedy")
    assert [r["status"] for r in doc["rows"]] == ["infeasible", "infeasible"]
    assert doc["least_peak_bound"]["top_nodes"][0] == {**BIG, "least_usage": 100}


# ------------------------------------------------------------------------------------------ presolve
CONTEST = {"problem": {
    "name": "renumbered",
    "nodes": {"intervals": [[0, 2]] * 6 + [[2, 3]], "costs": [[1]] * 5 + [[1, 0], [0, 5]],
              "usages": [[1]] * 5 + [[100, 120], [1, 30]]},
    "edges": {"nodes": [[5, 6]], "costs": [[0, 1, 1, 0]]}, "usage_limit": 50}}
"""Five single-strategy nodes that presolve folds away, so file node 5 (100 bytes at least) is
another node of the reduced problem; no plan fits 50."""


def test_contest_nodes_keep_their_file_indices_whatever_presolve_does(tmp_path):
    from portfolio.memory.budgets import at_budget
    from portfolio.presolve import presolve

    path = write_json(tmp_path / "renumbered.json", CONTEST)
    problem = portfolio.load(path)
    reduced = presolve(at_budget(problem, None)).reduced
    assert reduced is not None and reduced.num_nodes < 6    # presolve does renumber node 5
    result = portfolio.solve(path, time_limit=10, backends="greedy", exhaustive=False)
    memory = result.memory
    assert memory["best"]["top_nodes"][0] == {"node": 5, "name": None, "follows": None,
                                              "strategy": 0, "usage": 100}
    assert [e["node"] for e in memory["best"]["top_nodes"]] == [5, 0, 1, 2, 3]
    assert memory["bound"]["top_nodes"][0]["node"] == 5
    peak = portfolio.solve(path, time_limit=8, backends="greedy", exhaustive=False,
                           objective="peak").memory
    assert peak["best"]["top_nodes"][0]["node"] == 5 and peak["best"]["top_nodes"][0]["usage"] == 100


# ------------------------------------------------------------------------------------------ evaluate
ALIASED = {**FOLLOWER, "request_name": "ali",
           "computation_costs": [[0.5, 2], [1, 2], [1, 2], [float("inf"), 2]],
           "aliases": [[1, 2]], "value_costs": [[1, 0, 0, 0]]}
"""The follower request with an alias pair (nodes 1 and 2 may not both take strategy 0), node 3's
strategy 0 forbidden, and a half in node 0's cost."""


def test_evaluate_reports_in_the_request_terms(tmp_path):
    path = _request(tmp_path, ALIASED)
    (tmp_path / "plan.txt").write_text("[0, 0, 0, 0]\n")
    res = CliRunner().invoke(cli, ["evaluate", str(path), str(tmp_path / "plan.txt"), "--json",
                                   "--cost-scale", "2"])
    assert res.exit_code == 1, res.output
    doc = _json_out(res)
    assert doc["peak_nodes"][0] == {**BIG, "strategy": 0, "usage": 100}
    assert {**FOLLOW, "strategy": 0, "usage": 6} in doc["peak_nodes"]
    node, alias = doc["forbidden"]
    assert node == {**BIG, "followers": [], "strategy": 0}
    assert alias == {"kind": "alias", "index": 0, "nodes": [1, 2], "strategies": [0, 0]}
    assert doc["request"]["nodes"] == 4 and doc["request"]["cost_scale"] == 2
    human = CliRunner().invoke(cli, ["evaluate", str(path), str(tmp_path / "plan.txt")],
                               env={"COLUMNS": "200"})
    assert "3 (big): 100" in human.stderr and "alias 0 on nodes 1, 2: strategies 0, 0" in human.stderr
    assert "1 (follow; follows 0): 6" in human.stderr


@pytest.mark.parametrize("plan, words", [
    ("[0, 1, 0, 0]", ["solution[1] = 1 differs from solution[0] = 0", "node 1 (follow) follows "
                      "node 0 (lead)"]),
    ("[0, 0, 0, 2]", ["solution[3] = 2 is out of range: node 3 (big) has 2 strategies"]),
    ("[0, 0, 0]", ["solution has 3 entries but the request has 4 nodes"]),
])
def test_evaluate_errors_name_request_entries(tmp_path, plan, words):
    (tmp_path / "plan.txt").write_text(plan + "\n")
    res = CliRunner().invoke(cli, ["evaluate", str(_request(tmp_path)), str(tmp_path / "plan.txt")])
    assert res.exit_code == 2
    line = res.output.strip().splitlines()[-1]
    assert line.startswith("error: ") and all(w in line for w in words), line


def test_a_leader_is_never_blamed_for_its_follower(tmp_path):
    conv = read_request(_request(tmp_path))
    with pytest.raises(SolutionError, match=r"^solution\[1\] = 1 differs from solution\[0\] = 0"):
        conv.restrict([0, 1, 0, 0])
    with pytest.raises(SolutionError, match="is not an integer"):
        conv.restrict([0, 0, 0.5, 0])
    assert conv.restrict([1, 1, 0, 1]).tolist() == [1, 0, 1]


# ------------------------------------------------------------------------------------------ info, presolve
def test_info_gives_the_file_and_the_bound_s_own_floor(tmp_path):
    res = CliRunner().invoke(cli, ["info", str(_request(tmp_path)), "--json"])
    assert res.exit_code == 0, res.output
    doc = _json_out(res)
    assert doc["file"] == {"nodes": 4, "followers": 1, "alias_edges": 0, "named": True}
    assert doc["nodes"] == 3 and doc["least_peak"] == {"value": 111, "time": 0, "method": "trivial",
                                                         "why": None}


def test_one_definition_of_the_least_peak_s_floor(tmp_path):
    """A forbidden strategy with less memory: the floor leaves it out in info and in the
    explanation alike (the figure that counted it was 4 bytes lower)."""
    doc = {"problem": {"name": "floor", "nodes": {"intervals": [[0, 2], [0, 2]],
                                                  "costs": [[F, 0], [0]], "usages": [[1, 5], [3]]},
                       "edges": {"nodes": [], "costs": []}, "usage_limit": 7}}
    path = write_json(tmp_path / "floor.json", doc)
    res = CliRunner().invoke(cli, ["info", str(path), "--json"])
    info = json.loads(res.stdout)
    assert int(min_usage_profile(portfolio.load(path)).max()) == 4    # forbidden strategy counted
    assert info["least_peak"]["value"] == 8 and info["memory_tightness"] == 8 / 7
    memory = portfolio.solve(path, time_limit=5, backends="greedy").memory
    assert memory["bound"]["stages"]["trivial"] == info["least_peak"]["value"] == 8
    assert memory["bound"]["time"] == info["least_peak"]["time"] == 0
    human = CliRunner().invoke(cli, ["info", str(path)], env={"COLUMNS": "200"})
    assert "at least 8 at t=0" in human.stderr and "min-usage" not in human.stderr


def test_a_dead_request_node_is_named_as_the_request_names_it(tmp_path):
    dead = {**FOLLOWER, "computation_costs": [[1, 2], [1, 2], [1, 2], [F, F]]}
    path = _request(tmp_path, dead)
    res = CliRunner().invoke(cli, ["presolve", str(path), "--json"])
    assert res.exit_code == 1
    assert _json_out(res)["infeasible"] == "node 3 (big): every strategy has node cost 10**18"
    info = _json_out(CliRunner().invoke(cli, ["info", str(path), "--json"]))
    assert info["least_peak"]["why"] == "node 3 (big): every strategy has node cost 10**18"
    memory = portfolio.solve(path, time_limit=5, backends="greedy").memory
    assert "node 3 (big): every strategy has node cost 10**18" in memory["proof"]


# ------------------------------------------------------------------------------------------ the helper
def test_naming_maps_groups_edges_and_messages(tmp_path):
    conv = read_request(_request(tmp_path, ALIASED))
    naming = conv.naming
    assert naming.leaders.tolist() == [0, 2, 3] and naming.followers(0) == [1]
    assert naming.label(1) == "1 (follow; follows 0)" and naming.group_label(0) == "0 (lead; follower 1)"
    assert naming.edge(1) == {"kind": "alias", "index": 0, "nodes": [1, 2]}
    assert naming.rewrite("nodes 0 and 2 are fixed; edge 1 forbids it; node 9") == \
        "nodes 0 (lead; follower 1) and 3 (big) are fixed; alias 0 (nodes 1 (follow) and 2 (mid)) " \
        "forbids it; node 9"
    plain = NodeNaming.identity(4)
    assert plain.is_identity and plain.rewrite("node 2 and edge 3") == "node 2 and edge 3"
    assert plain.label(2) == "2"


def test_usage_is_reported_per_file_node(tmp_path):
    conv = read_request(_request(tmp_path))
    problem = conv.problem
    plain = peak_report(problem, [0, 0, 0])                     # the problem's own numbering
    assert [(v, u) for v, _, u in plain.contributors] == [(2, 100), (0, 10), (1, 1)]
    named = peak_report(problem, [0, 0, 0], naming=conv.naming)
    assert [(v, u) for v, _, u in named.contributors] == [(3, 100), (1, 6), (0, 4), (2, 1)]
    assert least_peak_bound(problem, naming=conv.naming).contributors[:2] == [(3, 100), (1, 6)]


# ------------------------------------------------------------------------------------------ one time point
def test_an_explanation_is_about_one_time_point():
    """When the plan found peaks elsewhere than the bound's point, the document still speaks of one
    point: the plan's usage there, its own peak without a second time in the text."""
    p = make_problem(costs=[[0], [0]], intervals=[(0, 1), (1, 2)], usages=[[3], [10]], edges=[],
                     tables=[], capacity=Capacity.uniform(2))
    weak = PeakBound(3, 0, "trivial", {"trivial": 3})     # true: every plan uses 3 at t=0
    doc = explain(p, None, deterministic=True, bound=weak)
    assert doc["time"] == doc["bound"]["time"] == doc["best"]["time"] == 0
    assert (doc["best"]["usage"], doc["best"]["peak"], doc["best"]["peak_time"]) == (3, 10, 1)
    assert doc["text"].count("t=") == 1 and "its own peak, 10, is at another time point" in doc["text"]
    full = explain(p, None, deterministic=True)              # the real bound: 10 at t=1
    assert full["time"] == full["best"]["time"] == full["best"]["peak_time"] == 1
    assert full["text"].count("t=") == 1 and "peaks there, at 10" in full["text"]


def test_a_peak_report_keeps_to_the_preferred_point_on_a_tie():
    p = make_problem(costs=[[0], [0]], intervals=[(0, 1), (1, 2)], usages=[[7], [7]], edges=[],
                     tables=[])
    assert peak_report(p, [0, 0]).time == 0
    assert peak_report(p, [0, 0], prefer=1).time == 1 == peak_report(p, [0, 0], prefer=1).peak_time
    at = peak_report(make_problem(costs=[[0], [0]], intervals=[(0, 1), (1, 2)], usages=[[7], [9]],
                                  edges=[], tables=[]), [0, 0], prefer=0)
    assert at.time == 1       # no tie: the plan's own peak


def test_a_plan_error_is_one_line_through_the_api(tmp_path):
    with pytest.raises(ProblemError, match=r"warm start: solution\[3\] = 5 is out of range: node 3 "
                                           r"\(big\)"):
        portfolio.solve(_request(tmp_path), time_limit=5, backends="greedy", warm_start=[0, 0, 0, 5])
    assert np.array_equal(read_request(_request(tmp_path)).node_of, [0, 0, 1, 2])
