"""The commands end to end.

``solve`` and ``iopddl`` run as real processes: the solve deadline counts from the process start, so
an in-process CliRunner call late in a pytest session would start with its budget already spent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import BENCH, TESTS, reference_cost, reference_memory, write_json
from portfolio.cli import _iopddl, cli
from portfolio.evaluate import evaluate
from portfolio.io import load_problem, read_solution

SOLVE_LIMIT = "3"  # seconds; the example needs far less, backends may use all of it


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines, "no output on stdout"
    return lines[-1].strip()


def parse_plan(line: str) -> list[int]:
    plan = json.loads(line)
    assert isinstance(plan, list) and all(type(s) is int for s in plan), line
    return plan


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "1000"})


# ------------------------------------------------------------------------------------------ solve
def test_solve_without_problem_solves_the_bundled_example(bundled_example, bundled_doc,
                                                          portfolio_cli):
    proc = portfolio_cli.run("solve", "--time-limit", SOLVE_LIMIT)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    plan = parse_plan(last_line(proc.stdout))
    assert len(plan) == 8
    ev = evaluate(load_problem(bundled_example), plan)
    assert ev.feasible and not ev.has_forbidden
    assert reference_memory(bundled_doc, plan)["feasible"]
    assert ev.cost == reference_cost(bundled_doc, plan) >= 305  # 305 is the optimum


def test_solve_output_writes_a_result_file(bundled_example, bundled_doc, tmp_path, portfolio_cli):
    out = tmp_path / "result.json"
    proc = portfolio_cli.run("solve", "-t", SOLVE_LIMIT, "-q", "--output", out)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    plan = doc["solution"]
    assert plan == parse_plan(last_line(proc.stdout))
    assert evaluate(load_problem(bundled_example), plan).feasible
    if "cost" in doc:
        assert doc["cost"] == reference_cost(bundled_doc, plan)
    # the result file is a valid solution file for `portfolio evaluate`
    assert read_solution(out) == plan
    result = invoke("evaluate", "--json", bundled_example, out)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cost"] == reference_cost(bundled_doc, plan)


def test_solve_refuses_to_overwrite_without_force(tmp_path):
    """Refused before anything is solved, so in-process is fine here."""
    out = tmp_path / "result.json"
    out.write_text("keep me\n")
    before = out.stat().st_mtime_ns
    result = invoke("solve", "-t", SOLVE_LIMIT, "-q", "--output", out)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and str(out) in lines[0] and "--force" in lines[0], result.stderr
    assert result.stdout == ""
    assert out.read_text() == "keep me\n" and out.stat().st_mtime_ns == before


def test_solve_json_and_force(bundled_example, tmp_path, portfolio_cli):
    out = tmp_path / "result.json"
    out.write_text("old\n")
    proc = portfolio_cli.run("solve", bundled_example, "-t", SOLVE_LIMIT, "-q", "--json",
                             "--output", out, "--force")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    plan = doc["solution"]
    assert isinstance(plan, list) and len(plan) == 8
    ev = evaluate(load_problem(bundled_example), plan)
    assert ev.feasible
    if "cost" in doc:
        assert doc["cost"] == ev.cost
    assert json.loads(out.read_text())["solution"] == plan  # --force replaced the old file


def test_solve_json_records_the_cpu_its_backends_got_and_the_load(tmp_path, portfolio_cli):
    from portfolio.generate import generate_problem
    from portfolio.io import write_problem

    problem = tmp_path / "gen.json"
    write_problem(generate_problem(300, strategies=4, seed=5), problem)
    proc = portfolio_cli.run("solve", problem, "-t", "2", "-q", "--json", "-b", "greedy,minusage")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    cpu = doc["cpu"]   # what the backends got against their due, and the machine's load
    assert cpu["cpu_due"] > 0 and cpu["cores"] == doc["schedule"]["cores"]
    assert cpu["cpu_seconds"] == pytest.approx(sum(b["cpu_seconds"] or 0 for b in doc["backends"]),
                                               abs=0.01)
    assert cpu["machine_cores"] >= 1 and cpu["load_start"] >= 0 and cpu["load_end"] >= 0


def test_iopddl_drop_in(bundled_example, portfolio_cli):
    """`iopddl example.json 5` (the contest's example when present, else the bundled one)."""
    contest = BENCH / "example.json"
    path = contest if contest.is_file() else bundled_example
    raw = json.loads(Path(path).read_text())
    proc = portfolio_cli.iopddl(path, "5")
    assert proc.returncode == 0, proc.stderr
    plan = parse_plan(last_line(proc.stdout))
    assert len(plan) == len(raw["problem"]["nodes"]["costs"])
    assert evaluate(load_problem(path), plan).feasible
    assert reference_memory(raw, plan)["feasible"]


@pytest.mark.parametrize("args", [["EXAMPLE"], ["EXAMPLE", "-3"], ["EXAMPLE", "soon"], []])
def test_iopddl_usage_errors(bundled_example, args):
    args = [str(bundled_example) if a == "EXAMPLE" else a for a in args]
    result = CliRunner().invoke(_iopddl, args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert result.stdout == ""


@pytest.mark.parametrize("args, path", [(["solve", "-t"], "portfolio solve"),
                                         (["bench", "--jobs"], "portfolio bench"),
                                         (["report"], "portfolio report")])
def test_usage_errors_name_the_command_they_came_from(args, path):
    result = CliRunner().invoke(cli, args, prog_name="portfolio")
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and line.endswith(f"(see `{path} --help`)"), line


# ------------------------------------------------------------------------------------------ info
def test_info_json_matches_raw(tmp_path, bundled_example, bundled_doc):
    result = invoke("info", "--json", bundled_example)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    nodes, edges = bundled_doc["problem"]["nodes"], bundled_doc["problem"]["edges"]
    assert summary["nodes"] == len(nodes["costs"])
    assert summary["edges"] == len(edges["nodes"])
    assert summary["strategies"]["total"] == sum(map(len, nodes["costs"]))
    assert summary["edge_table_entries"] == sum(map(len, edges["costs"]))
    assert summary["usage_limit"] == bundled_doc["problem"]["usage_limit"]
    assert summary["zero_length_intervals"] == sum(1 for a, b in nodes["intervals"] if a == b)
    assert summary["distinct_time_points"] == len({a for a, b in nodes["intervals"] if b > a})


def test_info_time_horizon_starts_at_the_first_start(tmp_path, fresh_bundled_doc):
    doc = fresh_bundled_doc
    doc["problem"]["nodes"]["intervals"] = [[a + 5, b + 5] for a, b in doc["problem"]["nodes"]["intervals"]]
    path = write_json(tmp_path / "shifted.json", doc)
    result = invoke("info", "--json", path)
    assert result.exit_code == 0, result.output
    starts = [a for a, _ in doc["problem"]["nodes"]["intervals"]]
    ends = [b for _, b in doc["problem"]["nodes"]["intervals"]]
    assert json.loads(result.stdout)["time_horizon"] == [min(starts), max(ends)]


def test_info_human_output(bundled_example):
    result = invoke("info", bundled_example)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # tables go to stderr
    assert "bundled-example" in result.stderr


# ------------------------------------------------------------------------------------------ generate
@pytest.mark.parametrize("name", ["gen.json", "gen.json.gz"])
def test_generate_writes_a_file_info_accepts(tmp_path, name):
    out = tmp_path / name
    result = invoke("generate", out, "--nodes", "40", "--seed", "3")
    assert result.exit_code == 0, result.output + result.stderr
    if name.endswith(".gz"):
        assert out.read_bytes()[:2] == b"\x1f\x8b"
    result = invoke("info", "--json", out)
    assert result.exit_code == 0, result.output + result.stderr
    assert json.loads(result.stdout)["nodes"] == 40
    problem = load_problem(out)
    ev = evaluate(problem, problem.min_usage_strategies)
    assert ev.feasible and not ev.has_forbidden  # the generator's documented promise

    again = tmp_path / ("again-" + name)
    assert invoke("generate", again, "--nodes", "40", "--seed", "3").exit_code == 0
    assert load_problem(again).edge_costs.tolist() == problem.edge_costs.tolist()  # seeded

    before = out.read_bytes()
    result = invoke("generate", out, "--nodes", "10")
    assert result.exit_code == 2
    assert "--force" in result.stderr
    assert out.read_bytes() == before


def test_debug_prints_a_raising_backends_traceback(portfolio_cli):
    faulty = portfolio_cli.configured(plugins="faulty_backends", path=[TESTS])
    args = ("solve", "--backends", "raises,enumerate", "-t", "3", "--no-exhaustive")
    plain = faulty.run(*args, "--json")
    doc = json.loads(plain.stdout)
    row = next(b for b in doc["backends"] if b["backend"] == "raises")
    assert row["note"] == "exception: RuntimeError: boom in solve"
    assert "faulty_backends.py" in row["traceback"] and "Traceback" not in plain.stderr
    debug = faulty.run(*args, "--debug")
    assert debug.returncode == 0, debug.stderr
    assert "traceback of raises" in debug.stderr
    assert 'raise RuntimeError("boom in solve")' in debug.stderr


# ------------------------------------------------------------------------------------------ backends
def test_backends_shows_the_default_set(monkeypatch):
    # faulty_backends are test_only: listed, never in the default set
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "faulty_backends")
    rows = {b["name"]: b for b in json.loads(invoke("backends", "--json").stdout)["backends"]}
    assert rows["greedy"]["default"] is True and rows["toulbar2"]["default"] is True
    assert rows["bruteforce"]["default"] is False
    table = invoke("backends").output
    lines = {line.split("│")[1].strip(): line for line in table.splitlines()
             if line.startswith("│") and line.split("│")[1].strip()}
    assert lines["greedy"].split("│")[4].strip() == "yes"
    assert lines["bruteforce"].split("│")[4].strip() == "no"


def test_backends_verbose_shows_where_each_backend_was_loaded_from():
    """A stale non-editable copy of plugins/ would show up here as a path outside the checkout."""
    import portfolio_plugins.greedy

    rows = {b["name"]: b for b in json.loads(invoke("backends", "--json").stdout)["backends"]}
    assert Path(rows["greedy"]["loaded_from"]) == Path(portfolio_plugins.greedy.__file__)
    assert all(Path(b["loaded_from"]).is_file() for b in rows.values())
    result = invoke("backends", "--verbose")
    assert result.exit_code == 0 and "loaded from" in result.output
    assert "loaded from" not in invoke("backends").output
