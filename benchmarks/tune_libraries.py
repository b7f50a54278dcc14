"""SMAC3 against Optuna as the configurator behind ``portfolio tune`` (docs/benchmarks/tune.md).

Both tune the same space (the default set's declared options and its backends on or off, built by
:mod:`portfolio.tuning.space`) on the same evaluations (bench tasks, :func:`portfolio.bench.run_task`)
and the same score (:mod:`portfolio.report.tune_score`); what differs is the library that proposes
configurations and decides which to drop early.

    python benchmarks/tune_libraries.py optuna --trials 12 --out optuna.json   # portfolio tune itself
    python benchmarks/tune_libraries.py smac --minutes 5 --out smac.json       # SMAC3's AC facade
    python benchmarks/tune_libraries.py recheck optuna.json smac.json         # both choices again

``smac`` needs SMAC3 in the interpreter (``pip install smac``; not a dependency of the project).
``recheck`` runs each chosen configuration once more on the same pairs, alternated, so the two
choices are compared on fresh runs rather than on the runs that chose them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# benchmarks/distributed.py would shadow dask's ``distributed`` (SMAC imports it): not on the path
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

BENCH = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
FILES = [str(BENCH / "asplos-2025-iopddl-B.json.gz"), str(BENCH / "asplos-2025-iopddl-G.json.gz"),
         str(BENCH / "example.json")]
SECONDS = 3.0
SEEDS = 2


def _settings(trials: int, name: str):
    from portfolio.tuning import TuneSettings

    return TuneSettings(files=tuple(FILES), time_limit=SECONDS, seeds=SEEDS, trials=trials,
                        name=name, runs_dir="runs")


def run_optuna(args) -> dict:
    from portfolio.tuning import run_tune

    t0 = time.monotonic()
    out = run_tune(_settings(args.trials, args.name or "libraries-optuna"))
    s = out.summary
    return {"library": "optuna", "wall": round(time.monotonic() - t0, 1), "trials": s["trials"],
            "complete": s["complete"], "dropped": s["pruned"], "evaluations": s["evaluations"],
            "chosen": s["tuned"]["trial"], "score": s["tuned"]["score"],
            "default_score": s["default"]["score"],
            "backends": s["tuned"]["backends"], "options": s["tuned"]["options"]}


def run_smac(args) -> dict:
    from ConfigSpace import (CategoricalHyperparameter, ConfigurationSpace,
                             UniformFloatHyperparameter, UniformIntegerHyperparameter)
    from smac import AlgorithmConfigurationFacade, Scenario

    from portfolio.report.tune_score import references, score, usable_cost
    from portfolio.tuning.evaluate import evaluate_task as run_task, make_task
    from portfolio.tuning.settings import resolve

    resolved = resolve(_settings(1000, "unused"))
    space = resolved.space
    cs = ConfigurationSpace(seed=0)
    for p in [*space.switch_params(), *space.params]:
        if p.kind in ("bool", "choice"):
            choices = [json.dumps(c) for c in p.choices]
            cs.add(CategoricalHyperparameter(p.key, choices, default_value=json.dumps(p.default)))
        elif p.kind == "int":
            cs.add(UniformIntegerHyperparameter(p.key, int(p.low), int(p.high), log=p.log,
                                                default_value=int(p.default)))
        else:
            cs.add(UniformFloatHyperparameter(p.key, float(p.low), float(p.high), log=p.log,
                                              default_value=float(p.default)))
    paths = {p.instance: p.path for p in resolved.pairs}
    rows: list[dict] = []
    counts: dict[str, int] = {}

    def candidate_of(config) -> object:
        values = dict(config)

        def suggest(p):
            raw = values[p.key]
            return json.loads(raw) if p.kind in ("bool", "choice") else raw
        return space.sample(suggest)[0]

    def target(config, instance: str, seed: int = 0) -> float:
        from portfolio.report.tune_score import Pair

        candidate = candidate_of(config)
        key = json.dumps([candidate.backends, candidate.option_dict()], sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
        task = make_task(f"s{len(rows):04d}", candidate, Pair(instance, paths[instance], seed % 1000),
                         SECONDS, jobs=1, distributed=False, deterministic=False, work=None)
        row = run_task(task)
        rows.append(row)
        refs = references((r["instance"], usable_cost(r)) for r in rows)
        return score(usable_cost(row), refs.get(instance))

    scenario = Scenario(cs, deterministic=False, instances=list(paths), n_trials=100000,
                        walltime_limit=args.minutes * 60.0, seed=0, use_default_config=True,
                        output_directory=Path("runs") / "libraries-smac")
    intensifier = AlgorithmConfigurationFacade.get_intensifier(
        scenario, max_config_calls=len(resolved.pairs))
    t0 = time.monotonic()
    smac = AlgorithmConfigurationFacade(scenario, target, intensifier=intensifier, overwrite=True,
                                        logging_level=40)
    incumbent = smac.optimize()
    wall = time.monotonic() - t0
    chosen = candidate_of(incumbent)
    full = len(resolved.pairs)
    return {"library": "smac", "wall": round(wall, 1), "trials": len(counts),
            "complete": sum(1 for n in counts.values() if n >= full),
            "dropped": sum(1 for n in counts.values() if n < full), "evaluations": len(rows),
            "score": None, "backends": list(chosen.backends), "options": chosen.option_dict()}


def recheck(args) -> dict:
    """Each chosen configuration on the same pairs again, alternated."""
    from portfolio.report.tune_score import mean_score, references, usable_cost
    from portfolio.tuning.evaluate import evaluate_task as run_task, make_task
    from portfolio.tuning.settings import resolve
    from portfolio.tuning.space import Candidate

    docs = [json.loads(Path(p).read_text()) for p in args.files]
    resolved = resolve(_settings(1000, "unused"))
    costs: dict[str, list] = {d["library"]: [] for d in docs}
    rows = []
    for pair in resolved.pairs:
        for d in docs:
            c = Candidate.make(d["backends"], d["options"])
            row = run_task(make_task(d["library"], c, pair, SECONDS, jobs=1, distributed=False,
                                     deterministic=False, work=None))
            rows.append(row)
            costs[d["library"]].append(usable_cost(row))
    refs = references((r["instance"], usable_cost(r)) for r in rows)
    return {lib: {"costs": c, "score": mean_score(c, list(resolved.pairs), refs)}
            for lib, c in costs.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("optuna", "smac", "recheck"))
    parser.add_argument("files", nargs="*")
    parser.add_argument("--trials", type=int, default=12)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--name")
    parser.add_argument("--out")
    args = parser.parse_args()
    doc = {"optuna": run_optuna, "smac": run_smac, "recheck": recheck}[args.what](args)
    text = json.dumps(doc, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
