"""Every bench row carries its instance's features (docs/features.md), computed once per instance
per sweep and cached in the run folder's features.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from portfolio.bench import features as bench_features
from portfolio.bench import run_sweep
from portfolio.bench.features import FEATURES_FILE, features_record
from portfolio.cli import bundled_example
from portfolio.features import FEATURE_NAMES, FEATURES_VERSION, instance_features
from portfolio.generate import generate_problem
from portfolio.io import load_problem, write_problem

LIMIT = 2.0


@pytest.fixture
def instances(tmp_path) -> Path:
    folder = tmp_path / "instances"
    folder.mkdir()
    (folder / "example.json").write_bytes(bundled_example().read_bytes())
    write_problem(generate_problem(40, strategies=4, seed=3), folder / "gen40.json.gz")
    return folder


def rows_of(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]


def test_every_row_carries_its_instance_features(instances, tmp_path, monkeypatch):
    computed: list[str] = []
    real = bench_features.features_record
    monkeypatch.setattr(bench_features, "features_record",
                        lambda path: computed.append(Path(path).name) or real(path))
    run_sweep([instances], backends=["minusage", "greedy"], time_limit=LIMIT, seeds=[0, 1],
              name="f", runs_dir=tmp_path)
    rows = rows_of(tmp_path / "f")
    assert len(rows) == 8
    assert sorted(computed) == ["example.json", "gen40.json.gz"]   # once per instance, not per task
    for row in rows:
        record = row["features"]
        assert record["version"] == FEATURES_VERSION and list(record["values"]) == list(FEATURE_NAMES)
        expected = instance_features(load_problem(row["path"])).values
        assert record["values"] == expected
        assert {"load", "cheap", "presolve", "presolved"} <= set(record["seconds"])
    cache = json.loads((tmp_path / "f" / FEATURES_FILE).read_text())
    assert set(cache) == {"example", "gen40"}


def test_a_resumed_sweep_reuses_the_cache_until_the_file_changes(instances, tmp_path, monkeypatch):
    run_sweep([instances / "example.json"], backends=["minusage"], time_limit=LIMIT, name="r",
              runs_dir=tmp_path)
    first = rows_of(tmp_path / "r")[0]["features"]

    def refuse(path):
        raise AssertionError(f"features of {path} computed again")

    monkeypatch.setattr(bench_features, "features_record", refuse)
    run_sweep([instances / "example.json"], backends=["minusage"], time_limit=LIMIT, seeds=[0, 1],
              name="r", runs_dir=tmp_path, resume=True)
    rows = rows_of(tmp_path / "r")
    assert len(rows) == 2 and rows[1]["features"] == first
    # the instance file changes (same name): its features are computed again
    monkeypatch.setattr(bench_features, "features_record", features_record)
    path = instances / "example.json"
    doc = json.loads(path.read_text())
    doc["problem"]["usage_limit"] = 1000
    path.write_text(json.dumps(doc))
    os.utime(path, ns=(1, 1))
    run_sweep([path], backends=["minusage"], time_limit=LIMIT, seeds=[2], name="r",
              runs_dir=tmp_path, resume=True)
    last = rows_of(tmp_path / "r")[-1]["features"]
    assert last["values"]["least_peak_ratio"] != first["values"]["least_peak_ratio"]


def test_an_unreadable_instance_gets_a_record_that_says_so(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"problem": {"name": "x"}}')
    record = features_record(bad)
    assert record["values"] == {} and record["error"].startswith("not loaded: ")
