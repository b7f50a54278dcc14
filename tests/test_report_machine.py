"""A busy machine on the record (issue 47): the CPU a run's backends got against what they were
due and the load average, in every bench row and `solve --json`; `portfolio report` marks rows
starved below half their share, and says when a late row held a verified plan at the deadline.

The share is worked out by hand on made-up backend rows; the report on hand-written result rows
(the helpers of tests/test_report.py). The fields of real rows: tests/test_bench.py and
tests/test_cli.py.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from portfolio.cpuload import STARVED_BELOW, cpu_record, starved
from portfolio.report import build, render_csv, render_markdown, to_json
from portfolio.report.leaderboard import points
from test_report import B, G, invoke, result_row, write_run


def backend(started, finished, cpu, cores=1):
    return {"started": started, "finished": finished, "cpu_seconds": cpu, "cores": cores}


# ------------------------------------------------------------------------------------ the share
def test_due_is_the_cores_given_over_the_time_the_backends_ran():
    # two backends, one core each of two, from 0 to 3 s: due 6 CPU s
    record = cpu_record([backend(0.0, 3.0, 2.9), backend(0.0, 3.0, 2.8)], cores=2, elapsed=3.2,
                        load_start=0.5, load_end=1.9)
    assert record["cpu_seconds"] == pytest.approx(5.7) and record["cpu_due"] == pytest.approx(6.0)
    assert record["cpu_share"] == pytest.approx(0.95) and not starved(record)
    assert (record["cores"], record["load_start"], record["load_end"]) == (2, 0.5, 1.9)
    assert record["machine_cores"] >= 1
    # three on two cores until 1.5 s (two cores busy), then one alone (one core): 3 + 1.5
    three = cpu_record([backend(0.0, 3.0, 0.4), backend(0.0, 1.5, 0.3), backend(0.1, 1.5, 0.2)],
                       cores=2, elapsed=3.0)
    assert three["cpu_due"] == pytest.approx(2 * 1.5 + 1.5 * 1.0 - 0.0, abs=0.01)
    assert three["cpu_share"] < STARVED_BELOW and starved(three)     # 0.9 of 4.5 CPU s
    # a threaded backend given both cores is due both; one still running counts to the end
    assert cpu_record([backend(0.0, None, 3.0, cores=2)], cores=2, elapsed=2.0)["cpu_due"] == 4.0


def test_rows_without_a_measurement_count_in_neither():
    record = cpu_record([backend(0.0, 2.0, None), backend(None, None, None), backend(0.0, 2.0, 1.9)],
                        cores=2, elapsed=2.0)
    assert record["cpu_due"] == pytest.approx(2.0) and record["cpu_seconds"] == pytest.approx(1.9)
    nothing = cpu_record([backend(0.0, 2.0, None)], cores=2, elapsed=2.0)
    assert nothing["cpu_share"] is None and not starved(nothing)
    assert not starved(None) and not starved({})


# ------------------------------------------------------------------------------------ the report
def _cpu(got: float, due: float) -> dict:
    return {"cpu_seconds": got, "cpu_due": due, "cpu_share": round(got / due, 3), "cores": 2,
            "machine_cores": 2, "load_start": 3.1, "load_end": 4.2}


def test_the_report_marks_starved_rows_and_says_why(tmp_path):
    rows = [result_row(B, "a", 100, cpu=_cpu(5.5, 6.0)), result_row(G, "a", 50, cpu=_cpu(0.4, 6.0)),
            result_row(B, "b", 110, cpu=_cpu(5.9, 6.0)), result_row(G, "b", 55)]   # b G: old row
    run = write_run(tmp_path / "r", rows, name="r")
    board = build([run])
    a = next(r for r in board.rows if r.label == "a")
    assert (a.cells[B].starved, a.cells[G].starved) == (0, 1)
    note = next(n for n in board.notes if n.startswith("†"))
    assert "1 task(s)" in note and f"{G}/a s0: 0.4 of 6 CPU s" in note and "load 3.1 -> 4.2" in note

    wide = invoke("report", run, "--view", "wide")
    assert wide.exit_code == 0 and "†" in wide.stderr and "starved" in wide.stderr
    compact = invoke("report", run, "--view", "compact")
    assert compact.exit_code == 0 and "†" in compact.stderr
    markdown = render_markdown(board)
    assert "50 (1.000) †" in markdown and "Note: † starved" in markdown
    table = list(csv.DictReader(io.StringIO(render_csv(board))))
    assert {r["configuration"]: r["G:starved"] for r in table} == {"a": "1", "b": "0"}
    cells = {r["configuration"]: r["cells"] for r in to_json(board)["rows"]}
    assert cells["a"][G]["starved"] == 1 and cells["b"][G]["starved"] == 0

    tidy = invoke("report", run, "--csv", "-")
    tasks = {(r["instance"], r["configuration"]): r for r in csv.DictReader(io.StringIO(tidy.stdout))}
    assert tasks[(G, "a")]["starved"] == "yes" and tasks[(G, "a")]["cpu_share"] == "0.067"
    assert tasks[(B, "a")]["starved"] == "" and tasks[(B, "a")]["load_end"] == "4.2"
    assert tasks[(G, "b")]["cpu_due"] == ""                       # a row from before: no record


def test_a_late_row_that_held_a_plan_at_the_deadline_says_so_and_scores_0(tmp_path):
    def late(config, elapsed, trace):
        row = result_row(B, config, trace[-1][1], status="late", time_limit=5.0, elapsed=elapsed)
        row["incumbents"] = [{"time": t, "cost": c, "backend": config} for t, c in trace]
        return row

    rows = [late("a", 5.05, [(1.0, 120), (4.0, 100)]), late("b", 5.64, [(2.0, 130), (5.5, 90)]),
            late("c", 6.0, [(5.8, 80)]), result_row(B, "d", 150)]
    board = build([write_run(tmp_path / "r", rows, name="r")])
    totals = {r.label: r.total for r in board.rows}
    assert totals == {"a": 0.0, "b": 0.0, "c": 0.0, "d": points(150, 150)}   # late scores 0
    note = next(n for n in board.notes if "late" in n and "deadline" in n)
    assert f"{B}/a s0: held a verified plan of cost 100 at the deadline and answered late by " \
           f"0.05 s" in note
    assert f"{B}/b s0: held a verified plan of cost 130 at the deadline and answered late by " \
           f"0.64 s" in note
    assert f"{B}/c" not in note                                    # nothing held at 5 s
    assert "scored 0, as the contest scores a late answer" in note
    tidy = invoke("report", tmp_path / "r", "--csv", "-")
    tasks = {r["configuration"]: r for r in csv.DictReader(io.StringIO(tidy.stdout))}
    assert (tasks["a"]["held_at_deadline"], tasks["a"]["late_by"]) == ("100", "0.05")
    assert tasks["c"]["held_at_deadline"] == "" and tasks["d"]["late_by"] == ""
    assert json.loads(invoke("report", tmp_path / "r", "--format", "json").stdout)["notes"]
