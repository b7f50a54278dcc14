"""The CPU weights of a run and the adaptive rule that moves them: CPU (in deterministic mode,
work) goes toward the backends that improve the incumbent, within the run.

**Weights at the start.** ``RunOptions.cpu_weights`` (a selector's schedule; a backend not named
weighs 1) becomes each worker's priority when it starts (:mod:`.schedule`: nice levels under
``share`` and ``pin``, the slices' ranking under ``slices``), the choice of extra seed copies
(:mod:`.order`: the most weight per copy), and in deterministic mode each backend's share of the
work (:func:`.exchange.allot_work`).

**The adaptive rule** (``RunOptions.adaptive``; off by default until it is measured no worse
than the fixed shares). Every window (``WINDOW_SHARE`` of the budget,
``WINDOW_MIN`` to ``WINDOW_MAX`` seconds) it compares the *judged* workers by their credit per
CPU-second (:mod:`.credit`: gains of the incumbent, a polish of another's plan credited half to
the plan's finder), decayed by ``DECAY`` a window, and gives each a weight
``max(FLOOR, rate / best rate)`` times its start weight, as nice levels under the heaviest
(:meth:`.schedule.Scheduler.reweigh`, never above ``CEILING_LEVELS``; a move of fewer than
``HYSTERESIS`` levels is not made, since every move that raises one worker over another spends
levels that cannot come back). With
no credit in the decayed windows, nothing moves. A worker is judged when it is an anytime
backend searching (``phase`` solve), its demand is normal, and it had ``FAIR_SHARE`` of the
budget in CPU seconds of search (at most ``FAIR_MAX``). Never judged, so never moved: the safety
net (neither anytime nor exact), a backend with a low demand (already the lowest, nice 19), a
bound-only backend (:mod:`.demotion` decides for it), and an exact backend that declared a proof
search (``report.demand("proof")``: its full model fits) until it declares another level.

On two cores the priorities matter only among the workers that share a core, so the rule also
frees cores: a worker counts for ``share_of(its levels above the lightest)`` of its cores when
:mod:`.order` decides whether a core is idle, and a core freed so gets an extra seed of the
heaviest randomized backend per copy.

**Deterministic mode.** No clock, no nice: at every ``period``-th exchange point (``WINDOW_SHARE``
of the points the run expects, at least ``POINT_PERIOD_MIN``) the rule reads only settled facts
(the plans taken at the points so far, in their fixed order; which runs handed over that point;
the demands each declared before it) and splits the work the judged runs have left in proportion
to their weights (same floor): work instead of CPU, each run having spent the same units by a
point. The totals go to the workers through :class:`.points.WorkBoard`, read once the point is
settled: the same plan for the same problem, seed and work.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

from ..backend import NORMAL
from ..work import EXCHANGE_UNITS
from .credit import CreditBook
from .schedule import NICE_RATIO, nice_offset, share_of

if TYPE_CHECKING:
    from .context import RunContext
    from .crew import Worker

WINDOW_SHARE, WINDOW_MIN, WINDOW_MAX = 0.1, 2.0, 15.0
"""The rule looks every ``WINDOW_SHARE`` of the budget, at least ``WINDOW_MIN`` and at most
``WINDOW_MAX`` seconds apart: a 240 s run is judged 16 times, a 10 s run 5 times."""

FAIR_SHARE, FAIR_MAX = 0.2, 30.0
"""CPU seconds of search a worker has before it is judged: ``FAIR_SHARE`` of the budget, at most
``FAIR_MAX``. Why so long: toulbar2 improves the incumbent rarely and by large steps (at 60 s on
S and N: 2 rounds, about 5 solves, its incumbents at 18-35 s and near the end, 5 to 12 % each;
``runs/curated/r34-short60``, ``r41-60s``), after seconds of prices before its first round; a
backend judged before its first such step would be judged on nothing."""

FLOOR_LEVELS = 6
FLOOR = NICE_RATIO ** -FLOOR_LEVELS
"""The least weight of a judged anytime backend against the best one's: 6 nice levels under it
(CFS weights 272 against 1024), so on a core shared with the leader it keeps about a fifth."""

DECAY = 0.7
"""A window's credit and CPU count 0.7 at the next window, 0.49 at the one after...: a backend
whose steps are rare is not forgotten between two of them."""

CEILING_LEVELS = 12
"""The rule never sets a level more than this above the runner's own: a backend with a low demand
(nice 19) stays at least 7 levels (about 5 times less CPU) under every judged one."""

HYSTERESIS = 2
"""Nice levels a worker's offset must move by before the rule moves it (once every judged worker
would move by less, nothing changes): a level spent cannot be taken back."""

POINT_PERIOD_MIN = 2
"""Deterministic mode: the fewest exchange points between two of the rule's decisions."""


def window(budget: float) -> float:
    """Seconds between two looks of the rule for a budget of ``budget`` seconds."""
    return min(WINDOW_MAX, max(WINDOW_MIN, WINDOW_SHARE * budget))


def fair_cpu(budget: float) -> float:
    """CPU seconds of search before a worker is judged, for a budget of ``budget`` seconds."""
    return min(FAIR_MAX, FAIR_SHARE * budget)


def start_weights(names: list[str], given: dict) -> dict[str, float]:
    """Each backend's start weight: the given one, else 1."""
    return {name: float(given.get(name, 1.0)) for name in names}


def point_period(points: int) -> int:
    """Deterministic mode: exchange points between two decisions, for a run of ``points``."""
    return max(POINT_PERIOD_MIN, round(WINDOW_SHARE * points))


class Focus:
    """The weights and the rule above.

    Owns the start weights, the credit book, each run's decayed credit and CPU (work in
    deterministic mode), the CPU a worker had when its search started, each run's current factor
    and its weight as nice levels under the heaviest (meant, whether or not the levels were there),
    the demands declared per exchange point (deterministic mode), the totals of work, and the
    record of its moves. Asks the context's ``rows`` (CPU, phase, demand), ``crew`` (the workers)
    and ``scheduler`` (levels, :meth:`.schedule.Scheduler.reweigh`); in deterministic mode
    writes the context's ``work_board``."""

    def __init__(self, context: "RunContext") -> None:
        options = context.options
        self._rows, self._crew, self._scheduler = context.rows, context.crew, context.scheduler
        self._clock, self._by_name = context.clock, context.by_name
        self._deterministic = context.deterministic
        self._adaptive = bool(options.adaptive)
        self._given = dict(options.cpu_weights)
        self._weights = start_weights([b.name for b in context.backends], self._given)
        self._heaviest = max(self._weights.values(), default=1.0)
        self._window = window(options.budget_seconds)
        self._fair = fair_cpu(options.budget_seconds)
        self._book = CreditBook(self._can_own)
        self._score: dict[str, float] = {}
        self._used: dict[str, float] = {}
        self._cpu_seen: dict[str, float] = {}
        self._search_cpu: dict[str, float] = {}
        self._factor: dict[str, float] = {}
        self._intent: dict[str, int] = {}   # each run's weight as nice levels under the heaviest
        self._started: dict[str, int] = {}  # the nice levels a worker gave itself at its start
        self._next = time.monotonic() + self._window
        self._moves: list[dict] = []
        self._declared: dict[str, list[tuple[int, str]]] = {}
        self._board = context.work_board
        self._totals: dict[str, int] = dict(context.work_of or {})
        self._period = 0 if self._board is None else self._board.period

    # ---------------------------------------------------------------- weights
    def weight(self, backend: str) -> float:
        """A backend's start weight (1 when not given)."""
        return self._weights.get(backend, 1.0)

    def start_increment(self, backend: str, run: str) -> int:
        """Nice levels a new worker of run ``run`` (of ``backend``) gives itself at its start:
        its start weight's offset under the heaviest; an extra seed copy starts where the
        backend's own worker is now. Zero in deterministic mode (weights are work there)."""
        if self._deterministic:
            return 0
        original = next((w for w in self._crew.live() if w.run.name == backend), None)
        if run != backend and original is not None:
            self._intent[run] = self._intent.get(backend, 0)
            increment = self._scheduler.level(original.process.pid) - self._scheduler.base
        else:
            self._intent[run] = nice_offset(self.weight(backend), self._heaviest)
            increment = self._scheduler.start_increment(self._intent[run])
        if increment:
            self._started[run] = increment
        return increment

    def backend_weight(self, backend: str) -> float:
        """A backend's weight now: its start weight times its own worker's factor."""
        return self.weight(backend) * self._factor.get(backend, 1.0)

    def claim(self, workers: list["Worker"]) -> float:
        """The cores ``workers`` claim: each its cores times its weight against the heaviest among
        them (a worker 6 levels under another claims about a quarter of its cores). The weights
        meant, not the nice levels set: a run started at nice 19 has no levels to set, and its
        weights then act through the extra seeds alone."""
        if not workers:
            return 0.0
        intent = {w.run.name: self._intent.get(w.run.name, 0) for w in workers}
        lightest = min(intent.values())
        return sum(w.run.cores * share_of(intent[w.run.name] - lightest) for w in workers)

    # ---------------------------------------------------------------- credit
    def _can_own(self, run: str) -> bool:
        row = self._rows.get(run)
        backend = None if row is None else self._by_name.get(row.backend)
        return backend is not None and bool(backend.capabilities.anytime)

    def posted(self, worker_or_name: object, plan: object, cost: int,
               incumbent: Optional[tuple[np.ndarray, int]], reads_board: bool) -> None:
        """A verified plan of a run (``worker_or_name``: its worker, or its run's name) of
        ``cost``, with the incumbent (plan, cost) it arrived on: credit (:mod:`.credit`)."""
        name = worker_or_name if isinstance(worker_or_name, str) else worker_or_name.run.name
        self._book.posted(name, np.asarray(plan, dtype=np.int64), cost, incumbent, reads_board)

    def declared(self, run: str, level: str, point: int) -> None:
        """Deterministic mode: run ``run`` declared a demand after handing over ``point``."""
        self._declared.setdefault(run, []).append((point, level))

    # ---------------------------------------------------------------- the timed rule
    def _judged(self, worker: "Worker") -> bool:
        run = worker.run
        if worker.done or run.phase != "solve" or run.demand != NORMAL:
            return False
        if not worker.backend.capabilities.anytime:
            return False
        cpu = run.cpu_seconds or 0.0
        return cpu - self._search_cpu.get(run.name, cpu) >= self._fair

    def turn(self, live: list["Worker"]) -> None:
        """One turn of the event loop (timed runs): note when searches start; every window,
        the rule (see the module)."""
        if self._deterministic:
            return
        for worker in live:
            if worker.run.phase == "solve" and worker.run.name not in self._search_cpu:
                self._search_cpu[worker.run.name] = worker.run.cpu_seconds or 0.0
        now = time.monotonic()
        if not self._adaptive or now < self._next:
            return
        self._next = now + self._window
        earned = self._book.take()
        for name in set(earned) | set(self._score):
            self._score[name] = DECAY * self._score.get(name, 0.0) + earned.get(name, 0.0)
        for worker in live:
            name = worker.run.name
            if name not in self._search_cpu:
                continue
            cpu = worker.run.cpu_seconds or 0.0
            used = cpu - self._cpu_seen.get(name, self._search_cpu[name])
            self._cpu_seen[name] = cpu
            self._used[name] = DECAY * self._used.get(name, 0.0) + max(0.0, used)
        judged = [w for w in live if self._judged(w)]
        rates = {w.run.name: self._score.get(w.run.name, 0.0) / max(0.1, self._used.get(
            w.run.name, 0.0)) for w in judged}
        factors = self._factors(rates)
        if factors is None:
            return
        weights = {w.process.pid: self.weight(w.run.backend) * factors[w.run.name] for w in judged}
        heaviest = max(weights.values())
        want = {w.run.name: nice_offset(weights[w.process.pid], heaviest) for w in judged}
        lightest = min(self._intent.get(name, 0) for name in want)
        if max(abs(want[name] - (self._intent.get(name, 0) - lightest)) for name in want) \
                < HYSTERESIS:
            return
        levels = self._scheduler.reweigh({w.process.pid: want[w.run.name] for w in judged},
                                         CEILING_LEVELS)
        self._intent.update(want)
        self._factor.update(factors)
        self._moves.append({"time": round(self._clock.now(), 2),
                            "rates": {n: round(r, 6) for n, r in sorted(rates.items())},
                            "levels": {w.run.name: levels.get(w.process.pid) for w in judged}})

    @staticmethod
    def _factors(rates: dict[str, float]) -> Optional[dict[str, float]]:
        """Each judged run's factor, ``max(FLOOR, rate / best)``; None with fewer than two judged
        or no credit at all (nothing to go by)."""
        if len(rates) < 2:
            return None
        best = max(rates.values())
        if best <= 0:
            return None
        return {name: max(FLOOR, rate / best) for name, rate in rates.items()}

    # ---------------------------------------------------------------- deterministic mode
    def _judged_at(self, run: str, k: int) -> bool:
        """Deterministic mode: whether run ``run`` is judged at point ``k``: an anytime backend
        whose last demand declared before point ``k`` (if any) is normal."""
        if not self._can_own(run):
            return False
        before = [level for point, level in self._declared.get(run, []) if point < k]
        return not before or before[-1] == NORMAL

    def at_point(self, k: int, reached: Callable[[str], bool]) -> Optional[dict[str, int]]:
        """Deterministic mode, while point ``k`` is being settled (before the workers may see it):
        at a decision point, the new totals of work (run -> units, written to the work board),
        else None. ``reached(run)``: whether the run handed over point ``k``."""
        if self._board is None or k % self._period:
            return None
        earned = self._book.take()
        names = list(self._totals)
        for name in names:
            self._score[name] = DECAY * self._score.get(name, 0.0) + earned.get(name, 0.0)
        spent = k * EXCHANGE_UNITS
        judged = sorted(n for n in names if reached(n) and self._judged_at(n, k)
                        and self._totals[n] > spent)
        factors = self._factors({n: self._score.get(n, 0.0) for n in judged})
        if factors is not None:
            pool = sum(self._totals[n] - spent for n in judged)
            weights = {n: self.weight(self._rows[n].backend) * factors[n] for n in judged}
            whole = sum(weights.values())
            shares = {n: int(pool * weights[n] / whole) for n in judged}
            heaviest = min(judged, key=lambda n: (-weights[n], n))
            shares[heaviest] += pool - sum(shares.values())
            before = dict(self._totals)
            for n in judged:
                self._totals[n] = spent + shares[n]
            self._factor.update(factors)
            if self._totals != before:
                self._moves.append({"point": k, "work": {n: self._totals[n] for n in judged},
                                    "credit": {n: round(self._score.get(n, 0.0), 6)
                                               for n in judged}})
        self._board.write(k // self._period, [self._totals.get(n, 0) for n in self._rows])
        return dict(self._totals)

    # ---------------------------------------------------------------- the record
    def summary(self) -> dict:
        """What the run's ``schedule`` says of weights and the rule: the start weights (given
        ones only) and the nice levels they gave at the start (over the runner's own; none when 0),
        whether the rule was on, its moves, the credit earned per run."""
        return {"weights": {n: self._weights[n] for n in sorted(self._weights) if n in self._given},
                "start_nice": dict(sorted(self._started.items())),
                "adaptive": self._adaptive, "moves": list(self._moves),
                "credit": {n: round(v, 6) for n, v in sorted(self._book.totals().items())}}

