"""The selector learned from runs (portfolio/selection/): training cells read from bench rows, the
forests fitted by scikit-learn and evaluated by numpy alone, the file's round trip and its
checks, and leave-one-instance-out cross-validation, on the synthetic runs of
``selection_data`` (toulbar2 best where memory is tight, greedy+localsearch elsewhere)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import selection_data as sd
from conftest import extra
from portfolio.features import FEATURES_VERSION
from portfolio.selection import SelectorError, load_selector
from portfolio.selection.crossval import cross_validate
from portfolio.selection.dataset import read_training
from portfolio.selection.selector import selector_from_json
from portfolio.selection.trees import Forest
from test_report import write_run

TREES = 8


@pytest.fixture(scope="module")
def sklearn():
    return extra("sklearn")


@pytest.fixture(scope="module")
def tightness() -> dict[str, float]:
    return sd.graphs(24)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tightness):
    return sd.write_runs(tmp_path_factory.mktemp("runs"), tightness)


@pytest.fixture(scope="module")
def data(runs):
    return read_training(runs)


def test_cells_scores_and_candidates_from_rows(data, tightness):
    assert [s.name for s in data.candidates] == ["portfolio", "greedy+localsearch", "toulbar2"]
    assert data.default == "portfolio"
    assert len(data.cells) == 2 * len(tightness) and data.budgets == [10.0, 60.0]
    ours = next(s for s in data.candidates if s.name == "greedy+localsearch")
    assert ours.backends == ("greedy", "localsearch")
    assert ours.options == {"localsearch": {"kick_max": 9}}
    for cell in data.cells:
        tight = tightness[cell.instance]
        for name, score in cell.scores.items():
            # the synthetic truth less at most half of seed 1's noise (up to 0.01)
            assert sd.true_score(name, tight) - 0.0051 <= score <= sd.true_score(name, tight)
        assert cell.rows == {"portfolio": 2, "greedy+localsearch": 2, "toulbar2": 2}


def test_the_learned_selector_picks_right_on_held_out_graphs(data, tightness, sklearn):
    from portfolio.selection.fit import learn

    names = data.instances
    held = {n for i, n in enumerate(names) if i % 2 and abs(tightness[n] - sd.SPLIT) > 0.08}
    assert len(held) >= 5
    selector = learn(data.restricted(lambda c: c.instance not in held), trees=TREES)
    assert set(selector.training["instances"]).isdisjoint(held)
    for name in held:
        want = "toulbar2" if tightness[name] > sd.SPLIT else "greedy+localsearch"
        for budget in (10.0, 60.0, 30.0):   # 30 s: a budget the runs never had
            assert selector.choose(data.features[name], budget).schedule.name == want, name


def test_numpy_evaluation_equals_scikit_learn(sklearn):
    from portfolio.selection.fit import export_forest, fit_forest

    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 5)) * [1, 1e6, 1e-3, 10, 1]
    x[:, 3] = np.round(x[:, 3])             # ties and repeated values, as counts give
    y = np.sin(x[:, 0]) + (x[:, 3] > 0) + rng.normal(scale=0.1, size=60)
    model = fit_forest(x, y, trees=16, seed=1)
    forest = export_forest(model)
    # values a hair above each threshold: scikit-learn rounds them to float32 first, which may
    # send them left; a plain float64 comparison would send them right
    inner = np.flatnonzero(forest.feature >= 0)
    edge = np.repeat(x[:1], len(inner), axis=0)
    edge[np.arange(len(inner)), forest.feature[inner]] = np.nextafter(forest.threshold[inner],
                                                                      np.inf)
    probe = np.vstack([x, rng.normal(size=(40, 5)) * [1, 1e6, 1e-3, 10, 1], edge])
    assert np.array_equal(forest.predict_many(probe), model.predict(probe))
    again = Forest.from_trees(forest.to_json()["trees"], 5, "here")
    assert np.array_equal(again.predict_many(probe), model.predict(probe))


def test_the_file_round_trips(data, tmp_path, sklearn):
    from portfolio.selection.fit import learn

    selector = learn(data, trees=TREES, cv={"summary": {"cells": 0}})
    path = tmp_path / "selector.json"
    path.write_text(selector.dumps())
    loaded = load_selector(path)
    assert loaded.sha256 and loaded.path == str(path)
    assert loaded.features_version == FEATURES_VERSION
    assert [c.schedule for c in loaded.candidates] == [c.schedule for c in selector.candidates]
    assert loaded.default == "portfolio" and loaded.cv == {"summary": {"cells": 0}}
    assert loaded.training["instances"] == data.instances
    assert loaded.training["runs"][0]["commits"] == ["0" * 40]
    for cell in data.cells[::3]:
        values = data.features[cell.instance]
        assert loaded.predict(values, cell.budget) == selector.predict(values, cell.budget)
    assert json.loads(loaded.dumps()) == json.loads(selector.dumps())


def _good_doc(data) -> dict:
    from portfolio.selection.fit import learn

    return json.loads(learn(data, trees=2).dumps())


@pytest.mark.parametrize("breakage, message", [
    (lambda d: d.pop("format"), "not a selector file"),
    (lambda d: d.update(format_version=99), "format_version"),
    (lambda d: d["features"].update(names=["nodes", "no_such_feature"]), "no_such_feature"),
    (lambda d: d["candidates"][0].update(backends=[]), "candidates[0].backends"),
    (lambda d: d["candidates"][1].update(weights={"greedy": -1}), "candidates[1].weights.greedy"),
    (lambda d: d["candidates"][1].update(weights={"cpsat": 1}), "not a backend of this schedule"),
    (lambda d: d["candidates"][2].update(options={"greedy": {"design": "x"}}),
     "candidates[2].options.greedy: not a backend of this schedule (toulbar2)"),
    (lambda d: d["candidates"][0]["model"]["trees"][0]["left"].__setitem__(0, 0),
     "candidates[0].model.trees[0]: node 0: its children must be later nodes"),
    (lambda d: d["candidates"][0]["model"]["trees"][1]["left"].__setitem__(-1, 0),
     "a leaf (feature -1) has children"),
    (lambda d: d["candidates"][2]["model"]["trees"][1]["feature"].__setitem__(0, 999),
     "candidates[2].model.trees[1]: node 0: the feature is not one of the 31 features"),
    (lambda d: d["candidates"][2]["model"]["trees"][1]["threshold"].__setitem__(0, "x"),
     "candidates[2].model.trees[1].threshold[0]: expected a number, got 'x'"),
    (lambda d: d["candidates"][1]["model"]["trees"][1]["left"].__setitem__(0, 1.5),
     "candidates[1].model.trees[1].left[0]: expected an integer, got 1.5"),
    (lambda d: d["candidates"][2]["model"]["trees"][0].update(value=[1.0]), "differ in length"),
    (lambda d: d.update(default="nobody"), "default"),
    (lambda d: d.update(margin=-0.1), "margin: expected a score difference in [0, 1)"),
    (lambda d: d.update(margin="small"), "margin"),
    (lambda d: d.update(domain={"nodes": [5, 1]}), "domain: expected {feature: [low, high]}"),
])
def test_a_bad_file_is_one_error_naming_the_field(data, tmp_path, sklearn, breakage, message):
    doc = _good_doc(data)
    assert doc["candidates"][0]["model"]["trees"][0]["feature"][0] >= 0   # a split to break
    breakage(doc)
    with pytest.raises(SelectorError, match=re.escape(message)):
        selector_from_json(doc, "sel.json")
    path = tmp_path / "not.json"
    path.write_text("{ not json")
    with pytest.raises(SelectorError, match="not.json: not JSON"):
        load_selector(path)


def test_the_guard_names_what_does_not_fit(data, sklearn):
    doc = _good_doc(data)
    selector = selector_from_json(doc, "sel.json")
    assert selector.unusable_here(sd.DEFAULT_SET) is None
    why = selector.unusable_here([b for b in sd.DEFAULT_SET if b != "toulbar2"])
    assert why == "backend toulbar2 not installed (named by portfolio, toulbar2)"
    doc["features"]["version"] = FEATURES_VERSION + 1
    other = selector_from_json(doc, "sel.json")
    assert other.unusable_here(sd.DEFAULT_SET).startswith(
        f"features of version {FEATURES_VERSION + 1}")


def test_cross_validation_closes_most_of_the_default_gap(data, tightness, sklearn):
    cv = cross_validate(data, trees=TREES)
    assert len(cv.rows) == len(data.cells) and cv.default == "portfolio"
    assert cv.single_best == "portfolio"   # 0.93 everywhere beats 1.0 on half, 0.8 on half
    for row in cv.rows:
        assert row.virtual_best_score >= row.selected_score
        want = "toulbar2" if tightness[row.instance] > sd.SPLIT else "greedy+localsearch"
        assert row.virtual_best == want
        assert row.default_score == row.single_best_score
    s = cv.summary
    assert s["gap_default"] == pytest.approx(np.mean([r.virtual_best_score - r.default_score
                                                      for r in cv.rows]))
    assert s["gap_default"] > 0.04 and s["closed"] >= 0.5   # the target, on easy data
    far = [r for r in cv.rows if abs(tightness[r.instance] - sd.SPLIT) > 0.1]
    assert all(r.selected == r.virtual_best for r in far)


def test_cross_validation_by_hand(tmp_path, sklearn):
    """Two graphs, two configurations: the reference rows computed by hand."""
    rng = __import__("random").Random(0)
    rec = {g: sd.features(t, rng) for g, t in (("x", 0.5), ("y", 1.0))}

    def one(instance, config, cost):
        backends = ["toulbar2"] if config == "toulbar2" else sd.DEFAULT_SET
        return {**sd.row(instance, "portfolio", 0.5, 10.0, 0, rec[instance], rng),
                "configuration": config, "backends": backends, "cost": cost}
    run = write_run(tmp_path / "r", [one("x", "portfolio", 100), one("x", "toulbar2", 200),
                                     one("y", "portfolio", 400), one("y", "toulbar2", 100)])
    cv = cross_validate(read_training([run]), trees=2)
    by = {r.instance: r for r in cv.rows}
    assert by["x"].virtual_best == "portfolio" and by["x"].virtual_best_score == 1.0
    assert by["y"].virtual_best == "toulbar2" and by["y"].default_score == 0.25
    assert cv.single_best == "toulbar2"   # 0.5 + 1.0 against 1.0 + 0.25
    assert by["x"].single_best_score == 0.5
    # each fold learns from one graph only: its best there is its pick on the other
    assert by["x"].selected == "toulbar2" and by["y"].selected == "portfolio"
    assert cv.summary["gap_default"] == pytest.approx(0.375)
    assert cv.summary["gap_selector"] == pytest.approx(0.625)
    # x smaller than y: x's fold (learned from y alone) keeps the default there, as a selector does
    rec["x"]["values"]["nodes"] = 4
    run = write_run(tmp_path / "r2", [one("x", "portfolio", 100), one("x", "toulbar2", 200),
                                      one("y", "portfolio", 400), one("y", "toulbar2", 100)])
    by = {r.instance: r for r in cross_validate(read_training([run]), trees=2).rows}
    assert by["x"].selected == "portfolio" and by["y"].selected == "portfolio"


def test_rows_the_selector_cannot_learn_from_are_left_out(tmp_path, bundled_example):
    rng = __import__("random").Random(0)
    base = sd.row("g", "toulbar2", 0.5, 10.0, 0, sd.features(0.5, rng), rng)
    rows = [base, {**base, "instance": "h"},
            {**base, "configuration": "other", "checkout": {"path": "/x"}},
            {**base, "configuration": "det", "work": 1000},
            {**base, "configuration": "re", "resolve": {"start_cost": 1}},
            {**base, "configuration": "old", "backends": ["(default set)"]},
            {**base, "instance": "example", "features": None, "path": str(bundled_example)},
            {**base, "instance": "gone", "features": None},
            {**base, "configuration": "tb", "seed": 1,             # toulbar2 by another label,
             "options_given": {"greedy": {"design": "x"}}}]        # a sweep's option for others
    data = read_training([write_run(tmp_path / "r", rows)], sd_cheap_features)
    assert [s.name for s in data.candidates] == ["toulbar2"]      # "tb" is the same schedule
    assert data.candidates[0].options == {}
    assert next(c for c in data.cells if c.instance == "g").rows == {"toulbar2": 2}
    assert data.default is None
    assert data.instances == ["example", "g", "h"]
    assert data.features["example"]["nodes"] == 8                # computed from the file
    notes = " | ".join(data.notes)
    for said in ("another checkout's code", "deterministic", "a re-solve", "backends not named",
                 "computed from the instance files for 1 instance(s) whose rows carry none: "
                 "example", "left out (no features on the rows, and the file is not found): gone",
                 "no candidate is named 'portfolio'"):
        assert said in notes


def sd_cheap_features(path: str):
    from portfolio.cli.learn import _cheap_features_of

    return _cheap_features_of(path)


def test_the_default_stays_unless_another_is_predicted_better_by_the_margin():
    from portfolio.cli.learn import LEARN_MARGIN
    from portfolio.selection.selector import MARGIN, pick

    scores = {"portfolio": 0.970, "tb2ls": 0.972, "toulbar2": 0.990}
    assert pick(scores, "portfolio", 0.0) == "toulbar2"
    assert pick(scores, "portfolio", 0.019) == "toulbar2"
    assert pick(scores, "portfolio", 0.020) == "portfolio"   # within the margin: the default
    assert pick({"a": 0.5, "b": 0.5}, None, 0.1) == "a"   # no default: the first of the best
    assert pick({"a": 0.5, "portfolio": 0.2}, "portfolio", 0.1) == "a"
    assert LEARN_MARGIN == MARGIN   # the command line's default is the module's


def test_the_margin_is_in_the_file_and_the_cross_validation(data, tmp_path, sklearn):
    from portfolio.selection.fit import learn

    wide = cross_validate(data, trees=TREES, margin=0.99)
    assert {r.selected for r in wide.rows} == {"portfolio"}   # nothing is better by 0.99
    assert wide.summary["gap_selector"] == pytest.approx(wide.summary["gap_default"])
    selector = learn(data, trees=TREES, margin=0.99)
    path = tmp_path / "wide.json"
    path.write_text(selector.dumps())
    loaded = load_selector(path)
    assert loaded.margin == 0.99
    for cell in data.cells:
        assert loaded.choose(data.features[cell.instance], cell.budget).schedule.name == "portfolio"
    narrow = learn(data, trees=TREES, margin=0.0)
    assert {narrow.choose(data.features[c.instance], c.budget).schedule.name
            for c in data.cells} != {"portfolio"}


def test_below_the_training_graphs_the_default_runs(data, tmp_path, sklearn):
    from portfolio.selection.fit import learn
    from portfolio.selection.selector import below_domain, domain_of

    assert domain_of({"a": {"nodes": 816, "edges": 1096}, "b": {"nodes": 40958}}) == {
        "nodes": [816.0, 40958.0], "edges": [1096.0, 1096.0]}
    domain = {"nodes": [816.0, 40958.0]}
    assert below_domain(domain, {"nodes": 816}) is None
    assert below_domain(domain, {"nodes": 90000}) is None   # above: the largest graphs' leaves
    assert "nodes 8 is below the smallest training graph's 816" in below_domain(domain, {"nodes": 8})
    selector = learn(data, trees=2)
    assert selector.domain == {"nodes": [8.0, 8.0], "edges": [9.0, 9.0],   # selection_data's sizes
                               "budget_seconds": [10.0, 60.0]}
    from portfolio.selection.selector import outside_budgets

    assert outside_budgets(selector.domain, 60) is None and outside_budgets(selector.domain, 10) is None
    assert "240 s is outside the training budgets (10-60 s)" in outside_budgets(selector.domain, 240)
    assert outside_budgets(selector.domain, 1) is not None
    path = tmp_path / "s.json"
    path.write_text(selector.dumps())
    assert load_selector(path).domain == selector.domain
