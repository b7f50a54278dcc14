"""Memory prices shared between backends: what a price vector means and how a reader knows it fits.

Why: the ``bound`` backend runs a Lagrangian subgradient on memory prices for the whole run and
the toulbar2 backend needs prices for its penalties; each converging its own wastes a core's
seconds. The runner keeps a board (:mod:`portfolio.runner.priceboard`) where one publishes and the
other reads (``report.publish_prices`` and ``report.shared_prices``: :class:`PriceExchange`, part
of every :class:`~portfolio.backend.Reporter`; a reporter without a board shares nothing).

The coordinates are the **time points of the problem the backend was given** (``problem.time_points``,
the presolved problem when the backend declares ``reduced``): price ``k`` charges the memory
constraint at ``problem.time_points[k]``. The bound is a certified lower bound on the optimal cost
of that same problem, **in the problem's objective** (a plan's cost by the evaluator, the problem's
``cost_offset`` included; the runner's presolve keeps it equal to the original problem's cost of
the expanded plan), not the kernels' objective without the offset. The key names the problem
(a digest of its time and interval structure and of its strategies) and the number of prices,
so that a reader refuses prices of another problem or shape: a run may hold both the original and
the presolved problem (a backend started before presolve finished gets the original).
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Protocol

import numpy as np


class PricedProblem(Protocol):
    """What a key is made of: the parts of a :class:`portfolio.problem.Problem` a price and its bound
    mean something on (this module sits below ``problem``'s users and imports none of them)."""

    time_points: np.ndarray
    point_capacity: np.ndarray
    interval_node: np.ndarray
    interval_start: np.ndarray
    interval_end: np.ndarray
    interval_usage_offsets: np.ndarray
    interval_usages: np.ndarray
    strategy_offsets: np.ndarray
    edge_costs: np.ndarray
    cost_offset: int

    @property
    def num_edges(self) -> int: ...


def price_key(problem: PricedProblem) -> str:
    """The key of ``problem``'s price coordinates: ``"<number of time points>:<digest>"``.

    The digest covers the time points, their capacities, the intervals (owner, start, end, usages),
    the strategy offsets and the cost offset: everything the meaning of a price and of the bound
    depends on but the cost tables (too large to hash at every start; two problems of one run never
    share all of the rest)."""
    h = hashlib.blake2b(digest_size=16)
    for arr in (problem.time_points, problem.point_capacity, problem.interval_node,
                problem.interval_start, problem.interval_end, problem.interval_usage_offsets,
                problem.interval_usages, problem.strategy_offsets):
        a = np.ascontiguousarray(arr, dtype=np.int64)
        h.update(len(a).to_bytes(8, "little"))
        h.update(a.tobytes())
    h.update(str(int(problem.cost_offset)).encode())
    h.update(f"{problem.num_edges}:{len(problem.edge_costs)}".encode())
    return f"{len(problem.time_points)}:{h.hexdigest()}"


def key_size(key: str) -> int:
    """The number of prices a key stands for (its first field); -1 for a malformed key."""
    head = key.split(":", 1)[0]
    return int(head) if head.isdigit() else -1


@dataclass(frozen=True)
class SharedPrices:
    """One published price vector: ``prices`` (float64, >= 0, one per time point of the problem
    ``key`` names), ``bound`` (the certified lower bound they gave, in the problem's objective),
    ``source`` (who published them and how, for notes)."""

    key: str
    prices: np.ndarray
    bound: int
    source: str = ""


class PriceExchange(Protocol):
    """The two reporter methods through which backends share memory prices: part of the backend
    contract's :class:`~portfolio.backend.Reporter` (declared there, never probed for). A reporter
    without a board (``NullReporter``, deterministic mode's) has both and shares nothing."""

    def publish_prices(self, key: str, prices: np.ndarray, bound: int, note: str = "") -> None:
        """Offer memory ``prices`` (one per time point of the problem ``key`` names, see
        :func:`price_key`) with the lower bound they certified, in the problem's objective. The
        runner's board keeps them past this backend's end or crash; a reporter without a board
        (deterministic mode, a direct call) keeps nothing."""
        ...

    def shared_prices(self, key: str) -> Optional[SharedPrices]:
        """The published prices of ``key`` with the highest certified bound (any backend's, this
        one's too), or None: outside the runner, in deterministic mode, or when none fit."""
        ...


def checked_prices(key: str, prices: object) -> np.ndarray:
    """``prices`` as a read-only float64 vector of the key's size with finite entries >= 0; raises
    ValueError naming what is wrong (a publisher's mistake must not reach a reader)."""
    arr = np.array(prices, dtype=np.float64, copy=True)
    if arr.ndim != 1:
        raise ValueError(f"prices must be one vector, got shape {arr.shape}")
    if len(arr) != key_size(key):
        raise ValueError(f"{len(arr)} prices for a key of {key_size(key)} time points")
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"price {i} is {arr[i]!r}: prices are finite and >= 0")
    arr.setflags(write=False)
    return arr


PUBLISH_S = 0.5
"""Seconds between two publications of one engine's improving prices (the last one always goes)."""


class PriceLink:
    """A Lagrangian engine's link to the run's board (``engine``: a
    :class:`portfolio.kernels.bound.LagrangeBound` whose prices sit on the time points of the
    problem ``key`` names; ``key`` None: nothing is shared), through ``report``'s two price
    methods (:class:`PriceExchange`).

    Publishes the engine's best prices when their bound beats what it published before and what
    the board holds; adopts the board's prices when their bound beats the engine's best and every
    publication it adopted before. ``take_bound``: adopted prices become the engine's best too
    (their bound is a certificate of the same problem), so a consumer of the best prices (the
    toulbar2 penalty) uses them until its own steps certify more; without it (the ``bound``
    backend, which reports its best as its own claim) only the subgradient goes on from them."""

    def __init__(self, report: PriceExchange, key: Optional[str], engine: Any, take_bound: bool,
                 t0: float, every: float = PUBLISH_S,
                 to_board: Optional[Callable[[np.ndarray], np.ndarray]] = None,
                 from_board: Optional[Callable[[np.ndarray], np.ndarray]] = None) -> None:
        self.key, self.engine, self.take_bound, self.t0, self.every = key, engine, take_bound, t0, every
        self.to_board = to_board or (lambda lam: lam)
        self.from_board = from_board or (lambda lam: lam)
        """The engine's prices as the board's (the problem's time points) and back: identity when
        the engine works on the problem's own time points."""
        self.report = report
        self.published: Optional[int] = None
        self.publications = 0
        self.last = -math.inf
        self.taken: Optional[int] = None     # the best bound adopted so far
        self.adoptions: list[tuple[float, int, str]] = []   # (seconds, bound, source)

    @property
    def on(self) -> bool:
        """Whether the link shares at all (a problem key to share under)."""
        return self.key is not None

    def publish(self, force: bool = False, board_bound: Optional[int] = None) -> bool:
        """Publish the engine's best prices when they improved (at most every ``every`` seconds
        unless ``force``) and beat ``board_bound`` when given; whether they went out."""
        if self.key is None or self.engine.best is None:
            return False
        best = self.engine.best
        if (self.published is not None and best <= self.published) or (
                board_bound is not None and best <= board_bound) or (
                self.taken is not None and best <= self.taken):
            return False
        now = time.monotonic()
        if not force and now - self.last < self.every:
            return False
        self.report.publish_prices(self.key, self.to_board(self.engine.best_lam), int(best),
                                   f"{self.engine.steps} steps")
        self.published, self.last = int(best), now
        self.publications += 1
        return True

    def adopt(self) -> Optional[int]:
        """Take the board's prices when they beat the engine's best and every adopted bound;
        returns the board's bound (None: nothing of this key there)."""
        if self.key is None:
            return None
        shared = self.report.shared_prices(self.key)
        if shared is None:
            return None
        mine = self.engine.best
        if (mine is None or shared.bound > mine) and (self.taken is None or shared.bound > self.taken):
            self.engine.adopt(self.from_board(shared.prices),
                              shared.bound if self.take_bound else None)
            self.taken = shared.bound
            self.adoptions.append((time.monotonic() - self.t0, shared.bound, shared.source))
        return shared.bound

    def exchange(self) -> None:
        """Adopt what beats the engine, then publish what beats the board."""
        board = self.adopt()
        self.publish(force=True, board_bound=board)

    def summary(self) -> str:
        """For a backend's note, short (the runner keeps 300 characters of a note): publications
        (``out``, with the best bound published) and adoptions (``in``, with the first one's time
        into the solve, its publisher, and the best bound adopted)."""
        if not self.on:
            return "not shared"
        out = f"out {self.publications}x" + (f" ({self.published})" if self.publications else "")
        if not self.adoptions:
            return out + ", in 0x"
        first = self.adoptions[0]
        who = first[2].split(" at ", 1)[0]
        return (out + f", in {len(self.adoptions)}x from {first[0]:.1f} s ({who}, "
                f"{max(a[1] for a in self.adoptions)})")
