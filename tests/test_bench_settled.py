"""`portfolio bench` on instances presolve settles outright (the contest's example) and on contest
instances B, G and K: no task errors, the rows are verified, a settled instance is optimal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from portfolio.cli import cli
from portfolio.evaluate import evaluate
from portfolio.io import load_problem, read_solution


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "200"})


def rows_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def _check_rows(folder: Path, expected: int) -> list[dict]:
    rows = rows_of(folder)
    assert len(rows) == expected
    for row in rows:
        assert row["status"] in ("optimal", "feasible"), (row["configuration"], row["error"])
        assert row["error"] is None
        plan = read_solution(folder / row["solution_file"])
        assert evaluate(load_problem(row["path"]), plan).cost == row["cost"]
    return rows


def test_bench_on_an_instance_presolve_settles(contest_example, tmp_path):
    """Presolve leaves one strategy per node: the runner settles it before any backend starts."""
    res = invoke("bench", contest_example, "-b", "greedy,cpsat", "--portfolio", "-t", 4,
                 "--name", "s", "--runs-dir", tmp_path, "-q")
    assert res.exit_code == 0, res.output
    rows = _check_rows(tmp_path / "s", 3)
    assert {r["status"] for r in rows} == {"optimal"}
    assert {r["winner"] for r in rows} == {"presolve"}
    assert all(r["lower_bound"] == r["cost"] for r in rows)
    assert all(r["proof"].startswith("proven optimal") for r in rows)


def test_bench_on_the_bundled_example(bundled_example, tmp_path):
    res = invoke("bench", bundled_example, "-b", "greedy,localsearch", "-t", 8,
                 "--name", "e", "--runs-dir", tmp_path, "-q")
    assert res.exit_code == 0, res.output
    assert {r["cost"] for r in _check_rows(tmp_path / "e", 2)} == {305}


@pytest.mark.parametrize("letter,limit", [("B", 5), ("G", 5), ("K", 8)])
def test_bench_on_contest_instances(bench_dir, tmp_path, letter, limit):
    """Contest instances (CI=true runs them): single backends and the portfolio, short limits."""
    from conftest import shared

    path = shared(bench_dir / f"asplos-2025-iopddl-{letter}.json.gz")
    res = invoke("bench", path, "-b", "greedy", "--portfolio", "-t", limit,
                 "--name", letter, "--runs-dir", tmp_path, "-q")
    assert res.exit_code == 0, res.output
    _check_rows(tmp_path / letter, 2)


def test_report_at_matches_the_mechanics_of_a_shorter_run(tmp_path):
    """What replaced benchmarks/anytime.py: `portfolio report LONG SHORT --at 2` on a -t 6 sweep and
    a real -t 2 sweep of the same seeds. Only the mechanics (the long rows cut at 2 s, never better
    than the long run's answer, the short rows kept as they are), not the quality: the machine is
    loaded."""
    from portfolio.generate import generate_problem
    from portfolio.io import write_problem
    from portfolio.report.leaderboard import build

    folder = tmp_path / "inst"
    folder.mkdir()
    for n, seed in ((80, 1), (150, 2)):
        write_problem(generate_problem(n, strategies=5, seed=seed), folder / f"g{n}.json.gz")
    for limit, name in ((6, "long"), (2, "short")):
        res = invoke("bench", folder, "-b", "ls=greedy+localsearch", "--seeds", "0-1", "-t", limit,
                     "-j", "2", "--name", name, "--runs-dir", tmp_path, "-q")
        assert res.exit_code == 0, res.output
    # what the rows must hold, read from the two sweeps' own rows: the long run's last plan by
    # 2 s (its incumbents trace), and the short run's answer
    held, final, real = {}, {}, {}
    for row in rows_of(tmp_path / "long"):
        kept = [i["cost"] for i in row["incumbents"] if i["time"] <= 2.0]
        held[row["instance"], row["seed"]] = kept[-1] if kept else None
        final[row["instance"], row["seed"]] = row["cost"]
    for row in rows_of(tmp_path / "short"):
        real[row["instance"], row["seed"]] = row["cost"]
    assert len(held) == len(real) == 4 and set(held) == set(real)
    board = build([tmp_path / "long", tmp_path / "short"], at=2.0)
    long_rows, short_rows = (run.rows for run in board.run_data)
    for row in long_rows:
        key = row["instance"], row["seed"]
        assert row["cost"] == held[key] and row["cost"] is not None and row["cost"] >= final[key]
    assert {(r["instance"], r["seed"]): r["cost"] for r in short_rows} == real
    shown = invoke("report", tmp_path / "long", tmp_path / "short", "--at", "2", "--format", "json")
    assert shown.exit_code == 0 and '"at": 2.0' in shown.stdout
