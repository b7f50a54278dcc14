"""portfolio tune (docs/tune.md): the space from the declared options (a plugin's included), bad
spaces refused, resume after a kill, the Dask path, a deterministic tune chosen the same twice
(the race and its test, the study and the written config: tests/test_tune_noise.py).

Kept fast: generated 60-node instances, 1.5 s runs, a handful of trials, and the test backend
``knob`` of tests/tune_backends.py (a 1-opt descent, or clearly worse with ``worse=true``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, extra
from portfolio.backend_options import Budgeted, Option
from portfolio.generate import generate_problem
from portfolio.io import write_problem
from portfolio.report.tune_score import PENALTY, references, score
from portfolio.results import read_rows
from portfolio.tuning.settings import TuneSettings, resolve, seeds_of
from portfolio.tuning.space import TuneError, build_space

TESTS = Path(__file__).parent
PLUGIN = REPO / "plugins" / "example-plugin"


def generated_instances(folder: Path, seeds: tuple[int, ...]) -> list[Path]:
    """Generated instances (60 nodes) that presolve does not settle (the runner would answer
    itself), one per seed; shared with test_tune_noise."""
    out = []
    for seed in seeds:
        path = folder / f"gen60-{seed}.json"
        write_problem(generate_problem(60, strategies=4, seed=seed), path)
        out.append(path)
    return out


@pytest.fixture
def instances(tmp_path: Path) -> list[Path]:
    return generated_instances(tmp_path, (1, 2))


@pytest.fixture
def knob_cli(portfolio_cli):
    extra("optuna")   # the tune extra, part of the test extras
    return portfolio_cli.configured(plugins="tune_backends", path=[TESTS], timeout=300)


def _records(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "trials.jsonl").read_text().splitlines()]


def _rows(folder: Path) -> list[dict]:
    return read_rows(folder / "results.jsonl")[0]


# ------------------------------------------------------------------------------------ the space
def test_space_from_declarations_ranges_scales_and_budget_aware_defaults():
    declared = [("toulbar2", (
        Option("warm_follow", "choice", "round", "h", choices=("round", "last", "none"),
               by_budget=(Budgeted(120.0, "last"),)),
        Option("first_limit", "float", 10.0, "h", low=1.0, high=120.0),
        Option("limit_step", "float", 2.0, "h", low=0.0, high=30.0),
        Option("vectors", "int", 3, "h", low=1, high=16),
        Option("rounds", "int", 100, "h", low=0),
        Option("max_steps", "int", 0, "h", low=0),
        Option("log_every", "int", 5, "h", low=1, high=100, changes_plan=False))),
        ("greedy", ())]
    space = build_space(declared, budget=3.0)
    params = {p.key: p for p in space.params}
    assert params["toulbar2.warm_follow"].default == "last"            # the default at 3 s
    assert build_space(declared, budget=300.0).defaults["toulbar2"]["warm_follow"] == "round"
    assert params["toulbar2.first_limit"].log and not params["toulbar2.limit_step"].log
    assert params["toulbar2.vectors"].log                                # 1..16: over a decade
    assert (params["toulbar2.rounds"].low, params["toulbar2.rounds"].high) == (0, 400)
    assert params["toulbar2.rounds"].derived
    assert "toulbar2.max_steps" not in params and "toulbar2.log_every" not in params
    assert any("max_steps" in n for n in space.notes) and any("log_every" in n for n in space.notes)
    assert space.switches == ("toulbar2", "greedy")
    # the baseline is every backend with its defaults; a sample keeps at least one backend on
    assert space.baseline().backends == ("toulbar2", "greedy") and space.baseline().options == ()
    off = space.sample(lambda p: False if p.option is None else p.default)[0]
    assert off.backends == ("greedy",) and off.options == ()
    assert params["toulbar2.first_limit"].value(7.123456) == 7.12


def test_space_includes_a_plugins_declared_option(monkeypatch, instances):
    monkeypatch.syspath_prepend(str(PLUGIN))
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "portfolio_example_plugin")
    resolved = resolve(TuneSettings(files=(str(instances[0]),), time_limit=3.0,
                                    backends=["example", "greedy"]))
    params = {p.key: p for p in resolved.space.params}
    share = params["example.kick_share"]
    assert (share.low, share.high, share.default, share.log) == (0.0, 1.0, 0.05, False)
    assert "greedy.design" in params and resolved.space.switches == ("example", "greedy")


@pytest.mark.parametrize("body, message", [
    ("[localsearch]\nfoo = 1\n", "[localsearch] foo: unknown option localsearch.foo"),
    ("[toulbar2]\nexact = true\n", "[toulbar2]: toulbar2 is not in this tune's backend set"),
    ("[localsearch]\nkick_max = { low = 0 }\n", "kick_max.low: expected an integer from 1"),
    ("[localsearch]\nkick_max = { low = 9, high = 3 }\n", "low 9 is not below high 3"),
    ("[localsearch]\nkick_max = { lo = 9 }\n", "kick_max.lo: unknown key"),
    ("[greedy]\ndesign = 7\n", "greedy] design: expected an integer from 1 to 2"),
    ("[portfolio]\nalways = [\"cpsat\"]\n", "cpsat is not in this tune's backend set"),
    ("[portfolio]\nbackend = 1\n", "[portfolio] backend: unknown key"),
    ("not toml [", "not a valid TOML file"),
])
def test_bad_spaces_are_refused_naming_file_table_and_key(tmp_path, instances, body, message):
    space = tmp_path / "space.toml"
    space.write_text(body)
    with pytest.raises(TuneError) as err:
        resolve(TuneSettings(files=(str(instances[0]),), time_limit=2.0,
                             backends=["greedy", "localsearch"], space=str(space)))
    assert message in str(err.value) and str(space) in str(err.value)


def test_bad_input_exits_2_with_one_line(portfolio_cli, tmp_path, instances):
    space = tmp_path / "space.toml"
    space.write_text("[greedy]\nsteps = 3\n")
    cases = [(["-b", "greedy,localsearch", "--space", space], "unknown option greedy.steps"),
             (["-b", "minusage"], "nothing to tune"),
             (["-t", "0.2"], "a run needs at least 1 s"),
             (["--hours", "0.0001"], "below one evaluation of the default")]
    for args, message in cases:
        args = args if "-t" in args else ["-t", "2", *args]
        done = portfolio_cli.run("tune", instances[0], *args, "--runs-dir", tmp_path / "runs")
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


def test_without_optuna_one_line_names_the_pip_command(portfolio_cli, tmp_path, instances):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "optuna.py").write_text("raise ImportError('blocked for the test')\n")
    done = portfolio_cli.configured(path=[blocker]).run("tune", instances[0], "-t", "2",
                                                        "-b", "greedy,localsearch")
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: portfolio tune needs Optuna, the configurator it drives: "
                                   "pip install 'iopddl-portfolio[tune]'")


def test_seeds_count_or_list_and_the_score():
    assert seeds_of("2") == (0, 1) and seeds_of("3,5") == (3, 5) and seeds_of(1) == (0,)
    refs = references([("x", 200), ("x", 100), ("x", None)])
    assert refs == {"x": 100} and score(150, 100) == 1.5 and score(None, 100) == PENALTY
    assert score(10 ** 9, 100) == PENALTY                      # capped: never worse than failing
    assert references([("asplos-2025-iopddl-B", 10 ** 12)])["asplos-2025-iopddl-B"] < 10 ** 12


# -------------------------------------------------------------------------------- whole tunes
def test_resume_after_a_kill_keeps_finished_runs(knob_cli, tmp_path, instances):
    args = ["tune", *instances, "-t", "1.5", "-b", "knob", "--seeds", "2", "--trials", "4",
            "--runs-dir", tmp_path / "runs", "--name", "again", "-q"]
    folder = tmp_path / "runs" / "again"
    proc = knob_cli.popen(*args, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not ((folder / "trials.jsonl").is_file()
                                               and (folder / "results.jsonl").stat().st_size
                                               and len(_rows(folder)) >= 6):
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    before = _rows(folder)
    assert 1 <= len(_records(folder)) < 4 and len(before) >= 5   # killed mid-tune
    done = knob_cli.run(*args)
    assert done.returncode == 0, done.stderr
    rows = _rows(folder)
    keys = [(r["instance"], r["seed"], tuple(r["backends"]), json.dumps(r["options_given"],
                                                                       sort_keys=True))
            for r in rows]
    assert len(keys) == len(set(keys))                          # nothing ran twice
    assert rows[:len(before)] == before                         # the finished rows kept
    records = _records(folder)
    assert [r["trial"] for r in records] == [0, 1, 2, 3]
    assert json.loads((folder / "meta.json").read_text())["status"] == "complete"


def test_a_deterministic_tune_chooses_the_same_twice(knob_cli, tmp_path, instances):
    from portfolio.testing import cpu_hog

    outs = []
    for name, load in (("one", 0), ("two", 1)):
        args = ["tune", *instances, "-t", "20", "-b", "knob", "--seeds", "1", "--trials", "5",
                "--deterministic", "--work", "3000", "--seed", "7",
                "--runs-dir", tmp_path / "runs", "--name", name, "-q"]
        if load:
            with cpu_hog(2):
                done = knob_cli.run(*args)
        else:
            done = knob_cli.run(*args)
        assert done.returncode == 0, done.stderr
        folder = tmp_path / "runs" / name
        outs.append(([(r["params"], r["costs"], r["state"]) for r in _records(folder)],
                     [line for line in (folder / "tuned.toml").read_text().splitlines()
                      if not line.startswith("#")]))
    assert outs[0] == outs[1]
    assert len({json.dumps(p, sort_keys=True) for p, _, _ in outs[0][0]}) > 1   # it did search


def test_the_dask_path(knob_cli, tmp_path, instances):
    extra("distributed")
    done = knob_cli.run("tune", instances[0], "-t", "1.5", "-b", "knob", "--seeds", "1",
                        "--trials", "2", "--dask-workers", "1", "--runs-dir", tmp_path / "runs",
                        "--name", "dask", "-q", timeout=240)
    assert done.returncode == 0, done.stderr
    rows = _rows(tmp_path / "runs" / "dask")
    assert len(rows) == 2 and all(r.get("dask_worker") for r in rows)
    assert all(r["status"] == "feasible" for r in rows)


def test_the_python_api_validates_on_other_instances(tmp_path, instances, monkeypatch):
    import portfolio

    extra("optuna")
    monkeypatch.syspath_prepend(str(TESTS))
    monkeypatch.setenv("PORTFOLIO_PLUGINS", "tune_backends")
    outcome = portfolio.tune(instances[0], time_limit=1.5, backends="knob", seeds=1, trials=2,
                             runs_dir=tmp_path / "runs", name="api", validate=[instances[1]])
    val = outcome.summary["validation"]
    assert val["pairs"] == ["gen60-2 s0"]
    assert val["default"]["score"] is not None and val["tuned"]["score"] is not None
    assert "validation (1 runs on other instances)" in outcome.config.read_text()
    assert sys.modules.get("portfolio.tuning") is not None
