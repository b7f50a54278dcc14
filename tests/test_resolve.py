"""Re-solves: a previous plan mapped onto a changed problem (by index, by signature when a strategy
list changed, by instruction name for XLA requests), repaired, and never beaten by the answer."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

import portfolio
from portfolio.adapters.conversion import Conversion
from portfolio.api.inputs import read
from portfolio.api.resolving import map_plan
from portfolio.cli import bundled_example, cli
from portfolio.evaluate import evaluate
from portfolio.io import parse_document
from xla_reference import HALVES, to_message

GOOD = [0, 0, 0, 2, 0, 0, 1, 1]        # the example's optimum, 305 (peak 70: at the limit)


def _doc() -> dict:
    return json.loads(open(bundled_example()).read())


def without_strategy(doc: dict, node: int, strategy: int) -> dict:
    """The contest document with one strategy of one node removed (its costs, usages, and the rows
    or columns of its edges' tables): later strategies' indices shift down by one."""
    doc = copy.deepcopy(doc)
    nodes, edges = doc["problem"]["nodes"], doc["problem"]["edges"]
    counts = [len(c) for c in nodes["costs"]]
    for key in ("costs", "usages"):
        del nodes[key][node][strategy]
    for e, (u, v) in enumerate(edges["nodes"]):
        table = edges["costs"][e]
        keep = [i * counts[v] + j for i in range(counts[u]) for j in range(counts[v])
                if not (u == node and i == strategy) and not (v == node and j == strategy)]
        edges["costs"][e] = [table[k] for k in keep]
    return doc


def test_same_size_maps_by_index_and_repairs_a_tighter_budget():
    old = _doc()
    new = copy.deepcopy(old)
    new["problem"]["usage_limit"] = 66                     # the old optimum peaks at 70
    problem = parse_document(new)
    assert not evaluate(problem, GOOD).feasible
    result = portfolio.resolve(new, GOOD, old, time_limit=3, backends=["greedy"], exhaustive=False)
    report = result.warm_start
    assert report["source"] == "re-solve from the previous plan"
    assert report["mapping"]["by"] == "index" and report["mapping"]["kept"] == 8
    assert report["status"] == "repaired" and "over the memory limit" in report["why"]
    assert result.feasible and result.cost <= report["repair"]["cost"]


def test_a_removed_strategy_is_found_again_by_its_signature():
    old = _doc()
    new = without_strategy(old, 3, 0)                      # node 3: [80, 25, 45] -> [25, 45]
    plan = list(GOOD)                                      # node 3 chose strategy 2 (45)
    partial, report = map_plan(read_dict(new), plan, read_dict(old))
    assert partial[3] == 1 and report["found_by_signature"] == 1 and report["open"] == 0
    plan[3] = 0                                            # the removed strategy itself
    partial, report = map_plan(read_dict(new), plan, read_dict(old))
    assert partial[3] == -1 and report["choice_lost"] == 1 and report["open"] == 1
    # without the previous problem the index is only checked: 2 is out of range for 2 strategies
    partial, report = map_plan(read_dict(new), GOOD, None)
    assert partial[3] == -1 and report["choice_lost"] == 1
    result = portfolio.resolve(new, plan, old, time_limit=3, backends=["greedy"], exhaustive=False)
    assert result.feasible and result.warm_start["mapping"]["open"] == 1


def read_dict(doc: dict) -> Conversion:
    return Conversion.identity(parse_document(doc))


def _named(tmp_path, names, order=None, name="r.pb"):
    req = {**HALVES, "s_follow": [-1, -1, -1, -1]}
    if order is not None:    # the same request with its nodes listed in another order
        req = _reorder(req, order)
    msg = to_message(req)
    msg.instruction_names.extend(names)
    path = tmp_path / name
    path.write_bytes(msg.SerializeToString())
    return path


def _reorder(req: dict, order: list[int]) -> dict:
    """``req`` with new node i being old node ``order[i]``."""
    where = {old: new for new, old in enumerate(order)}
    out = dict(req)
    for key in ("s_len", "computation_costs", "communication_costs", "memory_costs", "node_intervals"):
        out[key] = [req[key][o] for o in order]
    out["edges"] = [[where[u], where[v]] for u, v in req["edges"]]
    return out


def test_xla_requests_map_by_instruction_name(tmp_path):
    old = _named(tmp_path, ["a", "b", "c", "d"], name="old.pb")
    new = _named(tmp_path, ["d", "c", "b", "a"], order=[3, 2, 1, 0], name="new.pb")
    partial, report = map_plan(read(new), [1, 0, 1, 0], read(old))
    assert report["by"] == "instruction name" and report["kept"] == 4
    assert partial.tolist() == [0, 1, 0, 1]
    # a node the previous request lacks is new, and left open
    newer = _named(tmp_path, ["d", "c", "b", "z"], order=[3, 2, 1, 0], name="newer.pb")
    partial, report = map_plan(read(newer), [1, 0, 1, 0], read(old))
    assert report["new_nodes"] == 1 and partial.tolist()[3] == -1
    result = portfolio.resolve(new, [1, 0, 1, 0], old, time_limit=3, backends=["greedy"],
                               exhaustive=False)
    assert result.warm_start["mapping"]["by"] == "instruction name" and result.feasible


def test_a_different_size_is_refused_unless_a_node_map_is_given(tmp_path):
    old = _doc()
    with pytest.raises(portfolio.ProblemError, match=r"previous plan: has 3 entries but the new "
                       r"problem has 8 nodes; a plan of another size is mapped by instruction name"):
        portfolio.resolve(old, [0, 0, 0], None, time_limit=2)
    partial, report = map_plan(read_dict(old), [1, 2], None, [0, 1, -1, -1, -1, -1, -1, -1])
    assert report["by"] == "node map" and partial.tolist()[:2] == [1, 2] and report["open"] == 6
    with pytest.raises(portfolio.ProblemError, match=r"node map: entry \[0\] = 5 names no node"):
        map_plan(read_dict(old), [1, 2], None, [5] * 8)


def test_the_cli_resolves_with_previous(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(_doc()))
    new.write_text(json.dumps(without_strategy(_doc(), 3, 0)))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(GOOD))
    out = CliRunner().invoke(cli, ["solve", str(new), "-t", "3", "-b", "greedy", "--no-exhaustive",
                                   "--warm-start", str(plan), "--previous", str(old), "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["warm_start"]["mapping"]["found_by_signature"] == 1
    assert doc["cost"] <= doc["warm_start"]["start_cost"]
    assert "mapped by index: 7 of 8 choices kept, 1 found again by signature" in out.stderr
    out = CliRunner().invoke(cli, ["solve", "-q", str(new), "--previous", str(old)])
    assert out.exit_code == 2 and "give it with --warm-start" in out.stderr
