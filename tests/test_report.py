"""`portfolio report`: contest scoring, reference rows, renderings, plots. Reads hand-written results only."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import extra
from portfolio.cli import cli
from portfolio.data import contest
from portfolio.report import ReportError, build, contest_points, render_csv, render_markdown, to_json

B = "asplos-2025-iopddl-B"
G = "asplos-2025-iopddl-G"


def invoke(*args) -> object:
    return CliRunner().invoke(cli, [str(a) for a in args], env={"COLUMNS": "250"})


def result_row(instance: str, configuration: str, cost: int | None, seed: int = 0, repeat: int = 0,
               status: str | None = None, time_limit: float = 5.0, **extra) -> dict:
    feasible = cost is not None
    row = {"instance": instance, "path": f"/elsewhere/{instance}.json.gz",
           "configuration": configuration, "backends": [configuration], "seed": seed, "repeat": repeat,
           "time_limit": time_limit, "status": status or ("feasible" if feasible else "no-solution"),
           "cost": cost, "feasible": feasible, "elapsed": 1.5, "time_to_best": 1.0 if feasible else None,
           "lower_bound": None, "winner": configuration if feasible else None,
           "incumbents": ([{"time": 0.2, "cost": cost * 2, "backend": configuration},
                           {"time": 1.0, "cost": cost, "backend": configuration}] if feasible else []),
           "backend_runs": [], "machine": {"host": "another-machine", "cpu_count": 64}}
    row.update(extra)
    return row


def write_run(folder: Path, rows: list[dict], name: str | None = None, tail: str = "") -> Path:
    folder.mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in rows) + tail
    (folder / "results.jsonl").write_text(text)
    if name:
        (folder / "meta.json").write_text(json.dumps({"name": name}))
    return folder


# ------------------------------------------------------------------------------------------ scoring
def test_contest_rules_example():
    """The worked example of the contest rules: A 1.900, B 1.778, C 1.452 points."""
    table = {"A": {"X": 100, "Y": 500, "Z": 800},
             "B": {"X": 300, "Y": 200, "Z": 900},
             "C": {"X": 600, "Y": 700, "Z": 400}}
    totals = contest_points(table)
    assert round(totals["A"], 3) == 1.900
    assert round(totals["B"], 3) == 1.778
    assert round(totals["C"], 3) == 1.452
    assert sorted(totals, key=totals.get, reverse=True) == ["A", "B", "C"]


def test_missing_answer_scores_zero_and_baseline_does_not_set_the_minimum():
    totals = contest_points({"t1": {"X": 100, "Y": None}, "t2": {"X": 200, "Y": 50},
                             "base": {"X": 50, "Y": 25}}, baselines=["base"])
    assert totals["t1"] == pytest.approx(1.0)
    assert totals["t2"] == pytest.approx(0.5 + 1.0)
    assert totals["base"] == pytest.approx(2.0 + 2.0)  # scored against the teams' minimum


def test_shipped_contest_data_reproduces_the_official_scores():
    """Sum over the 20 private benchmarks, teams only setting the minimum: 18.74 / 13.84 / 13.19 / 9.31."""
    private = [b for b in contest.benchmarks() if b not in contest.PUBLIC]
    assert len(private) == 20
    table = {team: {b: costs[b] for b in private} for team, costs in contest.team_costs().items()}
    totals = contest_points(table, baselines=[contest.BASELINE])
    assert [round(totals[t], 2) for t in ("team01", "team02", "team03", "team04")] == \
        [18.74, 13.84, 13.19, 9.31]
    assert round(totals["XLA"], 2) == 2.18


def test_shipped_contest_facts():
    benches = contest.benchmarks()
    assert sorted(benches) == [chr(c) for c in range(ord("A"), ord("Z"))]
    assert len(contest.team_costs()) == 21  # 20 teams and XLA
    assert contest.timeout_for("asplos-2025-iopddl-A") == 60
    assert contest.timeout_for("/x/y/asplos-2025-iopddl-K.json.gz") == 180
    assert contest.timeout_for("asplos-2025-iopddl-Y") == 300
    assert contest.timeout_for("example") is None
    assert contest.match("my-asplos-2025-iopddl-AB") is None
    b = benches["B"]
    assert (b.best_known_cost, b.nodes) == (532843, 816)
    assert b.lower_bound == 532843  # the rounded 5.33e5 is capped at the best known cost
    assert benches["W"].first_place_cost == 904000028847754848168  # beyond int64: kept exact


# ------------------------------------------------------------------------------------------ leaderboard
@pytest.fixture
def two_configs(tmp_path) -> Path:
    """fast: B 1000 & 1100 (seeds 0, 1), G 300; slow: B 800 twice, G missing, example infeasible."""
    rows = [
        result_row(B, "fast", 1000, seed=0), result_row(B, "fast", 1100, seed=1),
        result_row(G, "fast", 300, seed=0), result_row(G, "fast", 300, seed=1),
        result_row(B, "slow", 800, seed=0), result_row(B, "slow", 800, seed=1),
        result_row("example", "slow", None, seed=0), result_row("example", "fast", 465, seed=0),
        result_row("example", "slow", 400, seed=1, status="late"),
    ]
    return write_run(tmp_path / "r1", rows, name="r1", tail='{"instance": "asplos-2025-io')


def test_leaderboard_points_spread_and_missing_cells(two_configs):
    board = build([two_configs])
    assert [r.label for r in board.rows] == ["fast", "slow"]
    assert "skipped 1 unreadable line" in " ".join(board.notes)
    fast, slow = board.rows
    b = fast.cells[B]
    assert b.cost_mean == 1050 and b.n == 2 and b.n_ok == 2
    assert b.points == pytest.approx((800 / 1000 + 800 / 1100) / 2)
    assert b.points_std is not None and b.points_std > 0
    assert slow.cells[B].is_best and slow.cells[B].points == pytest.approx(1.0)
    assert slow.cells[G].status == "missing" and slow.cells[G].points == 0
    assert slow.cells["example"].points == 0  # infeasible and late answers score nothing
    assert fast.cells["example"].points == pytest.approx(1.0)
    assert fast.total == pytest.approx(b.points + 1.0 + 1.0)
    assert slow.total == pytest.approx(1.0)
    assert fast.total_std is not None  # two seeds: a spread of the totals
    assert (fast.rank, slow.rank) == (1, 2)


def test_markdown_csv_json_renderings(two_configs):
    board = build([two_configs])
    md = render_markdown(board)
    lines = md.splitlines()
    assert lines[0].startswith("| # | configuration | B | G | example | points")
    assert any(line.startswith("| 2 | slow |") and "**800 (1.000)**" in line for line in lines)
    assert "missing (0.000)" in md
    rows = list(csv.DictReader(io.StringIO(render_csv(board))))
    assert [r["configuration"] for r in rows] == ["fast", "slow"]
    assert rows[1]["G:status"] == "missing" and float(rows[1]["G:points"]) == 0
    assert float(rows[0]["B:cost"]) == 1050
    doc = to_json(board)
    assert json.loads(json.dumps(doc)) == doc
    assert doc["rows"][1]["cells"][B]["best"] is True
    assert {i["label"] for i in doc["instances"]} == {"B", "G", "example"}


def test_report_command_formats(two_configs):
    res = invoke("report", two_configs, "--format", "json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rows"][0]["configuration"] == "fast"
    res = invoke("report", two_configs, "--format", "csv")
    assert res.exit_code == 0 and res.stdout.startswith("rank,configuration,kind")
    res = invoke("report", two_configs)
    assert res.exit_code == 0
    assert "fast" in res.stderr and "leaderboard" in res.stderr and res.stdout == ""


def test_reference_contest_rows_and_place(tmp_path):
    """A configuration that beats every team on B and G takes first place among the teams."""
    run = write_run(tmp_path / "good", [result_row(B, "good", 532000), result_row(G, "good", 217039),
                                        result_row("example", "good", 465)])
    board = build([run], reference="contest")
    labels = [r.label for r in board.rows]
    assert labels[0] == "good" and board.rows[0].rank == 1
    assert {"team01", "team20", "XLA"} <= set(labels) and len(labels) == 22
    assert [i.label for i in board.instances] == ["B", "G"]  # the non-contest instance is left out
    assert any("left out" in n and "example" in n for n in board.notes)
    xla = next(r for r in board.rows if r.label == "XLA")
    assert xla.rank is None and xla.kind == "baseline"
    team01 = next(r for r in board.rows if r.label == "team01")
    assert team01.cells[B].points == pytest.approx(532000 / 532843)
    # a verified cost below the published best known becomes the best known, said so
    assert board.rows[0].vs_best_known == pytest.approx(2.0)
    info = board.instance(B)
    assert info.best_known == 532000 and info.best_known_by == "this report: good"
    assert info.lower_bound == 532843
    assert board.rows[0].cells[B].gap_lb < 0  # below the (approximate, capped) bound: shown as is
    md = render_markdown(board)
    assert "| 1 | good |" in md and "_team01_" in md and "| base | _XLA_ |" in md


def test_reference_needs_contest_instances(tmp_path):
    run = write_run(tmp_path / "r", [result_row("example", "a", 465)])
    res = invoke("report", run, "--reference", "contest")
    assert res.exit_code == 2
    assert res.stderr.strip().startswith("error:") and len(res.stderr.strip().splitlines()) == 1


def test_false_lower_bound_in_results_is_ignored(tmp_path):
    run = write_run(tmp_path / "r", [result_row("x", "a", 100, lower_bound=150),
                                     result_row("x", "b", 120, lower_bound=90)])
    board = build([run])
    assert board.instance("x").lower_bound == 90
    assert any("ignored the lower bound 150" in n for n in board.notes)


def test_two_runs_with_the_same_configuration_get_run_labels(tmp_path):
    r1 = write_run(tmp_path / "mon", [result_row("x", "portfolio", 100)], name="mon")
    r2 = write_run(tmp_path / "tue", [result_row("x", "portfolio", 90)], name="tue")
    board = build([r1, r2 / "results.jsonl"])
    assert [r.label for r in board.rows] == ["tue/portfolio", "mon/portfolio"]


def test_missing_run_folder_is_a_one_line_error(tmp_path):
    res = invoke("report", tmp_path / "nope")
    assert res.exit_code == 2 and "no results.jsonl" in res.stderr
    with pytest.raises(ReportError):
        build([tmp_path / "nope"])


# ------------------------------------------------------------------------------------------ plots
def test_plot_writes_png_and_svg(two_configs):
    extra("matplotlib")
    res = invoke("report", two_configs, "--plot", "--format", "markdown")
    assert res.exit_code == 0, res.output
    plots = two_configs / "plots"
    names = sorted(p.name for p in plots.iterdir())
    for stem in ("points", "profile", "convergence-B", "convergence-G", "convergence-example"):
        assert f"r1-{stem}.png" in names and f"r1-{stem}.svg" in names   # named by the run
    assert (plots / "r1-points.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in (plots / "r1-convergence-B.svg").read_text()
    before = {p.name: p.stat().st_mtime_ns for p in plots.iterdir()}
    res = invoke("report", two_configs, "--plot", "--at", "0.5", "--format", "markdown")
    assert res.exit_code == 0, res.output
    after = {p.name: p.stat().st_mtime_ns for p in plots.iterdir()}
    assert all(after[n] == t for n, t in before.items())   # another view never overwrites
    assert "r1-at0.5-points.png" in after


def test_plot_without_matplotlib_is_a_clear_error(two_configs, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    res = invoke("report", two_configs, "--plot")
    assert res.exit_code == 2
    assert "pip install 'iopddl-portfolio[plot]'" in res.stderr


def test_profile_without_matplotlib_names_the_flag_given(two_configs, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    res = invoke("report", two_configs, "--profile")
    assert res.exit_code == 2
    line = res.stderr.strip()
    assert line.startswith("error: --profile needs matplotlib") and "--plot" not in line, line
    assert "pip install 'iopddl-portfolio[plot]'" in line


def test_costs_beyond_int64_stay_exact(tmp_path):
    big = 904000028847754848168  # W's 1st-place answer: forbidden entries, past 2**63 and 2**53
    run = write_run(tmp_path / "r", [result_row("w", "a", big), result_row("w", "b", big + 1)])
    board = build([run])
    assert board.rows[0].cells["w"].cost_mean == big
    assert f",{big}," in render_csv(board)
    assert f"{big:,}" in render_markdown(board)
