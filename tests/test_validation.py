"""Malformed inputs give exit code 2 and one clear ``error:`` line naming file, JSON path and index.

Most cases run in-process through ``click.testing.CliRunner`` (fast); a few run the installed scripts
as real processes to prove there is no traceback end to end.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from conftest import reference_cost, reference_memory, write_json
from portfolio.cli import _iopddl, cli
from portfolio.evaluate import evaluate
from portfolio.io import (
    ProblemFormatError,
    SolutionFormatError,
    load_problem,
    parse_solution_text,
    read_solution,
)

FEASIBLE_PLAN = [0, 0, 0, 2, 0, 0, 1, 1]  # the bundled example's optimum (cost 305)
WIDE = {"COLUMNS": "1000"}  # keep rich from soft-wrapping (see test_long_error_is_not_wrapped)


def invoke(args: list[str], command=cli, env: dict | None = None):
    return CliRunner().invoke(command, [str(a) for a in args], env={**WIDE, **(env or {})})


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def assert_clean_error(result, fragments: list[str], *, only_line: bool = True) -> str:
    """Exit 2, no traceback, exactly one ``error:`` line holding every fragment; returns that line."""
    everything = result.output + result.stderr
    assert "Traceback" not in everything, everything
    assert result.exit_code == 2, (result.exit_code, everything, result.exception)
    assert isinstance(result.exception, SystemExit) or result.exception is None, result.exception
    lines = error_lines(result.stderr)
    assert len(lines) == 1, result.stderr
    if only_line:
        assert result.stderr.strip() == lines[0], result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# ------------------------------------------------------------------------------------------ problem cases
def mutate(fn: Callable[[dict], None]) -> Callable[[dict], bytes]:
    def make(doc: dict) -> bytes:
        doc = copy.deepcopy(doc)
        fn(doc)
        return json.dumps(doc).encode()
    return make


def _set(path: list, value) -> Callable[[dict], None]:
    def fn(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return fn


def _delete(path: list) -> Callable[[dict], None]:
    def fn(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return fn


def _zero_strategies(doc: dict) -> None:
    doc["problem"]["nodes"]["costs"][3] = []
    doc["problem"]["nodes"]["usages"][3] = []


def _truncated_gz(doc: dict) -> bytes:
    data = gzip.compress(json.dumps(doc, indent=1).encode())
    return data[: len(data) // 2]


N, E = ["problem", "nodes"], ["problem", "edges"]

# (id, file name, bytes from the bundled example document, fragments the error line must hold)
PROBLEM_CASES = [
    ("not-json", "bad.json", lambda doc: b"this is not JSON\n", ["not valid JSON"]),
    ("empty-file", "bad.json", lambda doc: b"", ["not valid JSON"]),
    ("truncated", "bad.json", lambda doc: json.dumps(doc, indent=1).encode()[: len(json.dumps(doc, indent=1)) // 2],
     ["not valid JSON"]),
    ("truncated-gz", "bad.json.gz", _truncated_gz, ["gzip"]),
    ("top-level-list", "bad.json", lambda doc: b"[1, 2]", ["(top level)", "object"]),
    ("missing-problem", "bad.json", lambda doc: json.dumps({"problme": doc["problem"]}).encode(),
     ["(top level)", "'problem'"]),
    ("problem-not-object", "bad.json", mutate(_set(["problem"], [1])), ["problem", "object"]),
    ("missing-nodes", "bad.json", mutate(_delete(N)), ["problem", "'nodes'"]),
    ("missing-edges", "bad.json", mutate(_delete(E)), ["problem", "'edges'"]),
    ("missing-intervals", "bad.json", mutate(_delete(N + ["intervals"])), ["problem.nodes", "'intervals'"]),
    ("missing-edge-costs", "bad.json", mutate(_delete(E + ["costs"])), ["problem.edges", "'costs'"]),
    ("node-lengths-disagree", "bad.json",
     mutate(lambda d: d["problem"]["nodes"]["intervals"].pop()), ["problem.nodes", "7, 8, 8"]),
    ("usages-shorter", "bad.json",
     mutate(lambda d: d["problem"]["nodes"]["usages"].pop()), ["problem.nodes", "8, 8, 7"]),
    ("zero-strategies", "bad.json", mutate(_zero_strategies), ["problem.nodes.costs[3]", "zero strategies"]),
    ("costs-usages-differ", "bad.json", mutate(_set(N + ["usages", 4], [20])),
     ["problem.nodes.usages[4]", "1 entries", "costs[4] has 2"]),
    ("float-cost", "bad.json", mutate(_set(N + ["costs", 2, 0], 1.5)), ["problem.nodes.costs[2][0]", "1.5"]),
    ("integral-float-cost", "bad.json", mutate(_set(N + ["costs", 1, 1], 20.0)),
     ["problem.nodes.costs[1][1]", "20.0"]),
    ("string-cost", "bad.json", mutate(_set(N + ["costs", 5, 1], "40")), ["problem.nodes.costs[5][1]"]),
    ("bool-cost", "bad.json", mutate(_set(N + ["costs", 6, 2], True)), ["problem.nodes.costs[6][2]", "true"]),
    ("bool-usage", "bad.json", mutate(_set(N + ["usages", 0, 0], False)), ["problem.nodes.usages[0][0]"]),
    ("null-cost", "bad.json", mutate(_set(N + ["costs", 0, 0], None)), ["problem.nodes.costs[0][0]"]),
    ("negative-usage", "bad.json", mutate(_set(N + ["usages", 6, 1], -5)), ["problem.nodes.usages[6][1]", "-5"]),
    ("negative-cost", "bad.json", mutate(_set(N + ["costs", 7, 0], -1)), ["problem.nodes.costs[7][0]", "-1"]),
    ("cost-2**63", "bad.json", mutate(_set(N + ["costs", 0, 1], 2**63)),
     ["problem.nodes.costs[0][1]", str(2**63)]),
    ("usage-10**30", "bad.json", mutate(_set(N + ["usages", 1, 2], 10**30)), ["problem.nodes.usages[1][2]"]),
    ("edge-cost-2**63", "bad.json", mutate(_set(E + ["costs", 2, 4], 2**63)), ["problem.edges.costs[2][4]"]),
    ("interval-start-after-end", "bad.json", mutate(_set(N + ["intervals", 5], [70, 60])),
     ["problem.nodes.intervals[5]", "70", "60"]),
    ("interval-3-numbers", "bad.json", mutate(_set(N + ["intervals", 2], [20, 30, 40])),
     ["problem.nodes.intervals[2]", "3 numbers"]),
    ("interval-1-number", "bad.json", mutate(_set(N + ["intervals", 2], [20])),
     ["problem.nodes.intervals[2]", "1 numbers"]),
    ("interval-negative", "bad.json", mutate(_set(N + ["intervals", 0], [-1, 40])),
     ["problem.nodes.intervals[0][0]", "-1"]),
    ("interval-not-list", "bad.json", mutate(_set(N + ["intervals", 4], 50)), ["problem.nodes.intervals[4]"]),
    ("edge-node-out-of-range", "bad.json", mutate(_set(E + ["nodes", 4], [4, 8])),
     ["problem.edges.nodes[4][1]", "node 8", "8 nodes"]),
    ("edge-node-negative", "bad.json", mutate(_set(E + ["nodes", 4], [4, -1])), ["problem.edges.nodes[4][1]"]),
    ("edge-no-nodes", "bad.json", mutate(_set(E + ["nodes", 3], [])), ["problem.edges.nodes[3]"]),
    ("edge-table-too-long", "bad.json", mutate(lambda d: d["problem"]["edges"]["costs"][6].append(0)),
     ["problem.edges.costs[6]", "7 entries", "2 x 3 = 6"]),
    ("edge-table-too-short", "bad.json", mutate(_set(E + ["costs", 1], [0, 10])),
     ["problem.edges.costs[1]", "2 entries", "3 x 1 = 3"]),
    ("edge-lists-disagree", "bad.json", mutate(lambda d: d["problem"]["edges"]["costs"].pop()),
     ["problem.edges", "9 entries", "costs has 8"]),
    ("negative-limit", "bad.json", mutate(_set(["problem", "usage_limit"], -1)), ["problem.usage_limit", "-1"]),
    ("float-limit", "bad.json", mutate(_set(["problem", "usage_limit"], 70.5)), ["problem.usage_limit"]),
    ("limit-2**63", "bad.json", mutate(_set(["problem", "usage_limit"], 2**63)), ["problem.usage_limit"]),
    ("name-not-string", "bad.json", mutate(_set(["problem", "name"], 5)), ["problem.name"]),
]


def _command_args(command: str, problem: Path, solution: Path) -> tuple[list, object]:
    if command == "info":
        return ["info", problem], cli
    if command == "evaluate":
        return ["evaluate", problem, solution], cli
    return [problem, "5"], _iopddl


@pytest.mark.parametrize("command", ["info", "evaluate", "iopddl"])
@pytest.mark.parametrize("case_id, name, make, fragments", PROBLEM_CASES, ids=[c[0] for c in PROBLEM_CASES])
def test_malformed_problem(tmp_path, bundled_doc, command, case_id, name, make, fragments):
    problem = tmp_path / name
    problem.write_bytes(make(bundled_doc))
    solution = write_json(tmp_path / "plan.json", FEASIBLE_PLAN)
    args, entry = _command_args(command, problem, solution)
    result = invoke(args, entry)
    # iopddl may print plugin warnings before loading; info/evaluate print nothing else.
    assert_clean_error(result, [str(problem), *fragments], only_line=command != "iopddl")
    with pytest.raises(ProblemFormatError) as info:
        load_problem(problem)
    assert str(problem) in str(info.value)


@pytest.mark.parametrize("command", ["info", "evaluate", "iopddl"])
def test_missing_problem_file(tmp_path, command):
    problem = tmp_path / "nowhere" / "missing.json"
    solution = write_json(tmp_path / "plan.json", FEASIBLE_PLAN)
    args, entry = _command_args(command, problem, solution)
    assert_clean_error(invoke(args, entry), [str(problem), "no such file"], only_line=command != "iopddl")


def test_directory_is_rejected(tmp_path):
    """Exit code 2 and no traceback; the loader itself names the directory."""
    result = invoke(["info", tmp_path])
    assert result.exit_code == 2
    assert "Traceback" not in result.output + result.stderr
    with pytest.raises(ProblemFormatError, match="directory"):
        load_problem(tmp_path)


def test_directory_gives_one_error_line(tmp_path):
    assert_clean_error(invoke(["info", tmp_path]), [str(tmp_path), "directory"])


# ------------------------------------------------------------------------------------------ real processes
@pytest.mark.parametrize("case_id, cmd", [("string-cost", "portfolio"), ("edge-node-out-of-range", "iopddl")])
def test_malformed_problem_subprocess(tmp_path, bundled_doc, case_id, cmd, portfolio_cli):
    _, name, make, fragments = next(c for c in PROBLEM_CASES if c[0] == case_id)
    problem = tmp_path / name
    problem.write_bytes(make(bundled_doc))
    args = ["info", problem] if cmd == "portfolio" else [problem, "5"]
    proc = portfolio_cli.run(*args, program=cmd)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    joined = " ".join(proc.stderr.split())  # rich may soft-wrap at 80 columns; see below
    assert joined.count("error:") == 1, proc.stderr
    for fragment in fragments:
        assert fragment in joined, (fragment, proc.stderr)
    assert proc.stdout.strip() == ""


def test_long_error_is_not_wrapped(tmp_path, bundled_doc, portfolio_cli):
    deep = tmp_path / ("a-rather-long-directory-name-" * 2)
    deep.mkdir()
    problem = deep / "bad.json"
    problem.write_bytes(mutate(_set(N + ["costs", 2, 0], 1.5))(bundled_doc))
    proc = portfolio_cli.run("info", problem)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and str(problem) in lines[0], proc.stderr


# ------------------------------------------------------------------------------------------ accepted inputs
def _max_usage_plan(doc: dict) -> list[int]:
    return [max(range(len(u)), key=u.__getitem__) for u in doc["problem"]["nodes"]["usages"]]


@pytest.mark.parametrize("how", ["missing", "null"])
def test_missing_usage_limit_means_unlimited(tmp_path, fresh_bundled_doc, how):
    doc = fresh_bundled_doc
    plan = _max_usage_plan(doc)
    assert not reference_memory(doc, plan)["feasible"]  # breaks the example's limit of 70 ...
    if how == "missing":
        del doc["problem"]["usage_limit"]
    else:
        doc["problem"]["usage_limit"] = None
    path = write_json(tmp_path / "unlimited.json", doc)
    problem = load_problem(path)
    assert problem.usage_limit is None
    assert problem.capacity.is_unlimited
    ev = evaluate(problem, plan)
    assert ev.feasible and ev.margin is None and ev.usage_limit is None  # ... but not unlimited memory
    assert ev.peak_usage == reference_memory(doc, plan)["peak"]

    result = invoke(["info", "--json", path])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["usage_limit"] is None
    sol = write_json(tmp_path / "plan.json", plan)
    result = invoke(["evaluate", "--json", path, sol])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["feasible"] is True


def test_self_loops_duplicates_and_hyperedges_load_and_count(tmp_path, fresh_bundled_doc):
    doc = fresh_bundled_doc
    edges = doc["problem"]["edges"]
    edges["nodes"] += [[3, 3], [0, 1], [0, 1, 3], [6]]
    edges["costs"] += [list(range(100, 109)), [1, 2, 3, 4, 5, 6], list(range(1000, 1018)), [7, 8, 9]]
    path = write_json(tmp_path / "loops.json", doc)
    problem = load_problem(path)
    assert problem.num_edges == 13
    assert problem.edge_table(9).shape == (3, 3)
    assert problem.edge_table(11).shape == (2, 3, 3)
    for plan in ([0] * 8, FEASIBLE_PLAN, [1, 2, 0, 1, 1, 1, 2, 1]):
        assert evaluate(problem, plan).cost == reference_cost(doc, plan)
    # The self-loop [3, 3] reads its table at s3 * 3 + s3.
    assert (evaluate(problem, FEASIBLE_PLAN).cost - evaluate(load_problem(
        write_json(tmp_path / "base.json", _without_extra_edges(doc))), FEASIBLE_PLAN).cost
            == 108 + 1 + (1000 + 0 * 9 + 0 * 3 + 2) + 8)

    result = invoke(["info", "--json", path])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["edges"] == 13
    assert summary["edge_arity"] == {"1": 1, "2": 11, "3": 1}


def _without_extra_edges(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    doc["problem"]["edges"]["nodes"] = doc["problem"]["edges"]["nodes"][:9]
    doc["problem"]["edges"]["costs"] = doc["problem"]["edges"]["costs"][:9]
    return doc


# ------------------------------------------------------------------------------------------ solutions
@pytest.fixture
def example_file(tmp_path, bundled_doc) -> Path:
    return write_json(tmp_path / "example.json", bundled_doc)


SOLUTION_CASES = [
    ("object-without-solution", '{"plan": [0, 0]}', ["'solution'"]),
    ("null-solution", '{"solution": null, "cost": null}', ["no solution"]),
    ("number", "5", ["expected a list"]),
    ("string", '"0 0 0"', ["expected a list"]),
    ("empty", "", ["empty"]),
    ("garbage", "hello\nworld\n", ["not a solution"]),
    ("nested", "[[0, 0], [0]]", ["solution[0]"]),
    ("float-entry", "[0, 1.5, 0, 2, 0, 0, 1, 1]", ["solution[1]", "1.5"]),
    ("bool-entry", "[0, true, 0, 2, 0, 0, 1, 1]", ["solution[1]", "true"]),
    ("too-short", "[0, 0]", ["2 entries", "8 nodes"]),
    ("too-long", "[0, 0, 0, 2, 0, 0, 1, 1, 0]", ["9 entries", "8 nodes"]),
    ("negative", "[0, 0, 0, 2, 0, 0, -1, 1]", ["solution[6]", "-1"]),
    ("out-of-range", "[0, 0, 0, 2, 0, 0, 1, 2]", ["solution[7]", "2", "out of range"]),
    pytest.param("huge-strategy", "[0, 0, 0, 2, 0, 0, 1, 18446744073709551616]", ["solution[7]"],
                 id="huge-strategy"),
]


@pytest.mark.parametrize("case_id, text, fragments", SOLUTION_CASES,
                         ids=[c[0] if isinstance(c, tuple) else None for c in SOLUTION_CASES])
def test_malformed_solution(tmp_path, example_file, case_id, text, fragments):
    sol = tmp_path / "sol.txt"
    sol.write_text(text)
    assert_clean_error(invoke(["evaluate", example_file, sol]), fragments)


def test_missing_solution_file(tmp_path, example_file):
    sol = tmp_path / "nope.json"
    assert_clean_error(invoke(["evaluate", example_file, sol]), [str(sol), "no such file"])


def test_solution_file_errors_name_the_file(tmp_path):
    sol = tmp_path / "sol.json"
    sol.write_text('{"plan": []}')
    with pytest.raises(SolutionFormatError, match=str(sol)):
        read_solution(sol)


def test_evaluate_exit_codes(tmp_path, example_file, bundled_doc):
    feasible = write_json(tmp_path / "ok.json", FEASIBLE_PLAN)
    result = invoke(["evaluate", "--json", example_file, feasible])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["cost"] == 305 and doc["feasible"] is True

    plan = _max_usage_plan(bundled_doc)
    infeasible = write_json(tmp_path / "bad.json", plan)
    result = invoke(["evaluate", "--json", example_file, infeasible])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["feasible"] is False
    assert doc["cost"] == reference_cost(bundled_doc, plan)
    assert doc["peak_usage"] == reference_memory(bundled_doc, plan)["peak"] > 70

    result = invoke(["evaluate", example_file, infeasible])  # human output: still exit 1
    assert result.exit_code == 1
    assert "Traceback" not in result.output


def test_evaluate_subprocess_exit_codes(tmp_path, example_file, bundled_doc, portfolio_cli):
    bad = write_json(tmp_path / "bad.json", _max_usage_plan(bundled_doc))
    short = write_json(tmp_path / "short.json", [0, 0])
    infeasible = portfolio_cli.run("evaluate", example_file, bad)
    malformed = portfolio_cli.run("evaluate", example_file, short)
    assert (infeasible.returncode, malformed.returncode) == (1, 2)
    assert "Traceback" not in infeasible.stderr + malformed.stderr
    assert "error:" in malformed.stderr and "error:" not in infeasible.stderr


SOLUTION_FORMS = [
    ("json-list", json.dumps(FEASIBLE_PLAN)),
    ("json-list-indented", json.dumps(FEASIBLE_PLAN, indent=2) + "\n\n"),
    ("result-json", json.dumps({"problem": "bundled-example", "cost": 305, "solution": FEASIBLE_PLAN,
                                "evaluation": {"feasible": True}}, indent=2)),
    ("contest-output", "loading problem...\n[minusage] cost 465\nbest: 305\n"
                       + ", ".join(map(str, FEASIBLE_PLAN)).join("[]") + "\n\n"),
    ("contest-compact", "log line\n" + json.dumps(FEASIBLE_PLAN, separators=(",", ":"))),
]


@pytest.mark.parametrize("form, text", SOLUTION_FORMS, ids=[f[0] for f in SOLUTION_FORMS])
def test_solution_reader_forms(tmp_path, example_file, form, text):
    assert parse_solution_text(text) == FEASIBLE_PLAN
    sol = tmp_path / "sol.txt"
    sol.write_text(text)
    assert read_solution(sol) == FEASIBLE_PLAN
    result = invoke(["evaluate", "--json", example_file, sol])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cost"] == 305
