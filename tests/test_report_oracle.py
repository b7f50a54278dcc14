"""`portfolio report --oracle`: the virtual best and single best rows of the single-backend
configurations (portfolio/report/oracle.py). Hand-written results only."""

from __future__ import annotations

from pathlib import Path

import pytest

from portfolio.report import build, render_markdown
from portfolio.report.oracle import reference_entries
from test_report import invoke, result_row, write_run

X, Y, Z = "inst-x", "inst-y", "inst-z"

# costs per configuration and instance, two seeds each; "mix" runs three backends together
COSTS = {
    "alpha": {X: (100, 110), Y: (400, 420), Z: (900, 900)},
    "beta": {X: (150, 150), Y: (200, 260), Z: (800, 1000)},
    "gamma": {X: (300, 300), Y: (300, 300), Z: (700, 750)},
    "mix": {X: (105, 100), Y: (210, 230), Z: (720, 760)},
}


def _rows() -> list[dict]:
    rows = []
    for config, by_instance in COSTS.items():
        for instance, costs in by_instance.items():
            for seed, cost in enumerate(costs):
                rows.append(result_row(instance, config, cost, seed=seed))
                if config == "mix":
                    rows[-1]["backends"] = ["alpha", "beta", "gamma"]
    return rows


@pytest.fixture
def run(tmp_path) -> Path:
    return write_run(tmp_path / "run", _rows(), name="run")


def _mean_points(config: str, instance: str) -> float:
    least = min(c for by in COSTS.values() for c in by[instance])
    return sum(least / c for c in COSTS[config][instance]) / 2


def test_virtual_best_takes_the_best_single_cell_per_instance(run):
    board = build([run], extra_rows=reference_entries)
    rows = {r.label: r for r in board.rows}
    vbs = rows["virtual best"]
    for instance in (X, Y, Z):
        best = max(("alpha", "beta", "gamma"), key=lambda c: _mean_points(c, instance))
        assert vbs.cells[instance].points == pytest.approx(_mean_points(best, instance))
    # alpha on X, beta on Y, gamma on Z
    assert vbs.total == pytest.approx(_mean_points("alpha", X) + _mean_points("beta", Y)
                                      + _mean_points("gamma", Z))
    totals = {c: sum(_mean_points(c, i) for i in (X, Y, Z)) for c in ("alpha", "beta", "gamma")}
    top = max(totals, key=totals.get)
    single = rows[f"single best ({top})"]
    assert single.total == pytest.approx(totals[top]) == pytest.approx(rows[top].total)
    assert vbs.kind == single.kind == "reference" and vbs.rank is None and single.rank is None
    assert any("virtual best takes on each instance" in n for n in board.notes)


def test_reference_rows_change_nobody_else(run):
    plain = {r.label: (r.total, r.rank) for r in build([run]).rows}
    with_oracle = {r.label: (r.total, r.rank) for r in build([run], extra_rows=reference_entries).rows
                   if r.kind == "run"}
    assert with_oracle == plain   # they set no minimum and take no rank
    assert set(plain) == {"alpha", "beta", "gamma", "mix"}


def test_no_single_backend_configuration_no_rows(tmp_path):
    rows = [dict(r, backends=["a", "b"]) for r in _rows()]
    board = build([write_run(tmp_path / "multi", rows)], extra_rows=reference_entries)
    assert all(r.kind == "run" for r in board.rows)
    assert any("no single-backend configuration" in n for n in board.notes)


def test_oracle_on_the_command_line(run):
    result = invoke("report", run, "--oracle", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert "| ref | _virtual best_ |" in result.stdout
    assert "| ref | _single best (" in result.stdout
    assert "virtual best" not in invoke("report", run, "--format", "markdown").stdout
    assert render_markdown(build([run], extra_rows=reference_entries)).count("| ref |") == 2
