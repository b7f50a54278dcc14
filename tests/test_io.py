"""Both readers (contest and extended format) check the sections they share with one helper, so a
broken ``problem``, ``nodes``, ``edges`` or ``name`` is named the same way in either format."""

from __future__ import annotations

import copy
import json

import pytest

from portfolio.io import ProblemFormatError, load_problem, problem_to_extended

CONTEST = {"problem": {"name": "t",
                       "nodes": {"intervals": [[0, 2], [1, 3]], "costs": [[1, 2], [3]],
                                 "usages": [[1, 1], [2]]},
                       "edges": {"nodes": [[0, 1]], "costs": [[0, 1]]},
                       "usage_limit": 5}}


def _contest() -> dict:
    return copy.deepcopy(CONTEST)


def _extended(tmp_path) -> dict:
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(CONTEST))
    return problem_to_extended(load_problem(path))


BREAKS = [
    (lambda d: d.update(problem=[1]), "problem", "expected an object"),
    (lambda d: d.pop("problem"), "(top level)", "missing required field 'problem'"),
    (lambda d: d["problem"].update(nodes=3), "problem.nodes", "expected an object"),
    (lambda d: d["problem"].pop("edges"), "problem", "missing required field 'edges'"),
    (lambda d: d["problem"].update(edges="x"), "problem.edges", "expected an object"),
    (lambda d: d["problem"]["edges"].pop("costs"), "problem.edges", "missing required field 'costs'"),
    (lambda d: d["problem"]["edges"]["nodes"].__setitem__(0, 7), "problem.edges.nodes[0]",
     "expected a list"),
    (lambda d: d["problem"]["edges"]["costs"][0].__setitem__(1, -4), "problem.edges.costs[0][1]",
     "must not be negative"),
    (lambda d: d["problem"].update(name=5), "problem.name", "expected a string"),
]


@pytest.mark.parametrize("fmt", ["contest", "extended"])
@pytest.mark.parametrize("corrupt, where, message", BREAKS,
                         ids=[f"{w}:{m[:20]}" for _, w, m in BREAKS])
def test_shared_sections_fail_alike_in_both_formats(tmp_path, fmt, corrupt, where, message):
    doc = _contest() if fmt == "contest" else _extended(tmp_path)
    bad = tmp_path / "bad.json"
    corrupt(doc)
    bad.write_text(json.dumps(doc))
    with pytest.raises(ProblemFormatError) as err:
        load_problem(bad)
    assert err.value.where == where, str(err.value)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_the_good_document_loads_in_both_formats(tmp_path):
    """The breaks above are the only thing wrong: the same documents, unbroken, load the same."""
    path = tmp_path / "ext.json"
    path.write_text(json.dumps(_extended(tmp_path)))
    contest = tmp_path / "c.json"
    contest.write_text(json.dumps(_contest()))
    a, b = load_problem(contest), load_problem(path)
    assert a.name == b.name == "t"
    assert a.edge_costs.tolist() == b.edge_costs.tolist() == [0, 1]


def test_careful_path_reads_what_the_fast_scanner_reads_without_importing_it():
    # `portfolio solve` parses small files with fast=False: importing numba costs more than json.
    import subprocess
    import sys

    import numpy as np

    from portfolio.cli import bundled_example
    from portfolio.io import parse_problem, read_bytes

    data = read_bytes(bundled_example())
    fast = parse_problem(data, "example.json")
    careful = parse_problem(data, "example.json", fast=False)
    for field in ("node_costs", "edge_costs", "edge_nodes", "interval_usages", "strategy_offsets"):
        assert np.array_equal(getattr(fast, field), getattr(careful, field)), field
    assert fast.usage_limit == careful.usage_limit and fast.name == careful.name
    probe = ("import sys; from portfolio.io import parse_problem, read_bytes; "
             f"parse_problem(read_bytes({str(bundled_example())!r}), 'x', fast=False); "
             "print('portfolio.jsonscan' in sys.modules, 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
