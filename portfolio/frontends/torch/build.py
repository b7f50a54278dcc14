"""The problem: one node per tensor-making graph node, one strategy per option, one edge per
producer-consumer pair, each node named by its module path.

A user output is handed back with its partial sums reduced (:func:`handed_back`); that reduction
is part of its node's cost (and of the collectives the plan implies).

Node ``i`` is the i-th graph node that makes a tensor (placeholders, ops, getitems), its step
``i``; its strategies are its options (:mod:`.strategies`), each costing the op's compute
(:mod:`.costs`) and using its per-rank bytes (:mod:`.memory`) over ``[i, last use + 1)``. The
edge between a producer and a consumer charges, per pair of their strategies, the redistribution
from what the producer makes to what the consumer needs (every argument it takes from that
producer, summed); an unreachable pair is forbidden (``10**18``). In training, a parameter and
its gradient share an edge too: the gradient is moved to the parameter's placement (DDP's
all-reduce, ZeRO's reduce-scatter, or nothing).

Names: a parameter or buffer by its own name (``layers.0.mlp.up.weight``), an input as
``input:K``, an op as ``MODULE:NODE`` (``layers.0.mlp.up:addmm_3``; ``MODULE:backward:NODE`` in
the backward; ``<root>`` for the top module).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch
from torch.distributed.tensor._dtensor_spec import TensorMeta
from torch.distributed.tensor.placement_types import Partial, Replicate

from ...problem import Problem
from .costs import CostModel
from .devices import Device
from .memory import state_factor
from .redistribution import Redistributions
from .strategies import Fallbacks, NodeOptions, OptionBuilder, local_bytes
from .trace import OPTIMIZER_STATES, Traced

FORBIDDEN = 10**18
"""The contest's marker of a forbidden choice (an unreachable redistribution)."""

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: called while building (the CLI's progress bar)."""


@dataclass
class Built:
    """A built problem and everything needed to read its plans back.

    ``nodes[i]``: the graph node of problem node ``i``; ``names[i]``: its name (see the module
    docstring); ``options[i]``: its options; ``edges[e]``: the two problem nodes of edge ``e``
    and, per argument it stands for, ``(consumer argument index or -1 for a gradient, producer
    output index or None)``; ``unsharded_peak``: the per-rank peak of the plan that replicates
    everything (``replicated``); ``seconds``: time per stage."""

    problem: Problem
    traced: Traced
    mesh_shape: tuple
    device: Device
    nodes: list[str]
    names: list[str]
    options: list[NodeOptions]
    edges: list[tuple[int, int, list]]
    fallbacks: Fallbacks
    replicated: np.ndarray
    unsharded_peak: int
    costs: CostModel
    redistributions: Redistributions
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    budget: Optional[int] = None
    """Bytes per rank the problem's limit says (None: no limit)."""

    def with_budget(self, budget: Optional[int]) -> "Built":
        """The same build with ``budget`` as the problem's memory limit."""
        from dataclasses import replace

        return replace(self, problem=self.problem.with_limit(budget), budget=budget)

    def conversion(self) -> Any:
        """The problem as :func:`portfolio.solve` takes it with its node names, so that every
        message (the memory explanation among them) names nodes by module path."""
        from ...adapters.conversion import Conversion

        return Conversion(self.problem, np.arange(self.problem.num_nodes, dtype=np.int64),
                          names=tuple(self.names))

    def index(self, node_name: str) -> int:
        """The problem node of a graph node."""
        return self._index[node_name]

    def has(self, node_name: str) -> bool:
        """Whether a graph node is a problem node (it makes a tensor)."""
        return node_name in self._index

    def __post_init__(self) -> None:
        self._index = {n: i for i, n in enumerate(self.nodes)}


def node_label(traced: Traced, node: torch.fx.Node) -> str:
    """The problem node's name (see the module docstring)."""
    if node.name in traced.param_of:
        return traced.param_of[node.name]
    if node.name in traced.buffer_of:
        return traced.buffer_of[node.name]
    if node.name in traced.inputs:
        return f"input:{traced.inputs.index(node.name)}"
    path = traced.module_of.get(node.name) or "<root>"
    return f"{path}:backward:{node.name}" if node.name in traced.backward else f"{path}:{node.name}"


def _options(traced: Traced, builder: OptionBuilder, progress: Optional[Progress]) -> list[torch.fx.Node]:
    """Every node's options, in graph order; the nodes that make a tensor."""
    kept = []
    nodes = traced.nodes
    for done, node in enumerate(nodes):
        if node.op == "placeholder":
            builder.placeholder(node)
            kept.append(node)
        elif node.op == "call_function" and builder.call(node) is not None:
            kept.append(node)
        if progress is not None and done % 25 == 0:
            progress("sharding rules", done, len(nodes))
    return kept


def handed_back(placements: Any) -> Any:
    """The placement a user output is handed back in: its partial sums reduced (Partial ->
    Replicate), every shard kept."""
    return tuple(Replicate() if isinstance(p, Partial) else p for p in placements)


def _single(outputs: Any) -> bool:
    """Whether an option's output is one tensor's placements (not a tuple of several outputs')."""
    return bool(outputs) and not isinstance(outputs[0], tuple) and outputs[0] is not None


def _usage(meta: Any, out: Any, mesh_shape: tuple) -> int:
    if isinstance(meta, TensorMeta):
        return local_bytes(meta, out, mesh_shape)
    return sum(local_bytes(m, o, mesh_shape) for m, o in zip(meta, out))


def _intervals(traced: Traced, kept: list[torch.fx.Node]) -> np.ndarray:
    """Each problem node's ``[step, last use + 1)`` (see :mod:`.memory`)."""
    step = {n.name: i for i, n in enumerate(kept)}
    end = len(kept)
    outputs = set(traced.outputs)
    whole = set(traced.param_of) | set(traced.buffer_of)
    out = np.zeros((len(kept), 2), dtype=np.int64)
    for i, node in enumerate(kept):
        users = [step[u.name] for u in node.users if u.name in step]
        last = max(users, default=i)
        if node.name in whole:
            out[i] = (0, end)
        elif node.name in outputs:
            out[i] = (i, end)
        else:
            out[i] = (i, last + 1)
    return out


class _EdgeTables:
    """Edge tables built from unique placements: a redistribution is priced once per distinct
    (from, to) pair of an argument, and the table is gathered from that small matrix."""

    def __init__(self, redistributions: Redistributions, costs: CostModel) -> None:
        self.redistributions = redistributions
        self.costs = costs
        self.priced: dict[tuple, int] = {}

    def price(self, have: tuple, want: tuple, meta: TensorMeta) -> int:
        key = (have, want, tuple(meta.shape), meta.dtype)
        found = self.priced.get(key)
        if found is None:
            steps = self.redistributions.steps(have, want, meta)
            found = FORBIDDEN if steps is None else self.costs.steps_ns(steps)
            self.priced[key] = found
        return found

    def table(self, have: Sequence, want: Sequence, meta: TensorMeta) -> np.ndarray:
        """``table[i, j]``: moving ``have[i]`` to ``want[j]``."""
        rows, row_of = _unique(have)
        cols, col_of = _unique(want)
        small = np.array([[self.price(r, c, meta) for c in cols] for r in rows], dtype=np.int64)
        return small[np.ix_(row_of, col_of)]


def _unique(items: Sequence) -> tuple[list, np.ndarray]:
    index: dict = {}
    of = np.empty(len(items), dtype=np.int64)
    for k, item in enumerate(items):
        of[k] = index.setdefault(item, len(index))
    return list(index), of


def build_problem(traced: Traced, mesh: Any, device: Device, *, name: str = "model",
                  progress: Optional[Progress] = None) -> Built:
    """The problem of ``traced`` on ``mesh`` priced for ``device`` (no memory limit: see
    :func:`portfolio.frontends.torch.build`)."""
    seconds: dict[str, float] = {}
    clock = time.perf_counter()
    mesh_shape = tuple(mesh.shape)
    builder = OptionBuilder(mesh)
    kept = _options(traced, builder, progress)
    seconds["sharding rules"] = time.perf_counter() - clock
    clock = time.perf_counter()

    costs = CostModel(device, mesh_shape)
    redistributions = Redistributions(mesh)
    states = OPTIMIZER_STATES[traced.optimizer]
    factor = state_factor(traced.training, states)
    step = {n.name: i for i, n in enumerate(kept)}
    options = [builder.options[n.name] for n in kept]
    node_costs: list[np.ndarray] = []
    usages: list[np.ndarray] = []
    for i, (node, opts) in enumerate(zip(kept, options)):
        held = factor if node.name in traced.param_of else 1
        usage = [held * _usage(opts.metas, o, mesh_shape) for o in opts.outputs]
        if node.op == "placeholder":
            cost = [costs.update_ns(u // held, states) if node.name in traced.param_of
                    and traced.training else 0 for u in usage]
        else:
            metas = [_meta(kept, step, s) for s in opts.sources]
            outs = [list(zip(opts.metas, o)) if not isinstance(opts.metas, TensorMeta)
                    else [(opts.metas, o)] for o in opts.outputs]
            cost = [costs.node_ns(node, list(zip(metas, ins)), out)
                    for ins, out in zip(opts.inputs, outs)]
        if node.name in traced.outputs and isinstance(opts.metas, TensorMeta):
            # a user output is handed back whole or sharded: partial sums are reduced first
            reduce = [redistributions.steps(o, handed_back(o), opts.metas) or () for o in opts.outputs]
            cost = [c + costs.steps_ns(r) for c, r in zip(cost, reduce)]
        node_costs.append(np.asarray(cost, dtype=np.int64))
        usages.append(np.asarray(usage, dtype=np.int64))
        if progress is not None and i % 50 == 0:
            progress("node costs", i, len(kept))
    seconds["node costs"] = time.perf_counter() - clock
    clock = time.perf_counter()

    tables = _EdgeTables(redistributions, costs)
    pair_tables: dict[tuple[int, int], np.ndarray] = {}
    pair_args: dict[tuple[int, int], list] = {}
    for v, (node, opts) in enumerate(zip(kept, options)):
        for a, (src, item) in enumerate(zip(opts.sources, opts.source_items)):
            u = step[src]
            produced = options[u].outputs
            have = [o[item] for o in produced] if item is not None else list(produced)
            want = [ins[a] for ins in opts.inputs]
            _add(pair_tables, pair_args, (u, v), tables.table(have, want, _meta(kept, step, src, item)),
                 (a, item))
        if progress is not None and v % 25 == 0:
            progress("edge costs", v, len(kept))
    for grad, param in traced.grad_of.items():
        g, p = step[grad], step[_param_node(traced, param)]
        # table[s_p, s_g]: the gradient made at s_g, moved to the parameter's placement s_p
        moved = tables.table(options[g].outputs, options[p].outputs, options[g].metas).T
        _add(pair_tables, pair_args, (p, g), moved, (-1, None))
    seconds["edge costs"] = time.perf_counter() - clock
    clock = time.perf_counter()

    problem, edges = _assemble(name, kept, options, node_costs, usages, pair_tables, pair_args,
                               _intervals(traced, kept))
    replicated = _replicated_plan(options, usages)
    from ...evaluate import evaluate

    peak = int(evaluate(problem, replicated).peak_usage)
    seconds["assemble"] = time.perf_counter() - clock
    built = Built(problem, traced, mesh_shape, device, [n.name for n in kept],
                  [node_label(traced, n) for n in kept], options,
                  edges, builder.fallbacks, replicated, peak, costs, redistributions, seconds)
    if all(len(o) == 1 for o, n in zip(options, kept) if n.name in traced.param_of):
        built.notes.append(f"no parameter dimension is divisible by the mesh "
                           f"{'x'.join(map(str, mesh_shape))}: every parameter is replicated")
    return built


def _param_node(traced: Traced, param: str) -> str:
    return next(n for n, p in traced.param_of.items() if p == param)


def _meta(kept: list, step: dict, name: str, item: Optional[int] = None) -> TensorMeta:
    from .strategies import tensor_meta

    val = kept[step[name]].meta["val"]
    return tensor_meta(val if item is None else val[item])


def _add(tables: dict, args: dict, key: tuple, table: np.ndarray, arg: tuple) -> None:
    """Adds an argument's table to the pair's (a forbidden entry stays forbidden)."""
    if key in tables:
        table = np.minimum(tables[key] + table, FORBIDDEN)
    tables[key] = table
    args.setdefault(key, []).append(arg)


def _assemble(name: str, kept: list, options: list, node_costs: list, usages: list,
              pair_tables: dict, pair_args: dict, intervals: np.ndarray) -> tuple[Problem, list]:
    counts = np.array([len(o) for o in options], dtype=np.int64)
    keys = sorted(pair_tables)
    edges = [(u, v, pair_args[(u, v)]) for u, v in keys]
    edge_costs = np.concatenate([pair_tables[k].reshape(-1) for k in keys]) if keys else \
        np.zeros(0, dtype=np.int64)
    problem = Problem.from_contest_arrays(
        name, intervals.reshape(-1), counts, np.concatenate(node_costs), np.concatenate(usages),
        np.full(len(keys), 2, dtype=np.int64),
        np.array([x for k in keys for x in k], dtype=np.int64), edge_costs, None)
    return problem, edges


def _replicated_plan(options: list, usages: list) -> np.ndarray:
    """Per node the option that replicates everything (the least-memory one where there is none)."""
    plan = np.zeros(len(options), dtype=np.int64)
    for i, opts in enumerate(options):
        found = [k for k, o in enumerate(opts.outputs) if _all_replicated(o)]
        plan[i] = found[0] if found else int(np.argmin(usages[i]))
    return plan


def _all_replicated(out: Any) -> bool:
    if out is None:
        return True
    if _single(out):
        return all(isinstance(p, Replicate) for p in out)
    return all(_all_replicated(o) for o in out)
