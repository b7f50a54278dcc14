"""Configs that compose (issue 47, item 5): several config files merge in order, key by key, the
later winning, each file recorded, a malformed one an error (exit 2) on every command that takes
them; ``bench -b 'a=@A.toml,b=@B.toml'`` compares config files; ``cold`` names are checked like
``--backends``; a backend whose option declaration is invalid is unavailable and never run."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

import portfolio
from conftest import REPO, TESTS, bundled_example_path
from portfolio.backend_options import OptionError
from portfolio.bench.plan import BenchError, resolve_configurations
from portfolio.cli import _iopddl, cli
from portfolio.configure import read_configs
from portfolio.registry import Registry
from portfolio.testing import PortfolioCli

import outside_backends


def _write(folder, name: str, text: str):
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture
def pair(tmp_path):
    first = _write(tmp_path, "first.toml", '[portfolio]\nbackends = ["greedy", "minusage"]\n'
                   '[greedy]\ndesign = 1\n[toulbar2]\nvectors = 2\nfirst_limit = 4.0\n')
    second = _write(tmp_path, "second.toml", '[toulbar2]\nvectors = 3\n')
    return first, second


# ------------------------------------------------------------------------------ merging
def test_config_files_merge_in_order_key_by_key(pair):
    first, second = pair
    merged = read_configs([first, second])
    assert merged.paths == (str(first), str(second))
    assert merged.path == os.pathsep.join(merged.paths)
    assert merged.backends == ("greedy", "minusage")                 # only the first sets it
    assert dict(merged.options) == {"greedy": {"design": 1},
                                    "toulbar2": {"vectors": 3, "first_limit": 4.0}}
    other = read_configs([second, first])
    assert dict(other.options)["toulbar2"] == {"vectors": 2, "first_limit": 4.0}
    assert read_configs([]) is None


def test_a_later_file_overrides_the_backend_list(tmp_path, pair):
    first, _ = pair
    later = _write(tmp_path, "later.toml", '[portfolio]\nbackends = ["localsearch"]\n')
    assert read_configs([first, later]).backends == ("localsearch",)


def test_a_malformed_file_among_several_is_named(tmp_path, pair):
    broken = _write(tmp_path, "broken.toml", "[greedy\n")
    with pytest.raises(OptionError, match="broken.toml: not a valid TOML file"):
        read_configs([broken, pair[0]])


@pytest.mark.parametrize("command", [
    ["solve", str(bundled_example_path()), "-t", "2"],
    ["bench", str(bundled_example_path()), "-t", "2", "-b", "greedy"],
    ["tradeoff", str(bundled_example_path()), "-t", "2", "--no-save"],
    ["tune", str(bundled_example_path()), "-t", "2"],
])
def test_every_command_refuses_a_malformed_file_before_a_good_one(tmp_path, pair, command):
    broken = _write(tmp_path, "broken.toml", "[greedy\n")
    out = CliRunner().invoke(cli, command + ["--config", str(broken), "--config", str(pair[1])],
                             env={"COLUMNS": "1000"})
    assert out.exit_code == 2, out.output
    errors = [line for line in out.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "broken.toml: not a valid TOML file" in errors[0], out.output
    assert "Traceback" not in out.output


def test_solve_merges_several_files_and_records_each(tmp_path):
    first = _write(tmp_path, "a.toml", '[portfolio]\nbackends = ["greedy"]\n[greedy]\ndesign = 1\n')
    second = _write(tmp_path, "b.toml", '[greedy]\ndesign = 2\n')
    out = PortfolioCli(cwd=REPO).run("solve", bundled_example_path(), "-t", "5", "--json", "-q",
                                     "--no-exhaustive", "--config", first, "--config", second)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert [b["backend"] for b in doc["backends"]] == ["greedy"]
    assert doc["options_given"] == {"greedy": {"design": 2}}
    assert doc["config"] == f"{first}{os.pathsep}{second}"


def test_iopddl_takes_a_list_of_files_in_its_variable(tmp_path):
    good = _write(tmp_path, "good.toml", '[greedy]\ndesign = 1\n')
    bad = _write(tmp_path, "bad.toml", '[greedy]\ndesign = "many"\n')
    cli = PortfolioCli(cwd=REPO)
    out = cli.iopddl(bundled_example_path(), "5",
                     env={"PORTFOLIO_CONFIG": f"{good}{os.pathsep}{bad}"})
    assert out.returncode == 2 and "bad.toml: [greedy]: option greedy.design" in out.stderr
    out = cli.iopddl(bundled_example_path(), "5",
                     env={"PORTFOLIO_CONFIG": f"{good}{os.pathsep}{good}"})
    assert out.returncode == 0, out.stderr


# ------------------------------------------------------------------------------ bench
def test_bench_compares_config_files_as_configurations(tmp_path):
    a = _write(tmp_path, "A.toml", '[portfolio]\nbackends = ["greedy", "minusage"]\n'
               '[greedy]\ndesign = 1\n')
    b = _write(tmp_path, "B.toml", '[portfolio]\nbackends = ["greedy"]\n[greedy]\ndesign = 2\n')
    configs = resolve_configurations([f"a=@{a}", f"b=@{b}"], False)
    assert [(c.name, c.backends) for c in configs] == [("a", ("greedy", "minusage")),
                                                       ("b", ("greedy",))]
    assert [dict(c.options) for c in configs] == [{"greedy": (("design", 1),)},
                                                  {"greedy": (("design", 2),)}]


def test_a_config_configuration_without_backends_runs_the_default_set(tmp_path):
    plain = _write(tmp_path, "plain.toml", '[greedy]\ndesign = 1\n')
    config = resolve_configurations([f"p=@{plain}"], False)[0]
    assert set(config.backends) == {b.name for b in Registry().select(None)}
    assert dict(config.options) == {"greedy": (("design", 1),)}


@pytest.mark.parametrize("spec, says", [
    ("x=@{missing}", "no such config file"), ("x=@{broken}", "not a valid TOML file"),
    ("x=@", "names no config file")])
def test_a_bad_config_configuration_is_one_line(tmp_path, spec, says):
    broken = _write(tmp_path, "broken.toml", "[greedy\n")
    text = spec.format(missing=tmp_path / "none.toml", broken=broken)
    with pytest.raises(BenchError, match=says):
        resolve_configurations([text], False)


def test_bench_takes_several_config_files(tmp_path, pair):
    configs = resolve_configurations(["greedy"], False, config=[pair[0], pair[1]])
    assert dict(configs[0].options)["toulbar2"] == (("first_limit", 4.0), ("vectors", 3))


# ------------------------------------------------------------------------------ cold names
def test_cold_names_are_checked_like_backend_names():
    with pytest.raises(portfolio.ProblemError) as exc:
        portfolio.solve(bundled_example_path(), time_limit=3, backends="greedy",
                        warm_start=[0] * 8, cold=["greedy", "gredy"])
    text = str(exc.value)
    assert text.startswith("cold: unknown backend 'gredy'; known backends: ") and "\n" not in text


def test_a_known_cold_name_outside_the_run_is_a_note(caplog):
    result = portfolio.solve(bundled_example_path(), time_limit=3, backends="greedy",
                             warm_start=[0] * 8, cold=["minusage"], exhaustive=False)
    assert result.feasible
    assert any("cold: minusage is not in this run" in r.message for r in caplog.records)


# ------------------------------------------------------------------------------ declarations
def test_a_backend_with_an_invalid_option_declaration_is_unavailable():
    registry = Registry(plugins=[outside_backends], load_entry_points=False)
    rows = {r["name"]: r for r in registry.describe()}
    row = rows["bad-declaration"]
    assert row["available"] is False
    assert "invalid option declaration" in row["reason"] and "rounds" in row["reason"]
    assert rows["outside"]["available"] is True
    assert "bad-declaration" not in [b.name for b in registry.select(
        None, add_to_default=("bad-declaration", "outside"))]
    with pytest.raises(LookupError, match=r"not available here: bad-declaration \(invalid option"):
        registry.resolve(["bad-declaration"])


def test_the_command_line_lists_it_as_unavailable_and_refuses_to_run_it(tmp_path):
    cli = PortfolioCli(cwd=tmp_path, plugins="outside_backends", path=[TESTS])
    listed = cli.run("backends", "--json")
    rows = {r["name"]: r for r in json.loads(listed.stdout)["backends"]}
    assert rows["bad-declaration"]["available"] is False
    run = cli.run("solve", bundled_example_path(), "-t", "3", "-b", "bad-declaration",
                  "--no-exhaustive")
    assert run.returncode == 2 and run.stdout == ""   # nothing ran
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    assert errors[0].startswith("error: not available here: bad-declaration (invalid option "
                                "declaration: meta.options: option 'rounds'")


def test_a_tune_takes_its_set_and_fixed_options_from_config_files(tmp_path):
    from portfolio.tuning.settings import TuneSettings, resolve

    first = _write(tmp_path, "a.toml", '[portfolio]\nbackends = ["greedy", "localsearch"]\n'
                   '[localsearch]\nkick_min = 2\n')
    second = _write(tmp_path, "b.toml", '[localsearch]\nkick_min = 3\n')
    resolved = resolve(TuneSettings(files=(str(bundled_example_path()),), time_limit=3.0,
                                    config=(str(first), str(second))))
    assert resolved.space.backends == ("greedy", "localsearch")
    assert resolved.space.fixed == {"localsearch": {"kick_min": 3}}
    assert not any(p.backend == "localsearch" and p.option == "kick_min"
                   for p in resolved.space.params)
    assert resolved.identity["config"] == {"files": [str(first), str(second)],
                                           "fixed": {"localsearch": {"kick_min": 3}}}
    plain = resolve(TuneSettings(files=(str(bundled_example_path()),), time_limit=3.0))
    assert "config" not in plain.identity   # a tune without one keeps its digest
