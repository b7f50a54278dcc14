"""The start-order rule: which waiting backend may start now, and when an idle core gets another
seed of a randomized backend.

In order: a backend held from outside (a cluster doing its work) waits; for the first
``SAFETY_FIRST`` of the budget (at most ``SAFETY_WAIT`` s) anytime and exact backends wait for the
quick ones (the *safety net*: neither anytime nor exact) to finish, so that on a loaded machine the
first answer gets the cores; a backend working on the presolved problem waits for presolve; two
backends with the same JIT cache never compile at once (the second waits and loads the cache).
Backends without set-up start first. In deterministic mode no extra seed is started (the rule reads
the clock and the cores); the other rules only move when a backend starts, never what it computes.
:mod:`.launch` does the starting; this module only decides.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from ..backend import LOW, BackendLike
from .worker import has_prepare, prepare_key

if TYPE_CHECKING:
    from .context import RunContext
    from .focus import Focus
    from .presolving import Presolve

SAFETY_FIRST = 0.1
"""For this share of the budget (at most SAFETY_WAIT seconds) after the runner starts, anytime and
exact backends wait until the quick ones (the safety net) have finished: on a loaded machine the
safety net then gets the cores to itself instead of a sliver of them."""

SAFETY_WAIT = 3.0
"""The longest the others wait for the safety net at the start, and the longest an early stop on a
claim waits for it (:mod:`.stopping`)."""

WAIT_SAFETY = "waiting for the safety net (quick backends first)"
WAIT_PRESOLVE = "waiting for presolve"
"""The two waits an early set-up overlaps (:meth:`.launch.Launcher.launch_ready`): the backend's
``prepare`` runs meanwhile, its problem comes when the wait is over."""

EXTRA_MIN_SECONDS = 2.0
"""No extra seed copy is started with less time than this before the backends' deadline."""

EXTRA_FREE = 0.5
"""A core counts as idle when the busy workers claim less than the cores less this (a worker
claims its cores times its CPU weight against the lightest, :meth:`.focus.Focus.claim`; with
equal weights, as before, when fewer cores are held than there are)."""


def is_safety_net(backend: BackendLike) -> bool:
    """Quick backends (neither anytime nor exact): they run first and an early stop waits for them."""
    return not backend.capabilities.anytime and not backend.capabilities.exact


def start_order(backends: Sequence[BackendLike]) -> list[BackendLike]:
    """The waiting list: backends without set-up first, so a slow compile holds nothing up."""
    return sorted(backends, key=has_prepare)


def safety_until(now: float, time_limit: float) -> float:
    """When the safety net's head start ends (a ``time.monotonic()`` value)."""
    return now + min(SAFETY_WAIT, SAFETY_FIRST * time_limit)


class StartOrder:
    """The rule above.

    Owns the waiting list, the end of the safety net's head start (set when the run begins) and the
    number of extra seed copies of each backend. Asks the caller's ``hold``, the workers (the
    context's ``crew``: who runs, who compiles), whether ``presolve`` runs, the rows (a
    backend's set-up time), and ``focus`` (the cores the busy workers claim, each backend's
    weight); the context also gives the backends, options, backends' deadline and cores."""

    def __init__(self, context: "RunContext", presolve: "Presolve",
                 hold: Optional[Callable[[BackendLike], Optional[str]]], focus: "Focus") -> None:
        self._options, self._cores = context.options, context.cores
        self._soft_deadline = context.clock.soft_deadline
        self._crew, self._presolve, self._rows, self._hold = (context.crew, presolve, context.rows,
                                                              hold)
        self._focus = focus
        self._waiting = start_order(context.backends)
        self._safety_until = 0.0
        self._copies: dict[str, int] = {}

    def begin(self) -> None:
        """The run starts: the safety net's head start runs from now."""
        self._safety_until = safety_until(time.monotonic(), self._options.time_limit)

    @property
    def waiting(self) -> tuple[BackendLike, ...]:
        """The backends not started yet, in the order they may start."""
        return tuple(self._waiting)

    def take(self, backend: BackendLike) -> None:
        """``backend`` leaves the waiting list (it starts, or cannot)."""
        self._waiting.remove(backend)

    def next_copy(self, name: str) -> int:
        """The number of the next extra seed copy of backend ``name`` (1, 2, ...), counted."""
        self._copies[name] = self._copies.get(name, 0) + 1
        return self._copies[name]

    def blocked(self, backend: BackendLike, started: bool = False) -> Optional[str]:
        """Why a waiting backend cannot start yet (``started``: one set up early, which waits for
        its problem; the compile rule is behind it), or None."""
        held = self._hold(backend) if self._hold is not None else None
        if held:
            return held
        if not is_safety_net(backend) and time.monotonic() < self._safety_until:
            pending = any(is_safety_net(b) for b in self._waiting)
            running = any(not w.done and is_safety_net(w.backend) for w in self._crew)
            if pending or running:
                return WAIT_SAFETY
        if backend.capabilities.reduced and self._presolve.running:
            return WAIT_PRESOLVE
        if started:
            return None
        key = prepare_key(backend)
        compiler = None if key is None else self._crew.compiling(key)
        if compiler is not None:
            return f"waiting for compilation by {compiler}"
        return None

    def extra_choice(self) -> Optional[BackendLike]:
        """The randomized backend to copy with a new seed on an idle core, or None: not while a
        backend waits or presolve runs, nor close to the deadline; among those solving, the one
        with the most weight per copy (its weight over its copies plus one: with equal weights,
        the fewest copies), then by name."""
        if (not self._options.extra_seeds or self._options.deterministic or self._waiting
                or self._presolve.running):
            return None
        if self._soft_deadline - time.monotonic() < EXTRA_MIN_SECONDS:
            return None
        live = self._crew.live()
        busy = [w for w in live if not (self._options.honour_demand and w.run.demand == LOW)]
        if self._focus.claim(busy) > self._cores - EXTRA_FREE:
            return None
        candidates = [w.backend for w in live
                      if getattr(w.backend.capabilities, "randomized", False) and w.run.phase == "solve"]
        if not candidates:
            return None
        backend = min(candidates, key=lambda b: (
            -self._focus.backend_weight(b.name) / (self._copies.get(b.name, 0) + 1),
            self._copies.get(b.name, 0), b.name))
        setup = self._rows[backend.name].prepare_seconds or 0.0  # a copy loads the JIT cache again
        if self._soft_deadline - time.monotonic() < EXTRA_MIN_SECONDS + setup:
            return None
        return backend
