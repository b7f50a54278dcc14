"""Backend options (issue 41): declared by backends, checked where a user gives them (one line,
exit 2, nothing run), resolved once per run (budget-aware defaults), handed to the backend through
``report.options``, and recorded in every result, row and deterministic identity."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from portfolio.backend import (Backend, BackendMeta, Capabilities, NullReporter, SolveResult,
                               Status, declared, options_of)
from portfolio.backend_options import Budgeted, Option, OptionError, resolve
from portfolio.configure import gather, lookup_in, read_config
from portfolio.options import DEFAULT_WORK, RunOptions
from portfolio.runner import run_portfolio
from portfolio.testing import CliResult, PortfolioCli

from conftest import REPO, bundled_example_path

CHOICE = Option("mode", "choice", "a", choices=("a", "b", "c"), help="which way",
                by_budget=(Budgeted(10.0, "b"), Budgeted(100.0, "c")))
NUMBER = Option("share", "float", 0.5, low=0.0, high=1.0, help="a share")
COUNT = Option("rounds", "int", 3, low=1, help="rounds")
FLAG = Option("fast", "bool", False, help="go fast", changes_plan=False)


class Echo(Backend):
    """Answers the least-memory plan and says in its note which options it got."""

    name = "echo"
    description = "test backend that echoes its options"
    capabilities = Capabilities(reduced=False)
    meta = BackendMeta(test_only=True, deterministic=True, options=(CHOICE, NUMBER, COUNT, FLAG))

    def solve(self, problem, deadline, seed, warm_start, report):
        if report.work is not None:
            report.work.spend(10)
        values = options_of(self, report)
        plan = np.asarray(problem.min_usage_strategies, dtype=np.int64)
        return SolveResult(Status.FEASIBLE, plan, note=json.dumps(values, sort_keys=True))


# ------------------------------------------------------------------------------------------ values
@pytest.mark.parametrize("option, text, value", [
    (CHOICE, "b", "b"), (NUMBER, "0.25", 0.25), (NUMBER, "1", 1.0), (COUNT, "7", 7),
    (FLAG, "true", True), (FLAG, "No", False), (FLAG, "1", True)])
def test_a_value_from_the_command_line_takes_the_options_type(option, text, value):
    got = option.parse(text)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("option, text, says", [
    (CHOICE, "d", "one of a, b, c"), (NUMBER, "1.5", "from 0 to 1"), (NUMBER, "half", "a number"),
    (COUNT, "2.5", "an integer"), (COUNT, "0", ">= 1"), (FLAG, "maybe", "true or false"),
    (NUMBER, "nan", "a number")])
def test_a_bad_value_is_refused_with_what_is_allowed(option, text, says):
    with pytest.raises(OptionError, match=says):
        option.parse(text)


def test_typed_values_are_checked_not_converted():
    assert COUNT.check(4.0) == 4 and NUMBER.check(1) == 1.0
    for option, value in ((COUNT, "4"), (NUMBER, True), (FLAG, 1), (CHOICE, 1), (COUNT, 4.5)):
        with pytest.raises(OptionError):
            option.check(value)


def test_a_budget_aware_default_follows_the_budget():
    assert [CHOICE.default_for(b) for b in (5, 10, 10.5, 100, 500, None)] == \
        ["b", "b", "c", "c", "a", "a"]
    assert CHOICE.default_text() == "b up to 10 s, c up to 100 s, else a"
    assert resolve((CHOICE, NUMBER), {"share": 0.1}, 60.0) == {"mode": "c", "share": 0.1}


def test_a_deterministic_runs_budget_reads_its_work_in_nominal_seconds():
    assert RunOptions(deterministic=True).budget_seconds == pytest.approx(60.0)
    assert RunOptions(work=DEFAULT_WORK // 6).budget_seconds == pytest.approx(10.0, rel=1e-3)
    assert RunOptions(time_limit=7).budget_seconds == 7.0


@pytest.mark.parametrize("bad, says", [
    (Option("Bad-Name", "int", 1, help="x"), "lower_case"),
    (Option("x", "list", 1, help="x"), "kind"),
    (Option("x", "int", 1, help=""), "no help"),
    (Option("x", "choice", "a", help="x"), "needs choices"),
    (Option("x", "int", 5, low=0, high=3, help="x"), "default"),
    (Option("x", "choice", "a", choices=("a",), help="x",
            by_budget=(Budgeted(10, "a"), Budgeted(5, "a"))), "increasing"),
])
def test_a_bad_declaration_is_left_out_and_named(bad, says):
    class Declares(Echo):
        meta = BackendMeta(test_only=True, options=(NUMBER, bad, NUMBER))

    meta, problems = declared(Declares())
    assert meta.options == (NUMBER,)
    assert any(says in p for p in problems), problems
    assert any("declared twice" in p for p in problems)


def test_options_of_fills_the_defaults_of_a_direct_call():
    assert options_of(Echo(), NullReporter()) == {"mode": "a", "share": 0.5, "rounds": 3,
                                                  "fast": False}
    assert options_of(Echo(), NullReporter({"rounds": 9}))["rounds"] == 9


# ------------------------------------------------------------------------------------------ sources
def _lookup(name):
    return ("echo", Echo.meta.options) if name in ("echo", "pkg:echo") else None


def test_the_command_line_overrides_the_api_which_overrides_the_config(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[portfolio]\nbackends = ["echo"]\n[echo]\nmode = "b"\nshare = 0.2\nrounds = 4\n')
    config = read_config(path)
    assert config.backends == ("echo",)
    got = gather(_lookup, "echo", config=config, given={"echo": {"share": 0.3}},
                 assignments=["echo.rounds=5"])
    assert got == {"echo": {"mode": "b", "share": 0.3, "rounds": 5}}
    assert gather(_lookup, "echo", assignments=["pkg:echo.fast=yes"]) == {"echo": {"fast": True}}


@pytest.mark.parametrize("text, says", [
    ('[echo]\nmode = "z"\n', "c.toml: [echo]: option echo.mode: expected one of a, b, c"),
    ('[echo]\ncolour = 1\n', "c.toml: [echo]: unknown option echo.colour; echo takes: mode"),
    ('[other]\nmode = 1\n', "c.toml: [other]: unknown backend 'other'"),
    ('[echo\n', "c.toml: not a valid TOML file"),
    ('mode = 1\n', "c.toml: mode = 1: expected a table"),
    ('[echo]\n[echo.inner]\nx = 1\n', "c.toml: [echo] inner: expected a value"),
    ('[portfolio]\nbackend = []\n', "c.toml: [portfolio] backend: unknown key"),
    ('[portfolio]\nbackends = "echo"\n', "c.toml: [portfolio] backends: expected a list"),
])
def test_a_bad_config_file_is_one_line_naming_the_file_and_where(tmp_path, text, says):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(OptionError) as exc:
        gather(_lookup, "echo", config=read_config(path))
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_a_missing_config_file_is_named(tmp_path):
    with pytest.raises(OptionError, match="no such config file"):
        read_config(tmp_path / "none.toml")


@pytest.mark.parametrize("text, says", [
    ("echo.mode", "expected BACKEND.NAME=VALUE"), ("mode=a", "expected BACKEND.NAME=VALUE"),
    ("nope.mode=a", "unknown backend 'nope'; known backends: echo"),
    ("echo.nope=a", "unknown option echo.nope"), ("echo.rounds=x", "expected an integer >= 1"),
])
def test_a_bad_assignment_is_named_with_what_is_allowed(text, says):
    with pytest.raises(OptionError, match=says):
        gather(_lookup, "echo", assignments=[text])


def test_the_registrys_backends_are_looked_up_by_plain_and_qualified_name():
    from portfolio.registry import Registry

    registry = Registry()
    got = gather(lookup_in(registry), "", assignments=["iopddl-portfolio:toulbar2.vectors=2"])
    assert got == {"toulbar2": {"vectors": 2}}


# ------------------------------------------------------------------------------------------ runner
def _example():
    from portfolio.io import load_problem

    return load_problem(bundled_example_path())


@pytest.mark.parametrize("deterministic", [False, True])
def test_the_runner_hands_every_option_to_the_backend_and_records_it(deterministic):
    options = RunOptions(time_limit=30 if deterministic else 5, deterministic=deterministic,
                         work=1000 if deterministic else None,
                         backend_options={"echo": {"share": 0.75}})
    result = run_portfolio(_example(), [Echo()], options)
    got = json.loads(result.runs["echo"].note)
    budget_mode = CHOICE.default_for(options.budget_seconds)
    assert got == {"mode": budget_mode, "share": 0.75, "rounds": 3, "fast": False}
    assert result.options == {"echo": got}
    assert result.options_given == {"echo": {"share": 0.75}}
    doc = result.to_dict()
    assert doc["options"] == {"echo": got} and doc["options_given"] == {"echo": {"share": 0.75}}


def test_an_option_the_backend_does_not_declare_is_refused_before_any_worker():
    with pytest.raises(OptionError, match="unknown option echo.colour"):
        run_portfolio(_example(), [Echo()], RunOptions(time_limit=5,
                                                       backend_options={"echo": {"colour": 1}}))


def _identity(**given):
    options = RunOptions(time_limit=30, work=1000, backend_options={"echo": given})
    return run_portfolio(_example(), [Echo()], options).deterministic


def test_deterministic_identity_holds_the_options_that_can_change_the_plan():
    plain, again = _identity(), _identity()
    assert plain["complete"] and plain["identity"] == again["identity"]
    assert plain["options"] == {"echo": {"mode": "b", "share": 0.5, "rounds": 3}}   # 1000 units: < 1 s
    assert _identity(share=0.25)["identity"] != plain["identity"]
    assert _identity(fast=True)["identity"] == plain["identity"]   # cannot change the plan


# ------------------------------------------------------------------------------------------ entry points
def _cli(*args: str) -> CliResult:
    return PortfolioCli(cwd=REPO).run(*args)


@pytest.mark.parametrize("args, says", [
    (["--option", "toulbar2.warm_follow=lst"], "expected one of round, last, none, got 'lst'"),
    (["--option", "toulbar2.colour=1"], "unknown option toulbar2.colour; toulbar2 takes: "),
    (["--option", "tb2.x=1"], "unknown backend 'tb2'; known backends: "),
    (["--option", "toulbar2"], "expected BACKEND.NAME=VALUE"),
])
def test_solve_refuses_a_bad_option_with_one_line_and_exit_2(args, says):
    out = _cli("solve", str(bundled_example_path()), "-t", "5", *args)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], out.stderr
    assert out.stdout == ""   # nothing was run: no plan line


def test_solve_records_options_and_config_in_its_json(tmp_path):
    config = tmp_path / "tb2.toml"
    config.write_text('[toulbar2]\nfirst_limit = 4.0\nvectors = 2\n')
    out = _cli("solve", str(bundled_example_path()), "-t", "5", "-b", "toulbar2", "--json", "-q",
               "--no-exhaustive", "--config", str(config), "--option", "toulbar2.vectors=1")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["options_given"] == {"toulbar2": {"first_limit": 4.0, "vectors": 1}}
    # given ones win; the others take their default for a 5 s budget (the short-budget tune's)
    assert doc["options"]["toulbar2"] == {"warm_follow": "none", "first_limit": 4.0,
                                          "limit_step": 4.41, "vectors": 1, "exact": True}
    assert doc["config"] == str(config)


def test_iopddl_reads_its_one_variable_and_refuses_a_bad_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[toulbar2]\nvectors = "many"\n')
    out = PortfolioCli(cwd=REPO, env={"PORTFOLIO_CONFIG": str(bad)}).iopddl(
        bundled_example_path(), "5")
    assert out.returncode == 2 and "bad.toml: [toulbar2]: option toulbar2.vectors" in out.stderr


def test_the_api_takes_backend_options_and_a_config(tmp_path):
    import portfolio

    config = tmp_path / "c.toml"
    config.write_text('[portfolio]\nbackends = ["greedy"]\n[greedy]\ndesign = 1\n')
    result = portfolio.solve(bundled_example_path(), time_limit=5, config=config,
                             exhaustive=False)
    assert list(result.run.options) == ["greedy"]
    assert result.run.options["greedy"] == {"design": 1}
    result = portfolio.solve(bundled_example_path(), time_limit=5, config=config,
                             backend_options={"greedy": {"design": 2}}, exhaustive=False)
    assert result.run.options["greedy"] == {"design": 2} and result.run.config == str(config)
    with pytest.raises(portfolio.ProblemError, match="unknown option greedy.colour"):
        portfolio.solve(bundled_example_path(), time_limit=5,
                        backend_options={"greedy": {"colour": 1}})


def test_the_backends_listing_shows_every_declared_option():
    out = _cli("backends", "--json")
    rows = {r["name"]: r for r in json.loads(out.stdout)["backends"]}
    follow = {o["name"]: o for o in rows["toulbar2"]["options"]}["warm_follow"]
    assert follow["type"] == "choice" and follow["choices"] == ["round", "last", "none"]
    assert [b["value"] for b in follow["by_budget"]] == ["none", "last"] and follow["help"]
    assert [b["upto_seconds"] for b in follow["by_budget"]] == [20.0, 120.0]
    verbose = _cli("backends", "--verbose")
    assert "toulbar2.warm_follow" in verbose.stdout + verbose.stderr


# ------------------------------------------------------------------------------------------ bench
def test_bench_configurations_carry_options_in_brackets():
    from portfolio.bench.plan import BenchError, parse_configuration, split_configurations

    assert split_configurations("toulbar2[warm_follow=last,first_limit=6]+greedy,localsearch") == [
        "toulbar2[warm_follow=last,first_limit=6]+greedy", "localsearch"]
    assert parse_configuration("tb=toulbar2[warm_follow=last]+greedy") == (
        "tb", ("toulbar2", "greedy"), {"toulbar2": {"warm_follow": "last"}})
    for bad in ("toulbar2[warm_follow]", "toulbar2[a=1,a=2]", "g+g", "toulbar2[x=1"):
        with pytest.raises(BenchError):
            if "[" in bad and "]" not in bad:
                split_configurations(bad)
            else:
                parse_configuration(bad)


def test_bench_checks_options_before_running_and_records_them(tmp_path):
    from portfolio.bench import BenchError, run_sweep

    with pytest.raises(BenchError, match="unknown option toulbar2.colour"):
        run_sweep([bundled_example_path()], backends=["toulbar2[colour=red]"], time_limit=3,
                  runs_dir=tmp_path, name="bad")
    assert not (tmp_path / "bad").exists()
    result = run_sweep([bundled_example_path()], time_limit=3, runs_dir=tmp_path, name="ok",
                       seeds=[0, 1], backends=["one=greedy[design=1]", "two=greedy"],
                       assignments=["greedy.design=2"])
    rows = [json.loads(line) for line in (result.folder / "results.jsonl").read_text().splitlines()]
    assert [(r["configuration"], r["seed"]) for r in rows] == [
        ("one", 0), ("two", 0), ("one", 1), ("two", 1)]   # alternated per seed
    assert {r["configuration"]: r["options"]["greedy"]["design"] for r in rows} == {"one": 1,
                                                                                   "two": 2}
    meta = json.loads((result.folder / "meta.json").read_text())
    assert [c["options"] for c in meta["configurations"]] == [{"greedy": {"design": 1}},
                                                              {"greedy": {"design": 2}}]
