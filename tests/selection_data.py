"""Synthetic bench runs for the selector's tests: rows shaped like real ones (portfolio/results.py,
runs/curated/*/results.jsonl) with features and costs, where ``toulbar2`` is best on graphs whose
memory is tight (``least_peak_ratio`` above ``SPLIT``), ``greedy+localsearch`` on the others, and
the default ``portfolio`` in between everywhere."""

from __future__ import annotations

import json
import random
from pathlib import Path

from portfolio.features import CHEAP_FEATURES, FEATURES_VERSION

SPLIT = 0.8
DEFAULT_SET = ["bound", "cpsat", "greedy", "localsearch", "maxsat", "minusage", "toulbar2"]
CONFIGS = {
    "portfolio": (DEFAULT_SET, {}),
    "toulbar2": (["toulbar2"], {}),
    "greedy+localsearch": (["greedy", "localsearch"], {"localsearch": {"kick_max": 9}}),
}
BEST = 1_000_000


def features(tight: float, rng: random.Random) -> dict:
    """A feature record: ``least_peak_ratio`` = ``tight``, the other cheap features noise."""
    values = {name: round(rng.uniform(0, 100), 3) for name in CHEAP_FEATURES}
    # every graph the bundled example's size (8 nodes, 9 edges): no graph is below the others in a
    # cross-validation fold, nor the example below a learned selector's domain (below it the
    # default runs)
    values.update(least_peak_ratio=tight, has_limit=1, nodes=8, edges=9)
    return {"version": FEATURES_VERSION, "values": values, "seconds": {"cheap": 0.01}}


def true_score(config: str, tight: float) -> float:
    """What the synthetic configuration scores on a graph of this tightness."""
    if config == "portfolio":
        return 0.93
    good = (tight > SPLIT) == (config == "toulbar2")
    return 1.0 if good else 0.8


def row(instance: str, config: str, tight: float, budget: float, seed: int, record: dict,
        rng: random.Random) -> dict:
    backends, options = CONFIGS[config]
    score = true_score(config, tight) - (rng.uniform(0, 0.01) if seed else 0.0)
    cost = int(BEST / score)
    return {"instance": instance, "path": f"/elsewhere/{instance}.json.gz",
            "configuration": config, "backends": list(backends), "seed": seed, "repeat": 0,
            "time_limit": budget, "options_given": options, "work": None, "status": "feasible",
            "cost": cost, "feasible": True, "elapsed": budget - 0.5, "time_to_best": 1.0,
            "lower_bound": None, "winner": backends[0],
            "incumbents": [{"time": 1.0, "cost": cost, "backend": backends[0]}],
            "backend_runs": [], "git": {"commit": "0" * 40, "dirty": False},
            "features": record}


def graphs(count: int, seed: int = 0) -> dict[str, float]:
    """``count`` graph names and their tightness, evenly spread over [0.3, 1.3)."""
    rng = random.Random(seed)
    return {f"g{i:02d}": round(0.3 + (i + rng.random()) / count, 4) for i in range(count)}


def write_runs(folder: Path, tightness: dict[str, float], budgets=(10.0, 60.0), seeds=(0, 1),
               configs=tuple(CONFIGS), name: str = "synthetic") -> list[Path]:
    """One bench run folder per budget (as `portfolio bench -t` makes them) of every
    configuration on every graph and seed; seed 0 is free of noise, so the best cost of each
    graph is ``BEST`` (its best configuration's) and a score is ``BEST / cost``."""
    rng = random.Random(1)
    records = {instance: features(tight, rng) for instance, tight in tightness.items()}
    out = []
    for budget in budgets:
        rows = []
        for instance, tight in tightness.items():
            for seed in seeds:
                for config in configs:
                    rows.append(row(instance, config, tight, budget, seed, records[instance], rng))
        run = folder / f"{name}-{budget:g}s"
        run.mkdir(parents=True)
        (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run / "meta.json").write_text(json.dumps({"name": f"{name}-{budget:g}s"}))
        out.append(run)
    return out
