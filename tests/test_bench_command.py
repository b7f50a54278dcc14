"""`portfolio bench -b 'LABEL=cmd:COMMAND'`: contest-style solvers on the same leaderboard.

The command is tests/fake_contest_solver.py in one of its modes (a plan, garbage, a plan over the
memory limit, a sleeper past its timeout, ...) on the bundled example, gzipped and plain; every
row is judged against the contest's own definition of cost (conftest's independent reference).
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import reference_cost
from portfolio.bench import BenchError, plan_tasks, resolve_configurations, run_sweep
from portfolio.bench.command import command_configuration, format_timeout
from portfolio.bench.command_task import GRACE
from portfolio.cli import bundled_example, cli
from portfolio.report.leaderboard import build

FAKE = Path(__file__).resolve().parent / "fake_contest_solver.py"
LIMIT = 2.0


def fake(mode: str, *more: str, file: str = "{file}") -> str:
    """A ``cmd:`` item running the fake solver in ``mode``."""
    return f"{mode}=cmd:{sys.executable} {FAKE} {mode} {file} {{timeout}} {' '.join(more)}".strip()


def rows_of(folder: Path) -> dict[tuple[str, str], dict]:
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    return {(r["instance"], r["configuration"]): r for r in rows}


def fake_processes() -> set[int]:
    import psutil

    return {p.pid for p in psutil.process_iter(["cmdline"]) if str(FAKE) in " ".join(p.info["cmdline"] or [])}


def least_usage_plan(doc: dict) -> list[int]:
    """What the fake solver's plan mode answers, computed here on its own."""
    nodes = doc["problem"]["nodes"]
    return [min(range(len(u)), key=lambda k: (u[k], c[k])) for u, c in zip(nodes["usages"], nodes["costs"])]


@pytest.fixture(scope="module")
def example_doc() -> dict:
    return json.loads(bundled_example().read_text())


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The bundled example twice: gzipped (``gzex``, so commands get an uncompressed copy) and plain."""
    out = tmp_path_factory.mktemp("cmd-instances")
    data = bundled_example().read_bytes()
    (out / "gzex.json.gz").write_bytes(gzip.compress(data))
    (out / "plain.json").write_bytes(data)
    return out


@pytest.fixture(scope="module")
def sweep(folder, tmp_path_factory) -> Path:
    """One sweep: the fake solver's modes beside a normal configuration, on both files."""
    runs = tmp_path_factory.mktemp("cmd-runs")
    marker = runs / "orphan-was-here.txt"
    configs = [fake("plan", "{seed}"), fake("gz", file="{file_gz}"), fake("garbage"), fake("infeasible"),
               fake("short"), fake("empty"), fake("crash"), fake("late"),
               fake("orphan", str(marker)), "minusage"]
    run_sweep([folder / "gzex.json.gz", folder / "plain.json"], backends=configs, time_limit=LIMIT,
              name="cmd", runs_dir=runs)
    time.sleep(2.5)   # an orphan that survived would write its marker by now
    assert not marker.exists(), "a process the command left behind outlived it"
    return runs / "cmd"


def test_a_plan_is_verified_and_scored_like_any_row(sweep, example_doc):
    rows = rows_of(sweep)
    plan = least_usage_plan(example_doc)
    expected = reference_cost(example_doc, plan)
    for instance in ("gzex", "plain"):
        row = rows[(instance, "plan")]
        assert (row["status"], row["cost"], row["feasible"]) == ("feasible", expected, True)
        assert row["incumbents"] == [{"time": row["elapsed"], "cost": expected, "backend": "plan"}]
        assert row["time_to_best"] == row["elapsed"] <= LIMIT and row["lower_bound"] is None
        assert json.loads((sweep / row["solution_file"]).read_text()) == plan
        argv = row["command"]["argv"]
        assert argv[-3].endswith(".json") and argv[-2:] == ["2", "0"], argv   # {timeout} an integer, {seed}
        assert "# fake solver plan 2.0" in (sweep / row["logs"]["stdout"]).read_text()
    copy = Path(rows[("gzex", "plan")]["command"]["argv"][-3])
    assert copy.name == "gzex.json" and not copy.exists(), "the sweep's uncompressed copy stays behind"
    assert rows[("plain", "plan")]["command"]["argv"][-3] == str(Path(rows[("plain", "plan")]["path"]).resolve())
    assert rows[("gzex", "gz")]["command"]["argv"][-2].endswith("gzex.json.gz")
    assert rows[("gzex", "gz")]["cost"] == expected


@pytest.mark.parametrize("mode, status, words", [
    ("garbage", "bad-output", "not a plan: 'no plan here, just words'"),
    ("short", "bad-output", "does not fit the instance"),
    ("infeasible", "infeasible", "over the memory limit"),
    ("empty", "no-solution", None),
    ("crash", "crashed", "exit code 3 without a plan: fake solver: out of luck"),
])
def test_answers_without_a_valid_plan_are_named(sweep, mode, status, words):
    for instance in ("gzex", "plain"):
        row = rows_of(sweep)[(instance, mode)]
        assert (row["status"], row["cost"], row["feasible"], row["incumbents"]) == (status, None, False, [])
        assert (row["error"] is None) if words is None else (words in row["error"]), row["error"]
        assert "solution_file" not in row
    evaluation = rows_of(sweep)[("plain", "infeasible")]["command"]["evaluation"]
    assert evaluation["feasible"] is False and evaluation["peak_usage"] > evaluation["usage_limit"]


def test_a_plan_after_the_limit_is_late_and_scores_nothing(sweep, example_doc):
    row = rows_of(sweep)[("plain", "late")]
    assert row["status"] == "late" and LIMIT < row["elapsed"] < LIMIT + GRACE
    assert row["cost"] == reference_cost(example_doc, least_usage_plan(example_doc))
    board = build([sweep])
    totals = {r.label: r.total for r in board.rows}
    assert totals["late"] == 0 and totals["plan"] > 0
    assert totals["infeasible"] == totals["garbage"] == totals["crash"] == 0


def test_the_report_says_what_ran_and_that_its_trace_is_its_answer_only(sweep):
    notes = build([sweep]).notes
    said = [n for n in notes if n.startswith("configuration plan ran the command")]
    assert len(said) == 1 and "final answer only, at its wall time" in said[0]
    assert not any("minusage ran the command" in n for n in notes)
    # --at before its answer: no plan; after it: the plan
    row = rows_of(sweep)[("plain", "plan")]
    early = build([sweep], at=row["elapsed"] / 2, configs=["plan"])
    assert all(c.cost_min is None for r in early.rows for c in r.cells.values())
    late = build([sweep], at=LIMIT * 0.99, configs=["plan"])
    assert all(c.cost_min == row["cost"] for r in late.rows for c in r.cells.values())


def test_a_command_past_its_limit_is_killed_with_its_group(folder, tmp_path):
    before = fake_processes()
    result = run_sweep([folder / "plain.json"], backends=[fake("sleep")], time_limit=1.0, name="s",
                       runs_dir=tmp_path)
    row = rows_of(tmp_path / "s")[("plain", "sleep")]
    assert row["status"] == "timeout" and row["command"]["killed"] and result.failed
    assert 1.0 + GRACE <= row["elapsed"] < 1.0 + GRACE + 3
    left = fake_processes() - before
    assert not left, "the command's forked child outlived the kill"


def test_configurations_alternate_per_seed_with_normal_ones(folder):
    from portfolio.bench import Instance

    configs = resolve_configurations([fake("plan"), "minusage"], portfolio=False,
                                     commands=command_configuration)
    assert configs[0].command is not None and configs[0].backends == () and configs[1].command is None
    tasks = plan_tasks([Instance("plain", str(folder / "plain.json"), 5.0)], configs, [0, 1], 1, 1)
    assert [(t.configuration, t.seed) for t in tasks] == [("plan", 0), ("minusage", 0), ("plan", 1),
                                                           ("minusage", 1)]
    assert tasks[0].command is configs[0].command and tasks[0].workers == 1
    assert format_timeout(60.0) == "60" and format_timeout(2.5) == "2.5"


@pytest.mark.parametrize("item, extra, message", [
    (f"cmd:{sys.executable} {FAKE} plan {{file}} {{timeout}}", [], "needs a name, LABEL=cmd:COMMAND"),
    (f"x=cmd:{sys.executable} {FAKE} plan {{fil}} {{timeout}}", [], "unknown placeholder {fil}"),
    (f"x=cmd:{sys.executable} {FAKE} plan {{file:>3}}", [], "unknown placeholder {file:>3}"),
    (f"x=cmd:{sys.executable} {FAKE} plan {{timeout}}", [], "never names the instance"),
    (f"x=cmd:{sys.executable} {FAKE} plan {{file", [], "bad braces"),
    ("x=cmd:no-such-program-here {file}", [], "no program 'no-such-program-here' on the PATH"),
    ("x=cmd:./no/such/solver {file}", [], "is not an executable file"),
    (f"x=cmd:{sys.executable} 'unclosed {{file}}", [], "cannot split its command"),
    (f"x=cmd:{sys.executable} {FAKE} plan {{file}} 1", ["--deterministic"], "no deterministic mode"),
    (f"x=cmd:{sys.executable} {FAKE} plan {{file}} 1", ["--dask-scheduler", "tcp://127.0.0.1:9"],
     "runs on this machine only"),
])
def test_bad_commands_stop_the_sweep_in_one_line_before_any_task(folder, tmp_path, item, extra, message):
    result = CliRunner().invoke(cli, ["bench", str(folder / "plain.json"), "-b", item, "-t", "1",
                                      "--runs-dir", str(tmp_path), "--name", "bad", "-q", *extra])
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert not (tmp_path / "bad").exists()


def test_resuming_with_another_command_under_the_same_label_is_refused(folder, tmp_path):
    run_sweep([folder / "plain.json"], backends=[fake("empty").replace("empty=", "x=", 1)],
              time_limit=LIMIT, name="r", runs_dir=tmp_path)
    with pytest.raises(BenchError, match="ran the command .* not the command"):
        run_sweep([folder / "plain.json"], backends=[fake("plan").replace("plan=", "x=", 1)],
                  time_limit=LIMIT, name="r", runs_dir=tmp_path, resume=True)
