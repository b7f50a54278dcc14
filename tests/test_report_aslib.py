"""`portfolio report --aslib DIR`: bench runs as an ASlib scenario (portfolio/report/aslib.py),
checked strictly against the format the ASlib readers load (the files, their attribute order, the
same instances in every file, every algorithm on every instance), from hand-written results."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import extra
from portfolio.cli import bundled_example
from portfolio.features import FEATURE_NAMES, PRESOLVED_FEATURES
from test_report import invoke, result_row, write_run

X, Y, Z, W = "inst-x", "inst-y", "inst-z", "inst-w"
FILES = {"description.txt", "algorithm_runs.arff", "feature_values.arff", "feature_costs.arff",
         "feature_runstatus.arff", "cv.arff", "readme.txt", "citation.bib"}


def features(nodes: int, settled: int = 0) -> dict:
    values = {name: None for name in FEATURE_NAMES}
    values.update(nodes=nodes, edges=2 * nodes, least_peak_ratio=0.9, presolved_nodes=nodes // 2,
                  presolved_settled=settled)
    return {"version": 1, "values": values,
            "seconds": {"load": 0.3, "cheap": 0.02, "presolve": 0.5, "presolved": 0.004}}


def single(instance, config, cost, seed=0, limit=5.0, **kw):
    return result_row(instance, config, cost, seed=seed, time_limit=limit, **kw)


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    fx, fy = features(100), features(40, settled=1)
    r1 = [single(X, "alpha", 100, 0, features=fx), single(X, "alpha", 120, 1, features=fx),
          single(X, "beta", 150, 0, features=fx), single(X, "beta", 150, 1, features=fx),
          single(Y, "beta", 80, 0, features=fy), single(Y, "beta", None, 1, features=fy),
          single(X, "mix", 110, 0, features=fx, backends=["alpha", "beta"]),
          single(Y, "mix", 60, 0, features=fy, backends=["alpha", "beta"])]
    r2 = [single(X, "alpha", 90, 0, limit=10.0),          # X again at another budget
          single(Z, "alpha", 300, 0, limit=10.0, path=str(bundled_example())),
          single(W, "alpha", 7, 0, limit=10.0)]            # /elsewhere/inst-w.json.gz: no file
    return [write_run(tmp_path / "r1", r1, name="r1"), write_run(tmp_path / "r2", r2, name="r2")]


def load_scenario(folder: Path) -> dict:
    arff, yaml = extra("arff"), extra("yaml")
    out = {}
    for path in folder.iterdir():
        if path.suffix == ".arff":
            out[path.name] = arff.loads(path.read_text())
        elif path.name == "description.txt":
            out[path.name] = yaml.safe_load(path.read_text())
    return out


def test_the_scenario_a_reader_expects(runs, tmp_path):
    out = tmp_path / "scenario"
    result = invoke("report", *runs, "--aslib", out, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == FILES
    s = load_scenario(out)
    d = s["description.txt"]
    algorithms = ["r1/alpha", "r2/alpha", "beta", "mix"]
    assert sorted(d["metainfo_algorithms"]) == sorted(algorithms)
    assert d["metainfo_algorithms"]["mix"]["configuration"] == "backends=alpha+beta"
    assert d["performance_measures"] == ["regret", "cost"] and d["maximize"] == [False, False]
    assert d["performance_type"] == ["solution_quality"] * 2
    assert d["default_steps"] == ["cheap", "presolved", "budget"]
    provided = [f for step in d["feature_steps"].values() for f in step["provides"]]
    assert sorted(provided) == sorted(d["features_deterministic"]) == sorted(
        [*FEATURE_NAMES, "budget_seconds"])
    assert set(d["feature_steps"]["presolved"]["provides"]) == set(PRESOLVED_FEATURES)

    runs_arff = s["algorithm_runs.arff"]
    assert [a[0] for a in runs_arff["attributes"]] == [
        "instance_id", "repetition", "algorithm", "regret", "cost", "runstatus"]
    data = {(r[0], r[2], r[1]): (r[3], r[4], r[5]) for r in runs_arff["data"]}
    ids = {"inst-x@5s", "inst-y@5s", "inst-x@10s", "inst-z@10s", "inst-w@10s"}
    assert {k[0] for k in data} == ids
    for iid in ids:          # every algorithm on every instance, as the format requires
        assert {k[1] for k in data if k[0] == iid} == set(algorithms)
    # regret = 1 - min cost / cost over every run of that instance and budget
    assert data[("inst-x@5s", "r1/alpha", 1)] == (0.0, 100, "ok")
    assert data[("inst-x@5s", "r1/alpha", 2)][0] == pytest.approx(1 - 100 / 120)
    assert data[("inst-x@5s", "beta", 1)][0] == pytest.approx(1 - 100 / 150)
    assert data[("inst-y@5s", "beta", 2)] == (1.0, 10 * 80, "timeout")   # no plan: PAR10-like
    assert data[("inst-y@5s", "mix", 1)] == (0.0, 60, "ok")
    assert data[("inst-y@5s", "r1/alpha", 1)] == (1.0, 800, "not_applicable")
    assert data[("inst-x@10s", "r2/alpha", 1)] == (0.0, 90, "ok")   # its own budget's minimum

    values = {r[0]: r for r in s["feature_values.arff"]["data"]}
    names = [a[0] for a in s["feature_values.arff"]["attributes"]]
    assert names[:2] == ["instance_id", "repetition"] and names[2:] == d["features_deterministic"]
    col = {n: i for i, n in enumerate(names)}
    assert set(values) == ids
    assert values["inst-x@5s"][col["nodes"]] == 100 and values["inst-x@10s"][col["nodes"]] == 100
    assert values["inst-x@10s"][col["budget_seconds"]] == 10
    assert values["inst-z@10s"][col["nodes"]] == 8     # computed from the bundled example's file
    assert all(v is None for v in values["inst-w@10s"][2:-1])   # no file, no features: '?'

    costs = {r[0]: r[2:] for r in s["feature_costs.arff"]["data"]}
    assert costs["inst-x@5s"] == pytest.approx([0.02, 0.504, 0.0])
    status = {r[0]: r[2:] for r in s["feature_runstatus.arff"]["data"]}
    assert status["inst-x@5s"] == ["ok", "ok", "ok"]
    assert status["inst-y@5s"] == ["ok", "presolved", "ok"]   # presolve settled it
    assert status["inst-w@10s"] == ["other", "other", "ok"]
    assert set(costs) == set(status) == ids

    folds = {r[0]: r[2] for r in s["cv.arff"]["data"]}
    assert set(folds) == ids and len(set(folds.values())) == 4      # four graphs, one fold each
    assert folds["inst-x@5s"] == folds["inst-x@10s"]                 # a graph's budgets together
    assert "inst-w" in (out / "readme.txt").read_text()             # said: no features for it


def test_an_existing_folder_is_never_overwritten(runs, tmp_path):
    out = tmp_path / "taken"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    result = invoke("report", *runs, "--aslib", out)
    assert result.exit_code == 2 and "not an empty folder" in result.stderr
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_features_of_two_versions_are_refused(runs, tmp_path):
    import json

    rows = [json.loads(line) for line in (runs[0] / "results.jsonl").read_text().splitlines()]
    rows[-1]["features"] = dict(rows[-1]["features"], version=2)
    mixed = write_run(tmp_path / "mixed", rows, name="mixed")
    result = invoke("report", mixed, "--aslib", tmp_path / "s")
    assert result.exit_code == 2 and "versions 1, 2" in result.stderr
