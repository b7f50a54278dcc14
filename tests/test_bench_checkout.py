"""`portfolio bench` before/after: configurations that run another checkout's code, and
deterministic sweeps whose rows carry the plan hash that `report` compares.

The other checkout is a copy of this one's package in tmp_path with a mark that only its code
makes (a row field in its bench task), so a row that carries it was produced by the copy's code;
the row also says where its `portfolio` and its built-in backends were imported from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, bundled_example_path
from portfolio.bench import BenchError, run_sweep
from portfolio.bench.checkout import find_checkout
from portfolio.cli import cli
from portfolio.report.leaderboard import build
from portfolio.report.provenance import hash_notes

LIMIT = 10.0


def rows_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def other(tmp_path_factory) -> Path:
    """A second checkout: this package copied (numba's caches with it), its bench task marked."""
    root = tmp_path_factory.mktemp("other-checkout")
    for part in ("portfolio", "plugins"):
        shutil.copytree(REPO / part, root / part, symlinks=True)
    task = root / "portfolio" / "bench" / "task.py"
    text = task.read_text()
    assert '"fallback": False,' in text
    task.write_text(text.replace('"fallback": False,', '"fallback": False, "marked_by": "other",', 1))
    return root


def test_checkout_configuration_runs_the_other_code(other, tmp_path):
    result = run_sweep([bundled_example_path()], backends=["minusage", f"other=minusage@{other}"],
                       time_limit=LIMIT, runs_dir=tmp_path, name="ab")
    assert not result.failed, result.failures
    rows = {r["configuration"]: r for r in rows_of(tmp_path / "ab")}
    here, there = rows["minusage"], rows["other"]
    assert there["status"] in ("optimal", "feasible") and there["cost"] == here["cost"]
    assert there.get("marked_by") == "other" and "marked_by" not in here
    assert there["checkout"]["path"] == str(other.resolve())
    assert Path(there["checkout"]["portfolio"]) == other.resolve() / "portfolio"
    assert Path(there["checkout"]["plugins"]) == other.resolve() / "plugins"
    assert "checkout" not in here
    meta = json.loads((tmp_path / "ab" / "meta.json").read_text())
    by_name = {c["name"]: c for c in meta["configurations"]}
    assert by_name["other"]["checkout"]["path"] == str(other.resolve())
    assert "checkout" not in by_name["minusage"]
    board = build([tmp_path / "ab"])
    assert any(n.startswith(f"configuration other ran the code of {other.resolve()}") for n in board.notes)

    # resuming with the configuration pointed at other code is refused
    with pytest.raises(BenchError, match="ran the code of"):
        run_sweep([bundled_example_path()], backends=["minusage", f"other=minusage@{REPO}"],
                  time_limit=LIMIT, runs_dir=tmp_path, name="ab", resume=True)


def test_checkout_configuration_input_errors(other, tmp_path):
    with pytest.raises(BenchError, match="needs a name"):
        run_sweep([bundled_example_path()], backends=[f"minusage@{other}"], time_limit=LIMIT,
                  runs_dir=tmp_path, name="x")
    with pytest.raises(BenchError, match="not a checkout"):
        find_checkout(str(tmp_path))
    with pytest.raises(BenchError, match="no such checkout"):
        find_checkout(str(tmp_path / "missing"))
    with pytest.raises(BenchError, match="unknown backend|no backend"):
        run_sweep([bundled_example_path()], backends=[f"b=nosuchbackend@{other}"], time_limit=LIMIT,
                  runs_dir=tmp_path, name="y")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
    # the CLI says it in one line, exit 2
    out = CliRunner().invoke(cli, ["bench", str(bundled_example_path()), "-b", f"minusage@{other}",
                                   "--runs-dir", str(tmp_path), "-q"])
    assert out.exit_code == 2 and "needs a name" in out.output and "Traceback" not in out.output


def test_deterministic_sweep_rows_and_hash_note(tmp_path):
    folder = tmp_path / "det"
    out = CliRunner().invoke(cli, ["bench", str(bundled_example_path()), "-b", "minusage",
                                   "--work", "50", "--repeat", "2", "--runs-dir", str(tmp_path),
                                   "--name", "det", "-q"])
    assert out.exit_code == 0, out.output
    rows = rows_of(folder)
    assert len(rows) == 2 and {r["work"] for r in rows} == {50}
    assert rows[0]["plan_hash"] and rows[0]["plan_hash"] == rows[1]["plan_hash"]
    assert all(r["deterministic"]["complete"] for r in rows)
    assert rows[0]["time_limit"] == 600.0   # the safety net's default, not a timed run's 60 s
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["deterministic"] == {"work": 50}
    board = build([folder])
    assert any("one plan over 2 run(s)" in n for n in board.notes), board.notes
    # a timed resume of the same run is refused (the rows ran in deterministic mode)
    with pytest.raises(BenchError, match="deterministic with 50 work units"):
        run_sweep([bundled_example_path()], backends=["minusage"], time_limit=600.0,
                  repeat=2, runs_dir=tmp_path, name="det", resume=True)


def test_deterministic_sweep_refuses_backends_without_the_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "faulty_backends")
    with pytest.raises(BenchError, match="bruteforce does not support deterministic mode"):
        run_sweep([bundled_example_path()], backends=["bruteforce"], deterministic=True,
                  time_limit=LIMIT, runs_dir=tmp_path, name="z")


def test_hash_note_names_different_plans():
    row = {"instance": "K", "seed": 0, "work": 100, "backends": ["localsearch"],
           "deterministic": {"identity": "i1", "complete": True}}
    rows = [dict(row, plan_hash="aaa"), dict(row, plan_hash="aaa"),
            dict(row, plan_hash="bbb", deterministic={"identity": "i1", "complete": False}),
            dict(row, seed=1, plan_hash="ccc"),
            dict(row, work=None, plan_hash="ddd")]        # a timed row: not counted
    notes = hash_notes(rows)
    assert len(notes) == 2
    assert "K seed 0, work 100, localsearch: 2 DIFFERENT plans over 3 run(s) (aaa x2, bbb x1)" in notes[0]
    assert "1 not the deterministic answer" in notes[0]
    assert "seed 1" in notes[1] and "one plan over 1 run(s)" in notes[1]
