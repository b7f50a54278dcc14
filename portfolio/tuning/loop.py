"""The tune itself: the default first (the baseline), then batches of proposals raced pair by
pair against the incumbent, every decision recorded before the next batch is asked; then the
validation of default and tuned on other instances.

Order is what makes a deterministic tune repeatable: a batch's evaluations of one pair run at
once (``slots`` of them: the jobs, or the cluster's threads), but their results are told in trial
order, and the sampler is asked only between batches, so nothing depends on which evaluation
finished first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Sequence

from ..report.tune_score import Pair, anytime_score, mean_score, references, usable_cost
from .driver import OptunaDriver
from .evaluate import Evaluator, cache_key, make_task, row_cache_key
from .race import Contender, beaten, better, trial_name
from .settings import Resolved
from .space import Candidate
from .storage import TuneFolder


class Progress(Protocol):
    """What the live view is told (:mod:`.progress`)."""

    def evaluated(self, name: str, pair: Pair, row: dict) -> None: ...
    def decided(self, record: dict, tuner: "Tuner") -> None: ...
    def phase(self, text: str) -> None: ...


@dataclass
class Validation:
    """Default and tuned on the validation pairs."""

    pairs: list[Pair]
    default: list = field(default_factory=list)
    tuned: list = field(default_factory=list)


class Tuner:
    """One session of a tune over a run folder (new or resumed)."""

    def __init__(self, resolved: Resolved, folder: TuneFolder, evaluator: Evaluator,
                 driver: OptunaDriver, progress: Optional[Progress] = None) -> None:
        self.r, self.folder, self.evaluator, self.driver = resolved, folder, evaluator, driver
        self.progress = progress
        self.pairs: list[Pair] = list(resolved.pairs)
        self.cache: dict[tuple, dict] = {row_cache_key(row): row for row in folder.rows()}
        self.records: list[dict] = [r for r in folder.records() if r.get("phase", "train") == "train"]
        self.costs: dict[int, list] = {r["trial"]: list(r["costs"]) for r in self.records}
        self.candidates: dict[int, Candidate] = {
            r["trial"]: Candidate.make(r["backends"], r.get("options", {})) for r in self.records}
        self.started, self.offset = time.monotonic(), folder.tuning_seconds()
        driver.replay(self.records)

    # ------------------------------------------------------------------------------- figures
    def elapsed(self) -> float:
        """Tuning seconds, earlier sessions included."""
        return self.offset + time.monotonic() - self.started

    def references(self) -> dict[str, int]:
        return references((row.get("instance"), usable_cost(row)) for row in self.cache.values())

    def complete(self) -> list[int]:
        return [r["trial"] for r in self.records if r["state"] == "complete"]

    def incumbent(self) -> int:
        """The incumbent under the current references: the default (trial 0), replaced in trial
        order by each complete trial that the paired test finds better (:func:`.race.better`;
        a tie of costs on every pair broken by the anytime scores, in a timed tune)."""
        refs = self.references()
        best = None
        for number in self.complete():
            if best is None or better(self.costs[number], self.costs[best], self.pairs, refs,
                                      self._anytime(number, best, refs)):
                best = number
        return 0 if best is None else best

    def _anytime(self, number: int, other: int,
                 refs: dict[str, int]) -> Optional[tuple[list[float], list[float]]]:
        """Both trials' anytime scores per pair (None in a deterministic tune: they read the
        clock, which must not decide there)."""
        if self.r.deterministic:
            return None

        def scores(trial: int) -> list[float]:
            return [anytime_score(self.cache.get(self._key(self.candidates[trial], p)),
                                  refs.get(p.instance)) for p in self.pairs]

        return scores(number), scores(other)

    def score(self, number: int) -> Optional[float]:
        return mean_score(self.costs[number], self.pairs, self.references())

    def trial_seconds(self) -> float:
        """What a complete evaluation took (the default's rows), for the time estimates."""
        rows = [self.cache.get(self._key(self.candidates[0], p)) for p in self.pairs] \
            if 0 in self.candidates else []
        return float(sum((row or {}).get("wall_seconds") or 0.0 for row in rows)) or \
            len(self.pairs) * self.r.settings.time_limit

    # ---------------------------------------------------------------------------- evaluation
    def _key(self, candidate: Candidate, pair: Pair) -> tuple:
        return cache_key(pair.instance, pair.seed, candidate.backends, candidate.option_dict())

    def evaluate(self, named: Sequence[tuple[str, Candidate]], pair: Pair) -> list[dict]:
        """The rows of ``named`` configurations on ``pair``: from the cache, else run at once."""
        s = self.r.settings
        rows: list[Optional[dict]] = [self.cache.get(self._key(c, pair)) for _, c in named]
        todo: dict[tuple, Any] = {}
        for (name, candidate), row in zip(named, rows):
            key = self._key(candidate, pair)
            if row is None and key not in todo:
                todo[key] = make_task(name, candidate, pair, s.time_limit, jobs=s.jobs,
                                      distributed=self.evaluator.distributed,
                                      deterministic=self.r.deterministic, work=s.work)
        for key, row in zip(todo, self.evaluator.run(list(todo.values()))):
            self.cache[key] = self.folder.add_row(row)
            if self.progress:
                self.progress.evaluated(row.get("configuration", "?"), pair, row)
        return [self.cache[self._key(c, pair)] for _, c in named]

    def race(self, batch: list[Contender]) -> None:
        """Each pair in turn for every contender still in the race; drop those the paired test
        finds worse (:func:`.race.beaten`)."""
        incumbent = self.costs.get(self.incumbent(), [])
        for pair in self.pairs:
            alive = [c for c in batch if not c.finished]
            if not alive:
                break
            rows = self.evaluate([(c.name, c.candidate) for c in alive], pair)
            refs = self.references()
            for contender, row in zip(alive, rows):
                contender.costs.append(usable_cost(row))
                if len(contender.costs) == len(self.pairs):
                    contender.state = "complete"
                elif beaten(contender.costs, incumbent, self.pairs, refs):
                    contender.state = "pruned"

    def decide(self, batch: list[Contender]) -> None:
        """Record and tell each contender, in trial order."""
        refs = self.references()
        for contender in sorted(batch, key=lambda c: c.number):
            value = mean_score(contender.costs, self.pairs, refs)
            record = {"trial": contender.number, "name": contender.name, "phase": "train",
                      "state": contender.state, "pairs": len(contender.costs),
                      "costs": contender.costs, "value": value,
                      "backends": list(contender.candidate.backends),
                      "options": contender.candidate.option_dict(), "params": contender.raw,
                      "seconds": round(self.elapsed(), 3)}
            self.records.append(record)
            self.costs[contender.number] = list(contender.costs)
            self.candidates[contender.number] = contender.candidate
            best = self.incumbent()
            record["incumbent"] = trial_name(best)
            record["incumbent_value"] = self.score(best)
            self.folder.add_record(record)
            if contender.number == 0:
                self.driver.replay([record])
            else:
                self.driver.tell(contender.number, value if value is not None else 0.0,
                                 len(contender.costs), contender.state == "pruned")
            if self.progress:
                self.progress.decided(record, self)

    # -------------------------------------------------------------------------------- phases
    def baseline(self) -> None:
        """The default configuration, evaluated on every pair first: the baseline."""
        if 0 in self.costs:
            return
        if self.progress:
            self.progress.phase("the default configuration (the baseline)")
        contender = Contender(0, self.r.space.baseline(), self.r.space.baseline_raw())
        self.race([contender])
        self.decide([contender])

    def budget_left(self) -> bool:
        total = self.r.trials
        if total is not None:
            return len(self.records) < total
        hours = self.r.settings.hours or 0.0
        return self.elapsed() + self.trial_seconds() <= hours * 3600.0

    def search(self) -> None:
        """Batches of proposals until the trials or the hours are spent."""
        while self.budget_left():
            size = self.evaluator.slots
            if self.r.trials is not None:
                size = min(size, self.r.trials - len(self.records))
            batch = []
            for _ in range(max(1, size)):
                number, candidate, raw = self.driver.ask()
                batch.append(Contender(number, candidate, raw))
            self.race(batch)
            self.decide(batch)

    def validate(self, tuned: int) -> Optional[Validation]:
        """Default and tuned on the validation pairs (the tuned once when it is the default)."""
        if not self.r.validation:
            return None
        if self.progress:
            self.progress.phase("validation: default and tuned on the --validate instances")
        out = Validation(list(self.r.validation))
        named = [("default", self.candidates[0])]
        if tuned != 0:
            named.append(("tuned", self.candidates[tuned]))
        for pair in out.pairs:
            rows = self.evaluate(named, pair)
            out.default.append(usable_cost(rows[0]))
            out.tuned.append(usable_cost(rows[-1]))
        return out
