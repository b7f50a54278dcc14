"""`portfolio report`'s views: anytime rescoring, tidy CSV, profiles, seeds, colours, the compact view.

Hand-written result rows only (the helpers of tests/test_report.py), so every expected value is
worked out by hand here.
"""

from __future__ import annotations

import csv
import io
import math

import pytest
from rich.console import Console

from portfolio.bench.plan import BenchError, parse_configuration
from portfolio.report import (bootstrap_interval, build, colours, primal_integral, profile_of,
                              render_compact, rescore_row, time_to_proof, time_to_target)
from portfolio.report.colors import PALETTE, colour_of
from portfolio.report.render import pct, spread_text
from test_report import B, G, invoke, result_row, write_run


def traced(instance, config, trace, seed=0, limit=10.0, **extra):
    """A row whose incumbents are ``trace`` = [(time, cost)], ending at the last cost."""
    row = result_row(instance, config, trace[-1][1], seed=seed, time_limit=limit, **extra)
    row["incumbents"] = [{"time": t, "cost": c, "backend": config} for t, c in trace]
    row["gap_trace"] = [{"time": t, "cost": c, "bound": None} for t, c in trace]
    row["time_to_best"], row["elapsed"] = trace[-1][0], limit
    return row


# ------------------------------------------------------------------------------------------ anytime
def test_rescore_row_takes_the_plan_held_then():
    row = traced("x", "a", [(1.0, 500), (4.0, 300), (8.0, 200)])
    at3 = rescore_row(row, 3.0)
    assert (at3["cost"], at3["status"], at3["time_limit"], at3["time_to_best"]) == (500, "feasible", 3.0, 1.0)
    assert [i["cost"] for i in at3["incumbents"]] == [500]
    assert rescore_row(row, 0.5)["status"] == "no-solution" and rescore_row(row, 0.5)["cost"] is None
    assert rescore_row(row, 20.0) == row   # past its own limit: nothing to say, unchanged
    assert row["cost"] == 200                # the original is not touched


def test_rescore_keeps_optimal_only_once_proven():
    row = traced("x", "a", [(1.0, 300), (2.0, 250)], status="optimal", proof="proven optimal by a")
    row["gap_trace"].append({"time": 6.0, "cost": 250, "bound": 250})
    assert time_to_proof(row) == 6.0
    assert rescore_row(row, 5.0)["status"] == "feasible" and rescore_row(row, 5.0)["proof"] is None
    assert rescore_row(row, 7.0)["status"] == "optimal" and rescore_row(row, 7.0)["lower_bound"] == 250


def test_time_to_target_and_primal_integral_by_hand():
    row = traced("x", "a", [(2.0, 200), (6.0, 100)])
    assert time_to_target(row, 150) == 6.0 and time_to_target(row, 99) is None
    # no plan on [0, 2): gap 1; [2, 6): |200-100|/200 = 0.5; [6, 10]: 0  ->  2 + 2 = 4 s
    assert primal_integral(row, 100) == pytest.approx(4.0)
    assert primal_integral(row, 100, horizon=4.0) == pytest.approx(2 + 0.5 * 2)
    assert primal_integral(dict(row, status="error", incumbents=[]), 100) == 10.0


def test_report_at_rescores_every_row(tmp_path):
    run = write_run(tmp_path / "r", [traced(B, "a", [(1.0, 900), (30.0, 800)], limit=60),
                                     traced(B, "b", [(5.0, 850)], limit=60)], name="r")
    early, late = build([run], at=10), build([run])
    assert early.rows[0].label == "b" and late.rows[0].label == "a"   # b led at 10 s, a at the end
    assert "rescored at 10 s" in early.notes[0]
    res = invoke("report", run, "--at", "10", "--format", "csv")
    assert res.exit_code == 0 and res.stdout.splitlines()[1].split(",")[1] == "b"


# ------------------------------------------------------------------------------------------ tidy CSV
def test_tidy_csv_one_row_per_task(tmp_path):
    rows = [traced(B, "a", [(1.0, 1_000_000), (3.0, 532_843)], seed=s, engines={"ortools": "9.9"})
            for s in (0, 1)]
    rows.append(result_row(B, "b", None, status="error", error="ValueError: bad\nmore lines"))
    run = write_run(tmp_path / "r", rows, name="r")
    out = tmp_path / "tasks.csv"
    res = invoke("report", run, "--csv", out, "--target", "1.01")
    assert res.exit_code == 0, res.output
    table = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(table) == 3
    a0 = next(r for r in table if r["configuration"] == "a" and r["seed"] == "0")
    assert a0["cost"] == "532843" and float(a0["score"]) == 1.0 and a0["time_to_target"] == "3"
    assert a0["engine_versions"] == "ortools=9.9" and a0["vs_best_known"] == "1"
    bad = next(r for r in table if r["configuration"] == "b")
    assert bad["status"] == "error" and bad["error"] == "ValueError: bad" and bad["score"] == "0"
    again = invoke("report", run, "--csv", out)
    assert again.exit_code == 2 and "exists" in again.stderr   # never overwritten without asking


# ------------------------------------------------------------------------------------------ profile, seeds
def test_performance_profile_fractions(tmp_path):
    rows = [result_row("i1", "a", 100), result_row("i1", "b", 110),
            result_row("i2", "a", 200), result_row("i2", "b", 200),
            result_row("i3", "a", None), result_row("i3", "b", 50)]
    prof = profile_of(build([write_run(tmp_path / "r", rows)]))
    assert prof.ratios["a"] == [1.0, 1.0, math.inf] and prof.ratios["b"] == [1.1, 1.0, 1.0]
    assert prof.fraction("a", 1.0) == pytest.approx(2 / 3) and prof.fraction("a", 100) == pytest.approx(2 / 3)
    assert prof.fraction("b", 1.0) == pytest.approx(2 / 3) and prof.fraction("b", 1.1) == 1.0


def test_seeds_median_interval_and_pairing(tmp_path):
    rows = [result_row("i1", "a", c, seed=s) for s, c in enumerate((100, 101, 300))]
    rows += [result_row("i1", "b", c, seed=s) for s, c in enumerate((100, 105, 200))]
    board = build([write_run(tmp_path / "r", rows)])
    a = next(r for r in board.rows if r.label == "a")
    assert a.cells["i1"].cost_median == 101 and a.trials == 3
    lo, hi = a.total_interval
    assert lo <= a.total <= hi
    (pairing,) = board.pairings
    assert {pairing.a, pairing.b} == {"a", "b"}
    wins = pairing.wins if pairing.a == "a" else pairing.losses
    assert (wins, pairing.ties, pairing.n) == (1, 1, 3)   # a: seed 1 won, seed 0 tied, seed 2 lost
    assert bootstrap_interval([1.0]) is None


# ------------------------------------------------------------------------------------------ looks
def test_colours_are_stable_and_distinct():
    one = colours(["greedy", "localsearch", "mine"])
    two = colours(["greedy", "r2/greedy", "zeta", "localsearch"])
    assert one["greedy"] == two["greedy"] == colour_of("greedy") == colours(["r2/greedy"])["r2/greedy"]
    assert two["r2/greedy"] != two["greedy"]   # two runs of it in one picture: told apart
    many = colours([f"c{i}" for i in range(len(PALETTE))])
    assert len(set(many.values())) == len(PALETTE)
    assert not any(c.lower() in ("#d62728", "red", "#ff0000") for c in PALETTE)


def test_number_formats_stay_readable():
    assert pct(13.3) == "x14" and pct(1e12) == "x1.0e12" and pct(0.0123) == "+1.23%"
    assert pct(4.9e-9) == "+<0.01%"
    from portfolio.report.leaderboard import Cell

    assert spread_text(Cell(cost_min=1_000_000_000, cost_max=1_000_000_001,
                            cost_median=1_000_000_000)) == " ±<0.01%"


def test_compact_view_fits_100_columns_with_25_instances(tmp_path):
    rows = [result_row(f"asplos-2025-iopddl-{letter}", config, 1000 + k + i)
            for i, letter in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXY")
            for k, config in enumerate(("greedy", "localsearch", "try2/localsearch"))]
    rows = [dict(r, configuration=r["configuration"].split("/")[-1]) for r in rows[:50]] + rows[50:]
    runs = [write_run(tmp_path / "try1", rows[:50], name="try1"),
            write_run(tmp_path / "try2", [dict(r, configuration="localsearch") for r in rows[50:]],
                      name="try2")]
    board = build(runs, reference="contest", top=3)
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(render_compact(board, 100))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "localsearch" in text and "…" not in text   # no name cut mid-word
    assert sum(1 for line in text.splitlines() if line.lstrip("│ ").startswith(("Y ", "Y│"))) >= 1
    assert "x1." not in text and "e-0" not in text


def test_configuration_sets_parse():
    assert parse_configuration("greedy") == ("greedy", ("greedy",), {})
    assert parse_configuration("mine+greedy") == ("mine+greedy", ("mine", "greedy"), {})
    assert parse_configuration("fast=greedy+localsearch") == ("fast", ("greedy", "localsearch"), {})
    for bad in ("a++b", "=a", "x/y=a", "a+a"):
        with pytest.raises(BenchError):
            parse_configuration(bad)


def test_filters_and_top(tmp_path):
    rows = [result_row(B, "a", 600_000), result_row(G, "a", 30_000_000), result_row(B, "b", 590_000)]
    run = write_run(tmp_path / "r", rows)
    board = build([run], reference="contest", instances=["B"], configs=["a"], top=2)
    assert [i.label for i in board.instances] == ["B"] and board.hidden_teams == 18
    assert [r.label for r in board.rows if r.kind == "run"] == ["a"]
    res = invoke("report", run, "--configs", "nope")
    assert res.exit_code == 2 and "no config 'nope'" in res.stderr
