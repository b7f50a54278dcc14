"""The Python API (docs/api.md) behaves in a host program: right answers, quiet, re-entrant, from any
thread, nothing left behind, one exception type for bad input, and the CLI's answers."""

from __future__ import annotations

import copy
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import portfolio
from conftest import REPO
from portfolio.generate import generate_problem

EXAMPLE_PLAN = [0, 0, 0, 2, 0, 0, 1, 1]


def _children() -> list[int]:
    """Live processes whose parent is this one, read from /proc (a zombie, state Z, has ended: its
    exit status waits to be collected by multiprocessing's next cleanup and holds no resources)."""
    me, found = str(os.getpid()), []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        state, parent = stat[stat.rindex(")") + 2:].split()[:2]
        if parent == me and state != "Z":
            found.append(int(pid))
    return found


def _in_thread(fn):
    """Run ``fn`` in a worker thread; its value, or its exception re-raised here."""
    out: dict = {}

    def target() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 -- handed to the test's thread
            out["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(120)
    assert not thread.is_alive()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _arrays(doc: dict) -> dict:
    """The bundled document as the flat numpy arrays of ``problem_from_arrays``."""
    nodes, edges = doc["problem"]["nodes"], doc["problem"]["edges"]
    flat = lambda rows: np.array([x for row in rows for x in row], dtype=np.int64)  # noqa: E731
    return dict(intervals=np.array(nodes["intervals"], dtype=np.int64),
                strategy_counts=np.array([len(c) for c in nodes["costs"]]),
                costs=flat(nodes["costs"]), usages=flat(nodes["usages"]),
                edge_node_counts=np.array([len(e) for e in edges["nodes"]]),
                edge_nodes=flat(edges["nodes"]), edge_costs=flat(edges["costs"]),
                usage_limit=doc["problem"]["usage_limit"])


# ------------------------------------------------------------------------------------------ answers
def test_the_example_is_solved_to_its_proven_optimum(bundled_example):
    result = portfolio.solve(bundled_example, time_limit=10)
    assert (result.cost, result.plan, result.feasible) == (305, EXAMPLE_PLAN, True)
    assert result.optimal and result.status == "optimal" and result.lower_bound == 305
    assert result.winner == "enumeration" and result.elapsed < 10
    assert portfolio.evaluate(portfolio.load(bundled_example), result.plan).cost == 305


def test_to_dict_is_json(bundled_example):
    doc = json.loads(json.dumps(portfolio.solve(bundled_example, time_limit=10).to_dict()))
    assert doc["plan"] == EXAMPLE_PLAN and doc["optimal"] is True and doc["run"]["cost"] == 305


def test_from_a_worker_thread_then_the_main_thread(bundled_example):
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    first = _in_thread(lambda: portfolio.solve(bundled_example, time_limit=10))
    second = portfolio.solve(bundled_example, time_limit=10)
    assert first.cost == second.cost == 305 and first.optimal and second.optimal
    assert {sig: signal.getsignal(sig) for sig in before} == before  # the runner put them back


def test_backends_run_from_a_worker_thread(bundled_example):
    """Workers forked from a thread: the same answer, and no child left once it returns."""
    result = _in_thread(lambda: portfolio.solve(bundled_example, time_limit=5,
                                                backends=["greedy", "localsearch"], exhaustive=False))
    assert result.cost == 305
    assert {run.backend for run in result.run.runs.values()} == {"greedy", "localsearch"}
    assert _children() == []


def test_the_cli_gives_the_same_answer(bundled_example):
    from portfolio.cli import cli

    out = CliRunner().invoke(cli, ["solve", str(bundled_example), "-t", "10", "-q", "--json"])
    assert out.exit_code == 0, out.output
    cli_doc = json.loads(out.stdout)
    api = portfolio.solve(bundled_example, time_limit=10)
    assert (cli_doc["solution"], cli_doc["cost"], cli_doc["winner"], cli_doc["proof"]) == (
        api.plan, api.cost, api.winner, api.proof)


def test_a_dict_and_numpy_arrays_solve(bundled_doc):
    from_dict = portfolio.solve(copy.deepcopy(bundled_doc), time_limit=10)
    checked = portfolio.problem_from_arrays(**_arrays(bundled_doc))
    trusted = portfolio.Problem.from_contest_arrays(name="np", **{
        k: v for k, v in _arrays(bundled_doc).items()})
    numpy_doc = copy.deepcopy(bundled_doc)
    numpy_doc["problem"]["nodes"]["intervals"] = np.array(numpy_doc["problem"]["nodes"]["intervals"])
    for problem in (checked, trusted, numpy_doc):
        assert portfolio.solve(problem, time_limit=10).cost == 305
    assert from_dict.cost == 305 and from_dict.plan == EXAMPLE_PLAN


def test_a_path_of_any_format_is_solvable_by_path(tmp_path, bundled_example):
    """``solve`` reads every format through the adapters' dispatch: the example as an XLA request
    (binary and text) gives the optimum 305, its plan in the request's node order."""
    from portfolio.adapters.formats import save_any

    problem = portfolio.load(bundled_example)
    for name in ("example.pb", "example.textproto"):
        save_any(problem, tmp_path / name)
        result = portfolio.solve(tmp_path / name, time_limit=10)
        assert result.cost == 305 and result.optimal
        assert len(result.plan) == problem.num_nodes
        assert portfolio.evaluate(problem, result.plan).cost == 305


# ------------------------------------------------------------------------------------------ a good host
def test_nothing_on_stdout(bundled_example, capfd):
    portfolio.solve(bundled_example, time_limit=10)
    portfolio.solve(bundled_example, time_limit=3, backends="greedy", exhaustive=False)
    portfolio.backends()
    portfolio.evaluate(portfolio.load(bundled_example), EXAMPLE_PLAN)
    assert capfd.readouterr().out == ""


def test_streams_without_file_descriptors(bundled_example, monkeypatch):
    """As in a Jupyter kernel: sys.stdout and sys.stderr are objects without a real fd."""
    fake_out, fake_err = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", fake_out)
    monkeypatch.setattr(sys, "stderr", fake_err)
    result = portfolio.solve(bundled_example, time_limit=3, backends=["greedy"], exhaustive=False)
    assert result.cost == 305 and fake_out.getvalue() == ""


def test_on_improve_in_the_callers_thread_with_falling_verified_costs():
    problem = generate_problem(300, strategies=6, seed=3)
    calls: list = []

    def solve_here():
        me = threading.get_ident()
        result = portfolio.solve(problem, time_limit=4, backends=["greedy", "localsearch"],
                                 exhaustive=False, seed=1,
                                 on_improve=lambda *a: calls.append((threading.get_ident() == me, *a)))
        return result

    result = _in_thread(solve_here)
    assert calls and all(same for same, *_ in calls)
    costs = [c for _, c, *_ in calls]
    assert costs == sorted(costs, reverse=True) and len(set(costs)) == len(costs)
    assert costs[-1] == result.cost
    for _, cost, plan, backend, seconds in calls:
        assert portfolio.evaluate(problem, plan).cost == cost and isinstance(backend, str)
        assert 0 <= seconds <= 4
    assert [s for *_, s in calls] == sorted(s for *_, s in calls)


def test_no_child_process_is_left(bundled_example):
    result = portfolio.solve(bundled_example, time_limit=3, backends=["greedy", "localsearch"],
                             exhaustive=False)
    assert result.cost == 305
    assert _children() == []


def test_greedy_alone(bundled_example):
    result = portfolio.solve(bundled_example, time_limit=5, backends=["greedy"], exhaustive=False)
    assert {run.backend for run in result.run.runs.values()} == {"greedy"} and result.feasible
    assert result.winner in ("greedy", "fallback", "presolve")


def test_backends_lists_the_defaults():
    rows = {row["name"]: row for row in portfolio.backends()}
    assert rows["greedy"]["available"] and rows["greedy"]["default"]
    from portfolio.registry import Registry

    # the "default" column is exactly the set ``solve`` runs when no backend is named
    assert {name for name, row in rows.items() if row["default"]} == \
        {b.name for b in Registry().select(None)}


def test_import_is_light():
    code = ("import sys, portfolio; assert portfolio.IMPORTED > 0;"
            "heavy = [m for m in ('numpy', 'numba', 'ortools', 'pysat', 'portfolio.runner') if m in sys.modules];"
            "assert not heavy, heavy; portfolio.solve; portfolio.ProblemError;"
            "heavy = [m for m in ('numba', 'ortools', 'pysat') if m in sys.modules]; assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_evaluate_is_callable_and_still_a_module(bundled_example):
    import portfolio.evaluate as module
    from portfolio.evaluate import evaluate

    problem = portfolio.load(bundled_example)
    assert portfolio.evaluate is module and module(problem, EXAMPLE_PLAN) == evaluate(problem, EXAMPLE_PLAN)
    with pytest.raises(portfolio.ProblemError, match=r"solution\[3\] = 9 is out of range"):
        portfolio.evaluate(problem, [0, 0, 0, 9, 0, 0, 1, 1])
    with pytest.raises(portfolio.ProblemError, match="expected a Problem"):
        portfolio.evaluate(str(bundled_example), EXAMPLE_PLAN)


# ------------------------------------------------------------------------------------------ bad input
def test_a_bad_dict_names_field_and_index(fresh_bundled_doc):
    fresh_bundled_doc["problem"]["nodes"]["usages"][3].append(1)
    with pytest.raises(portfolio.ProblemError, match=r"^<dict>: problem\.nodes\.usages\[3\]: has \d+ "
                                                     r"entries but costs\[3\] has \d+$"):
        portfolio.solve(fresh_bundled_doc, time_limit=5)


def test_a_bad_file_gives_the_line_the_cli_prints(tmp_path, fresh_bundled_doc):
    from portfolio.cli import cli

    fresh_bundled_doc["problem"]["edges"]["nodes"][2] = [0, 99]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(fresh_bundled_doc))
    with pytest.raises(portfolio.ProblemError) as caught:
        portfolio.solve(bad, time_limit=5)
    assert isinstance(caught.value, ValueError) and "problem.edges.nodes[2][1]" in str(caught.value)
    out = CliRunner().invoke(cli, ["solve", str(bad), "-t", "5"])
    assert out.exit_code == 2 and out.stderr.strip().splitlines()[-1] == f"error: {caught.value}"


def test_bad_arrays_name_argument_and_index(bundled_doc):
    arrays = _arrays(bundled_doc)
    arrays["costs"] = arrays["costs"].copy()
    arrays["costs"][4] = -1
    with pytest.raises(portfolio.ProblemError, match=r"<arrays>: costs\[4\]: must be in"):
        portfolio.problem_from_arrays(**arrays)
    arrays = _arrays(bundled_doc)
    arrays["edge_costs"] = arrays["edge_costs"][:-1]
    with pytest.raises(portfolio.ProblemError, match=r"edge_costs: has \d+ entries but the edges' "
                                                     r"tables need \d+"):
        portfolio.problem_from_arrays(**arrays)
    arrays = _arrays(bundled_doc)
    arrays["intervals"] = arrays["intervals"][:, ::-1].copy()
    with pytest.raises(portfolio.ProblemError, match=r"problem\.nodes\.intervals\[\d+\]: start \d+ is "
                                                     r"after end"):
        portfolio.problem_from_arrays(**arrays)


def test_an_unknown_backend_is_named(bundled_example):
    with pytest.raises(portfolio.ProblemError, match=r"unknown backend 'nope'.*available: .*greedy"):
        portfolio.solve(bundled_example, backends=["greedy", "nope"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(problem=42), "expected a path, a dict in the contest layout or a Problem, got int"),
    (dict(time_limit=0), "time_limit: expected a positive number"),
    (dict(time_limit=float("nan")), "time_limit: expected a positive number"),
    (dict(seed="1"), "seed: expected an integer"),
    (dict(on_improve=3), "on_improve: expected a callable"),
    (dict(workers=0), "workers: expected a positive integer"),
    (dict(memory_limit="4G"), "memory_limit: expected bytes"),
    (dict(warm_start=[0, 1]), "solution has 2 entries but the problem has 8 nodes"),
    (dict(backends=[1]), "neither a backend name nor a backend object"),
    (dict(problem="/nonexistent/problem.json"), "/nonexistent/problem.json: no such file"),
])
def test_bad_options_raise_the_one_type(bundled_example, kwargs, message):
    kwargs = {"problem": bundled_example, **kwargs}
    with pytest.raises(portfolio.ProblemError, match=re.escape(message)):
        portfolio.solve(kwargs.pop("problem"), **kwargs)


# ------------------------------------------------------------------------------------------ the page
def test_the_example_on_the_page_runs(tmp_path):
    """docs/api.md's ```python block runs as written and prints what the page says it prints."""
    page = (REPO / "docs" / "api.md").read_text()
    code = re.findall(r"```python\n(.*?)```", page, flags=re.S)[0]
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "305 True" in proc.stdout
    assert "\n70 95\n250\n" in proc.stdout   # with_limit: the example at another limit


def test_solve_runs_a_backend_object_that_is_not_installed(monkeypatch):
    # docs/api.md: a plugin's backend, not installed, is run by passing the object
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "plugins" / "example-plugin"))
    from portfolio_example_plugin import ExampleBackend

    result = portfolio.solve(portfolio.example_path(), time_limit=3, exhaustive=False,
                             backends=[ExampleBackend(), "minusage"])
    assert result.feasible and result.cost == 305
    assert {"example", "minusage"} <= set(result.run.runs)
    with pytest.raises(portfolio.ProblemError, match="neither a backend name nor a backend object"):
        portfolio.solve(portfolio.example_path(), time_limit=3, backends=[object()])
