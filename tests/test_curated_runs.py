"""Every curated run under runs/curated/ is a bench run folder that `portfolio report` reads.

runs/ holds one result format (meta.json + results.jsonl + optional solutions/ and plots/): a run
saved in another shape would be a figure no command can show again. Runs may be grouped one level
down (runs/curated/r33-warm/warmC/), each group member a run folder of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO
from portfolio.cli import cli
from portfolio.report.leaderboard import build

CURATED = REPO / "runs" / "curated"
STATUSES = {"optimal", "feasible", "no-solution", "infeasible-proven", "late", "error", "crashed",
            "timeout",
            "forbidden", "infeasible", "bad-output"}   # a command configuration's plan (bench/command_task.py)


def run_folders() -> list[Path]:
    return sorted(p.parent for p in CURATED.rglob("results.jsonl"))


def test_every_file_belongs_to_a_run_folder():
    runs = set(run_folders())
    assert len(runs) >= 10
    for path in CURATED.rglob("*"):
        if path.is_dir():
            continue
        run = next((r for r in runs if r in path.parents), None)
        assert run is not None, f"{path.relative_to(REPO)} is in no run folder"
        rel = path.relative_to(run)
        tune = (run / "trials.jsonl").is_file()   # a `portfolio tune` run: a bench run plus these
        allowed = ("meta.json", "results.jsonl", "features.json", "solutions", "plots") + (
            ("trials.jsonl", "tuned.toml") if tune else ())
        assert rel.parts[0] in allowed, f"{path.relative_to(REPO)}: not a file of a run folder"
    for run in runs:
        assert (run / "meta.json").is_file(), f"{run.relative_to(REPO)} has no meta.json"
        assert not any(r in run.parents for r in runs), f"{run} is inside another run folder"


@pytest.mark.parametrize("run", run_folders(), ids=lambda p: str(p.relative_to(CURATED)))
def test_report_reads_every_curated_run(run):
    meta = json.loads((run / "meta.json").read_text())
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert rows and meta["format"] == 1
    if meta.get("kind") == "tune":   # its configurations are its trials; report shows the tune view
        trials = [json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()]
        assert {r["configuration"] for r in rows} <= {t["name"] for t in trials}
        out = CliRunner().invoke(cli, ["report", str(run), "--format", "markdown"],
                                 env={"COLUMNS": "200"})
        assert out.exit_code == 0 and trials[0]["name"] in out.output, out.output
        return
    configs = {c["name"] for c in meta["configurations"]}
    for row in rows:
        assert row["status"] in STATUSES
        assert row["configuration"] in configs
        assert float(row["time_limit"]) > 0 and isinstance(row["seed"], int)
        assert row["cost"] is None or row["cost"] > 0
        if row.get("solution_file"):
            assert (run / row["solution_file"]).is_file()
    board = build([run])
    assert {r.label for r in board.rows} >= configs
    assert not any("unreadable" in n for n in board.notes)
    out = CliRunner().invoke(cli, ["report", str(run), "--format", "markdown"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
