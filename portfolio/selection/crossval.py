"""Leave-one-instance-out cross-validation of a selector (issue 50, item 5; docs/selection.md).

For each training graph, a selector is trained on the cells of the other graphs only and picks a
schedule for each budget of the held-out graph; the pick scores what its candidate's runs
scored there (the mean over their seeds). Beside it, per cell:

* **virtual best**: the candidate with the best mean score on that cell, what a perfect
  per-instance selector among the candidates gets;
* **single best**: the one candidate with the best mean over every cell (among those that ran on
  every cell), what choosing one configuration for all gets;
* **default**: the training set's default candidate (today's fixed schedule).

The gaps are means over the cells where the default ran: virtual best minus default, and
virtual best minus selector; ``closed`` is the share of the first that the selector closes
(the issue's target: at least half).

A held-out cell's pick is made among the candidates that ran on it (and have a model in the
fold): a pick without runs there could not be scored. Held out by graph, all budgets at once, so
a graph's other budgets never tell the model about it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from .dataset import TrainingSet
from .fit import TREES, fit_candidates, inputs
from .selector import below_domain, domain_of, pick as pick_name


@dataclass
class CvRow:
    instance: str
    budget: float
    selected: Optional[str]
    selected_score: Optional[float]
    virtual_best: str
    virtual_best_score: float
    single_best_score: Optional[float]
    default_score: Optional[float]


@dataclass
class CvResult:
    rows: list[CvRow]
    single_best: Optional[str]
    default: Optional[str]
    summary: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"method": "leave one instance out (every budget of a graph held out together)",
                "single_best": self.single_best, "default": self.default,
                "summary": self.summary, "rows": [asdict(r) for r in self.rows],
                "notes": self.notes}


def _mean(values: Sequence[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


def _single_best(data: TrainingSet) -> Optional[str]:
    full = [s.name for s in data.candidates if all(s.name in c.scores for c in data.cells)]
    if not full:
        return None
    return max(full, key=lambda n: (sum(c.scores[n] for c in data.cells), -full.index(n)))


def _summary(rows: Sequence[CvRow]) -> dict:
    paired = [r for r in rows if r.default_score is not None and r.selected_score is not None]
    out: dict = {"cells": len(rows), "paired_cells": len(paired),
                 "selector": _mean([r.selected_score for r in rows
                                    if r.selected_score is not None]),
                 "virtual_best": _mean([r.virtual_best_score for r in rows]),
                 "single_best": _mean([r.single_best_score for r in rows
                                       if r.single_best_score is not None]),
                 "default": _mean([r.default_score for r in rows
                                   if r.default_score is not None])}
    gap_default = _mean([r.virtual_best_score - r.default_score for r in paired])
    gap_selector = _mean([r.virtual_best_score - r.selected_score for r in paired])
    out["gap_default"], out["gap_selector"] = gap_default, gap_selector
    out["closed"] = (1.0 - gap_selector / gap_default
                     if gap_default and gap_selector is not None else None)
    return out


def cross_validate(data: TrainingSet, trees: int = TREES, seed: int = 0,
                   margin: float = 0.0) -> CvResult:
    """The leave-one-instance-out table of ``data`` (see the module); each pick made as the
    selector makes it (:func:`.selector.pick`, ``margin``)."""
    notes: list[str] = []
    graphs = data.instances
    if len(graphs) < 2:
        return CvResult([], None, data.default, {"cells": 0},
                        ["cross-validation needs two graphs or more"])
    single = _single_best(data)
    if single is None:
        notes.append("no candidate ran on every cell: no single best column")
    rows: list[CvRow] = []
    for graph in graphs:
        fold = data.restricted(lambda c: c.instance != graph)
        held = [c for c in data.cells if c.instance == graph]
        below = below_domain(domain_of({g: data.features[g] for g in fold.instances}),
                             data.features[graph])
        fitted = fit_candidates(fold, fold.cells, trees, seed)
        x = inputs(data, held)
        for i, cell in enumerate(held):
            predicted = {c.schedule.name: c.model.predict(x[i]) for c in fitted
                         if c.schedule.name in cell.scores}
            chosen = pick_name(predicted, data.default, margin) if predicted else None
            if below and data.default in predicted:   # as a selector applies it: the default
                chosen = data.default
            pick = next((c for c in fitted if c.schedule.name == chosen), None)
            best = max(cell.scores, key=lambda n: (cell.scores[n], n == data.default))
            rows.append(CvRow(
                graph, cell.budget, None if pick is None else pick.schedule.name,
                None if pick is None else cell.scores[pick.schedule.name],
                best, cell.scores[best],
                None if single is None else cell.scores.get(single),
                None if data.default is None else cell.scores.get(data.default)))
    unpicked = [f"{r.instance}@{r.budget:g}s" for r in rows if r.selected is None]
    if unpicked:
        notes.append(f"no candidate with a model in the fold ran on {', '.join(unpicked)}")
    return CvResult(rows, single, data.default, _summary(rows), notes)
