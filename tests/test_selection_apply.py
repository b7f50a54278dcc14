"""A selector applied to a run (portfolio/api/selecting.py, `solve --selector`, `learn`): the
schedule's backends, options and CPU weights become the run's; the user's backends win, their
options lie over the schedule's; a selector that does not fit falls back in one line; the
default selector is off behind one constant and changes only the schedule when on; the commands
as real processes."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import selection_data as sd
from conftest import extra
from portfolio.api.selecting import UserChoice, open_selector, select_run
from portfolio.api.solving import choose
from portfolio.features import FEATURES_VERSION
from portfolio.io import load_problem
from portfolio.options import RunOptions
from portfolio.selection import load_selector, selector as selector_module
from portfolio.selection.fit import FEATURE_NAMES

BUDGET = FEATURE_NAMES.index("log10_budget")


def leaf(value: float) -> dict:
    return {"feature": [-1], "threshold": [-2.0], "left": [-1], "right": [-1], "value": [value]}


def by_budget(short: float, long: float, seconds: float = 30.0) -> dict:
    """A tree that predicts ``short`` below ``seconds`` of budget, ``long`` above."""
    import math

    return {"feature": [BUDGET, -1, -1], "threshold": [math.log10(seconds), -2.0, -2.0],
            "left": [1, -1, -1], "right": [2, -1, -1], "value": [0.0, short, long]}


def selector_doc(*candidates: tuple[str, list, dict, dict | None, list]) -> dict:
    """A selector file by hand: (name, backends, options, weights, trees) per candidate."""
    return {"format": "portfolio-selector", "format_version": 1,
            "features": {"version": FEATURES_VERSION, "names": list(FEATURE_NAMES),
                         "missing": -1.0},
            "default": candidates[0][0],
            "candidates": [{"name": n, "backends": b, "options": o, "weights": w, "cold": None,
                            "model": {"trees": t}} for n, b, o, w, t in candidates]}


DEFAULT = ("portfolio", sd.DEFAULT_SET, {}, None, [leaf(0.9)])
OURS = ("ls", ["greedy", "localsearch"], {"localsearch": {"kick_max": 9, "block_nodes": 7}},
        {"greedy": 1, "localsearch": 3}, [leaf(0.95), leaf(0.97)])


def write(tmp_path, doc, name="sel.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def example():
    from portfolio.cli import bundled_example

    return load_problem(bundled_example())


def run_with(selector, example, options=None, user=UserChoice(), assignments=(), warned=None):
    options = options or RunOptions(10.0)
    picked = choose(None, options.time_limit, assignments=assignments,
                    deterministic=options.deterministic)
    options = replace(options, backend_options=picked.options)
    said = [] if warned is None else warned
    chosen, after, record = select_run(selector, example, picked, options, user=user,
                                       assignments=assignments, warn=said.append, choose=choose)
    return picked, options, chosen, after, record


def test_the_schedule_becomes_the_run(example, tmp_path):
    selector = load_selector(write(tmp_path, selector_doc(DEFAULT, OURS)))
    warned: list[str] = []
    picked, before, chosen, after, record = run_with(selector, example, warned=warned)
    assert [b.name for b in chosen.backends] == ["greedy", "localsearch"]
    assert after.backend_options == {"localsearch": {"kick_max": 9, "block_nodes": 7}}
    assert dict(after.cpu_weights) == {"greedy": 1.0, "localsearch": 3.0}
    assert replace(after, backend_options=before.backend_options, cpu_weights={}) == before
    assert record["applied"] is True and record["schedule"]["name"] == "ls"
    assert record["predicted"] == {"portfolio": 0.9, "ls": 0.96}
    assert record["sha256"] == selector.sha256 and record["selector"] == selector.path
    assert 0 < record["features_seconds"] < 5 and record["weights_applied"] is True
    assert warned == []   # the weights are the run's (RunOptions.cpu_weights, runner/focus.py)


def test_the_users_options_lie_over_the_schedules(example, tmp_path):
    selector = load_selector(write(tmp_path, selector_doc(DEFAULT, OURS)))
    *_, after, record = run_with(selector, example, assignments=["localsearch.kick_max=5",
                                                                 "toulbar2.vectors=2"])
    assert after.backend_options["localsearch"] == {"kick_max": 5, "block_nodes": 7}
    assert record["applied"] is True


@pytest.mark.parametrize("options, user, why", [
    (RunOptions(10.0), UserChoice(backends=True), "the backends were named by the user"),
    (RunOptions(10.0, deterministic=True), UserChoice(), "deterministic mode"),
    (RunOptions(10.0, objective="peak"), UserChoice(), "objective 'peak'"),
])
def test_what_the_selector_leaves_alone(example, tmp_path, options, user, why):
    selector = load_selector(write(tmp_path, selector_doc(DEFAULT, OURS)))
    picked, before, chosen, after, record = run_with(selector, example, options, user)
    assert chosen is picked and after == before
    assert record["applied"] is False and record["why"].startswith(why)
    assert record["schedule"]["name"] == "ls"          # recorded either way


def test_the_budget_is_an_input(example, tmp_path):
    doc = selector_doc(DEFAULT, (*OURS[:4], [by_budget(0.99, 0.5)]))
    selector = load_selector(write(tmp_path, doc))
    assert run_with(selector, example, RunOptions(10.0))[-1]["schedule"]["name"] == "ls"
    assert run_with(selector, example, RunOptions(60.0))[-1]["schedule"]["name"] == "portfolio"


@pytest.mark.parametrize("change, why", [
    (lambda d: d["candidates"][1].update(backends=["greedy", "nosuch"], weights=None,
                                         options={}),
     "backend nosuch not installed (named by ls)"),
    (lambda d: d["features"].update(version=FEATURES_VERSION + 1), "features of version"),
    (lambda d: d["candidates"][1].update(options={"localsearch": {"no_such_option": 1}}),
     "no_such_option"),
])
def test_a_selector_that_does_not_fit_falls_back_in_one_line(example, tmp_path, change, why):
    doc = selector_doc(DEFAULT, OURS)
    change(doc)
    warned: list[str] = []
    picked, before, chosen, after, record = run_with(
        load_selector(write(tmp_path, doc)), example, warned=warned)
    assert chosen is picked and after == before and record["applied"] is False
    assert len(warned) == 1 and why in warned[0] and "\n" not in warned[0]
    assert warned[0].endswith("the default runs")


def test_the_default_selector_is_on_and_changes_only_the_schedule(example, tmp_path, monkeypatch):
    from portfolio.registry import Registry

    shipped = selector_module.shipped_selector_path()
    assert shipped.is_file()   # it ships, loads and fits this installation
    assert load_selector(shipped).unusable_here(Registry().names()) is None
    assert selector_module.DEFAULT_SELECTOR_ON is True
    assert open_selector("default").sha256 == load_selector(shipped).sha256
    path = write(tmp_path, selector_doc(DEFAULT, OURS))
    monkeypatch.setattr(selector_module, "shipped_selector_path", lambda: path)
    monkeypatch.setattr(selector_module, "DEFAULT_SELECTOR_ON", False)
    assert open_selector("default") is None            # off: the file is not read
    monkeypatch.setattr(selector_module, "DEFAULT_SELECTOR_ON", True)
    on = open_selector("default")
    assert on is not None and on.path == str(path)
    picked, before, chosen, after, record = run_with(on, example)
    assert [b.name for b in picked.backends] == [b.name for b in choose(None).backends]
    assert [b.name for b in chosen.backends] != [b.name for b in picked.backends]
    assert replace(after, backend_options=before.backend_options, cpu_weights=before.cpu_weights,
                   cold=before.cold) == before
    assert open_selector("none") is None and open_selector(None) is None


def test_the_api_records_the_selection(tmp_path, bundled_example):
    import portfolio

    path = write(tmp_path, selector_doc(DEFAULT, OURS))
    result = portfolio.solve(bundled_example, time_limit=10, selector=path)
    assert result.cost == 305 and result.selection["applied"] is True
    assert result.to_dict()["selection"]["schedule"]["backends"] == ["greedy", "localsearch"]
    assert sorted(result.run.runs) == ["greedy", "localsearch"]
    assert result.run.to_dict()["options_given"]["localsearch"]["kick_max"] == 9
    named = portfolio.solve(bundled_example, time_limit=10, selector=path, backends="greedy")
    assert named.selection["applied"] is False and sorted(named.run.runs) == ["greedy"]
    assert portfolio.solve(bundled_example, time_limit=10, selector=None).selection is None


# ------------------------------------------------------------------------ the commands as processes
def test_learn_and_solve_with_the_selector(tmp_path, portfolio_cli):
    extra("sklearn")
    runs = sd.write_runs(tmp_path / "runs", sd.graphs(8))
    out = tmp_path / "selector.json"
    proc = portfolio_cli.run("learn", *runs, "-o", out, "--cv", "--trees", "4")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    assert "leave-one-instance-out cross-validation" in proc.stderr
    assert "16 cells (8 graphs x budgets 10, 60 s), 3 candidates" in proc.stderr
    selector = load_selector(out)
    assert selector.cv["summary"]["cells"] == 16 and len(selector.training["runs"]) == 2
    assert sorted(c.schedule.name for c in selector.candidates) == [
        "greedy+localsearch", "portfolio", "toulbar2"]
    again = portfolio_cli.run("learn", *runs, "-o", out)
    assert again.returncode == 2 and "already exists; pass --force" in again.stderr

    solved = portfolio_cli.run("solve", "--selector", out, "--json", "-t", "10")
    assert solved.returncode == 0, solved.stderr
    doc = json.loads(solved.stdout)
    assert doc["selection"]["applied"] is True and doc["selection"]["sha256"] == selector.sha256
    assert doc["solution"] and doc["cost"] == 305
    assert set(doc["selection"]["predicted"]) == {"portfolio", "greedy+localsearch", "toulbar2"}
    plain = portfolio_cli.run("solve", "--selector", "none", "--json", "-t", "10")
    assert plain.returncode == 0 and "selection" not in json.loads(plain.stdout)


def test_a_bad_selector_file_is_one_line_and_exit_2(tmp_path, portfolio_cli):
    bad = write(tmp_path, {"format": "portfolio-selector", "format_version": 1,
                           "features": {"version": 1, "names": ["nodes"]}, "candidates": []},
                "bad.json")
    for args in (("solve", "--selector", bad), ("solve", "--selector", tmp_path / "none.json"),
                 ("learn", tmp_path)):
        proc = portfolio_cli.run(*args, "-t", "5") if args[0] == "solve" else \
            portfolio_cli.run(*args, "--cv")
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        errors = [line for line in lines if line.startswith("error: ")]
        # one error line, the last; a note the run printed before it (on a loaded machine) may stand
        assert len(errors) == 1 and lines[-1] == errors[0], proc.stderr
        assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stderr
    nothing = portfolio_cli.run("learn", tmp_path)
    assert nothing.returncode == 2 and "give --output FILE and/or --cv" in nothing.stderr


def test_a_bench_configuration_runs_the_selector(tmp_path, portfolio_cli, bundled_example):
    """``portfolio[selector=FILE]`` in a bench: each task applies the selector as ``solve
    --selector`` does, and its row records the choice; a file that is no selector is one line."""
    path = write(tmp_path, selector_doc(DEFAULT, OURS))
    proc = portfolio_cli.run("bench", bundled_example, "-b", f"sel=portfolio[selector={path}]",
                             "-t", "5", "--name", "r", "--runs-dir", tmp_path, "-q")
    assert proc.returncode == 0, proc.stderr
    row = json.loads((tmp_path / "r" / "results.jsonl").read_text().splitlines()[0])
    assert row["run_options"] == {"selector": str(path.resolve())}
    assert row["selection"]["applied"] is True and row["selection"]["schedule"]["name"] == "ls"
    assert {r["backend"].split("+")[0] for r in row["backend_runs"]} == {"greedy", "localsearch"}
    assert row["options"]["localsearch"]["kick_max"] == 9
    shipped = portfolio_cli.run("bench", bundled_example, "-b", "d=portfolio[selector=default]",
                                "-t", "5", "--name", "d", "--runs-dir", tmp_path, "-q")
    assert shipped.returncode == 0, shipped.stderr
    row = json.loads((tmp_path / "d" / "results.jsonl").read_text().splitlines()[0])
    assert row["run_options"] == {"selector": "default"}
    assert row["selection"]["sha256"] == load_selector(selector_module.shipped_selector_path()).sha256
    assert row["selection"]["applied"] is False and "below the smallest" in row["selection"]["why"]
    bad = portfolio_cli.run("bench", bundled_example, "-b", f"x=portfolio[selector={tmp_path}/no.json]",
                            "-t", "5", "--name", "b", "--runs-dir", tmp_path)
    assert bad.returncode == 2 and "portfolio[selector=" in bad.stderr and "no.json" in bad.stderr


def test_a_graph_smaller_than_the_training_graphs_keeps_the_default(example, tmp_path):
    doc = {**selector_doc(DEFAULT, OURS), "domain": {"nodes": [816, 40958]}}
    picked, options, chosen, after, record = run_with(load_selector(write(tmp_path, doc)), example)
    assert record["applied"] is False and "below the smallest training graph's 816" in record["why"]
    assert chosen is picked and after.cpu_weights == {} and after == options


def test_a_budget_outside_the_training_budgets_keeps_the_default(example, tmp_path):
    doc = {**selector_doc(DEFAULT, OURS), "domain": {"budget_seconds": [10, 60]}}
    selector = load_selector(write(tmp_path, doc))
    *_, record = run_with(selector, example, RunOptions(240.0))
    assert record["applied"] is False and "outside the training budgets (10-60 s)" in record["why"]
    *_, inside = run_with(selector, example, RunOptions(30.0))
    assert inside["applied"] is True
