"""Large-neighbourhood search with an exact sub-solver: windows, window problems, the loop.

Why: the full exact model of a large instance (N, S, K after presolve: 4-6k nodes, millions of edge
entries) does not fit in a contest time limit, but a window of a few hundred nodes with everything
else fixed at the incumbent does, and an exact solve of it finds moves no local search makes (a
whole region re-optimised at once, memory included).

A window is a plain :class:`Problem` (see :func:`build_window`): the window's nodes keep their
strategies; an edge to fixed nodes becomes node costs (or a smaller edge, when two window nodes
remain on it); memory keeps the window's intervals against the capacity left by the fixed nodes at
each time point; the fixed part's cost becomes ``cost_offset``. So the window problem's cost of a
window plan is exactly the full problem's cost of the incumbent with that window replaced, and any
engine that solves a Problem (CP-SAT, MaxSAT) solves windows without a second code path.

The loop (:func:`run_lns`) picks windows of three kinds, weighted by how often each kind improved:
a connected region grown from a node with a costly neighbourhood, nodes live at one of the most
loaded time points, and the nodes of the costliest edges (entries far above their row minimum).
Window size adapts: it grows when windows are solved to optimality quickly and shrinks when they
time out. Only plans verified by the exact evaluator on the full problem are kept.

The loop's pace (:class:`TimePace` in a timed run, :class:`WorkPace` in deterministic mode) says
whether another window fits and how much each may use: seconds, or work units counted by the
engine (each window's solve) and by size (the loop's own work, ``WINDOW_UNITS...`` and
``STATS_UNITS_PER_KEDGE``), so that in deterministic mode the windows and their number depend on
the seed, the incumbent and the counts only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..evaluate import evaluate, profile_of, usage_profile
from ..problem import FORBIDDEN, Capacity, Problem, offsets_from_counts
from ..work import Meter
from .contract import ExactOutcome

WindowSolver = Callable[[Problem, float, np.ndarray], ExactOutcome]
"""``solve(window_problem, limit, hint) -> ExactOutcome``: what an exact backend supplies (``limit``
in seconds, or in work units under a :class:`WorkPace`)."""

KINDS = ("region", "time", "edges")

WINDOW_UNITS = 0.3
"""Work units charged per window for choosing it, building it and checking its plan, besides the
two parts below. The three are fitted to ``time.process_time()`` on K, N, S and generated
instances (``benchmarks/determinism_exact.py overhead``; docs/benchmarks/determinism.md, "Exact
backends")."""

WINDOW_UNITS_PER_KITEM = 0.13
"""... per thousand items of the full problem (nodes, edges, intervals, time points: numpy passes
over all of them)."""

WINDOW_UNITS_PER_EDGE = 0.008
"""... per edge touching the window (a Python step each)."""

STATS_UNITS_PER_KEDGE = 6.5
"""Work units per thousand edges charged for the incumbent's statistics (a Python pass over every
edge, redone after each improvement). Measured like ``WINDOW_UNITS_PER_KITEM`` (6.4-6.5 ms per
thousand edges on K, N, S)."""

MIN_WINDOW_UNITS = 20.0
"""No window is started with fewer work units left (deterministic mode)."""


@dataclass
class LnsParams:
    """Knobs of the loop (defaults measured on the shared instances; see docs/benchmarks/cpsat.md,
    "LNS after local search")."""

    initial_size: int = 50          # nodes in the first window
    min_size: int = 10
    max_size: int = 4000
    window_time: float = 2.0        # seconds per window solve
    window_units: float = 2000.0    # work units per window solve (deterministic mode)
    grow: float = 1.3               # size factor after a quick optimal window
    shrink: float = 0.75            # size factor after a window that timed out


@dataclass
class LnsStats:
    windows: int = 0
    improved: int = 0
    optimal_windows: int = 0
    size: int = 0
    by_kind: dict = field(default_factory=lambda: {k: [0, 0] for k in KINDS})  # tried, improved

    def note(self) -> str:
        kinds = ", ".join(f"{k} {t}/{i}" for k, (t, i) in self.by_kind.items() if t)
        return (f"LNS: {self.windows} windows, {self.improved} improved, {self.optimal_windows} "
                f"solved optimally, final size {self.size} ({kinds})")


@dataclass
class Window:
    """A window problem and the original node of each of its nodes."""

    problem: Problem
    nodes: np.ndarray

    def embed(self, plan: np.ndarray, window_plan: np.ndarray) -> np.ndarray:
        """The full plan: ``plan`` with the window's nodes set from ``window_plan``."""
        out = np.array(plan, dtype=np.int64, copy=True)
        out[self.nodes] = np.asarray(window_plan, dtype=np.int64)
        return out


def _absorbing_add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise sum where a forbidden operand keeps the result exactly forbidden."""
    return np.where((a == FORBIDDEN) | (b == FORBIDDEN), FORBIDDEN, a + b)


def build_window(problem: Problem, plan: np.ndarray, nodes: np.ndarray,
                 profile: Optional[np.ndarray] = None) -> Window:
    """The window problem of ``nodes`` with every other node fixed at ``plan`` (module docstring).

    ``plan`` must be a full plan without forbidden choices; ``profile`` is its usage at
    ``problem.time_points`` when the caller has it already.
    """
    plan = np.asarray(plan, dtype=np.int64)
    nodes = np.unique(np.asarray(nodes, dtype=np.int64))
    n = problem.num_nodes
    pos = np.full(n, -1, dtype=np.int64)
    pos[nodes] = np.arange(len(nodes))
    so = problem.strategy_offsets
    counts = problem.strategy_counts[nodes]
    w_offsets = offsets_from_counts(counts)
    cost_idx = np.concatenate([np.arange(so[v], so[v + 1]) for v in nodes.tolist()]) \
        if len(nodes) else np.zeros(0, dtype=np.int64)
    w_costs = problem.node_costs[cost_idx].astype(np.int64).copy()
    # edges touching the window
    inc = [problem.incidence_edges[problem.incidence_offsets[v]:problem.incidence_offsets[v + 1]]
           for v in nodes.tolist()]
    edges = np.unique(np.concatenate(inc)) if inc else np.zeros(0, dtype=np.int64)
    e_nodes: list[list[int]] = []
    e_tables: list[np.ndarray] = []
    inside_cost = 0
    for e in edges.tolist():
        members = problem.nodes_of_edge(e)
        table = problem.edge_table(e)
        inside_cost += int(table[tuple(plan[members].tolist())])
        keep = pos[members] >= 0
        index = tuple(slice(None) if k else int(plan[v]) for v, k in zip(members.tolist(),
                                                                          keep.tolist()))
        sub = np.asarray(table[index], dtype=np.int64)
        kept = members[keep]
        if len(kept) == 1:
            w = int(pos[kept[0]])
            lo = int(w_offsets[w])
            w_costs[lo:lo + len(sub)] = _absorbing_add(w_costs[lo:lo + len(sub)], sub)
        else:
            e_nodes.append(pos[kept].tolist())
            e_tables.append(sub.reshape(-1))
    # intervals of the window and the capacity left by the fixed nodes
    iv = np.flatnonzero(pos[problem.interval_node] >= 0)
    io = problem.interval_usage_offsets
    use_idx = np.concatenate([np.arange(io[j], io[j + 1]) for j in iv.tolist()]) \
        if len(iv) else np.zeros(0, dtype=np.int64)
    if profile is None:
        profile = usage_profile(problem, plan)
    chosen = problem.interval_usages[io[:-1] + plan[problem.interval_node]]
    mine = np.zeros(problem.num_intervals, dtype=np.int64)
    mine[iv] = chosen[iv]
    own = profile_of(problem, mine)
    lo, hi = problem.interval_point_range
    npts = len(problem.time_points)
    cover = np.zeros(npts + 1, dtype=np.int64)
    np.add.at(cover, lo[iv], 1)
    np.add.at(cover, hi[iv], -1)
    covered = np.cumsum(cover[:-1]) > 0 if npts else np.zeros(0, dtype=bool)
    cap, limited = problem.capacity.at(problem.time_points)
    pts = np.flatnonzero(covered & limited)
    if len(pts):
        left = [int(c) - (int(f) - int(o)) for c, f, o in
                zip(cap[pts].tolist(), np.asarray(profile)[pts].tolist(), own[pts].tolist())]
        capacity = Capacity(problem.time_points[pts], np.array(left, dtype=np.int64))
    else:
        capacity = Capacity.unlimited()
    window_cost_part = int(problem.node_costs[so[nodes] + plan[nodes]].astype(object).sum()) \
        if len(nodes) else 0
    offset = evaluate(problem, plan).cost - window_cost_part - inside_cost
    sub_problem = Problem(
        name=f"{problem.name}[window {len(nodes)}]",
        strategy_offsets=w_offsets,
        node_costs=w_costs,
        interval_node=pos[problem.interval_node[iv]],
        interval_start=problem.interval_start[iv],
        interval_end=problem.interval_end[iv],
        interval_usage_offsets=offsets_from_counts(np.diff(io)[iv]),
        interval_usages=problem.interval_usages[use_idx],
        edge_node_offsets=offsets_from_counts(np.array([len(x) for x in e_nodes], dtype=np.int64)),
        edge_nodes=np.array([v for x in e_nodes for v in x], dtype=np.int64),
        edge_cost_offsets=offsets_from_counts(np.array([len(t) for t in e_tables],
                                                       dtype=np.int64)),
        edge_costs=np.concatenate(e_tables) if e_tables else np.zeros(0, dtype=np.int64),
        capacity=capacity,
        cost_offset=int(offset),
    )
    return Window(sub_problem, nodes)


# ------------------------------------------------------------------------------------------ selection
class WindowPicker:
    """Chooses windows of the three kinds for one incumbent (see the module docstring)."""

    def __init__(self, problem: Problem, rng: np.random.Generator) -> None:
        self.problem, self.rng = problem, rng
        self.adj_off, self.adj = problem.adjacency_offsets, problem.adjacency_nodes
        self.weights = {k: 1.0 for k in KINDS}

    def _grow(self, seeds: list[int], size: int) -> np.ndarray:
        """Breadth-first region from ``seeds`` (neighbours in random order) up to ``size`` nodes."""
        seen = set(seeds)
        frontier = list(seeds)
        while frontier and len(seen) < size:
            nxt = []
            for v in frontier:
                nb = self.adj[self.adj_off[v]:self.adj_off[v + 1]]
                for w in self.rng.permutation(np.array(nb)).tolist():
                    if w not in seen:
                        seen.add(w)
                        nxt.append(w)
                        if len(seen) >= size:
                            break
                if len(seen) >= size:
                    break
            frontier = nxt
        if len(seen) < size:  # disconnected: top up with random nodes
            extra = self.rng.permutation(self.problem.num_nodes)[: size * 2].tolist()
            for w in extra:
                if len(seen) >= size:
                    break
                seen.add(w)
        return np.array(sorted(seen), dtype=np.int64)

    def pick(self, plan: np.ndarray, size: int, local_cost: np.ndarray,
             regret: np.ndarray, load: np.ndarray) -> tuple[str, np.ndarray]:
        n = self.problem.num_nodes
        size = max(1, min(size, n))
        kinds = list(KINDS)
        w = np.array([self.weights[k] for k in kinds])
        kind = kinds[int(self.rng.choice(len(kinds), p=w / w.sum()))]
        if kind == "time" and len(load):
            top = np.argsort(load)[-max(1, len(load) // 50):]
            k = int(self.rng.choice(top))
            live = self.problem.live_nodes_at(k)
            live = live[self.problem.strategy_counts[live] > 1]
            if len(live):
                take = self.rng.permutation(live)[: max(1, size // 2)].tolist()
                return kind, self._grow(take, size)
            kind = "region"
        if kind == "edges" and len(regret) and regret.max() > 0:
            order = np.argsort(regret)[::-1][: max(1, size // 2)]
            order = order[regret[order] > 0]
            seeds: list[int] = []
            for e in self.rng.permutation(order).tolist():
                seeds.extend(self.problem.nodes_of_edge(e).tolist())
                if len(seeds) >= size // 2:
                    break
            return kind, self._grow(list(dict.fromkeys(seeds))[: max(1, size // 2)], size)
        kind = "region"
        p = local_cost.astype(np.float64) + 1.0
        seed = int(self.rng.choice(n, p=p / p.sum()))
        return kind, self._grow([seed], size)

    def reward(self, kind: str, improved: bool) -> None:
        self.weights[kind] = min(10.0, self.weights[kind] * 1.2) if improved else \
            max(0.2, self.weights[kind] * 0.97)


def _plan_statistics(problem: Problem, plan: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray, np.ndarray]:
    """(local cost per node, regret per edge, load ratio per time point, usage profile)."""
    so = problem.strategy_offsets
    n = problem.num_nodes
    node_cost = problem.node_costs[so[:-1] + plan].astype(np.float64)
    regret = np.zeros(problem.num_edges, dtype=np.float64)
    local = node_cost.copy()
    for e in range(problem.num_edges):
        members = problem.nodes_of_edge(e)
        table = problem.edge_table(e)
        entry = float(table[tuple(plan[members].tolist())])
        if len(members) == 2:
            row = table[int(plan[members[0]])]
            ok = row[row != FORBIDDEN]
            best = float(ok.min()) if len(ok) else entry
            regret[e] = entry - best
        local[members] += entry / max(1, len(members))
    profile = usage_profile(problem, plan)
    cap = problem.point_capacity
    load = np.asarray(profile, dtype=np.float64) / np.maximum(cap.astype(np.float64), 1.0)
    local[~np.isfinite(local)] = 0.0
    local = np.minimum(local, 1e15)
    return local[:n], regret, load, profile


class TimePace:
    """A timed run's pace: windows of at most ``window_time`` seconds until ``stop`` (a
    ``time.monotonic()`` value)."""

    def __init__(self, stop: float, window_time: float) -> None:
        self.stop, self.window_time, self.t0 = stop, window_time, 0.0

    def more(self) -> bool:
        return time.monotonic() < self.stop - 0.05

    def limit(self) -> float:
        """This window's limit in seconds (0: no room for another)."""
        limit = min(self.window_time, self.stop - time.monotonic())
        return limit if limit > 0.05 else 0.0

    def begin(self) -> None:
        self.t0 = time.monotonic()

    def used(self) -> float:
        return time.monotonic() - self.t0

    def charge(self, units: float) -> None:
        """The loop's own work: counted only in deterministic mode."""


class WorkPace:
    """Deterministic mode's pace: windows of at most ``window_units`` work units while the backend
    has work left; the meter's ``stop`` is only the wall-clock safety net."""

    def __init__(self, meter: Meter, window_units: float) -> None:
        self.meter, self.window_units, self.mark = meter, window_units, 0.0

    def more(self) -> bool:
        return (not self.meter.out and self.meter.left() >= MIN_WINDOW_UNITS
                and not self.meter.clock_out(0.05))

    def limit(self) -> float:
        """This window's limit in work units (0: no room for another)."""
        limit = min(self.window_units, self.meter.left())
        return limit if limit >= MIN_WINDOW_UNITS else 0.0

    def begin(self) -> None:
        self.mark = self.meter.requested

    def used(self) -> float:
        return self.meter.requested - self.mark

    def charge(self, units: float) -> None:
        self.meter.spend(units)


def _items(problem: Problem) -> int:
    """The full problem's items (see ``WINDOW_UNITS_PER_KITEM``)."""
    return (problem.num_nodes + problem.num_edges + problem.num_intervals
            + len(problem.time_points))


def run_lns(problem: Problem, plan: np.ndarray, stop: float, solve_window: WindowSolver,
            on_improve: Callable[[np.ndarray, int], None],
            fetch_best: Callable[[], Optional[np.ndarray]] = lambda: None,
            seed: int = 0, params: Optional[LnsParams] = None,
            pace: "TimePace | WorkPace | None" = None) -> tuple[np.ndarray, int, LnsStats]:
    """Improve ``plan`` (feasible, no forbidden choice) until ``stop`` (a ``time.monotonic()``
    value: the driver read the contract's deadline once), or as ``pace`` says (deterministic
    mode: a :class:`WorkPace`; ``solve_window`` then gets work units as its limit). Returns (best
    plan, its cost, statistics); ``on_improve(plan, cost)`` is called with every improvement,
    ``fetch_best()`` may offer a better plan found elsewhere."""
    params = params or LnsParams()
    pace = pace or TimePace(stop, params.window_time)
    items, degree = _items(problem), np.diff(problem.incidence_offsets)
    rng = np.random.default_rng(seed)
    best = np.asarray(plan, dtype=np.int64).copy()
    ev = evaluate(problem, best)
    if not ev.feasible or ev.has_forbidden:
        raise ValueError("LNS needs a feasible plan without forbidden choices to start from")
    best_cost = ev.cost
    stats = LnsStats(size=min(params.initial_size, problem.num_nodes))
    picker = WindowPicker(problem, rng)
    size = float(stats.size)
    local, regret, load, profile = _plan_statistics(problem, best)
    pace.charge(STATS_UNITS_PER_KEDGE * problem.num_edges / 1000)
    while pace.more():
        other = fetch_best()
        if other is not None:
            ev_o = evaluate(problem, other)
            if ev_o.feasible and not ev_o.has_forbidden and ev_o.cost < best_cost:
                best, best_cost = np.asarray(other, dtype=np.int64).copy(), ev_o.cost
                local, regret, load, profile = _plan_statistics(problem, best)
                pace.charge(STATS_UNITS_PER_KEDGE * problem.num_edges / 1000)
        kind, nodes = picker.pick(best, int(size), local, regret, load)
        window = build_window(problem, best, nodes, profile)
        pace.charge(WINDOW_UNITS + WINDOW_UNITS_PER_KITEM * items / 1000
                    + WINDOW_UNITS_PER_EDGE * int(degree[window.nodes].sum()))
        limit = pace.limit()
        if limit <= 0:
            break
        pace.begin()
        out = solve_window(window.problem, limit, best[window.nodes])
        spent = pace.used()
        stats.windows += 1
        stats.by_kind[kind][0] += 1
        improved = False
        if out.plan is not None:
            candidate = window.embed(best, out.plan)
            ev_c = evaluate(problem, candidate)
            if ev_c.feasible and not ev_c.has_forbidden and ev_c.cost < best_cost:
                best, best_cost, improved = candidate, ev_c.cost, True
                stats.improved += 1
                stats.by_kind[kind][1] += 1
                on_improve(best, best_cost)
                local, regret, load, profile = _plan_statistics(problem, best)
                pace.charge(STATS_UNITS_PER_KEDGE * problem.num_edges / 1000)
        picker.reward(kind, improved)
        if out.status == "optimal":
            stats.optimal_windows += 1
            if spent < 0.8 * limit:  # solved with time (work) to spare: try a larger region
                size = min(params.max_size, problem.num_nodes, size * params.grow)
        elif out.status in ("unknown", "feasible", "too-big"):
            size = max(params.min_size, size * params.shrink)
        stats.size = int(size)
    return best, best_cost, stats
