"""Fitting a selector with scikit-learn (the ``learn`` extra) and exporting it as plain arrays.

The model, per candidate schedule: a random forest regressing the candidate's mean score in a
cell (an instance at a budget) on the instance's cheap features and log10 of the budget
(SATzilla's way: one performance model per algorithm, the best prediction wins). Per candidate
rather than one multi-output forest, because candidates ran on different cells (a bench run's
configurations rarely cover every graph and budget) and each model learns from the cells its
candidate ran on.

Why a forest: the training sets are small (tens of cells), trees need no scaling of features of
very different magnitudes (node counts beside shares), an undefined feature is one value below
every range, and the fitted trees export to a few arrays that numpy evaluates
(:class:`.trees.Forest`); scikit-learn is needed here only, never at solve time.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ..features import CHEAP_FEATURES, FEATURES_VERSION
from .dataset import Cell, TrainingSet
from .schedule import SelectorError
from .selector import BUDGET_FEATURE, MISSING, Candidate, Selector, domain_of, feature_vector
from .trees import Forest

TREES = 32
"""Trees per candidate's forest: enough for stable means on tens of cells, a small file."""
MAX_FEATURES = 1.0
"""Share of the features each split may choose from: all of them (bagged trees, scikit-learn's
default for regression). With tens of cells and thirty features, drawing half of them per split
let noise features win splits: on the tests' synthetic runs (12 graphs, one informative
feature) leave-one-out closed 24-57 % of the default's gap with 0.5, 92 % with 1.0."""
MIN_SAMPLES_LEAF = 1

FEATURE_NAMES: tuple[str, ...] = (*CHEAP_FEATURES, BUDGET_FEATURE)
"""A model's inputs, in order: the cheap step's features (a selector decides before the run
starts, so it reads only what takes tens of milliseconds: docs/features.md) and the budget."""


def _sklearn() -> Any:
    try:
        from sklearn.ensemble import RandomForestRegressor
    except ImportError:
        raise SelectorError("portfolio learn needs scikit-learn: pip install "
                            "'iopddl-portfolio[learn]'") from None
    return RandomForestRegressor


def inputs(data: TrainingSet, cells: Sequence[Cell]) -> np.ndarray:
    """The model inputs of ``cells``, one row each."""
    return np.array([feature_vector(FEATURE_NAMES, data.features[c.instance], c.budget, MISSING)
                     for c in cells], dtype=np.float64).reshape(len(cells), len(FEATURE_NAMES))


def fit_forest(x: np.ndarray, y: np.ndarray, trees: int = TREES, seed: int = 0) -> Any:
    """A fitted scikit-learn ``RandomForestRegressor`` (deterministic for a seed)."""
    model = _sklearn()(n_estimators=trees, max_features=MAX_FEATURES,
                       min_samples_leaf=MIN_SAMPLES_LEAF, random_state=seed, n_jobs=1)
    return model.fit(x, y)


def export_forest(model: Any) -> Forest:
    """A fitted regression forest's trees as :class:`.trees.Forest` arrays."""
    trees = []
    for estimator in model.estimators_:
        t = estimator.tree_
        if t.n_outputs != 1:
            raise SelectorError("only single-output regression trees can be exported")
        trees.append({"feature": [int(f) if f >= 0 else -1 for f in t.feature],
                      "threshold": [float(v) for v in t.threshold],
                      "left": [int(c) for c in t.children_left],
                      "right": [int(c) for c in t.children_right],
                      "value": [float(v) if leaf else 0.0
                                for v, leaf in zip(t.value[:, 0, 0], t.children_left < 0)]})
    return Forest.from_trees(trees, int(model.n_features_in_), "the fitted model")


def fit_candidates(data: TrainingSet, cells: Sequence[Cell], trees: int = TREES,
                   seed: int = 0) -> list[Candidate]:
    """One fitted candidate per schedule that has a score in one of ``cells`` (in the training
    set's order)."""
    out = []
    for schedule in data.candidates:
        mine = [c for c in cells if schedule.name in c.scores]
        if not mine:
            continue
        y = np.array([c.scores[schedule.name] for c in mine], dtype=np.float64)
        forest = export_forest(fit_forest(inputs(data, mine), y, trees, seed))
        out.append(Candidate(schedule, forest, len(mine)))
    return out


def learn(data: TrainingSet, trees: int = TREES, seed: int = 0,
          cv: Optional[dict] = None, margin: float = 0.0) -> Selector:
    """The selector trained on every cell of ``data``, with the record of its training (the
    runs and their commits, this code's revision, the cells and the model's parameters; ``cv``:
    the cross-validation, :mod:`.crossval`)."""
    import sklearn

    from ..backend import DISTRIBUTION, distribution_version
    from ..bench.environment import git_revision, now_iso

    candidates = fit_candidates(data, data.cells, trees, seed)
    if not candidates:
        raise SelectorError("nothing to learn from: no cell has a candidate's score")
    training = {
        "runs": data.runs,
        "instances": data.instances,
        "budgets": data.budgets,
        "cells": [{"instance": c.instance, "budget": c.budget, "scores": c.scores,
                   "rows": c.rows} for c in data.cells],
        "target": "score: reference / cost (reference: the contest's best known or the best "
                  "cost of the training rows), 0 without a usable plan; the mean per cell",
        "model": {"kind": "random forest per candidate", "trees": trees,
                  "max_features": MAX_FEATURES, "min_samples_leaf": MIN_SAMPLES_LEAF,
                  "seed": seed, "scikit-learn": sklearn.__version__},
        "code": {"portfolio": distribution_version(DISTRIBUTION), "git": git_revision()},
        "learned_at": now_iso(),
        "notes": list(data.notes),
    }
    return Selector(FEATURES_VERSION, FEATURE_NAMES, candidates, data.default, training, cv,
                    domain=domain_of({g: data.features[g] for g in data.instances},
                                     data.budgets), margin=margin)
