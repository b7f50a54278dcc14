"""The format registry: a new format is one module plus one registration, and then every reader
(``portfolio.solve``, ``portfolio.load``, ``portfolio solve``/``info``/``evaluate``/``convert``)
takes it, plans coming back in the file's own node order; the registry's own rules."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import toy_format  # noqa: F401 -- registers the toy format, as the recipe's module does
from conftest import bundled_example_path

import portfolio
from portfolio.adapters import formats
from portfolio.adapters.formats import Format, format_of, names, register, save_any
from portfolio.cli import cli
from portfolio.errors import ProblemError
from portfolio.io import load_problem

OPTIMUM = 305


@pytest.fixture
def toy_file(tmp_path):
    """The bundled example as a toy-lines file (nodes by id, written last to first)."""
    path = tmp_path / "example.toylines"
    assert save_any(load_problem(bundled_example_path()), path) == "toy-lines"
    return path


def _json_out(result) -> dict:
    return json.loads(result.stdout[result.stdout.index("{"):])


def test_a_registered_format_is_found_by_its_suffix(toy_file):
    assert "toy-lines" in names() and format_of(toy_file) == "toy-lines"
    assert format_of("x.toylines.gz") == "toy-lines"
    assert json.loads(toy_file.read_text().splitlines()[1])["id"] == 7  # the map is not the identity


def test_portfolio_solve_reads_it_and_answers_in_its_node_order(toy_file):
    original = load_problem(bundled_example_path())
    result = portfolio.solve(toy_file, time_limit=10)
    assert result.cost == OPTIMUM and result.optimal
    assert portfolio.evaluate(original, result.plan).cost == OPTIMUM  # plan indexed by node id
    assert portfolio.load(toy_file).num_nodes == original.num_nodes


def test_the_cli_solves_inspects_evaluates_and_converts_it(toy_file, tmp_path):
    runner = CliRunner()
    solved = runner.invoke(cli, ["solve", str(toy_file), "-t", "10", "-q", "--json"])
    assert solved.exit_code == 0, solved.output
    doc = json.loads(solved.stdout)
    assert doc["request"]["cost"] == OPTIMUM
    assert portfolio.evaluate(load_problem(bundled_example_path()), doc["solution"]).cost == OPTIMUM
    info = runner.invoke(cli, ["info", str(toy_file), "--json"])
    assert info.exit_code == 0 and _json_out(info)["nodes"] == 8
    (tmp_path / "plan.json").write_text(json.dumps(doc["solution"]))
    checked = runner.invoke(cli, ["evaluate", str(toy_file), str(tmp_path / "plan.json"), "--json"])
    assert checked.exit_code == 0 and _json_out(checked)["cost"] == OPTIMUM
    done = runner.invoke(cli, ["convert", str(toy_file), str(tmp_path / "back.toylines")])
    assert done.exit_code == 0, done.output
    again = portfolio.solve(tmp_path / "back.toylines", time_limit=10)
    assert again.cost == OPTIMUM


def test_the_registry_refuses_clashes_and_names_unknown_formats():
    with pytest.raises(ValueError, match="taken"):
        register(Format("xla"))
    with pytest.raises(ValueError, match="already selects format 'xla'"):
        register(Format("other", (".pb",)))
    with pytest.raises(ProblemError, match="unknown format 'onnx'; use one of contest, extended"):
        format_of("a.pb", "onnx")
    register(Format("read-only", (".ro",), read=toy_format.read_toy))
    try:
        with pytest.raises(ProblemError, match="read-only"):
            save_any(load_problem(bundled_example_path()), "x.ro")
    finally:
        formats.unregister("read-only")
    assert "read-only" not in names()
