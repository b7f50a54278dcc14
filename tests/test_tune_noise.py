"""A tune that does not chase noise (issue 47, docs/tune.md "The score and the race"): ranges in
seconds clipped to the budget, no challenger dropped before ``MIN_PAIRS`` pairs, dropped and adopted
only by a paired test at ``LEVEL``, ties broken by the anytime score, the study in Optuna's own
storage in the run folder, and ``report --csv`` on a tune run.

The rules are checked on hand-made costs and rows; the whole tune on generated 60-node instances
with the test backend ``knob`` of tests/tune_backends.py (1.5 s runs, a few trials).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from conftest import extra
from portfolio.backend_options import Option
from portfolio.generate import generate_problem
from portfolio.io import write_problem
from portfolio.report.tune_score import Pair
from portfolio.tuning.space import build_space

TESTS = Path(__file__).parent


@pytest.fixture
def instances(tmp_path: Path) -> list[Path]:
    out = []
    for seed in (1, 2, 3):
        path = tmp_path / f"gen60-{seed}.json"
        write_problem(generate_problem(60, strategies=4, seed=seed), path)
        out.append(path)
    return out


@pytest.fixture
def knob_cli(portfolio_cli):
    extra("optuna")
    return portfolio_cli.configured(plugins="tune_backends", path=[TESTS], timeout=400)


# ------------------------------------------------------------------------------ ranges in seconds
def test_a_range_in_seconds_is_clipped_to_the_budget():
    declared = [("toulbar2", (
        Option("first_limit", "float", 10.0, "h", low=1.0, high=120.0, unit="seconds"),
        Option("tb2_min_s", "float", 15.0, "h", low=0.0, unit="seconds"),
        Option("warmup", "float", 5.0, "h", low=4.0, high=50.0, unit="seconds"),
        Option("vectors", "int", 3, "h", low=1, high=16)))]
    params = {p.key: p for p in build_space(declared, budget=3.0).params}
    assert (params["toulbar2.first_limit"].low, params["toulbar2.first_limit"].high) == (1.0, 3.0)
    assert params["toulbar2.tb2_min_s"].high == 3.0          # an open end derived, then clipped
    assert params["toulbar2.vectors"].high == 16             # not seconds: untouched
    space = build_space(declared, budget=3.0)
    assert "toulbar2.warmup" not in params                   # its whole range is past the budget
    assert any("toulbar2.warmup" in n and "3 s budget" in n for n in space.notes), space.notes
    assert any("toulbar2.first_limit" in n and "clipped" in n for n in space.notes)
    long = {p.key: p for p in build_space(declared, budget=300.0).params}
    assert long["toulbar2.first_limit"].high == 120.0       # a long budget keeps the declared end
    for raw in (0.5, 2.9999, 45.3, 120.0):                   # whatever a sampler hands back
        assert params["toulbar2.first_limit"].value(raw) <= 3.0


def test_the_shipped_seconds_options_say_so():
    from portfolio.registry import Registry

    registry = Registry()
    units = {(name, o.name): o.unit for name in ("toulbar2", "bound")
             for o in registry.get(name).meta.options}
    assert units[("toulbar2", "first_limit")] == units[("toulbar2", "limit_step")] == "seconds"
    assert units[("bound", "tb2_min_s")] == "seconds" and units[("toulbar2", "vectors")] == ""
    declared = [(name, registry.get(name).meta.options) for name in ("toulbar2",)]
    params = {p.key: p for p in build_space(declared, budget=3.0).params}
    assert params["toulbar2.first_limit"].high <= 3.0       # issue 47: 45.3 was sampled at 3 s


@pytest.mark.parametrize("option, says", [
    (Option("fast", "bool", False, "h", unit="seconds"), "a unit needs an int or a float"),
    (Option("wait", "float", 1.0, "h", unit="minutes"), "unit 'minutes' is not one of"),
])
def test_a_bad_unit_is_a_declaration_problem(option, says):
    assert any(says in p for p in option.problems()), option.problems()
