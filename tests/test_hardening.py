"""Hostile plugins and user mistakes (issue 15): one clear line each, and the answer never corrupted.

The hostile plugins live in tests/hostile/, one behaviour per module; they are loaded through the
registry's test hook (``PORTFOLIO_PLUGINS``) or installed through a fake distribution: a
``*.dist-info`` folder with an ``entry_points.txt`` on PYTHONPATH, which importlib.metadata finds just
as it would in site-packages.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from conftest import REPO, bundled_example_path, skip_or_fail
from portfolio import registry as registry_mod
from portfolio.registry import Registry, RegistryError, parse_backend_list
from portfolio.testing import CliResult, PortfolioCli

HOSTILE = REPO / "tests" / "hostile"


def _cli(*paths: Path, plugins: str = "") -> PortfolioCli:
    """Commands that can import the hostile modules (``paths`` first), ``plugins`` registered."""
    return PortfolioCli(plugins=plugins or None, path=[*paths, HOSTILE], timeout=90)


def portfolio(*args: str | Path, cli: PortfolioCli | None = None,
              timeout: float = 90) -> CliResult:
    return (cli or _cli()).run(*args, timeout=timeout)


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


def fake_distribution(site: Path, dist: str, entry_points: dict[str, str]) -> None:
    """An installed-looking distribution announcing ``entry_points`` in portfolio.backends."""
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {module}\n" for name, module in entry_points.items())
    (info / "entry_points.txt").write_text(f"[portfolio.backends]\n{lines}")


# ------------------------------------------------------------------------------------------ 4: clashes
def test_builtin_keeps_its_name_and_impostor_is_qualified(monkeypatch):
    monkeypatch.syspath_prepend(str(HOSTILE))
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "hostile_impostor")
    for _ in range(3):  # deterministic, not "usually"
        reg = Registry()
        assert reg.get("greedy").description != "not the real greedy"
        impostor = reg.get("hostile_impostor:greedy")
        assert impostor.description == "not the real greedy"
        assert impostor.name == "hostile_impostor:greedy"  # results say which one ran
        assert reg.get("iopddl-portfolio:greedy") is reg.get("greedy")
        clash = [w for w in reg.warnings if "claimed by" in w]
        assert len(clash) == 1 and "iopddl-portfolio" in clash[0] and "hostile_impostor" in clash[0]


def test_two_distributions_same_entry_point_name_both_listed(tmp_path):
    fake_distribution(tmp_path, "evil-b", {"impostor": "hostile_impostor"})
    fake_distribution(tmp_path, "evil-a", {"impostor": "hostile_junk"})
    fake_distribution(tmp_path, "evil-c", {"thief": "hostile_impostor"})
    proc = portfolio("backends", "--json", cli=_cli(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    rows = {row["name"]: row for row in doc["backends"]}
    # the built-in keeps 'greedy'; both distributions' impostors are there, by qualified name
    assert rows["greedy"]["package"] == "iopddl-portfolio"
    assert rows["evil-b:greedy"]["package"] == "evil-b"
    assert "junk-survivor" in rows  # evil-a's entry point (same entry-point name) was not dropped
    # the same module under two distributions registers once
    clash = [w for w in doc["warnings"] if "'greedy' is claimed by" in w]
    assert len(clash) == 1 and "iopddl-portfolio" in clash[0] and "evil-b" in clash[0]
    assert rows["evil-b:greedy"]["clash"] == rows["greedy"]["clash"] != ""
    table = portfolio("backends", cli=_cli(tmp_path))
    assert table.returncode == 0 and "evil-b:greedy" in table.stdout + table.stderr
    assert "claimed by iopddl-portfolio and evil-b" in table.stderr


def test_qualified_name_picks_the_impostor_in_solve():
    cli = _cli(plugins="hostile_impostor")
    proc = portfolio("solve", "-b", "hostile_impostor:greedy", "-t", "8", "--json", "-q",
                     "--no-exhaustive", cli=cli)
    assert proc.returncode == 0, proc.stderr
    rows = {r["backend"]: r for r in json.loads(proc.stdout)["backends"]}
    assert list(rows) == ["hostile_impostor:greedy"] and rows["hostile_impostor:greedy"]["note"] == "impostor"
    proc = portfolio("solve", "-b", "greedy", "-t", "8", "--json", "-q", "--no-exhaustive", cli=cli)
    rows = {r["backend"]: r for r in json.loads(proc.stdout)["backends"]}
    assert list(rows) == ["greedy"] and rows["greedy"]["note"] != "impostor"


# ------------------------------------------------------------------------------------------ 5: junk
def test_junk_from_the_hook_is_skipped_with_one_line_each(monkeypatch):
    monkeypatch.syspath_prepend(str(HOSTILE))
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "hostile_junk,hostile_hook_raises,no_such_module_xyz")
    reg = Registry(load_entry_points=False)
    assert reg.names() == ["junk-survivor"]
    junk = [w for w in reg.warnings if w.startswith("hostile_junk:")]
    assert len(junk) == 4, reg.warnings  # None, object(), "greedy", Nameless()
    assert all("\n" not in w for w in reg.warnings)
    assert any(w.startswith("hostile_hook_raises:") and "hook exploded" in w for w in reg.warnings)
    assert any("no_such_module_xyz" in w for w in reg.warnings)


def test_available_that_raises_or_answers_nonsense_is_not_available(monkeypatch):
    monkeypatch.syspath_prepend(str(HOSTILE))
    import hostile_available as ha

    reg = Registry(plugins=[ha], load_entry_points=False)
    backends = [reg.get("avail-raises"), reg.get("avail-nonsense")]
    (ok1, why1), (ok2, why2) = reg.available(backends)
    assert not ok1 and "available exploded" in why1
    assert not ok2 and "not (bool, str)" in why2


def test_available_that_hangs_is_cut_off(monkeypatch):
    monkeypatch.syspath_prepend(str(HOSTILE))
    monkeypatch.setattr(registry_mod, "AVAILABLE_TIMEOUT", 0.5)
    import hostile_available as ha

    reg = Registry(plugins=[ha], load_entry_points=False)
    t0 = time.monotonic()
    (ok, why), = reg.available([reg.get("avail-hangs")])
    assert time.monotonic() - t0 < 2.0
    assert not ok and "did not answer within 0.5 s" in why


@pytest.mark.slow
def test_backends_and_solve_stay_on_time_with_hostile_available():
    cli = _cli(plugins="hostile_available,hostile_junk,hostile_hook_raises")
    t0 = time.monotonic()
    proc = portfolio("backends", "--json", cli=cli, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - t0 < registry_mod.AVAILABLE_TIMEOUT + 15
    rows = {row["name"]: row for row in json.loads(proc.stdout)["backends"]}
    assert rows["avail-hangs"]["available"] is False and "did not answer" in rows["avail-hangs"]["reason"]
    assert rows["greedy"]["available"] is True
    t0 = time.monotonic()
    proc = portfolio("solve", "-t", "6", "-q", cli=cli, timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 6 + 1.5, elapsed
    assert json.loads(proc.stdout.splitlines()[-1])  # a plan
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------------ 11: --backends
def test_backend_list_parsing():
    reg = Registry()
    with pytest.raises(RegistryError, match="names no backend"):
        parse_backend_list(",", reg)
    with pytest.raises(RegistryError, match="more than once: greedy"):
        parse_backend_list("greedy,minusage,greedy", reg)
    with pytest.raises(RegistryError, match="greedy = iopddl-portfolio:greedy"):
        parse_backend_list("greedy,iopddl-portfolio:greedy", reg)
    assert parse_backend_list(" greedy , minusage,", reg) == ["greedy", "minusage"]


@pytest.mark.parametrize("value, expected", [
    ("greedy,greedy", "more than once: greedy"),
    (",", "names no backend"),
    ("", "names no backend"),
])
def test_cli_backends_mistakes_are_one_line(value, expected):
    proc = portfolio("solve", "-b", value, "-t", "2")
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error:") and expected in lines[0], proc.stderr
    assert proc.stdout == ""


def test_cli_names_every_unknown_backend_and_the_extras(monkeypatch):
    proc = portfolio("solve", "-b", "nope1,greedy,nope2", "-t", "2")
    assert proc.returncode == 2
    (line,) = error_lines(proc.stderr)
    assert "'nope1'" in line and "'nope2'" in line
    available = line.split("available: ")[1].split(", ")
    assert {"greedy", "localsearch", "minusage"} <= set(available), line
    # an optional backend: named with the extra that brings it, whether it is unknown or unavailable
    reg = Registry()
    monkeypatch.setattr(registry_mod, "check_available", lambda bs, timeout=None: [
        (False, "ortools is not installed") if b.name in ("cpsat", "maxsat") else (True, "") for b in bs])
    with pytest.raises(RegistryError) as err:
        reg.resolve(["cpsat", "maxsat", "zzz"])
    message = str(err.value)
    assert "pip install 'ortools>=9.10'" in message and "pip install 'python-sat" in message
    assert "'zzz'" in message and "\n" not in message


# ------------------------------------------------------------------------------------------ 10: -o
def test_output_into_a_missing_folder_is_created(tmp_path):
    out = tmp_path / "new" / "deeper" / "plan.json"
    proc = portfolio("solve", "-t", "8", "-q", "-b", "minusage", "-o", out)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout.splitlines()[-1])
    assert json.loads(out.read_text())["solution"] == plan


@pytest.mark.parametrize("make_target, expected", [
    (lambda tmp: tmp, "is a folder"),
    (lambda tmp: (tmp / "file").write_text("x") and tmp / "file" / "plan.json", "cannot create its folder"),
])
def test_bad_output_path_is_refused_before_solving(tmp_path, make_target, expected):
    target = make_target(tmp_path)
    t0 = time.monotonic()
    proc = portfolio("solve", "-t", "20", "-q", "-o", target)
    assert time.monotonic() - t0 < 15  # refused, not solved for 20 s
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = error_lines(proc.stderr)
    assert line.startswith("error:") and expected in line and str(target) in line


def test_failed_write_still_prints_the_plan():
    if not os.path.exists("/dev/full"):
        skip_or_fail("needs /dev/full to make a write fail", "/dev/full must exist")
    proc = portfolio("solve", "-t", "8", "-q", "-b", "minusage", "--force", "-o", "/dev/full")
    assert proc.returncode == 2
    plan = json.loads(proc.stdout.splitlines()[-1])
    assert len(plan) == 8
    (line,) = error_lines(proc.stderr)
    assert "could not write" in line and "/dev/full" in line and "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------------ 9: deep JSON
@pytest.mark.parametrize("text", [
    "[" * 100_000 + "]" * 100_000,
    '{"problem": {"nodes": ' + "[" * 50_000 + "]" * 50_000 + "}}",
])
@pytest.mark.parametrize("command", ["info", "solve", "evaluate", "iopddl"])
def test_deeply_nested_json_is_one_line_exit_2(tmp_path, text, command):
    deep = tmp_path / "deep.json"
    deep.write_text(text)
    if command == "iopddl":
        proc = _cli().iopddl(deep, "5", timeout=60)
    elif command == "evaluate":  # the deep file as the solution
        proc = portfolio("evaluate", bundled_example_path(), deep)
    else:
        proc = portfolio(command, deep, *(["-t", "5"] if command == "solve" else []))
    assert proc.returncode == 2, proc.stderr
    (line,) = error_lines(proc.stderr)
    assert line.startswith("error:") and str(deep) in line and "nested too deeply" in line


# ------------------------------------------------------------------------------------------ 12: presolve --write
_ARRAYS = ("strategy_offsets", "node_costs", "interval_node", "interval_start", "interval_end",
           "interval_usage_offsets", "interval_usages", "edge_node_offsets", "edge_nodes",
           "edge_cost_offsets", "edge_costs")


@pytest.mark.parametrize("name", ["reduced.json", "reduced.json.gz"])
def test_presolve_write_is_read_by_the_loader(tmp_path, name):
    import numpy as np

    from portfolio.generate import generate_problem
    from portfolio.io import load_problem, write_problem
    from portfolio.presolve import presolve

    original = tmp_path / "g.json"
    write_problem(generate_problem(40, strategies=4, seed=3), original)
    out = tmp_path / name
    proc = portfolio("presolve", original, "--write", out, "--json")
    assert proc.returncode == 0, proc.stderr
    expected = presolve(load_problem(original)).reduced
    back = load_problem(out)  # the contest loader, not a special reader
    for key in _ARRAYS:
        assert np.array_equal(getattr(back, key), getattr(expected, key)), key
    assert np.array_equal(back.capacity.times, expected.capacity.times)
    assert np.array_equal(back.capacity.values, expected.capacity.values)
    assert back.cost_offset == expected.cost_offset
    info = portfolio("info", out, "--json")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["nodes"] == json.loads(proc.stdout)["after"]["nodes"]


def test_solve_and_evaluate_an_extended_file(tmp_path):
    out = tmp_path / "reduced.json"
    assert portfolio("presolve", bundled_example_path(), "--write", out).returncode == 0
    proc = portfolio("solve", out, "-t", "8", "-q", "-b", "minusage", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(doc["solution"]))
    check = portfolio("evaluate", out, plan, "--json")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["cost"] == doc["cost"]


@pytest.mark.parametrize("corrupt, where", [
    (lambda d: d.update(format="iopddl-portfolio-extended/99"), "format"),
    (lambda d: d["problem"]["nodes"]["usages"][0].append([1]), "problem.nodes.usages[0]"),
    (lambda d: d["problem"]["nodes"]["usages"][1][0].append(5), "problem.nodes.usages[1][0]"),
    (lambda d: d["problem"]["nodes"]["intervals"][0].__setitem__(0, [5, 1]), "problem.nodes.intervals[0][0]"),
    (lambda d: d["problem"]["capacity"].update(times=[3, 3], values=[1, 2]), "problem.capacity.times[1]"),
    (lambda d: d["problem"]["capacity"].update(values=[1]), "problem.capacity"),
    (lambda d: d["problem"].pop("nodes"), "problem"),
    (lambda d: d["problem"]["edges"]["nodes"][0].__setitem__(0, 99), "problem.edges.nodes[0][0]"),
    (lambda d: d["problem"].update(cost_offset="-1"), "problem.cost_offset"),
])
def test_broken_extended_file_is_one_line(tmp_path, corrupt, where):
    out = tmp_path / "reduced.json"
    assert portfolio("presolve", bundled_example_path(), "--write", out).returncode == 0
    doc = json.loads(out.read_text())
    doc["problem"]["capacity"] = doc["problem"].get("capacity") or {"times": [0], "values": [70]}
    corrupt(doc)
    out.write_text(json.dumps(doc))
    from portfolio.io import ProblemFormatError, load_problem

    with pytest.raises(ProblemFormatError) as err:
        load_problem(out)
    assert err.value.where == where, str(err.value)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------------------------------ 13: degenerate
DEGENERATE = {
    "no-nodes": {"intervals": [], "costs": [], "usages": [], "edges": [], "edge_costs": [], "limit": 10},
    "one-node": {"intervals": [[0, 3]], "costs": [[5, 2, 9]], "usages": [[1, 4, 2]], "edges": [],
                 "edge_costs": [], "limit": 3},
    "no-edges": {"intervals": [[0, 3], [1, 4], [2, 2]], "costs": [[5, 2], [1, 7], [3]],
                 "usages": [[1, 4], [3, 1], [9]], "edges": [], "edge_costs": [], "limit": 5},
    "one-choice": {"intervals": [[0, 0]], "costs": [[5]], "usages": [[0]], "edges": [],
                   "edge_costs": [], "limit": None},
    "self-loop": {"intervals": [[0, 2]], "costs": [[4, 1]], "usages": [[1, 1]], "edges": [[0, 0]],
                  "edge_costs": [[0, 1, 2, 3]], "limit": 1},
}


def _degenerate(tmp_path: Path, key: str) -> Path:
    d = DEGENERATE[key]
    problem = {"name": key, "nodes": {"intervals": d["intervals"], "costs": d["costs"],
                                      "usages": d["usages"]},
               "edges": {"nodes": d["edges"], "costs": d["edge_costs"]}}
    if d["limit"] is not None:
        problem["usage_limit"] = d["limit"]
    path = tmp_path / f"{key}.json"
    path.write_text(json.dumps({"problem": problem}))
    return path


def _builtin_backends() -> list:
    reg = Registry()
    return [i.backend for i in reg.infos() if i.builtin and reg.available([i.backend])[0][0]]


@pytest.mark.parametrize("key", sorted(DEGENERATE))
def test_every_builtin_backend_handles_degenerate_instances(tmp_path, key):
    from portfolio.backend import NullReporter, Status
    from portfolio.evaluate import evaluate
    from portfolio.io import load_problem

    problem = load_problem(_degenerate(tmp_path, key))
    backends = _builtin_backends()
    assert {"greedy", "localsearch", "minusage"} <= {b.name for b in backends}
    for backend in backends:
        prepare = getattr(backend, "prepare", None)
        if prepare is not None:
            prepare()
        reporter = NullReporter()
        result = backend.solve(problem, time.time() + 1.0, 0, None, reporter)  # no exception
        assert result.status is not Status.ERROR, (backend.name, result.note)
        for plan in [result.solution, *(p for _, p, _ in reporter.reports)]:
            if plan is not None:
                assert evaluate(problem, plan).feasible, (backend.name, plan)
        if backend.name in ("greedy", "minusage", "cpsat", "maxsat"):
            assert result.solution is not None, (backend.name, result.status, result.note)


@pytest.mark.parametrize("key", ["no-nodes", "one-node", "no-edges"])
def test_solve_degenerate_instances_from_the_command_line(tmp_path, key):
    path = _degenerate(tmp_path, key)
    proc = portfolio("solve", path, "-t", "10", "-q", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["solution"]) == len(DEGENERATE[key]["costs"])
    assert all(r["status"] not in ("error", "crashed", "rejected") for r in doc["backends"]), doc["backends"]


# ------------------------------------------------------------------------------------------ 16: tables
def _synthetic_result():
    from portfolio.backend import Status
    from portfolio.runner.result import BackendRun, PortfolioResult

    F = 10**18
    runs = {
        "localsearch": BackendRun("localsearch", Status.TIMEOUT, best_cost=6_548_553_650, time_to_best=58.21,
                                  lower_bound=6_540_000_000, cpu_seconds=58.3,
                                  note="still running when the deadline came; terminated"),
        "cpsat": BackendRun("cpsat", Status.OPTIMAL, best_cost=6_548_553_650, time_to_best=12.5,
                            lower_bound=6_548_553_650, note="CP-SAT: OPTIMAL", cpu_seconds=112.0, cores=2),
        "minusage": BackendRun("minusage", Status.FEASIBLE, best_cost=170 * F + 12_535_755_900,
                               time_to_best=0.2, cpu_seconds=0.3),
        "hostile_impostor:greedy": BackendRun("hostile_impostor:greedy", Status.REJECTED,
                                              note="invalid plan: solution[0] = 0.5 is not an integer"),
    }
    result = PortfolioResult("asplos-2025-iopddl-A", 60, runs, None, None, "localsearch", 59.0,
                             proof="claimed optimal by cpsat; not proven")
    result.evaluation = type("Ev", (), {"cost": 6_548_553_650})()
    return result


def test_cost_and_gap_formats():
    from portfolio.progress import format_cost, format_gap

    F = 10**18
    assert format_cost(170 * F + 12_535_755_900) == "forbidden ×170 + 12,535,755,900"
    assert format_cost(F) == "forbidden ×1 + 0"
    assert format_cost(6_548_553_650) == "6,548,553,650" and format_cost(None) == "-"
    assert format_gap(170 * F + 5, 6_548_553_650) == "forbidden"
    assert format_gap(101, 100) == "1.000%" and format_gap(150, 100) == "50.0%"
    assert format_gap(600, 100) == "500%"
    for cost, best in [(10**17, 3), (2 * F, F - 1), (10**6, 999), (10**18 - 1, 1)]:
        text = format_gap(cost, best)
        assert len(text) <= 9 and "%" not in text or float(text.rstrip("%")) < 1000, text


@pytest.mark.parametrize("width", [80, 100, 140])
def test_final_table_fits_and_keeps_every_number(width):
    from rich.console import Console

    from portfolio.progress import final_table

    console = Console(width=width, record=True, color_system=None)
    console.print(final_table(_synthetic_result()))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    for number in ("6,548,553,650", "6,540,000,000", "+ 12,535,755,900", "forbidden ×170", "0.000%",
                   "58.21 s"):
        assert number in text, (number, text)
    assert all(word in text for word in "invalid plan: solution[0] = 0.5 is not an integer".split())
    assert "…" not in text


# ------------------------------------------------------------------------------------------ 17: usage errors
@pytest.mark.parametrize("args, expected", [
    (["solve", "-t", "abc"], "'--time-limit'"),
    (["solv"], "No such command 'solv'"),
    (["--bogus"], "No such option '--bogus'"),
    (["bench"], "Missing argument"),
    (["generate", "x.json", "--nodes", "0"], "--nodes"),
])
def test_usage_errors_are_one_line(args, expected):
    proc = portfolio(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = error_lines(proc.stderr)
    assert line.startswith("error:") and expected in line and "--help" in line


def test_iopddl_usage_error_is_one_line():
    proc = _cli().iopddl("x", timeout=60)
    assert proc.returncode == 2
    (line,) = error_lines(proc.stderr)
    assert "Missing argument 'TIMEOUT'" in line


# ------------------------------------------------------------------------------------------ 15: bench
def test_bench_force_and_resume_together_is_one_line(tmp_path):
    proc = portfolio("bench", bundled_example_path(), "-b", "minusage", "-t", "3", "--resume", "--force",
                     "--runs-dir", tmp_path, "--name", "x")
    assert proc.returncode == 2
    (line,) = error_lines(proc.stderr)
    assert "--resume and --force" in line
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("force", [False, True])
def test_bench_that_fails_to_start_leaves_no_folder(tmp_path, monkeypatch, force):
    from portfolio.bench import sweep
    from portfolio.bench.plan import BenchError

    def unreachable(*args, **kwargs):
        raise BenchError("cannot reach the Dask scheduler at tcp://nowhere:8786: timed out")
        yield  # a generator, like the real one

    monkeypatch.setattr(sweep, "parallel_rows", unreachable)
    if force:  # an earlier run in the folder: --force moves it aside, a failed start puts it back
        (tmp_path / "x").mkdir()
        (tmp_path / "x" / "results.jsonl").write_text("")
    for _ in range(2):  # the retry meets the same error, not "the run folder already exists"
        with pytest.raises(BenchError, match="cannot reach"):
            sweep.run_sweep([str(bundled_example_path())], backends=["minusage"], time_limit=3.0,
                            name="x", runs_dir=tmp_path, force=force, dask_scheduler="tcp://nowhere:8786")
    assert sorted(p.name for p in tmp_path.iterdir()) == (["x"] if force else [])
    if force:
        assert (tmp_path / "x" / "results.jsonl").exists()


def test_hook_that_hangs_is_skipped_on_time(monkeypatch):
    monkeypatch.syspath_prepend(str(HOSTILE))
    monkeypatch.setattr(registry_mod, "HOOK_TIMEOUT", 0.5)
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "hostile_hook_hangs,hostile_junk")
    t0 = time.monotonic()
    reg = Registry(load_entry_points=False)
    assert time.monotonic() - t0 < 2.0
    assert reg.names() == ["junk-survivor"]
    (line,) = [w for w in reg.warnings if w.startswith("hostile_hook_hangs:")]
    assert "did not return within 0.5 s" in line
