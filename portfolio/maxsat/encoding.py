"""The MaxSAT encoding of a :class:`Problem` for the MaxSAT engine (:mod:`.engine`): a weighted
partial CNF, every weight an exact Python int, MaxSAT cost + ``constant`` == plan cost.

* it starts from :func:`portfolio.exact.model.build_exact_model`, the model every exact engine
  shares: domains after arc consistency, edge tables over their distinct nodes (self-loops and
  repeated nodes collapse, parallel tables summed), one-node tables folded into node costs,
  two-node tables folded exactly by row then column minima, forbidden entries kept apart as an
  allowed mask, Python ints where int64 could overflow;
* one variable per (node, usable strategy), exactly one per node (``pysat.card``);
* node costs minus their node minimum as soft units ``-x``;
* each two-node factor as either ``direct`` soft binary clauses per positive entry, or the
  ``pairs`` (marginal) form: a variable per allowed entry linked both ways to its row and column
  and a soft unit per positive entry; excluded pairs are hard clauses; larger factors get direct
  clauses (their least entry moved into the constant);
* min-sum diffusion (:mod:`.diffusion`) on the folded two-node tables (exact integer
  reparametrisation; kept only when it raises the folded constant): on B it lifts the constant
  from 43,647 to 532,833 of the optimum 532,843, which is what lets RC2 prove B and G
  (docs/benchmarks/maxsat.md);
* memory: per time point, each node's usage there (summed over its live intervals) above its least
  allowed usage; identical point rows are merged (keeping the least slack), rows whose worst case
  fits are dropped, and each remaining row is one hard pseudo-Boolean constraint encoded as a
  reduced MDD whose layers are nodes and whose arcs are usage levels ("usage >= level" literals
  shared between points): an interval-memoised BDD construction (Abio et al., CP 2012) that
  exploits exactly-one, which a generic PB encoder cannot see. Why our own: ``python-sat`` alone
  brings no PB encoder (``pysat.pb`` needs the ``pindakaas`` extra, ``python-sat[pb]``). Rows are
  added lazily by default (only those a model overflows; see :class:`_Memory`).

What is built here is clauses only (lists of ints); the solver (RC2) runs in :mod:`.engine`. The
cardinality encodings come from ``pysat.card``, imported inside :func:`encode` (in the worker).
"""

from __future__ import annotations

import bisect
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from portfolio.evaluate import usage_profile
from portfolio.exact import ExactModel, ModelSize, build_exact_model
from portfolio.problem import INT64_MAX, Problem

from .diffusion import diffuse

BUDGET = ModelSize(variables=1_000_000, constraints=2_000_000, terms=6_000_000)
"""Largest model built; above it, LNS windows. Measured so far only well below it: B with every
memory row eager is 0.47M clauses in about 6 s of Python encoding (load ~10); the budget allows
about four times that, i.e. roughly 20-25 s of encoding on this machine (an extrapolation)."""

_TRUE, _FALSE = 0, -1     # MDD terminals (variable ids are positive)


class TooBig(Exception):
    """The model outgrew the budget while being built (the estimate was optimistic)."""


class Infeasible(Exception):
    """No plan without forbidden choices fits in memory (found while encoding)."""


class OutOfTime(Exception):
    """The time limit passed while memory rows were being encoded."""


class OutOfWork(OutOfTime):
    """Deterministic mode: the MDD steps allowed (``_Memory.max_steps``) ran out while memory rows
    were being encoded."""


class _RowTooBig(Exception):
    """One row's exact MDD outgrew its node limit (the row is then relaxed, see _Memory)."""


# ------------------------------------------------------------------------------------------ encoding
@dataclass
class Encoding:
    """The weighted CNF of one problem and how to read a plan back from a model."""

    hard: list[list[int]] = field(default_factory=list)
    soft: list[tuple[list[int], int]] = field(default_factory=list)
    top: int = 0
    var_of: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # per global strategy
    constant: int = 0
    stats: dict = field(default_factory=dict)
    memory: Optional["_Memory"] = None

    def new(self) -> int:
        self.top += 1
        return self.top

    def plan(self, model: list[int], problem: Problem) -> np.ndarray:
        """The plan a model chooses (each node's first true strategy variable)."""
        true = np.zeros(self.top + 1, dtype=bool)
        lits = np.asarray(model, dtype=np.int64)
        lits = lits[(lits > 0) & (lits <= self.top)]
        true[lits] = True
        chosen = (self.var_of > 0) & true[np.maximum(self.var_of, 0)]
        so = problem.strategy_offsets
        plan = np.zeros(problem.num_nodes, dtype=np.int64)
        for i in range(problem.num_nodes):
            hits = np.flatnonzero(chosen[so[i]:so[i + 1]])
            plan[i] = hits[0] if len(hits) else 0
        return plan

    def objective(self) -> int:
        """Sum of all soft weights (a trivial upper bound on the MaxSAT cost)."""
        return sum(w for _, w in self.soft)


def _dense_factors(md: ExactModel) -> tuple[dict, list]:
    """The exact model's factors as dense tables with an allowed mask beside them:
    {(u, v): (table, allowed)} for two-node factors (folded, residuals >= 0) and a list of
    (nodes, table, allowed) for larger ones. Entries outside ``allowed`` hold 0 and are hard
    exclusions wherever both strategies are usable."""
    counts = md.problem.strategy_counts
    pairs, larger = {}, []
    for f in md.factors:
        shape = tuple(int(counts[v]) for v in f.nodes)
        table = np.zeros(shape, dtype=f.cost.dtype)
        ok = np.zeros(shape, dtype=bool)
        index = tuple(f.choices.T)
        table[index], ok[index] = f.cost, True
        if len(f.nodes) == 2:
            pairs[f.nodes] = (table, ok)
        else:
            larger.append((list(f.nodes), table, ok))
    return pairs, larger


def _memory_rows(problem: Problem, allowed: np.ndarray):
    """The point constraints that can bind, as (rows of usage-vector ids per node, slack per row).

    Each node's usage at a time point is constant between the boundaries of its intervals, so a
    node contributes one of a few *segment* vectors (usage per strategy, minus its least allowed
    usage). Row k holds, per node, the id of its segment vector at point k (0: no variation there).
    Returns (vectors: (node, per-strategy extra) by id, rows, slack per row, row of each point or
    -1) with rows deduplicated (least slack kept) and rows that cannot overflow dropped.
    """
    n, P = problem.num_nodes, len(problem.time_points)
    cap = problem.point_capacity
    limited = cap < INT64_MAX
    none = ([None], np.zeros((0, n), np.int64), [], np.full(P, -1, dtype=np.int64))
    if P == 0 or not limited.any():
        return none
    lo, hi = problem.interval_point_range
    so = problem.strategy_offsets
    scale = int(np.abs(problem.interval_usages.astype(np.float64)).sum()) + 1
    dtype = object if scale >= 2**62 else np.int64
    vectors: list = [None]
    worst: list = [0]
    ids = np.zeros((P, n), dtype=np.int64)
    least_diff = np.zeros(P + 1, dtype=dtype)
    for i in range(n):
        mine = problem.intervals_of(i)
        mine = mine[hi[mine] > lo[mine]]
        if len(mine) == 0:
            continue
        ok = allowed[so[i]:so[i + 1]]
        if not ok.any():
            continue
        bounds = np.unique(np.concatenate([lo[mine], hi[mine]]))
        use = np.array([problem.usages_of_interval(j) for j in mine.tolist()], dtype=dtype)
        diff = np.zeros((len(bounds), use.shape[1]), dtype=dtype)
        np.add.at(diff, np.searchsorted(bounds, lo[mine]), use)
        np.add.at(diff, np.searchsorted(bounds, hi[mine]), -use)
        seg = np.cumsum(diff, axis=0)[:-1]               # usage on [bounds[t], bounds[t+1])
        least = seg[:, ok].min(axis=1)
        np.add.at(least_diff, bounds[:-1], least)
        np.add.at(least_diff, bounds[1:], -least)
        extra = seg - least[:, None]
        top = extra[:, ok].max(axis=1)
        for t in np.flatnonzero(top > 0).tolist():
            vectors.append((i, extra[t]))
            worst.append(int(top[t]))
            ids[bounds[t]:bounds[t + 1], i] = len(vectors) - 1
    least_sum = np.cumsum(least_diff)[:-1]
    keep = np.flatnonzero(limited)
    slack_of = {int(k): int(cap[k]) - int(least_sum[k]) for k in keep.tolist()}
    for k, s in slack_of.items():
        if s < 0:
            raise Infeasible(f"time point {int(problem.time_points[k])}: least usage exceeds capacity")
    if len(vectors) == 1:
        return none
    unique, inverse = np.unique(ids[keep], axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    best = [None] * len(unique)
    for k, u in zip(keep.tolist(), inverse.tolist()):
        if best[u] is None or slack_of[k] < best[u]:
            best[u] = slack_of[k]
    worst_arr = np.array(worst, dtype=object if dtype is object else np.int64)
    peak = worst_arr[unique].sum(axis=1)
    index = np.full(len(unique), -1, dtype=np.int64)
    binding = [u for u in range(len(unique)) if peak[u] > best[u]]
    index[binding] = np.arange(len(binding))
    row_of_point = np.full(P, -1, dtype=np.int64)
    row_of_point[keep] = index[inverse]
    return (vectors, unique[binding].reshape(-1, n), [best[u] for u in binding], row_of_point)


class _Mdd:
    """One hard constraint  sum_layers usage(layer) <= slack  as clauses of a reduced MDD.

    A node is a variable d meaning "the rest of the sum fits in budget R" for every R in its
    interval; for each level l of the layer's node: ``-d | -[usage >= l] | child(R - l)``, with the
    terminal ``true`` dropping the clause and ``false`` dropping the child literal. Sound and
    complete: a violating plan walks down to ``false``; a fitting one sets d true where it fits.
    """

    def __init__(self, enc: Encoding, layers: list[list[tuple[int, int]]], limit: int,
                 out: list, end: Optional[float] = None, max_steps: Optional[int] = None) -> None:
        self.enc, self.layers, self.limit, self.out, self.end = enc, layers, limit, out, end
        self.steps, self.max_steps = 0, max_steps   # calls of build: the work, counted
        self.suffix = [0] * (len(layers) + 1)
        for i in range(len(layers) - 1, -1, -1):
            self.suffix[i] = self.suffix[i + 1] + max(l for l, _ in layers[i])
        self.betas: list[list[int]] = [[] for _ in layers]
        self.nodes: list[list[tuple[int, int, int]]] = [[] for _ in layers]
        self.count = 0

    def build(self, i: int, budget: int) -> tuple[float, float, int]:
        self.steps += 1
        if self.max_steps is not None and self.steps > self.max_steps:
            raise OutOfWork()
        if budget < 0:
            return -np.inf, -1, _FALSE
        if budget >= self.suffix[i]:
            return self.suffix[i], np.inf, _TRUE
        pos = bisect.bisect_right(self.betas[i], budget) - 1
        if pos >= 0 and self.nodes[i][pos][1] >= budget:
            return self.nodes[i][pos]
        lo, hi, kids = -np.inf, np.inf, []
        for level, lit in self.layers[i]:
            b, g, child = self.build(i + 1, budget - level)
            lo, hi = max(lo, b + level), min(hi, g + level)
            kids.append((lit, child))
        if all(child == kids[0][1] for _, child in kids):
            var = kids[0][1]      # the layer does not matter here
        else:
            var = self.enc.new()
            self.count += 1
            if self.count > self.limit:
                raise _RowTooBig()
            if self.end is not None and self.count % 512 == 0 and time.monotonic() > self.end:
                raise OutOfTime()
            for lit, child in kids:
                if child == _TRUE:
                    continue
                clause = [-var] + ([-lit] if lit else []) + ([child] if child != _FALSE else [])
                self.out.append(clause)
        node = (lo, hi, var)
        pos = bisect.bisect_right(self.betas[i], lo)
        self.betas[i].insert(pos, lo)
        self.nodes[i].insert(pos, node)
        return node


class _Memory:
    """The memory rows of one encoding, turned into clauses on demand (all at once when eager,
    row by row as models break them when lazy).

    A row gets its exact MDD when that has at most ``ROW_NODES`` nodes. Otherwise it gets the MDD
    of a sound relaxation (usages and slack divided by q and rounded down, so at most
    ``RESOLUTION`` budgets per layer: sum floor(u/q) <= floor(sum u / q) <= floor(slack/q)), and a
    model that still breaks it gets a cover cut: "not all of these nodes at these usages or more",
    taking the largest usages of the model until they exceed the slack. Both only ever remove
    plans that do not fit, and a model is accepted only once it fits every row, so the loop is
    exact; it ends because each cut removes the model that caused it. ``RESOLUTION = 0``: cuts
    only (measured on A through the driver, 60 s: 6,548,637,991 against 6,548,553,871 with the
    relaxed MDDs at 32).
    """

    ROW_NODES = 5_000
    RESOLUTION = 32

    def __init__(self, problem: Problem, enc: Encoding, allowed: np.ndarray,
                 limit: ModelSize) -> None:
        self.problem, self.enc, self.allowed, self.limit = problem, enc, allowed, limit
        self.vectors, self.rows, self.slack, self.row_of_point = _memory_rows(problem, allowed)
        self.level_lit: dict = {}
        self.exact: set[int] = set()
        self.relaxed: set[int] = set()
        self.nodes = self.cuts = 0
        self.end: Optional[float] = None     # monotonic deadline for encoding
        self.steps = 0                       # MDD construction steps so far (the work, counted)
        self.max_steps: Optional[int] = None   # deterministic mode: raise OutOfWork above it

    @property
    def done(self) -> set[int]:
        return self.exact | self.relaxed

    def violated(self, plan: np.ndarray) -> list[int]:
        """Rows that ``plan`` overflows."""
        profile = usage_profile(self.problem, plan)
        over = np.flatnonzero(profile > self.problem.point_capacity)
        return sorted({int(self.row_of_point[k]) for k in over.tolist()} - {-1})

    def add(self, rows, out: list, plan: Optional[np.ndarray] = None) -> None:
        """Append clauses for ``rows`` to ``out``: a new row's MDD (exact or relaxed), a cover cut
        against ``plan`` for a relaxed row it breaks (raises Infeasible / OutOfTime / TooBig)."""
        old_limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old_limit, 4 * self.problem.num_nodes + 1000))
        try:
            for r in rows:
                if r in self.exact:
                    continue
                if r in self.relaxed:
                    if plan is not None:
                        out.append(self._cover(r, plan, out))
                        self.cuts += 1
                    continue
                try:
                    self._mdd(r, out, 1, min(self.ROW_NODES, self.limit.variables - self.enc.top))
                    self.exact.add(r)
                except _RowTooBig:
                    self.relaxed.add(r)
                    if self.RESOLUTION:
                        q = max(1, -(-self.slack[r] // self.RESOLUTION))
                        self._mdd(r, out, q, self.limit.variables - self.enc.top)
                    elif plan is not None:      # cuts only
                        out.append(self._cover(r, plan, out))
                        self.cuts += 1
                if len(out) > self.limit.constraints:
                    raise TooBig("memory constraints")
        except _RowTooBig:
            raise TooBig("memory constraints") from None
        finally:
            sys.setrecursionlimit(old_limit)

    def _strategies(self, i: int) -> list[int]:
        so = int(self.problem.strategy_offsets[i])
        return [t for t in range(int(self.problem.strategy_counts[i])) if self.allowed[so + t]]

    def _mdd(self, r: int, out: list, q: int, limit: int) -> None:
        """The MDD of row ``r`` with usages and slack divided by ``q`` (rounded down)."""
        row, layers = self.rows[r], []
        for i in np.flatnonzero(row).tolist():
            extra = self.vectors[int(row[i])][1]
            strategies = self._strategies(i)
            levels = [(0, 0)]
            for level in sorted({int(extra[t]) // q for t in strategies})[1:]:
                levels.append((level, self._level(i, tuple(
                    t for t in strategies if int(extra[t]) // q >= level), out)))
            if len(levels) > 1:
                layers.append(levels)
        layers.sort(key=lambda ls: -ls[-1][0])
        mark = len(out)
        mdd = _Mdd(self.enc, layers, limit, out, self.end,
                   None if self.max_steps is None else self.max_steps - self.steps)
        try:
            _, _, root = mdd.build(0, self.slack[r] // q)
        except _RowTooBig:
            del out[mark:]
            raise
        finally:
            self.steps += mdd.steps
        self.nodes += mdd.count
        if root == _FALSE:
            raise Infeasible("a memory row cannot fit")
        if root != _TRUE:
            out.append([root])

    def _cover(self, r: int, plan: np.ndarray, out: list) -> list[int]:
        """Clause refusing the largest usages of ``plan`` in row ``r`` that already overflow it."""
        row = self.rows[r]
        items = []
        for i in np.flatnonzero(row).tolist():
            extra = self.vectors[int(row[i])][1]
            used = int(extra[int(plan[i])])
            if used > 0:
                items.append((used, i))
        items.sort(reverse=True)
        clause, total = [], 0
        for used, i in items:
            extra = self.vectors[int(row[i])][1]
            strategies = tuple(t for t in self._strategies(i) if int(extra[t]) >= used)
            clause.append(-self._level(i, strategies, out))
            total += used
            if total > self.slack[r]:
                break
        assert total > self.slack[r], "cover cut asked for a row the plan does not break"
        return clause

    def _level(self, i: int, strategies: tuple, out: list) -> int:
        """The literal "node i uses one of ``strategies``" (shared by every row)."""
        key = (i, strategies)
        if key not in self.level_lit:
            xs = [int(self.enc.var_of[self.problem.strategy_offsets[i] + t]) for t in strategies]
            if len(xs) == 1:
                self.level_lit[key] = xs[0]
            else:
                y = self.enc.new()
                out.extend([-x, y] for x in xs)
                self.level_lit[key] = y
        return self.level_lit[key]


def encode(problem: Problem, edge_form: str = "pairs", limit: Optional[ModelSize] = None,
           amo: str = "auto", memory: str = "eager", diffusion: float = 0.0,
           end: Optional[float] = None, sweeps: Optional[int] = None,
           max_steps: Optional[int] = None) -> Encoding:
    """The weighted CNF of ``problem`` (raises :class:`Infeasible` or :class:`TooBig`).

    ``memory``: ``"eager"`` encodes every row that can overflow now; ``"lazy"`` leaves them in
    ``enc.memory`` for :meth:`_Memory.add` when a model breaks them; ``"none"`` drops memory.
    ``diffusion``: seconds of min-sum diffusion (0: row/column folding only); ``sweeps``, when
    given, replaces it: at most that many sweeps, whatever the time (deterministic mode); ``end``:
    a ``time.monotonic()`` deadline for the memory rows (raises :class:`OutOfTime`);
    ``max_steps``: at most that many MDD steps for them (raises :class:`OutOfWork`)."""
    from pysat.card import CardEnc, EncType

    t0 = time.perf_counter()
    limit = limit or BUDGET
    enc = Encoding()
    counts = problem.strategy_counts.tolist()
    so = problem.strategy_offsets.tolist()
    n = problem.num_nodes
    md = build_exact_model(problem)   # domains (arc consistency), folded factors, exact integers
    if md.infeasible is not None:
        raise Infeasible(md.infeasible)
    cost = md.unary.tolist()           # Python ints, mutable (meaningless where not allowed)
    allowed = md.usable.copy()
    constant = md.offset
    folded = md.stats["folded_edges"]
    pairs, triples = _dense_factors(md)
    limit_sweeps, sweeps = sweeps, 0
    if (diffusion if limit_sweeps is None else limit_sweeps):
        def node_bound() -> int:
            return sum(min((cost[so[i] + s] for s in range(counts[i]) if allowed[so[i] + s]),
                           default=0) for i in range(n))

        saved = ({k: (t.copy(), ok) for k, (t, ok) in pairs.items()}, list(cost))
        before = node_bound()
        seconds, most = (diffusion, 200) if limit_sweeps is None else (None, limit_sweeps)
        sweeps = diffuse(pairs, cost, allowed, so, counts, seconds, most)
        if node_bound() < before:   # diffusion is no ascent on folded tables: keep the better
            pairs, cost = saved[0], saved[1]
            sweeps = -sweeps
    # variables and exactly-one
    var_of = np.zeros(len(cost), dtype=np.int64)
    for i in range(n):
        lits = []
        for s in range(counts[i]):
            if allowed[so[i] + s]:
                var_of[so[i] + s] = enc.new()
                lits.append(int(var_of[so[i] + s]))
        if not lits:
            raise Infeasible(f"node {i}: every strategy is forbidden")
        least = min(cost[so[i] + s] for s in range(counts[i]) if allowed[so[i] + s])
        constant += least
        for s in range(counts[i]):
            g = so[i] + s
            if allowed[g] and cost[g] > least:
                enc.soft.append(([-int(var_of[g])], cost[g] - least))
        if len(lits) == 1:
            enc.hard.append(lits)
            continue
        kind = EncType.pairwise if (amo == "pairwise" or (amo == "auto" and len(lits) <= 6)) \
            else EncType.ladder
        am1 = CardEnc.atmost(lits, bound=1, top_id=enc.top, encoding=kind)
        enc.top = max(enc.top, am1.nv)
        enc.hard.extend(am1.clauses)
        enc.hard.append(lits)
    enc.var_of = var_of
    x = lambda i, s: int(var_of[so[i] + s])  # noqa: E731
    # two-node tables
    for (u, v), (table, ok) in pairs.items():
        rows = [a for a in range(counts[u]) if allowed[so[u] + a]]
        cols = [b for b in range(counts[v]) if allowed[so[v] + b]]
        sub = table[np.ix_(rows, cols)].tolist() if rows and cols else []
        fine = ok[np.ix_(rows, cols)].tolist() if rows and cols else []
        if edge_form == "direct":
            for a, line, oks in zip(rows, sub, fine):
                for b, c, good in zip(cols, line, oks):
                    if not good:
                        enc.hard.append([-x(u, a), -x(v, b)])
                    elif c > 0:
                        enc.soft.append(([-x(u, a), -x(v, b)], c))
            continue
        if all(c == 0 for line in sub for c in line) and all(all(oks) for oks in fine):
            continue
        col_pairs: dict[int, list[int]] = {b: [] for b in cols}
        for a, line, oks in zip(rows, sub, fine):
            row_pairs = []
            for b, c, good in zip(cols, line, oks):
                if not good:
                    continue
                p = enc.new()
                enc.hard.append([-p, x(u, a)])
                enc.hard.append([-p, x(v, b)])
                row_pairs.append(p)
                col_pairs[b].append(p)
                if c > 0:
                    enc.soft.append(([-p], c))
            enc.hard.append([-x(u, a)] + row_pairs)
        for b in cols:
            enc.hard.append([-x(v, b)] + col_pairs[b])
    # tables over three or more nodes (direct)
    for nodes, table, ok in triples:
        usable = [[s for s in range(counts[v]) if allowed[so[v] + s]] for v in nodes]
        sub, fine = table[np.ix_(*usable)], ok[np.ix_(*usable)]
        least = min(sub[fine].tolist(), default=0)
        constant += least
        for idx, c in np.ndenumerate(sub):
            clause = [-x(v, usable[p][idx[p]]) for p, v in enumerate(nodes)]
            if not fine[idx]:
                enc.hard.append(clause)
            elif c > least:
                enc.soft.append((clause, int(c) - least))
    size = _size(enc)
    if not size.within(limit):
        raise TooBig(f"cost part {size}")
    t1 = time.perf_counter()
    # memory
    mem = _Memory(problem, enc, allowed, limit)
    mem.end, mem.max_steps = end, max_steps
    enc.memory = mem
    if memory == "eager":
        mem.add(range(len(mem.rows)), enc.hard)
    elif memory != "lazy":
        mem.rows, mem.row_of_point[:] = mem.rows[:0], -1
    enc.constant = constant
    size = _size(enc)
    if not size.within(limit):
        raise TooBig(f"model {size}")
    enc.stats = {"variables": enc.top, "hard": len(enc.hard), "soft": len(enc.soft),
                 "literals": size.terms, "memory_rows": len(mem.rows), "mdd_nodes": mem.nodes,
                 "mdd_steps": mem.steps,
                 "folded": folded, "sweeps": sweeps,
                 "encode_cost_s": round(t1 - t0, 3),
                 "encode_memory_s": round(time.perf_counter() - t1, 3)}
    return enc


def _size(enc: Encoding) -> ModelSize:
    lits = sum(len(c) for c in enc.hard) + sum(len(c) for c, _ in enc.soft)
    return ModelSize(enc.top, len(enc.hard) + len(enc.soft), lits)
