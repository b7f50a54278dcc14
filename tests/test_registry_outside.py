"""Outside backends join the default set only when asked (issue 47, item 8): a backend from
another distribution runs when named, or when a config adds it (``[portfolio] add_to_default``);
``default=True`` alone does not put it there. ``portfolio backends`` says for each backend whether
it is in the default set and why; every run's output and record names the outside backends that
took part, with their distributions and versions."""

from __future__ import annotations

import json

import pytest

import outside_backends
import portfolio
from conftest import REPO, TESTS, bundled_example_path
from portfolio.api.solving import choose
from portfolio.configure import read_configs
from portfolio.errors import ProblemError
from portfolio.registry import Registry
from portfolio.testing import PortfolioCli


def _registry() -> Registry:
    return Registry(plugins=[outside_backends])


def test_an_outside_backends_default_alone_keeps_it_out_of_the_default_set():
    registry = _registry()
    names = [b.name for b in registry.select(None)]
    assert "outside" not in names and "greedy" in names
    added = [b.name for b in registry.select(None, add_to_default=("outside",))]
    assert added == sorted(names + ["outside"])
    assert [b.name for b in registry.select(["outside"])] == ["outside"]    # named: it runs


def test_the_listing_says_why_each_backend_is_in_the_default_set_or_not():
    rows = {r["name"]: r for r in _registry().describe()}
    assert rows["greedy"]["default"] is True and rows["greedy"]["builtin"] is True
    assert "built-in" in rows["greedy"]["default_why"]
    outside = rows["outside"]
    assert outside["default"] is False and outside["builtin"] is False
    assert "add_to_default" in outside["default_why"] and "outside" in outside["default_why"]
    added = {r["name"]: r for r in _registry().describe(add_to_default=("outside",))}
    assert added["outside"]["default"] is True
    assert "add_to_default" in added["outside"]["default_why"]


def test_a_config_adds_an_outside_backend_and_an_unknown_name_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text('[portfolio]\nadd_to_default = ["outside"]\n')
    assert read_configs([path]).add_to_default == ("outside",)
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "outside_backends")
    assert "outside" not in [b.name for b in choose(None, 10).backends]
    assert "outside" in [b.name for b in choose(None, 10, config=path).backends]
    path.write_text('[portfolio]\nadd_to_default = ["nowhere"]\n')
    with pytest.raises(ProblemError, match="add_to_default: unknown backend 'nowhere'; known "):
        choose(None, 10, config=path)
    path.write_text('[portfolio]\nadd_to_default = "outside"\n')
    with pytest.raises(ProblemError, match=r"\[portfolio\] add_to_default: expected a list"):
        choose(None, 10, config=path)


def test_the_command_line_lists_the_reason(tmp_path):
    cli = PortfolioCli(cwd=tmp_path, plugins="outside_backends", path=[TESTS])
    out = cli.run("backends", "--json")
    rows = {r["name"]: r for r in json.loads(out.stdout)["backends"]}
    assert rows["outside"]["default"] is False and rows["outside"]["default_why"]
    table = cli.run("backends")
    assert "add_to_default" in table.stdout + table.stderr


def test_a_run_names_the_outside_backends_that_took_part(tmp_path):
    cli = PortfolioCli(cwd=tmp_path, plugins="outside_backends", path=[TESTS], env={"COLUMNS": "200"})
    out = cli.run("solve", bundled_example_path(), "-t", "5", "-b", "greedy,outside", "--json",
                  "--no-exhaustive")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["outside_backends"] == [{"name": "outside", "distribution": "outside_backends",
                                        "version": "", "via": "PORTFOLIO_PLUGINS"}]
    assert doc["plugins_env"] == "outside_backends"
    assert "outside backends in this run: outside (outside_backends, via PORTFOLIO_PLUGINS)" \
        in out.stderr
    plain = cli.run("solve", bundled_example_path(), "-t", "5", "-b", "greedy", "--json", "-q",
                    "--no-exhaustive")
    assert json.loads(plain.stdout)["outside_backends"] == []


def test_the_api_result_names_them_too(monkeypatch):
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "outside_backends")
    result = portfolio.solve(bundled_example_path(), time_limit=5, backends="greedy,outside",
                             exhaustive=False)
    assert [o["name"] for o in result.outside_backends] == ["outside"]
    assert result.to_dict()["outside_backends"][0]["distribution"] == "outside_backends"
    own = portfolio.solve(bundled_example_path(), time_limit=5,
                          backends=["greedy", outside_backends.Outside()], exhaustive=False)
    assert own.outside_backends == [{"name": "outside", "distribution": None, "version": None,
                                     "via": "object (outside_backends.Outside)"}]


def test_a_bench_row_names_them(tmp_path, monkeypatch):
    from portfolio.bench import run_sweep

    monkeypatch.setenv("PORTFOLIO_PLUGINS", "outside_backends")
    result = run_sweep([bundled_example_path()], backends=["greedy+outside"], time_limit=3,
                       runs_dir=tmp_path, name="o")
    row = json.loads((result.folder / "results.jsonl").read_text().splitlines()[0])
    assert [o["name"] for o in row["outside_backends"]] == ["outside"]
    assert row["plugins_env"] == "outside_backends"


def test_the_example_plugin_is_not_in_the_default_set_until_added():
    text = (REPO / "plugins" / "example-plugin" / "README.md").read_text()
    assert "add_to_default" in text
    guide = (REPO / "docs" / "plugins.md").read_text()
    assert "add_to_default" in guide
